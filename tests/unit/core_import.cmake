# Unit tests for core's importers (device plugin, DRA), read through the
# CLI's libyaml reader (cli/yamldoc.c) as `gpuslice import` reads them.
gs_add_unit_test(test_import SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_import.c
                 ${CMAKE_SOURCE_DIR}/cli/yamldoc.c
                 LIBS gs_core PkgConfig::YAML)
target_include_directories(test_import PRIVATE ${CMAKE_SOURCE_DIR}/cli)
target_compile_definitions(test_import PRIVATE
  GS_IMPORT_DATA="${CMAKE_SOURCE_DIR}/tests/data/import")
