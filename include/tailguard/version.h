// The SDK's version. CMake's project version is read from here (CMakeLists.txt), so the
// installed package (find_package(tailguard 0.1)) and this constant always agree.
#ifndef TAILGUARD_VERSION_H_
#define TAILGUARD_VERSION_H_

#include <string_view>

#define TAILGUARD_VERSION_MAJOR 0
#define TAILGUARD_VERSION_MINOR 1
#define TAILGUARD_VERSION_PATCH 0
#define TAILGUARD_VERSION_STRING "0.1.0"

namespace tailguard {

// "major.minor.patch". Within a major version 0, a minor version may change the API.
inline constexpr std::string_view kVersion = TAILGUARD_VERSION_STRING;

}  // namespace tailguard

#endif  // TAILGUARD_VERSION_H_
