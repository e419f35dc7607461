# Unit tests for the simulated GPU's state file, timeline and driver
# (sim/). test_sim_driver and test_sim_procaddr link the sim's
# libcuda.so.1 (target cuda_sim) the way a workload does (-lcuda).
gs_add_unit_test(test_sim_state
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sim_state.c
                 LIBS gs_sim_state)
gs_add_unit_test(test_sim_procaddr
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sim_procaddr.c
                 LIBS cuda_sim ${CMAKE_DL_LIBS})
target_include_directories(test_sim_procaddr PRIVATE ${GS_CUDA_INCLUDE}
                           ${CMAKE_SOURCE_DIR}/sim/cuda)
target_compile_definitions(test_sim_procaddr PRIVATE
  GS_TEST_DATA_DIR="${CMAKE_SOURCE_DIR}/tests/data")
gs_add_unit_test(test_sim_driver
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sim_driver.c
                 LIBS cuda_sim gs_sim_state)
target_include_directories(test_sim_driver PRIVATE ${GS_CUDA_INCLUDE})
set_tests_properties(test_sim_driver PROPERTIES TIMEOUT 300)
# The sim's host<->device bus model (sim/cuda/bus.c): its table and parser
# compiled in, and a synchronous copy through the sim's libcuda.
gs_add_unit_test(test_sim_bus
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sim_bus.c
                         ${CMAKE_SOURCE_DIR}/sim/cuda/bus.c
                 LIBS cuda_sim gs_sim_state Threads::Threads)
target_include_directories(test_sim_bus PRIVATE ${GS_CUDA_INCLUDE}
                           ${CMAKE_SOURCE_DIR}/sim/cuda)

# Where the sim used to answer wrongly without an error (issue #29),
# through the driver API: runs without nvcc.
gs_add_unit_test(test_sim_truth
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sim_truth.c
                 LIBS cuda_sim gs_sim_state)
target_include_directories(test_sim_truth PRIVATE ${GS_CUDA_INCLUDE})
# The sim's sparse copies (sim/cuda/copy.c): memmove's bytes, no pages for
# zeros.
gs_add_unit_test(test_sim_copy
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sim_copy.c
                 LIBS cuda_sim gs_sim_state)
target_include_directories(test_sim_copy PRIVATE ${GS_CUDA_INCLUDE})
