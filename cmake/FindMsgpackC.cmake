# SPDX-License-Identifier: MIT
# FindMsgpackC.cmake -- msgpack-c (the C library, libmsgpackc); provides TP::msgpackc,
# static or shared by TP_STATIC_DEPS (cmake/TPDeps.cmake).
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(PC_MSGPACK QUIET msgpack)
endif()
find_path(MSGPACKC_INCLUDE_DIR msgpack.h HINTS ${PC_MSGPACK_INCLUDE_DIRS})
tp_find_dep(MSGPACKC_LIBRARY msgpackc HINTS ${PC_MSGPACK_LIBRARY_DIRS})
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(MsgpackC REQUIRED_VARS MSGPACKC_LIBRARY MSGPACKC_INCLUDE_DIR)
if(MsgpackC_FOUND AND NOT TARGET TP::msgpackc)
  add_library(TP::msgpackc UNKNOWN IMPORTED)
  set_target_properties(TP::msgpackc PROPERTIES IMPORTED_LOCATION "${MSGPACKC_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${MSGPACKC_INCLUDE_DIR}")
endif()
