# SPDX-License-Identifier: MIT
# TPHelpers.cmake -- warnings, sanitizers, unit tests and file embedding.

# tp_target_defaults(target) applies the project's warnings and sanitizers.
function(tp_target_defaults target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wshadow -Wstrict-prototypes
    -Wmissing-prototypes -Wno-unused-parameter)
  if(TP_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(TP_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined -fno-omit-frame-pointer
      -fno-sanitize-recover=undefined)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR})
endfunction()

# tp_test(name SOURCES ... LIBS ...) builds tests/unit/<name>_test.c against Check
# and registers it with ctest under the label "unit".
function(tp_test name)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name}_test ${name}_test.c ${T_SOURCES})
  tp_target_defaults(${name}_test)
  target_link_libraries(${name}_test PRIVATE ${T_LIBS} TP::check Threads::Threads)
  add_test(NAME unit.${name} COMMAND ${name}_test)
  # Check's timeouts (30 s by default, a test case's own where it sets one)
  # are liveness bounds, not timings: each test takes well under a second
  # or two alone, and the multiplier keeps a busy machine from crossing them
  # while a hang still does.
  set_tests_properties(unit.${name} PROPERTIES LABELS unit TIMEOUT 300
    ENVIRONMENT "CK_DEFAULT_TIMEOUT=30;CK_TIMEOUT_MULTIPLIER=4")
endfunction()

# tp_embed(input symbol output) turns a text file into a C string constant.
function(tp_embed input symbol output)
  add_custom_command(OUTPUT ${output}
    COMMAND ${CMAKE_COMMAND} -DIN=${input} -DSYM=${symbol} -DOUT=${output}
            -P ${PROJECT_SOURCE_DIR}/cmake/embed.cmake
    DEPENDS ${input} ${PROJECT_SOURCE_DIR}/cmake/embed.cmake VERBATIM)
endfunction()
