# Integration tests of the sim's NVML, MPS control and nvidia-smi
# stand-ins (sim/nvml/, sim/tools/), driven from the shell (lib.sh). Two helper
# programs: gs-sim-nvml-probe reads and pokes the node state,
# gs-sim-nvml-alloc holds an allocation through the sim's libcuda.
add_executable(gs-sim-nvml-probe ${CMAKE_CURRENT_LIST_DIR}/probe.c)
set_target_properties(gs-sim-nvml-probe PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
target_link_libraries(gs-sim-nvml-probe PRIVATE gs_sim_nvml gs_sim_state)

add_executable(gs-sim-nvml-alloc ${CMAKE_CURRENT_LIST_DIR}/alloc_hold.c)
set_target_properties(gs-sim-nvml-alloc PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
target_include_directories(gs-sim-nvml-alloc PRIVATE ${GS_CUDA_INCLUDE})
target_link_libraries(gs-sim-nvml-alloc PRIVATE ${CMAKE_DL_LIBS})

foreach(t mps_control_round_trip mps_dead_daemon_counts_as_absent
          smi_sets_timeslice_and_answers_queries
          nvml_lists_processes_of_the_sim_driver
          nvml_delivers_xid_events)
  gs_add_shell_test(sim_nvml_${t} tests/integration/sim_nvml/${t}.sh
                    LABELS asan TIMEOUT 120)
endforeach()
