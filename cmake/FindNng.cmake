# SPDX-License-Identifier: MIT
# FindNng.cmake -- nng through its CMake package (Debian's libnng-dev ships no
# pkg-config file); provides TP::nng linked to the shared library.
find_package(nng CONFIG QUIET)
if(TARGET nng::nng)
  get_target_property(_nng_inc nng::nng INTERFACE_INCLUDE_DIRECTORIES)
  find_library(NNG_SHARED_LIBRARY NAMES libnng.so nng HINTS ${_nng_inc}/../lib)
endif()
if(NOT NNG_SHARED_LIBRARY)
  find_library(NNG_SHARED_LIBRARY NAMES libnng.so nng)
endif()
find_path(NNG_INCLUDE_DIR nng/nng.h)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Nng REQUIRED_VARS NNG_SHARED_LIBRARY NNG_INCLUDE_DIR)
if(Nng_FOUND AND NOT TARGET TP::nng)
  add_library(TP::nng UNKNOWN IMPORTED)
  set_target_properties(TP::nng PROPERTIES IMPORTED_LOCATION "${NNG_SHARED_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${NNG_INCLUDE_DIR}")
endif()
