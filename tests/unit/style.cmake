# The tree's shape (issue #24, docs/architecture.md), checked on every run:
# messages on one source line, no product file over 1,500 lines, no circle
# of files (calls read from the build's objects, so it runs after the build).
add_test(NAME product_messages_stay_on_one_source_line
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/scripts/check-literals.py ${CMAKE_SOURCE_DIR})
add_test(NAME no_product_file_is_over_1500_lines
         COMMAND bash ${CMAKE_SOURCE_DIR}/scripts/check-sizes.sh ${CMAKE_SOURCE_DIR})
add_test(NAME no_two_product_files_call_each_other
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/scripts/check-circles.py ${CMAKE_BINARY_DIR})
set_tests_properties(product_messages_stay_on_one_source_line
                     no_product_file_is_over_1500_lines
                     no_two_product_files_call_each_other
                     PROPERTIES LABELS "unit;style" TIMEOUT 120)
