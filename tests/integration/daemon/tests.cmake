# Integration tests of gpusliced (daemon/) and the CLI commands on it, on
# the simulated node. gs-daemon-loadgen drives concurrent clients for the
# crash test and the benchmark (scripts/bench.sh).
add_executable(gs-daemon-loadgen ${CMAKE_CURRENT_LIST_DIR}/loadgen.c)
set_target_properties(gs-daemon-loadgen PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
target_link_libraries(gs-daemon-loadgen PRIVATE gs_client gs_region gs_common
                      PkgConfig::JANSSON Threads::Threads)
add_executable(gs-daemon-bypass ${CMAKE_CURRENT_LIST_DIR}/bypass.c)
set_target_properties(gs-daemon-bypass PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
target_link_libraries(gs-daemon-bypass PRIVATE ${CMAKE_DL_LIBS})
add_executable(gs-daemon-lock-holder ${CMAKE_CURRENT_LIST_DIR}/lock_holder.c)
set_target_properties(gs-daemon-lock-holder PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
target_include_directories(gs-daemon-lock-holder PRIVATE ${CMAKE_SOURCE_DIR}/region)
target_link_libraries(gs-daemon-lock-holder PRIVATE Threads::Threads)
gs_add_shell_test(daemon_api_answers_every_endpoint_and_rejects_bad_requests
                  tests/integration/daemon/api_contract.sh LABELS asan TIMEOUT 180)
gs_add_shell_test(daemon_restart_after_kill9_keeps_exactly_the_acknowledged_slices
                  tests/integration/daemon/crash_recovery.sh TIMEOUT 300)
gs_add_shell_test(daemon_watchdog_catches_a_tenant_allocating_around_the_shim
                  tests/integration/daemon/watchdog_bypass.sh TIMEOUT 180)
gs_add_shell_test(daemon_quotas_admit_borrow_and_reclaim_the_right_slice
                  tests/integration/daemon/quota_reclaim.sh LABELS asan TIMEOUT 180)
gs_add_shell_test(daemon_metrics_parse_as_prometheus_text_with_documented_names
                  tests/integration/daemon/metrics_text.sh LABELS asan TIMEOUT 120)
gs_add_shell_test(daemon_users_see_and_change_only_their_own_slices
                  tests/integration/daemon/non_admin.sh TIMEOUT 120)
gs_add_shell_test(daemon_restart_reconciles_slices_with_what_still_runs
                  tests/integration/daemon/recovery.sh TIMEOUT 180)
gs_add_shell_test(daemon_restart_carries_on_a_mig_create_cut_short
                  tests/integration/daemon/mig_resume.sh TIMEOUT 120)
gs_add_shell_test(daemon_xid_faults_mark_the_culprit_and_mps_neighbours
                  tests/integration/daemon/faults.sh TIMEOUT 180)
gs_add_shell_test(daemon_ledger_reports_usage_and_costs_timeslice_and_tcp
                  tests/integration/daemon/ledger_tcp.sh TIMEOUT 180)
gs_add_shell_test(daemon_refuses_to_start_without_a_gpu_unless_asked_for_sim
                  tests/integration/daemon/no_sim_fallback.sh LABELS asan TIMEOUT 120)
gs_add_shell_test(daemon_answers_while_a_tenant_holds_region_locks
                  tests/integration/daemon/freeze.sh LABELS asan TIMEOUT 120)
gs_add_shell_test(daemon_create_fails_closed_when_the_region_cannot_be_written
                  tests/integration/daemon/create_fails_closed.sh LABELS asan TIMEOUT 120)
gs_add_shell_test(daemon_slice_labels_persist_across_restart_and_show_in_metrics
                  tests/integration/daemon/labels.sh LABELS asan TIMEOUT 120)
gs_add_shell_test(daemon_slice_compute_mode_share_reaches_the_region_limits
                  tests/integration/daemon/compute_mode.sh LABELS asan TIMEOUT 120)
gs_add_shell_test(daemon_ledger_resumes_after_a_restart_without_counting_twice
                  tests/integration/daemon/ledger_restart.sh TIMEOUT 120)
gs_add_shell_test(daemon_auto_mode_says_how_it_chose
                  tests/integration/daemon/auto_mode_why.sh LABELS asan TIMEOUT 120)
gs_add_shell_test(daemon_mps_slice_is_ready_once_its_server_runs
                  tests/integration/daemon/mps_ready.sh LABELS asan TIMEOUT 120)
gs_add_shell_test(daemon_one_user_cannot_hold_the_api_with_idle_connections
                  tests/integration/daemon/conn_flood.sh TIMEOUT 180)
gs_add_shell_test(daemon_default_user_quota_caps_one_users_slices_and_memory
                  tests/integration/daemon/user_quota.sh LABELS asan TIMEOUT 120)
gs_add_shell_test(daemon_state_db_is_private_and_tenant_metrics_show_only_their_slices
                  tests/integration/daemon/privacy.sh TIMEOUT 120)
gs_add_shell_test(daemon_refuses_a_second_daemon_an_empty_or_foreign_db_and_a_bad_row
                  tests/integration/daemon/startup_safety.sh LABELS asan TIMEOUT 180)
gs_add_shell_test(demo_runs_its_honest_slices_without_the_daemon_acting_on_them
                  tests/integration/daemon/demo_slices.sh TIMEOUT 180)
set_tests_properties(demo_runs_its_honest_slices_without_the_daemon_acting_on_them
                     PROPERTIES RUN_SERIAL TRUE)
gs_add_shell_test(daemon_turns_follow_weights_and_priority_under_the_arbiter
                  tests/integration/daemon/arbiter.sh TIMEOUT 180)
set_tests_properties(daemon_turns_follow_weights_and_priority_under_the_arbiter
                     PROPERTIES RUN_SERIAL TRUE)
set_tests_properties(
  daemon_turns_follow_weights_and_priority_under_the_arbiter
  daemon_state_db_is_private_and_tenant_metrics_show_only_their_slices
  daemon_refuses_a_second_daemon_an_empty_or_foreign_db_and_a_bad_row
  daemon_one_user_cannot_hold_the_api_with_idle_connections
  daemon_default_user_quota_caps_one_users_slices_and_memory
  daemon_slice_compute_mode_share_reaches_the_region_limits
  daemon_auto_mode_says_how_it_chose
  daemon_mps_slice_is_ready_once_its_server_runs
  daemon_ledger_resumes_after_a_restart_without_counting_twice
  daemon_slice_labels_persist_across_restart_and_show_in_metrics
  daemon_create_fails_closed_when_the_region_cannot_be_written
  daemon_answers_while_a_tenant_holds_region_locks
  daemon_api_answers_every_endpoint_and_rejects_bad_requests
  daemon_restart_after_kill9_keeps_exactly_the_acknowledged_slices
  daemon_watchdog_catches_a_tenant_allocating_around_the_shim
  daemon_quotas_admit_borrow_and_reclaim_the_right_slice
  daemon_metrics_parse_as_prometheus_text_with_documented_names
  daemon_users_see_and_change_only_their_own_slices
  daemon_restart_reconciles_slices_with_what_still_runs
  daemon_xid_faults_mark_the_culprit_and_mps_neighbours
  daemon_ledger_reports_usage_and_costs_timeslice_and_tcp
  daemon_refuses_to_start_without_a_gpu_unless_asked_for_sim
  PROPERTIES SKIP_RETURN_CODE 77)
gs_add_shell_test(run_joins_a_daemon_slice_with_its_env_cap_and_attachment
                  tests/integration/daemon/run_joins_daemon_slice.sh TIMEOUT 120)
# Uses gs-k8s-xid (tests/integration/k8s_api) to post Xids; skipped (77)
# in a build without it.
gs_add_shell_test(daemon_gpu_health_follows_gpu_xids_not_application_xids
                  tests/integration/daemon/gpu_health.sh LABELS asan TIMEOUT 120)
set_tests_properties(daemon_gpu_health_follows_gpu_xids_not_application_xids
                     PROPERTIES SKIP_RETURN_CODE 77)
gs_add_shell_test(daemon_frag_placement_keeps_room_for_the_demand_seen
                  tests/integration/daemon/placement_demand.sh LABELS asan TIMEOUT 180)
set_tests_properties(daemon_frag_placement_keeps_room_for_the_demand_seen
                     PROPERTIES SKIP_RETURN_CODE 77)
# Needs gs-burn, the shim and the simulated libcuda; skipped (77) without.
gs_add_shell_test(daemon_mps_slice_is_billed_in_sm_time
                  tests/integration/daemon/mps_sm_time.sh TIMEOUT 180)
set_tests_properties(daemon_mps_slice_is_billed_in_sm_time
                     PROPERTIES SKIP_RETURN_CODE 77)
gs_add_shell_test(daemon_swap_oversubscription_admits_to_the_ratio_and_refuses_past_it
                  tests/integration/daemon/swap_oversubscribe.sh TIMEOUT 120)
