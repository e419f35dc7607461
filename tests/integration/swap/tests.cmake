# Integration tests of swap (docs/swap.md): the shim's movable memory on
# the sim. gs-swap-prog is the program whose memory is moved.
add_executable(gs-swap-prog ${CMAKE_CURRENT_LIST_DIR}/swap_prog.c)
set_target_properties(gs-swap-prog PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
target_include_directories(gs-swap-prog PRIVATE ${GS_CUDA_INCLUDE})
target_link_libraries(gs-swap-prog PRIVATE ${CMAKE_DL_LIBS})
# gs-swap-hold: holds memory with signatures, for the daemon's tests.
add_executable(gs-swap-hold ${CMAKE_CURRENT_LIST_DIR}/hold_prog.c)
set_target_properties(gs-swap-hold PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
target_include_directories(gs-swap-hold PRIVATE ${GS_CUDA_INCLUDE})
target_link_libraries(gs-swap-hold PRIVATE ${CMAKE_DL_LIBS})
# gs-swap-need-forge: a tenant's forged need, for the hostile-tenant test.
add_executable(gs-swap-need-forge ${CMAKE_CURRENT_LIST_DIR}/need_forge.c)
set_target_properties(gs-swap-need-forge PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
target_include_directories(gs-swap-need-forge PRIVATE
  ${CMAKE_SOURCE_DIR}/region ${CMAKE_SOURCE_DIR}/include)
# gs-swap-bell-ring: a tenant ringing the swap bell in a loop.
add_executable(gs-swap-bell-ring ${CMAKE_CURRENT_LIST_DIR}/bell_ring.c)
set_target_properties(gs-swap-bell-ring PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
target_include_directories(gs-swap-bell-ring PRIVATE
  ${CMAKE_SOURCE_DIR}/region ${CMAKE_SOURCE_DIR}/include)

foreach(t pointers_and_signatures_survive_a_swap_round_trip
          a_launch_while_swapped_out_waits_for_the_swap_in
          a_process_killed_mid_swap_leaves_nothing_behind
          ipc_pins_the_process_and_swap_says_why
          a_daemon_slice_swaps_and_show_reports_it
          cudart_programs_run_on_movable_memory
          daemon_swaps_idle_slices_out_so_active_ones_get_their_memory
          daemon_gives_a_high_priority_allocation_the_memory_of_a_low_priority_slice
          daemon_never_takes_swapped_contents_past_host_memory
          a_tenant_cannot_swap_out_another_tenants_slice
          a_tenant_ringing_the_swap_bell_in_a_loop_neither_burns_the_daemon_nor_delays_others
          top_shows_resident_swapped_and_promised
          daemon_restart_keeps_swap_counts_and_times
          a_quota_reclaim_parks_a_swappable_slice_and_resumes_it
          a_quota_reclaim_kills_a_swap_never_slice_and_says_why
          a_parked_slice_keeps_its_processes_waiting
          a_parked_slice_resumes_after_a_restart_with_swap_off)
  gs_add_shell_test(swap_${t} tests/integration/swap/${t}.sh TIMEOUT 180)
  set_tests_properties(swap_${t} PROPERTIES SKIP_RETURN_CODE 77)
endforeach()
include(${CMAKE_CURRENT_LIST_DIR}/gate_tests.cmake)
