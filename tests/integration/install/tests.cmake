# tests/integration/install: what `cmake --install`, the systemd unit and
# the Debian packages give a node (docs/install.md).
gs_add_shell_test(install_tree_runs_without_build_tree
  tests/integration/install/install_tree_runs_without_build_tree.sh
  LABELS install TIMEOUT 180)
gs_add_shell_test(systemd_unit_verifies
  tests/integration/install/systemd_unit_verifies.sh
  LABELS install TIMEOUT 120)
gs_add_shell_test(daemon_notifies_ready_and_reloads
  tests/integration/install/daemon_notifies_ready_and_reloads.sh
  LABELS install TIMEOUT 120)
set_tests_properties(install_tree_runs_without_build_tree systemd_unit_verifies
  daemon_notifies_ready_and_reloads PROPERTIES SKIP_RETURN_CODE 77)
gs_add_shell_test(mps_daemons_stop_or_are_adopted
  tests/integration/install/mps_daemons_stop_or_are_adopted.sh
  LABELS install TIMEOUT 120)
set_tests_properties(mps_daemons_stop_or_are_adopted PROPERTIES SKIP_RETURN_CODE 77)
# Builds the packages once per input hash (~/.cache/gpuslice/deb-<hash>):
# minutes the first time on two cores, seconds after.
gs_add_shell_test(deb_installs_runs_and_purges
  tests/integration/install/deb_installs_runs_and_purges.sh
  LABELS install TIMEOUT 1200)
set_tests_properties(deb_installs_runs_and_purges PROPERTIES SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
gs_add_shell_test(top_never_shows_more_than_the_gpu
  tests/integration/install/top_never_shows_more_than_the_gpu.sh
  LABELS install TIMEOUT 60)
gs_add_shell_test(daemon_runs_with_state_dir_as_run_dir
  tests/integration/install/daemon_runs_with_state_dir_as_run_dir.sh
  LABELS install TIMEOUT 60)
set_tests_properties(daemon_runs_with_state_dir_as_run_dir PROPERTIES SKIP_RETURN_CODE 77)
gs_add_shell_test(doctor_reports_the_node
  tests/integration/install/doctor_reports_the_node.sh
  LABELS install TIMEOUT 120)
set_tests_properties(top_never_shows_more_than_the_gpu doctor_reports_the_node
  PROPERTIES SKIP_RETURN_CODE 77)
gs_add_shell_test(gpu_stage_runs_the_check_alone
  tests/integration/install/gpu_stage_runs_the_check_alone.sh
  LABELS install TIMEOUT 240)
set_tests_properties(gpu_stage_runs_the_check_alone PROPERTIES SKIP_RETURN_CODE 77)
# Builds the packages and the image once per input hash (~/.cache/gpuslice),
# minutes the first time, seconds after; needs the Debian archive.
gs_add_shell_test(image_entrypoints_run_on_the_sim
  tests/integration/install/image_entrypoints_run_on_the_sim.sh
  LABELS install TIMEOUT 1500)
set_tests_properties(image_entrypoints_run_on_the_sim PROPERTIES SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
