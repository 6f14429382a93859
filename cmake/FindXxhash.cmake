# SPDX-License-Identifier: MIT
# FindXxhash.cmake -- xxHash headers; TrainParity inlines it (XXH_INLINE_ALL),
# so TP::xxhash carries only the include directory.
find_path(XXHASH_INCLUDE_DIR xxhash.h)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Xxhash REQUIRED_VARS XXHASH_INCLUDE_DIR)
if(Xxhash_FOUND AND NOT TARGET TP::xxhash)
  add_library(TP::xxhash INTERFACE IMPORTED)
  set_target_properties(TP::xxhash PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${XXHASH_INCLUDE_DIR}"
    INTERFACE_COMPILE_DEFINITIONS "XXH_INLINE_ALL")
endif()
