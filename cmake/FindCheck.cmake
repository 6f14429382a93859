# SPDX-License-Identifier: MIT
# FindCheck.cmake -- the Check unit-test framework through pkg-config (Debian
# ships it static, with subunit); provides TP::check.
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(PC_CHECK QUIET check)
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Check REQUIRED_VARS PC_CHECK_LIBRARIES)
if(Check_FOUND AND NOT TARGET TP::check)
  add_library(TP::check INTERFACE IMPORTED)
  set_target_properties(TP::check PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${PC_CHECK_INCLUDE_DIRS}"
    INTERFACE_LINK_LIBRARIES "${PC_CHECK_LINK_LIBRARIES}"
    INTERFACE_LINK_DIRECTORIES "${PC_CHECK_LIBRARY_DIRS}"
    INTERFACE_COMPILE_OPTIONS "${PC_CHECK_CFLAGS_OTHER}")
endif()
