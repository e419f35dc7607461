# Unit tests for the trace replay (core/trace_*.c, core/policy_*.c) and its
# CSV reader (cli/trace_csv.c, compiled in here: it belongs to the CLI).
# Reference data: tests/data/trace/ (see its README.md).
foreach(t test_trace test_trace_csv test_trace_policies test_trace_scorer)
  gs_add_unit_test(${t} SOURCES ${CMAKE_CURRENT_LIST_DIR}/${t}.c
                   ${CMAKE_SOURCE_DIR}/cli/trace_csv.c LIBS gs_core m)
  target_include_directories(${t} PRIVATE ${CMAKE_SOURCE_DIR}/cli
                             ${CMAKE_SOURCE_DIR}/core)
  target_compile_definitions(${t} PRIVATE
    GS_TRACE_TEST_DATA="${CMAKE_SOURCE_DIR}/tests/data/trace")
endforeach()
