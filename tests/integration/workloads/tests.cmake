# Integration tests for the workload programs (workloads/). All but the
# flag test run the programs against a fresh simulated node each; they
# exit 77 (skipped) when the build has no sim (build/sim/libcuda.so.1).
set(_wl tests/integration/workloads)
gs_add_shell_test(workloads_flags_are_strict_and_help_is_true
  ${_wl}/flags_are_strict_and_help_is_true.sh LABELS asan TIMEOUT 60)
gs_add_shell_test(workloads_fault_exits_nonzero_with_illegal_address
  ${_wl}/fault_exits_nonzero_with_illegal_address.sh LABELS asan TIMEOUT 120)
gs_add_shell_test(workloads_infer_and_burn_print_documented_keys
  ${_wl}/infer_and_burn_print_documented_keys.sh LABELS asan TIMEOUT 120)
gs_add_shell_test(workloads_alloc_stops_at_capacity_with_oom_for_every_api
  ${_wl}/alloc_stops_at_capacity_with_oom_for_every_api.sh TIMEOUT 180)
gs_add_shell_test(workloads_matmul_slows_down_twofold_when_sharing
  ${_wl}/matmul_slows_down_twofold_when_sharing.sh TIMEOUT 180)
set_tests_properties(
  workloads_fault_exits_nonzero_with_illegal_address
  workloads_infer_and_burn_print_documented_keys
  workloads_alloc_stops_at_capacity_with_oom_for_every_api
  workloads_matmul_slows_down_twofold_when_sharing
  PROPERTIES SKIP_RETURN_CODE 77)
# A timing comparison: keep other tests' processes off the 2 cores while
# it measures.
set_tests_properties(workloads_matmul_slows_down_twofold_when_sharing
  PROPERTIES RUN_SERIAL TRUE)
