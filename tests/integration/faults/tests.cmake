# Fault injection (GPUSLICE_FAULT, include/gs/faultinj.h): every error
# path of gpusliced's slice creation, deletion, MIG changes and start,
# driven SQLite-style by sweep.py; the state must equal what was
# acknowledged after each.
gs_add_shell_test(daemon_state_is_exactly_what_was_acknowledged_under_injected_faults
                  tests/integration/faults/sweep.sh LABELS faults TIMEOUT 900)
set_tests_properties(
  daemon_state_is_exactly_what_was_acknowledged_under_injected_faults
  PROPERTIES SKIP_RETURN_CODE 77)

# gs-sim-tour: the parts of the simulated CUDA driver the workload kit
# does not reach (sim_tour.c), for sim_sweep.py.
add_executable(gs-sim-tour ${CMAKE_CURRENT_LIST_DIR}/sim_tour.c)
set_target_properties(gs-sim-tour PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
target_include_directories(gs-sim-tour PRIVATE ${GS_CUDA_INCLUDE})
target_link_libraries(gs-sim-tour PRIVATE ${CMAKE_DL_LIBS})

# The simulated CUDA driver's allocation and I/O sites ("sim.malloc",
# "sim.dev_alloc", "sim.dev_map", "sim.state_open", "sim.module_load",
# "sim.file_read", the NVML's "sim.nvml_state_open"; docs/testing.md), failed one call at a time under
# workload-kit programs, alone, under threads and under `gpuslice run
# --memory 1GiB`: each failure a clean CUDA error or the normal result,
# and the sim node left holding nothing (sim_sweep.py).
gs_add_shell_test(sim_driver_fails_cleanly_and_holds_nothing_under_injected_faults
                  tests/integration/faults/sim_sweep.sh LABELS faults TIMEOUT 300)
set_tests_properties(
  sim_driver_fails_cleanly_and_holds_nothing_under_injected_faults
  PROPERTIES SKIP_RETURN_CODE 77)

# The shim's and the region's allocation and I/O sites ("shim.dlopen",
# "shim.region_open", "shim.malloc", "shim.event", "region.malloc",
# "region.open", "region.create", "region.truncate", "region.map",
# "region.publish"; docs/testing.md), failed one call at a time in the
# workload's process and in `gpuslice run --memory 1GiB --compute 50`'s
# own (making the region afresh, or reusing one): each failure a clean
# error or the normal result, never over the cap, no half-made region
# file, the sim node left holding nothing, and the next run in the same
# run directory capped as before (shim_sweep.py).
gs_add_shell_test(shim_and_region_fail_closed_under_injected_faults
                  tests/integration/faults/shim_sweep.sh LABELS faults TIMEOUT 300)
set_tests_properties(
  shim_and_region_fail_closed_under_injected_faults
  PROPERTIES SKIP_RETURN_CODE 77)

# gs-fill-gpu-table: fills a region's GPU table (fill_gpu_table.c), so a
# slice's process meets a GPU that can be given no slot: refused, never
# run uncharged.
add_executable(gs-fill-gpu-table ${CMAKE_CURRENT_LIST_DIR}/fill_gpu_table.c)
set_target_properties(gs-fill-gpu-table PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
target_link_libraries(gs-fill-gpu-table PRIVATE gs_region)
gs_add_shell_test(a_gpu_without_a_region_slot_is_refused_to_a_slice
                  tests/integration/faults/a_gpu_without_a_region_slot_is_refused_to_a_slice.sh
                  LABELS faults TIMEOUT 120)
set_tests_properties(
  a_gpu_without_a_region_slot_is_refused_to_a_slice
  PROPERTIES SKIP_RETURN_CODE 77)
