# Unit tests for core's hierarchical quotas.
gs_add_unit_test(test_quota SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_quota.c
                 LIBS gs_core)
