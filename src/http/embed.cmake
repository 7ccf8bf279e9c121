# embed.cmake: writes OUT, a C file defining the bytes of IN as the array NAME (NUL-ended)
# and its length NAME_len. Run at build time by src/http/ and src/dashboard/CMakeLists.txt.
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" digits)
math(EXPR bytes "${digits} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," array "${hex}")
# Bytes above 0x7f (UTF-8 text) do not fit a signed char without a cast (-Woverflow).
string(REGEX REPLACE "0x([89a-f][0-9a-f])," "(char)0x\\1," array "${array}")
file(WRITE "${OUT}" "/* Generated from ${IN} by embed.cmake. */\n#include <stddef.h>\n"
     "extern const char ${NAME}[];\nextern const size_t ${NAME}_len;\n"
     "const char ${NAME}[] = {${array}0};\nconst size_t ${NAME}_len = ${bytes};\n")
