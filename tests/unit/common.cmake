gs_add_unit_test(test_err SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_err.c LIBS gs_common)
gs_add_unit_test(test_faultinj SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_faultinj.c LIBS gs_common)
