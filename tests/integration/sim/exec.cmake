# The sim's PTX interpreter (sim/cuda/exec_*.c): self-checking CUDA
# programs built with nvcc at build time (-arch=sm_90 and nvcc's default
# target) that run their kernels on the sim and check the results on the
# host, and a driver-API fuzzer of single-instruction PTX kernels against
# a host reference. Included by tests.cmake. nvcc's outputs stay in the
# build directory, so reruns do not compile again; without nvcc the
# program tests exit 77 (reported skipped), the fuzzer still runs.
find_program(GS_NVCC_EXEC nvcc HINTS ${CUDA_HOME}/bin)
set(GS_EXEC_OUT ${CMAKE_BINARY_DIR}/tests/exec)
set(GS_EXEC_SRC ${CMAKE_CURRENT_LIST_DIR}/exec)
if(GS_NVCC_EXEC)
  set(GS_EXEC_BINS "")
  foreach(prog exec_basic exec_lib)
    foreach(spec "default|" "sm90|-arch=sm_90")
      string(REPLACE "|" ";" parts "${spec}")
      list(GET parts 0 kind)
      list(GET parts 1 f)
      separate_arguments(flags UNIX_COMMAND "${f}")
      set(out ${GS_EXEC_OUT}/${prog}-${kind})
      add_custom_command(
        OUTPUT ${out}
        COMMAND ${CMAKE_COMMAND} -E make_directory ${GS_EXEC_OUT}
        COMMAND ${GS_NVCC_EXEC} ${flags} -o ${out} ${GS_EXEC_SRC}/${prog}.cu
        DEPENDS ${GS_EXEC_SRC}/${prog}.cu
        COMMENT "nvcc: interpreter test program ${prog}-${kind}"
        VERBATIM)
      list(APPEND GS_EXEC_BINS ${out})
    endforeach()
  endforeach()
  add_custom_target(gs_exec_programs ALL DEPENDS ${GS_EXEC_BINS})
endif()

add_executable(gs-exec-fuzz ${GS_EXEC_SRC}/exec_fuzz.c)
target_include_directories(gs-exec-fuzz PRIVATE ${GS_CUDA_INCLUDE})
target_link_libraries(gs-exec-fuzz PRIVATE cuda_sim m)
# its references switch the FPU's rounding mode
target_compile_options(gs-exec-fuzz PRIVATE -frounding-math)
set_target_properties(gs-exec-fuzz PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${GS_EXEC_OUT})

add_executable(gs-exec-errors ${GS_EXEC_SRC}/exec_errors.c)
target_include_directories(gs-exec-errors PRIVATE ${GS_CUDA_INCLUDE})
target_link_libraries(gs-exec-errors PRIVATE cuda_sim)
set_target_properties(gs-exec-errors PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${GS_EXEC_OUT})

# make bench's `exec` section (scripts/bench.sh)
add_executable(gs-exec-bench ${GS_EXEC_SRC}/exec_bench.c)
target_include_directories(gs-exec-bench PRIVATE ${GS_CUDA_INCLUDE})
target_link_libraries(gs-exec-bench PRIVATE cuda_sim)
set_target_properties(gs-exec-bench PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${GS_EXEC_OUT})

gs_add_shell_test(sim_exec_programs_compute_right_results
                  tests/integration/sim/exec_programs_compute_right_results.sh
                  LABELS sim TIMEOUT 300)
gs_add_shell_test(sim_exec_libraries_compute_right_results
                  tests/integration/sim/exec_libraries_compute_right_results.sh
                  LABELS sim TIMEOUT 300)
gs_add_shell_test(sim_exec_single_instructions_match_the_host
                  tests/integration/sim/exec_single_instructions_match_the_host.sh
                  LABELS sim TIMEOUT 300)
gs_add_shell_test(sim_exec_unsupported_instructions_fail_the_launch
                  tests/integration/sim/exec_unsupported_instructions_fail_the_launch.sh
                  LABELS sim TIMEOUT 120)
set_tests_properties(sim_exec_programs_compute_right_results
                     sim_exec_libraries_compute_right_results PROPERTIES
                     SKIP_RETURN_CODE 77)
