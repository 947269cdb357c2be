# The CMake package: `find_package(ddpx)` after `cmake --install build --prefix P` (CMAKE_PREFIX_PATH=P), or
# against a build tree (ddpx_DIR=<build>). Every library ddpx_<folder> of DDPX_AREAS is exported as ddpx::<folder>
# (ddpx::train runs training; ddpx::core, ddpx::model, ... its parts), with the headers under include/ddpx/ in the
# same folders as in src/ (#include <ddpx/train/trainer.hpp>), so an install prefix shared with other projects holds
# no include/core, include/model, ... of ddpx's. The headers include each other as "core/error.hpp" (relative to
# src/), so the installed targets put include/ddpx on the include path as well as include/. A new folder under src/
# is exported by being in DDPX_AREAS; nothing here names one. Dependencies the libraries expose are found again by
# ddpxConfig.cmake.
include(CMakePackageConfigHelpers)
include(GNUInstallDirs)

set(DDPX_EXPORTED_TARGETS ddpx_build_info)
foreach(area ${DDPX_AREAS})
  if(TARGET ddpx_${area})
    list(APPEND DDPX_EXPORTED_TARGETS ddpx_${area})
  endif()
endforeach()
# The folders' CMakeLists give ${PROJECT_SOURCE_DIR}/src as the include folder; an installed package finds the same
# headers under include/ddpx (and include/, for the <ddpx/...> spelling). Rewritten here once, so the folders keep their one-line include rule.
foreach(target ${DDPX_EXPORTED_TARGETS})
  get_target_property(dirs ${target} INTERFACE_INCLUDE_DIRECTORIES)
  if(dirs)
    set(exported_dirs "")
    foreach(dir ${dirs})
      if(dir STREQUAL "${PROJECT_SOURCE_DIR}/src")
        list(APPEND exported_dirs "$<BUILD_INTERFACE:${dir}>" "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/ddpx>"
                                  "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>")
      else()
        list(APPEND exported_dirs "${dir}")
      endif()
    endforeach()
    set_target_properties(${target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${exported_dirs}")
  endif()
  get_target_property(export_name ${target} EXPORT_NAME)  # a folder may name its own (ddpx_torch_ddp: torch)
  if(NOT export_name)
    string(REGEX REPLACE "^ddpx_" "" export_name ${target})
    set_target_properties(${target} PROPERTIES EXPORT_NAME ${export_name})
  endif()
endforeach()

install(TARGETS ${DDPX_EXPORTED_TARGETS} EXPORT ddpxTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/src/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ddpx
        FILES_MATCHING PATTERN "*.hpp" PATTERN "*.cuh")
set(DDPX_PACKAGE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/ddpx)
install(EXPORT ddpxTargets NAMESPACE ddpx:: DESTINATION ${DDPX_PACKAGE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/ddpxConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/ddpxConfig.cmake INSTALL_DESTINATION ${DDPX_PACKAGE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ddpxConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ddpxConfig.cmake ${PROJECT_BINARY_DIR}/ddpxConfigVersion.cmake
        DESTINATION ${DDPX_PACKAGE_DIR})
# The build tree as a package too (ddpx_DIR=<build>), for a project built beside this one.
export(EXPORT ddpxTargets NAMESPACE ddpx:: FILE ${PROJECT_BINARY_DIR}/ddpxTargets.cmake)
