# The Slurm suite: run.sh brings a local single-node Slurm 22.05 up and
# down itself and runs every case (see run.sh); `make test-slurm` runs it
# directly, and `ctest -L slurm` here. It prints "SKIP: ..." and passes
# where Slurm cannot run at all (not root, not installed).
# gs-slurm-slices lists a region's slices with their limits for the cases.
add_executable(gs-slurm-slices ${CMAKE_CURRENT_LIST_DIR}/slices_probe.c)
set_target_properties(gs-slurm-slices PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
target_link_libraries(gs-slurm-slices PRIVATE gs_region)
if(TARGET spank_gpuslice)
  gs_add_shell_test(slurm_jobs_run_in_enforced_slices
                    tests/integration/slurm/run.sh LABELS slurm TIMEOUT 600)
  set_tests_properties(slurm_jobs_run_in_enforced_slices PROPERTIES
    RUN_SERIAL TRUE SKIP_REGULAR_EXPRESSION "SKIP: ")
endif()
