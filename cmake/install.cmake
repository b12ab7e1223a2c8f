# The SDK as an installed CMake package: `cmake --install <build>` puts the public headers under
# include/tailguard/, the SDK's static libraries under lib/, and lib/cmake/tailguard/ lets
# another project write
#
#   find_package(tailguard 0.1 REQUIRED)
#   target_link_libraries(my_server PRIVATE tailguard::sdk)
#
# tailguard::sdk is everything in include/tailguard/ (recording, windows, detectors, alert rules,
# the analyzer, exposition); its dependencies (abseil, yaml-cpp, nlohmann-json, RE2) are found by
# the package's config file. Only the SDK is installed: the gateway is the `tailguard` binary.
include(CMakePackageConfigHelpers)

set(TAILGUARD_SDK_LIBRARIES
  tailguard_common tailguard_yaml tailguard_metrics tailguard_detect tailguard_alert
  tailguard_diagnose tailguard_analyze)
add_library(tailguard_sdk INTERFACE)
target_link_libraries(tailguard_sdk INTERFACE ${TAILGUARD_SDK_LIBRARIES})
add_library(tailguard::sdk ALIAS tailguard_sdk)
set_target_properties(tailguard_sdk PROPERTIES EXPORT_NAME sdk)
foreach(lib IN LISTS TAILGUARD_SDK_LIBRARIES)
  string(REPLACE "tailguard_" "" short ${lib})
  set_target_properties(${lib} PROPERTIES EXPORT_NAME ${short})
endforeach()

install(TARGETS tailguard_sdk ${TAILGUARD_SDK_LIBRARIES}
        EXPORT tailguardTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT sdk
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/tailguard DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT sdk)
install(EXPORT tailguardTargets
        NAMESPACE tailguard::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tailguard
        COMPONENT sdk)
configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/tailguardConfig.cmake.in
  ${PROJECT_BINARY_DIR}/tailguardConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tailguard)
# 0.x: a minor version may change the API, so only the same minor version is compatible.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/tailguardConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/tailguardConfig.cmake
              ${PROJECT_BINARY_DIR}/tailguardConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tailguard
        COMPONENT sdk)
