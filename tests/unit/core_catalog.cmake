# Unit tests for core's catalog, slice spec, advisor and MIG planner
# (the other core modules register theirs in their own fragment).
gs_add_unit_test(test_catalog SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_catalog.c
                 LIBS gs_core PkgConfig::JANSSON)
target_compile_definitions(test_catalog PRIVATE
  GS_CATALOG_JSON="${CMAKE_SOURCE_DIR}/data/mig-profiles.json")
gs_add_unit_test(test_spec SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_spec.c
                 LIBS gs_core_json)
gs_add_unit_test(test_advisor SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_advisor.c
                 LIBS gs_core)
gs_add_unit_test(test_migplan SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_migplan.c
                 LIBS gs_core)
gs_add_unit_test(test_migparted SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_migparted.c
                 LIBS gs_core_yaml)

# A short libFuzzer run of every target in scripts/fuzz.sh (label fuzz;
# `make fuzz` runs them longer). Skipped (77) without clang-14/libFuzzer.
add_test(NAME fuzz_targets_survive_a_short_run
         COMMAND bash ${CMAKE_SOURCE_DIR}/scripts/fuzz.sh -t 10
                 -o ${CMAKE_BINARY_DIR}/fuzz)
set_tests_properties(fuzz_targets_survive_a_short_run PROPERTIES
                     LABELS fuzz TIMEOUT 600 SKIP_RETURN_CODE 77)
