# Unit tests for the one SVG writer (bench/svg_chart.c, compiled in here):
# the seed study's bar charts and the trace replay's line chart.
gs_add_unit_test(test_svg_chart SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_svg_chart.c
                 ${CMAKE_SOURCE_DIR}/bench/svg_chart.c LIBS gs_common m)
target_include_directories(test_svg_chart PRIVATE ${CMAKE_SOURCE_DIR}/bench)
