gs_add_unit_test(test_err SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_err.c LIBS gs_common)
# The helper-program runner and the MPS control driver (common/cmd.c, mps.c).
gs_add_unit_test(test_mps SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_mps.c LIBS gs_common)
gs_add_unit_test(test_faultinj SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_faultinj.c LIBS gs_common)
# The ELF reader: which libc a program runs on (common/elfinfo.c).
gs_add_unit_test(test_elfinfo SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_elfinfo.c LIBS gs_common)
# Paths another user could have planted a link at (common/safepath.c).
gs_add_unit_test(test_safepath SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_safepath.c LIBS gs_common)
