# The node's admission decision (core/admission.c): behaviour and two
# brute-force references (placement, reclaim victims).
gs_add_unit_test(test_admission
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_admission.c LIBS gs_core)
