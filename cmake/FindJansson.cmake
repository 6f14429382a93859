# SPDX-License-Identifier: MIT
# FindJansson.cmake -- Jansson, the JSON library (libjansson) that reads and
# writes the reports and a run's params; provides TP::jansson, static or shared by TP_STATIC_DEPS
# (cmake/TPDeps.cmake).
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(PC_JANSSON QUIET jansson)
endif()
find_path(JANSSON_INCLUDE_DIR jansson.h HINTS ${PC_JANSSON_INCLUDE_DIRS})
tp_find_dep(JANSSON_LIBRARY jansson HINTS ${PC_JANSSON_LIBRARY_DIRS})
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Jansson REQUIRED_VARS JANSSON_LIBRARY JANSSON_INCLUDE_DIR)
if(Jansson_FOUND AND NOT TARGET TP::jansson)
  add_library(TP::jansson UNKNOWN IMPORTED)
  set_target_properties(TP::jansson PROPERTIES IMPORTED_LOCATION "${JANSSON_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${JANSSON_INCLUDE_DIR}")
endif()
