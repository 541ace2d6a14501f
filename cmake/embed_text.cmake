# cmake -DIN=file -DOUT=header -DNAME=identifier -P embed_text.cmake
# Writes a header holding IN's text as `inline constexpr const char NAME[]`, a raw string literal, so that a
# static file (the report's HTML template) is compiled into the program.
file(READ "${IN}" text)
set(delimiter "GTPO_EMBED")
string(FIND "${text}" ")${delimiter}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw-string delimiter )${delimiter}\"")
endif()
file(WRITE "${OUT}.tmp" "// Generated from ${IN} by cmake/embed_text.cmake: do not edit.\n#pragma once\n\n"
     "inline constexpr const char ${NAME}[] = R\"${delimiter}(${text})${delimiter}\";\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
