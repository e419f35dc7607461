# Unit tests for core's chargeback price table.
gs_add_unit_test(test_price SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_price.c
                 LIBS gs_core m)
