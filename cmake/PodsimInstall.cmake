# `cmake --install build --prefix DIR` installs the podsim executable, every module's static
# library and public headers (DIR/include/podsim/<module>/...), and a CMake package, so that
#   find_package(podsim REQUIRED)
#   target_link_libraries(app PRIVATE podsim::podsim)
# builds a program against podsim/podsim.hpp (examples/embed/), and the data that bare names and
# the default config resolve to: DIR/share/podsim/{models,topologies,configs}. The installed binaries
# find it from their own location (sim/config/search_paths.cpp), so the prefix can move.
include(CMakePackageConfigHelpers)

set(PODSIM_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/podsim)
install(TARGETS podsim RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/models ${PROJECT_SOURCE_DIR}/topologies ${PROJECT_SOURCE_DIR}/configs
        DESTINATION ${CMAKE_INSTALL_DATADIR}/podsim)
install(EXPORT podsimTargets NAMESPACE podsim:: DESTINATION ${PODSIM_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/podsimConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/podsimConfig.cmake INSTALL_DESTINATION ${PODSIM_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/podsimConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/podsimConfig.cmake ${PROJECT_BINARY_DIR}/podsimConfigVersion.cmake
        DESTINATION ${PODSIM_CMAKE_DIR})
