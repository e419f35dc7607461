# Unit tests for core's kernel-log Xid parser (core/xidlog.c).
gs_add_unit_test(test_xidlog SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_xidlog.c
                 LIBS gs_core)
