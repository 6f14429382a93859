# SPDX-License-Identifier: MIT
# FindNng.cmake -- nng; provides TP::nng.
#
# TP_STATIC_DEPS: nng built here, static and position-independent, from
# Debian's source in TP_NNG_SOURCE (tools/scripts/deps.sh puts it there), without
# its TLS transport; Debian's own libnng.a is not position-independent and
# cannot go into the agent.  Otherwise Debian's shared library (its CMake
# package gives the include directory; libnng-dev ships no pkg-config file).
set(TP_NNG_SOURCE "${PROJECT_SOURCE_DIR}/.deps/nng" CACHE PATH
    "nng's Debian source, built into the programs and the agent (tools/scripts/deps.sh)")
include(FindPackageHandleStandardArgs)
if(TP_STATIC_DEPS)
  if(EXISTS "${TP_NNG_SOURCE}/CMakeLists.txt")
    set(NNG_SOURCE_DIR "${TP_NNG_SOURCE}")
  endif()
  find_package_handle_standard_args(Nng REQUIRED_VARS NNG_SOURCE_DIR
    REASON_FAILURE_MESSAGE "nng's source is not in ${TP_NNG_SOURCE}: run tools/scripts/deps.sh (no root needed)")
  if(Nng_FOUND AND NOT TARGET TP::nng)
    foreach(_o NNG_TESTS NNG_TOOLS NNG_ENABLE_NNGCAT NNG_ENABLE_TLS NNG_TRANSPORT_ZEROTIER)
      set(${_o} OFF CACHE BOOL "off in TrainParity's static nng" FORCE)
    endforeach()
    # getrandom, not arc4random: the latter would need glibc 2.36
    set(NNG_HAVE_ARC4RANDOM OFF CACHE INTERNAL "")
    set(_nng_shared ${BUILD_SHARED_LIBS})
    set(BUILD_SHARED_LIBS OFF)
    add_subdirectory(${NNG_SOURCE_DIR} ${PROJECT_BINARY_DIR}/deps/nng EXCLUDE_FROM_ALL)
    set(BUILD_SHARED_LIBS ${_nng_shared})
    set_target_properties(nng PROPERTIES POSITION_INDEPENDENT_CODE ON C_VISIBILITY_PRESET hidden)
    target_compile_options(nng PRIVATE -w) # its own warnings, not ours
    # its headers as system headers, as Debian's are: our warnings are not theirs
    add_library(tp_nng INTERFACE)
    target_include_directories(tp_nng SYSTEM INTERFACE ${NNG_SOURCE_DIR}/include)
    target_link_libraries(tp_nng INTERFACE nng)
    add_library(TP::nng ALIAS tp_nng)
  endif()
  return()
endif()

find_package(nng CONFIG QUIET)
if(TARGET nng::nng)
  get_target_property(_nng_inc nng::nng INTERFACE_INCLUDE_DIRECTORIES)
endif()
tp_find_dep(NNG_LIBRARY nng HINTS ${_nng_inc}/../lib)
find_path(NNG_INCLUDE_DIR nng/nng.h)
find_package_handle_standard_args(Nng REQUIRED_VARS NNG_LIBRARY NNG_INCLUDE_DIR)
if(Nng_FOUND AND NOT TARGET TP::nng)
  add_library(TP::nng UNKNOWN IMPORTED)
  set_target_properties(TP::nng PROPERTIES IMPORTED_LOCATION "${NNG_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${NNG_INCLUDE_DIR}" INTERFACE_LINK_LIBRARIES Threads::Threads)
endif()
