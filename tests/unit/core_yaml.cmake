# Unit tests for the one YAML reader (core/yaml/yamldoc.c, gs_core_yaml):
# the document tree it builds and its errors with file and line.
gs_add_unit_test(test_yamldoc SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_yamldoc.c
                 LIBS gs_core_yaml)
