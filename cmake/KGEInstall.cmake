# `cmake --install`: KGE as a package for other compilers.
#
#   <prefix>/bin                 kge-opt, kge-translate, kge-cpu-runner,
#                                kge-bundle-run
#   <prefix>/include             KGE's headers, TableGen files (.td) and the
#                                headers TableGen generated (.inc); the C
#                                APIs in kge-c/
#   <prefix>/lib                 the dialect, pass and conversion libraries,
#                                libKGECAPI.so, libKGEMLIRCAPI.so,
#                                KGEPlugin.so, the runtime's libraries
#   <prefix>/lib/cmake/KGE       KGEConfig.cmake: find_package(KGE)
#   <prefix>/lib/cmake/KGERuntime  the runtime alone, without MLIR
#
# docs/Embedding.md shows each way of using it.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
set(KGE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/KGE)

# Every library add_mlir_library made (KGE's own: MLIR's are imported).
get_property(kge_libraries GLOBAL PROPERTY MLIR_EXPORTS)
list(APPEND kge_libraries KGECAPI KGEMLIRCAPI)
foreach(library ${kge_libraries})
  target_include_directories(${library} INTERFACE
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
endforeach()
install(TARGETS ${kge_libraries}
  EXPORT KGETargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS KGEPlugin LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS kge-opt kge-translate kge-cpu-runner
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

install(DIRECTORY include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h" PATTERN "*.td"
  PATTERN "CMakeLists.txt" EXCLUDE)
install(DIRECTORY ${PROJECT_BINARY_DIR}/include/
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.inc"
  PATTERN "CMakeFiles" EXCLUDE)

install(EXPORT KGETargets NAMESPACE KGE:: DESTINATION ${KGE_CMAKE_DIR})
set(KGE_MLIR_VERSION "${LLVM_VERSION_MAJOR}.${LLVM_VERSION_MINOR}")
configure_package_config_file(cmake/KGEConfig.cmake.in
  ${PROJECT_BINARY_DIR}/KGEConfig.cmake
  INSTALL_DESTINATION ${KGE_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/KGEConfigVersion.cmake
  VERSION 0.1.0 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/KGEConfig.cmake
              ${PROJECT_BINARY_DIR}/KGEConfigVersion.cmake
  DESTINATION ${KGE_CMAKE_DIR})
