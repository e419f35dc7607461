# Unit tests for the workload kit's pure helpers (workloads/): flag and
# size parsing, the one-line JSON output, exact percentiles.
gs_add_unit_test(test_workloads_flags
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_workloads_flags.c
                 LIBS gs_wl_util)
gs_add_unit_test(test_workloads_jline
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_workloads_jline.c
                 LIBS gs_wl_util PkgConfig::JANSSON)
gs_add_unit_test(test_workloads_pctl
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_workloads_pctl.c
                 LIBS gs_wl_util)
