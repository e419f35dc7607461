# Integration tests of the stop at every GPU call while swapped out
# (shim/gate.c) and of the drain before a swap-out; included by
# tests.cmake beside it, with the test of the sim's sparse copies that a
# swap relies on. gs-swap-gate-prog makes one call per request.
add_executable(gs-swap-gate-prog ${CMAKE_CURRENT_LIST_DIR}/gate_prog.c)
set_target_properties(gs-swap-gate-prog PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
target_include_directories(gs-swap-gate-prog PRIVATE ${GS_CUDA_INCLUDE})
target_link_libraries(gs-swap-gate-prog PRIVATE ${CMAKE_DL_LIBS})

# gs-swap-launch-storm: threads launching into their memory while it is
# swapped out and in (launch_storm_prog.c).
add_executable(gs-swap-launch-storm ${CMAKE_CURRENT_LIST_DIR}/launch_storm_prog.c)
set_target_properties(gs-swap-launch-storm PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
target_include_directories(gs-swap-launch-storm PRIVATE ${GS_CUDA_INCLUDE})
target_link_libraries(gs-swap-launch-storm PRIVATE ${CMAKE_DL_LIBS}
                      Threads::Threads)

# gs-swap-sparse-prog checks the sim's sparse copies (sim/cuda/copy.c).
add_executable(gs-swap-sparse-prog ${CMAKE_CURRENT_LIST_DIR}/sparse_prog.c)
set_target_properties(gs-swap-sparse-prog PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
target_include_directories(gs-swap-sparse-prog PRIVATE ${GS_CUDA_INCLUDE})
target_link_libraries(gs-swap-sparse-prog PRIVATE cuda_sim)

foreach(t every_gpu_call_waits_while_swapped_out
          a_swap_out_waits_for_work_in_flight
          launches_racing_swaps_never_touch_moving_memory
          copies_racing_swaps_never_touch_moving_memory
          sparse_copies_are_exact_and_keep_holes
          gpu_check_swap_round_trip_runs_on_the_sim)
  gs_add_shell_test(swap_${t} tests/integration/swap/${t}.sh TIMEOUT 180)
  set_tests_properties(swap_${t} PROPERTIES SKIP_RETURN_CODE 77)
endforeach()
