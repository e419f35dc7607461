# Unit tests for core's swap policy (gs/swap.h).
gs_add_unit_test(test_swap SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_swap.c
                 LIBS gs_core)
# Declared oversubscription in admission (swap.oversubscribe).
gs_add_unit_test(test_swap_admission
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_swap_admission.c
                 LIBS gs_core)
