# Integration tests of libgpuslice.so and `gpuslice run`, each against a
# fresh simulated node and run directory (lib.sh). They exit 77 (skipped)
# when the build has no sim. Two helpers: gs-shim-probe prints what a
# program sees of GPU memory (CUDA and NVML); gs-region-probe prints a
# slice's books without reaping anything; gs-shim-launcher keeps the GPU
# busy through one launch API (Ex, cooperative, graph). Not labelled asan: the shim is
# built without sanitizers (it is preloaded into uninstrumented programs).
add_executable(gs-shim-probe ${CMAKE_CURRENT_LIST_DIR}/mem_probe.c)
set_target_properties(gs-shim-probe PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
target_include_directories(gs-shim-probe PRIVATE ${GS_CUDA_INCLUDE})
target_link_libraries(gs-shim-probe PRIVATE ${CMAKE_DL_LIBS})

add_executable(gs-shim-launcher ${CMAKE_CURRENT_LIST_DIR}/launch_kinds.c)
set_target_properties(gs-shim-launcher PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
target_include_directories(gs-shim-launcher PRIVATE ${GS_CUDA_INCLUDE})
target_link_libraries(gs-shim-launcher PRIVATE ${CMAKE_DL_LIBS})

add_executable(gs-shim-ctxswitch ${CMAKE_CURRENT_LIST_DIR}/ctx_switch.c)
set_target_properties(gs-shim-ctxswitch PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
target_include_directories(gs-shim-ctxswitch PRIVATE ${GS_CUDA_INCLUDE})
target_link_libraries(gs-shim-ctxswitch PRIVATE ${CMAKE_DL_LIBS})

add_executable(gs-region-probe ${CMAKE_CURRENT_LIST_DIR}/region_probe.c)
set_target_properties(gs-region-probe PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
target_link_libraries(gs-region-probe PRIVATE gs_region)

# The getprocaddress guard: a fake newer driver over the sim.
add_library(gs-fake-newer-cuda SHARED
            ${CMAKE_CURRENT_LIST_DIR}/fake_newer_driver.c)
set_target_properties(gs-fake-newer-cuda PROPERTIES
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
target_include_directories(gs-fake-newer-cuda PRIVATE ${GS_CUDA_INCLUDE})
target_link_libraries(gs-fake-newer-cuda PRIVATE -Wl,--no-as-needed
                      cuda_sim ${CMAKE_DL_LIBS})
add_executable(gs-gpa-guard-probe ${CMAKE_CURRENT_LIST_DIR}/gpa_guard_probe.c)
set_target_properties(gs-gpa-guard-probe PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
target_include_directories(gs-gpa-guard-probe PRIVATE ${GS_CUDA_INCLUDE})
target_link_libraries(gs-gpa-guard-probe PRIVATE ${CMAKE_DL_LIBS})

# The capture-state question: a counting driver over the sim.
add_library(gs-capture-counter SHARED
            ${CMAKE_CURRENT_LIST_DIR}/capture_counter.c)
set_target_properties(gs-capture-counter PROPERTIES
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
target_include_directories(gs-capture-counter PRIVATE ${GS_CUDA_INCLUDE})
target_link_libraries(gs-capture-counter PRIVATE -Wl,--no-as-needed
                      cuda_sim ${CMAKE_DL_LIBS})
add_executable(gs-capture-probe ${CMAKE_CURRENT_LIST_DIR}/capture_probe.c)
set_target_properties(gs-capture-probe PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
target_include_directories(gs-capture-probe PRIVATE ${GS_CUDA_INCLUDE})
target_link_libraries(gs-capture-probe PRIVATE ${CMAKE_DL_LIBS})

foreach(t run_cli_contract shim_is_a_silent_guest
          stream_ordered_allocations_ask_no_capture_state_before_a_capture
          getprocaddress_passes_newer_variants_through
          memory_cap_holds_for_every_allocation_api
          killed_process_returns_its_share_within_a_second
          sixteen_processes_share_one_cap
          compute_shares_follow_20_30_50
          short_kernel_shares_keep_the_gpu_busy
          long_kernel_turns_keep_the_gpu_busy
          limited_launches_are_charged_the_gpu_time_they_use
          plain_slice_leaves_the_scheduler_once_limits_are_gone
          compute_limit_holds_through_getprocaddress
          compute_limit_covers_every_launch_api
          high_priority_keeps_its_latency_next_to_low_burn
          fire_and_forget_launches_are_throttled_and_billed
          refuses_gpu_work_without_its_slice
          mps_slices_run_their_kernels_at_once
          mps_slice_memory_cap_holds
          mps_strict_slice_alone_stays_within_its_share
          mps_fault_reaches_every_client_as_an_error
          mode_auto_picks_mps_or_turns_and_says_why
          any_kernel_length_is_charged_its_gpu_time
          a_context_switch_ends_the_launch_lease
          racing_threads_hold_one_cap_and_a_killed_racer_is_given_back_once
          a_light_server_alone_wakes_nobody
          an_mps_slices_syncs_settle_late_and_book_every_kernel)
  gs_add_shell_test(shim_${t} tests/integration/shim/${t}.sh TIMEOUT 180)
  set_tests_properties(shim_${t} PROPERTIES SKIP_RETURN_CODE 77)
endforeach()
# Share and latency measurements: keep other tests' processes off the
# 2 cores of CI while they measure (a starved launcher under-uses its
# share; that is the host, not the shim).
set_tests_properties(shim_compute_shares_follow_20_30_50
  shim_short_kernel_shares_keep_the_gpu_busy
  shim_long_kernel_turns_keep_the_gpu_busy
  shim_limited_launches_are_charged_the_gpu_time_they_use
  shim_any_kernel_length_is_charged_its_gpu_time
  shim_compute_limit_holds_through_getprocaddress
  shim_compute_limit_covers_every_launch_api
  shim_high_priority_keeps_its_latency_next_to_low_burn
  shim_fire_and_forget_launches_are_throttled_and_billed
  shim_mps_strict_slice_alone_stays_within_its_share
  shim_mps_slices_run_their_kernels_at_once
  shim_plain_slice_leaves_the_scheduler_once_limits_are_gone
  shim_mode_auto_picks_mps_or_turns_and_says_why
  PROPERTIES RUN_SERIAL TRUE)
