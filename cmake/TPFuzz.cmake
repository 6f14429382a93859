# SPDX-License-Identifier: MIT
# TPFuzz.cmake -- the libFuzzer build (-DTP_FUZZ=ON, CC=clang, a build folder
# of its own: `make fuzz` uses build-fuzz).  Every target of the build is
# compiled with coverage for libFuzzer and with AddressSanitizer and
# UndefinedBehaviorSanitizer (an undefined behaviour is a crash, not a
# warning); tp_fuzz() links a tests/fuzz/fuzz_<name>.c against libFuzzer's
# main.  The gcc builds (build, build-asan) are untouched.
if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "TP_FUZZ needs clang (libFuzzer): configure with CC=clang "
    "in a build folder of its own")
endif()
add_compile_options(-fsanitize=fuzzer-no-link,address,undefined
  -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
add_link_options(-fsanitize=address,undefined)

# tp_fuzz(name SOURCES ... LIBS ...) builds fuzz_<name> from
# tests/fuzz/fuzz_<name>.c.
function(tp_fuzz name)
  cmake_parse_arguments(F "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(fuzz_${name} fuzz_${name}.c ${F_SOURCES})
  tp_target_defaults(fuzz_${name})
  target_link_options(fuzz_${name} PRIVATE -fsanitize=fuzzer)
  target_link_libraries(fuzz_${name} PRIVATE ${F_LIBS})
endfunction()
