# Fault injection (GPUSLICE_FAULT, include/gs/faultinj.h): every error
# path of gpusliced's slice creation, deletion, MIG changes and start,
# driven SQLite-style by sweep.py; the state must equal what was
# acknowledged after each.
gs_add_shell_test(daemon_state_is_exactly_what_was_acknowledged_under_injected_faults
                  tests/integration/faults/sweep.sh LABELS faults TIMEOUT 900)
set_tests_properties(
  daemon_state_is_exactly_what_was_acknowledged_under_injected_faults
  PROPERTIES SKIP_RETURN_CODE 77)
