# Unit tests for core's placement (brute-force reference, "why" table).
gs_add_unit_test(test_placement SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_placement.c
                 LIBS gs_core)
