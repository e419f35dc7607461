# `gpuslice bench study` (the seed study) and `make gpu-check`
# (scripts/gpu-check.sh) from the shell.
set(_st tests/integration/study)
gs_add_shell_test(bench_study_sim_quick_writes_outputs_that_follow_the_mechanisms
  ${_st}/sim_quick_study_follows_the_mechanisms.sh TIMEOUT 400)
gs_add_shell_test(bench_study_cli_rejects_bad_input_and_needs_a_gpu_or_sim
  ${_st}/cli_contract.sh LABELS asan TIMEOUT 60)
gs_add_shell_test(gpu_check_without_a_gpu_says_so_and_exits_0
  ${_st}/gpu_check_without_a_gpu.sh LABELS asan TIMEOUT 60)
gs_add_shell_test(gpu_check_sim_self_test_runs_checks_and_writes_reports
  ${_st}/gpu_check_sim_self_test.sh TIMEOUT 240)
# 77: no sim in this build / a real GPU is here (nothing to test without one).
set_tests_properties(
  bench_study_sim_quick_writes_outputs_that_follow_the_mechanisms
  gpu_check_without_a_gpu_says_so_and_exits_0
  gpu_check_sim_self_test_runs_checks_and_writes_reports
  PROPERTIES SKIP_RETURN_CODE 77)
