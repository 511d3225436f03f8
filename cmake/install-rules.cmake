include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(FJORD_INSTALL_CMAKEDIR
    "${CMAKE_INSTALL_LIBDIR}/cmake/fjord"
    CACHE STRING "Where fjordConfig.cmake is installed")

install(
  TARGETS fjord
  EXPORT fjordTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/fjord DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(
  EXPORT fjordTargets
  NAMESPACE fjord::
  DESTINATION ${FJORD_INSTALL_CMAKEDIR})

configure_package_config_file(cmake/fjordConfig.cmake.in "${PROJECT_BINARY_DIR}/fjordConfig.cmake"
                              INSTALL_DESTINATION ${FJORD_INSTALL_CMAKEDIR})
write_basic_package_version_file("${PROJECT_BINARY_DIR}/fjordConfigVersion.cmake"
                                 COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/fjordConfig.cmake" "${PROJECT_BINARY_DIR}/fjordConfigVersion.cmake"
        DESTINATION ${FJORD_INSTALL_CMAKEDIR})

# pkg-config: relocatable. The prefix is found from the .pc file's own
# place (${pcfiledir}), so `cmake --install --prefix <anywhere>` works; an
# absolute install dir is kept as given.
set(FJORD_PC_DIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(FJORD_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(FJORD_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
else()
  file(RELATIVE_PATH FJORD_PC_UP "/root/${FJORD_PC_DIR}" "/root")
  string(REGEX REPLACE "/$" "" FJORD_PC_UP "${FJORD_PC_UP}")
  set(FJORD_PC_PREFIX "\${pcfiledir}/${FJORD_PC_UP}")
  set(FJORD_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(FJORD_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(FJORD_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
configure_file(cmake/fjord.pc.in "${PROJECT_BINARY_DIR}/fjord.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/fjord.pc" DESTINATION ${FJORD_PC_DIR})
