# Installs the libraries, executables (pipeprof-rank in libexec/pipeprof), public headers and
# pipeprofConfig.cmake.
include(CMakePackageConfigHelpers)

set(PIPEPROF_INSTALL_TARGETS pipeprof_core pipeprof_simulator pipeprof_profiler)
if(PIPEPROF_WITH_TORCH)
  list(APPEND PIPEPROF_INSTALL_TARGETS pipeprof_runtime pipeprof_launch pipeprof_tuner)
endif()
install(TARGETS ${PIPEPROF_INSTALL_TARGETS}
  EXPORT pipeprofTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
foreach(component core simulator profiler)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${component}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endforeach()
if(PIPEPROF_WITH_TORCH)
  foreach(component runtime launch tuner)
    install(DIRECTORY ${PROJECT_SOURCE_DIR}/${component}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  endforeach()
  install(TARGETS pipeprof RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  # Where findRankWorker() looks next to an installed executable, and where the installed
  # package's pipeprof::launch points a consumer (launch/CMakeLists.txt).
  install(TARGETS pipeprof-rank RUNTIME DESTINATION ${PIPEPROF_RANK_WORKER_INSTALL_DIR})
endif()
if(PIPEPROF_GUI_ENABLED)
  install(TARGETS pipeprof-gui RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

set(PIPEPROF_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/pipeprof)
install(EXPORT pipeprofTargets NAMESPACE pipeprof:: DESTINATION ${PIPEPROF_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/pipeprofConfig.cmake.in
  ${PROJECT_BINARY_DIR}/pipeprofConfig.cmake INSTALL_DESTINATION ${PIPEPROF_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/pipeprofConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/pipeprofConfig.cmake ${PROJECT_BINARY_DIR}/pipeprofConfigVersion.cmake
  DESTINATION ${PIPEPROF_CMAKE_DIR})
