# Integration tests of the simulated node: `gpuslice sim` and the workload
# kit on the sim's libcuda.so.1 (skipped, 77, until the workloads exist).
gs_add_shell_test(sim_cli_manages_the_simulated_node
                  tests/integration/sim/cli_manages_the_simulated_node.sh
                  LABELS asan TIMEOUT 120)
gs_add_shell_test(sim_workloads_run_on_the_sim
                  tests/integration/sim/workloads_run_on_the_sim.sh
                  TIMEOUT 180)
set_tests_properties(sim_workloads_run_on_the_sim PROPERTIES
                     SKIP_RETURN_CODE 77)
# The PTX interpreter's conformance tests (exec.cmake).
include(${CMAKE_CURRENT_LIST_DIR}/exec.cmake)
