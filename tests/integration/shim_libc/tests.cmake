# Where libgpuslice.so loads: its glibc symbol versions (nothing newer than
# GLIBC_2.17), the workload kit under Debian bullseye's glibc 2.31 with the
# cap enforced, and the musl build under a musl program. Label "shim_libc".
# The bullseye root is bootstrapped once with mmdebstrap into
# ~/.cache/gpuslice/ (the test skips, 77, when it cannot be); the musl test
# skips without musl-gcc.
gs_add_shell_test(shim_needs_nothing_newer_than_glibc_2_17
                  tests/integration/shim_libc/shim_needs_nothing_newer_than_glibc_2_17.sh
                  LABELS shim_libc TIMEOUT 60)
set_tests_properties(shim_needs_nothing_newer_than_glibc_2_17 PROPERTIES
                     SKIP_RETURN_CODE 77)
