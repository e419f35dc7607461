# Unit tests for core's placement (brute-force reference, "why" table).
gs_add_unit_test(test_placement SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_placement.c
                 LIBS gs_core)
# The demand history (core/demand.c) and the scorer it builds for `frag`.
gs_add_unit_test(test_demand SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_demand.c
                 LIBS gs_core m)
# `frag` placement follows the scorer's guard (never below FGD's best).
gs_add_unit_test(test_placement_guard
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_placement_guard.c
                 LIBS gs_core m)
