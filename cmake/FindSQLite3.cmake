# SPDX-License-Identifier: MIT
# FindSQLite3.cmake -- SQLite 3 library and header; provides TP::sqlite3,
# static or shared by TP_STATIC_DEPS (cmake/TPDeps.cmake).
find_path(SQLITE3_INCLUDE_DIR sqlite3.h)
tp_find_dep(SQLITE3_LIBRARY sqlite3)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(SQLite3 REQUIRED_VARS SQLITE3_LIBRARY SQLITE3_INCLUDE_DIR)
if(SQLite3_FOUND AND NOT TARGET TP::sqlite3)
  add_library(TP::sqlite3 UNKNOWN IMPORTED)
  set_target_properties(TP::sqlite3 PROPERTIES IMPORTED_LOCATION "${SQLITE3_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${SQLITE3_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES "Threads::Threads;${CMAKE_DL_LIBS};m")
endif()
