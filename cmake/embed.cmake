# SPDX-License-Identifier: MIT
# embed.cmake -- script mode: writes OUT, a C file defining SYM as the text of IN.
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" n)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
math(EXPR len "${n} / 2")
file(WRITE "${OUT}" "/* generated from ${IN} by embed.cmake; do not edit */\n#include <stddef.h>\n"
  "const char ${SYM}[] = {${bytes}0x00};\nconst size_t ${SYM}_len = ${len};\n")
