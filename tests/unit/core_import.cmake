# Unit tests for core's importers (device plugin, DRA), read through
# core's YAML reader (gs_core_yaml, gs/yamldoc.h) as `gpuslice import`
# reads them.
gs_add_unit_test(test_import SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_import.c
                 LIBS gs_core_yaml)
target_compile_definitions(test_import PRIVATE
  GS_IMPORT_DATA="${CMAKE_SOURCE_DIR}/tests/data/import")
# What `import --k8s` is told: blocks, clients, rewritten selectors, every
# claim of a file; and embedded YAML's line offset.
gs_add_unit_test(test_import_k8s SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_import_k8s.c
                 LIBS gs_core_yaml)
