# embed-ptx.cmake - turns kernels.ptx into a C source holding it as a
# NUL-terminated string, so the programs carry their kernels with them.
# Run as a script: cmake -DIN=kernels.ptx -DOUT=kernels_ptx.c -P embed-ptx.cmake
# Bytes are written as hex initialisers, which needs nothing beyond CMake
# (no xxd) and sidesteps C's limits on string-literal length.
if(NOT DEFINED IN OR NOT DEFINED OUT)
  message(FATAL_ERROR "embed-ptx: pass -DIN=<ptx> -DOUT=<c file>")
endif()
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" nhex)
if(nhex EQUAL 0)
  message(FATAL_ERROR "embed-ptx: ${IN} is empty")
endif()
# Sixteen bytes a line, each as 0xNN.
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
# (CMake's regex has no {n}, so the sixteen are spelled out.)
string(REPEAT "0x..," 16 line)
string(REGEX REPLACE "(${line})" "\\1\n\t" bytes "${bytes}")
file(WRITE "${OUT}.tmp"
  "/* Generated from kernels.ptx by workloads/embed-ptx.cmake; do not edit. */\n"
  "#include \"ptx.h\"\n\n"
  "const char gs_kernels_ptx[] = {\n\t${bytes}0x00\n};\n")
file(RENAME "${OUT}.tmp" "${OUT}")
