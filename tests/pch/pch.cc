// The translation unit that builds the test suites' precompiled header (tests/CMakeLists.txt,
// tailguard_test_pch); every test target reuses it.
