# Unit tests for the trace replay (bench/trace_*.c, bench/policy_*.c), its
# CSV reader (bench/trace_csv.c) and gpuslice's scorer (core/frag/).
# Reference data: tests/data/trace/ (see its README.md).
foreach(t test_trace test_trace_csv test_trace_policies test_trace_scorer
          test_frag_guard)
  gs_add_unit_test(${t} SOURCES ${CMAKE_CURRENT_LIST_DIR}/${t}.c
                   LIBS gs_bench gs_core m)
  target_compile_definitions(${t} PRIVATE
    GS_TRACE_TEST_DATA="${CMAKE_SOURCE_DIR}/tests/data/trace")
endforeach()
