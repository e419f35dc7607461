# Integration tests of the simulated node: `gpuslice sim` and the workload
# kit on the sim's libcuda.so.1 (skipped, 77, until the workloads exist).
gs_add_shell_test(sim_cli_manages_the_simulated_node
                  tests/integration/sim/cli_manages_the_simulated_node.sh
                  LABELS asan TIMEOUT 120)
gs_add_shell_test(sim_workloads_run_on_the_sim
                  tests/integration/sim/workloads_run_on_the_sim.sh
                  TIMEOUT 180)
set_tests_properties(sim_workloads_run_on_the_sim PROPERTIES
                     SKIP_RETURN_CODE 77)
# The PTX interpreter's conformance tests (exec.cmake).
include(${CMAKE_CURRENT_LIST_DIR}/exec.cmake)

# Ordinary CUDA runtime programs (progs/*.cu) built with nvcc when it is
# installed (CUDA_HOME, else /usr/local/cuda); the tests that run them
# exit 77 (skipped) without. Built once per source change, like any
# custom command output.
find_program(GS_NVCC_SIMPROGS nvcc HINTS ${CUDA_HOME}/bin /usr/local/cuda/bin)
set(GS_SIMPROGS_OUT ${CMAKE_BINARY_DIR}/tests/sim-progs)
if(GS_NVCC_SIMPROGS)
  set(_bins "")
  # name|nvcc flags (clusters need sm_90; the default target elsewhere)
  foreach(spec "multigpu|-lpthread"
               "launches|--extended-lambda -arch=sm_90"
               "graphs|-lcuda"
               "memory|-lcuda")
    string(REPLACE "|" ";" parts "${spec}")
    list(GET parts 0 p)
    list(GET parts 1 f)
    separate_arguments(flags UNIX_COMMAND "${f}")
    set(_src ${CMAKE_CURRENT_LIST_DIR}/progs/${p}.cu)
    set(_out ${GS_SIMPROGS_OUT}/gs-simprog-${p})
    add_custom_command(
      OUTPUT ${_out}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${GS_SIMPROGS_OUT}
      COMMAND ${GS_NVCC_SIMPROGS} -I${CMAKE_CURRENT_LIST_DIR}/progs
              -L${CUDA_HOME}/lib64/stubs ${flags} -o ${_out} ${_src}
      DEPENDS ${_src} ${CMAKE_CURRENT_LIST_DIR}/progs/check.h
      COMMENT "nvcc: sim test program gs-simprog-${p}"
      VERBATIM)
    list(APPEND _bins ${_out})
  endforeach()
  add_custom_target(gs_sim_programs ALL DEPENDS ${_bins})
endif()
gs_add_shell_test(sim_runtime_programs_land_on_the_device_they_chose
                  tests/integration/sim/runtime_programs_land_on_the_device_they_chose.sh
                  TIMEOUT 120)
gs_add_shell_test(sim_runtime_programs_get_the_real_drivers_answers
                  tests/integration/sim/runtime_programs_get_the_real_drivers_answers.sh
                  TIMEOUT 300)
set_tests_properties(sim_runtime_programs_land_on_the_device_they_chose
                     sim_runtime_programs_get_the_real_drivers_answers
                     PROPERTIES SKIP_RETURN_CODE 77)

# No driver entry point of the sim answers CUDA_SUCCESS having done
# nothing (a source scan; see the script for what counts as work).
add_test(NAME sim_entry_points_do_their_work_or_refuse
         COMMAND ${Python3_EXECUTABLE}
                 ${CMAKE_CURRENT_LIST_DIR}/entry_points_do_their_work.py
                 ${CMAKE_SOURCE_DIR})
set_tests_properties(sim_entry_points_do_their_work_or_refuse PROPERTIES
                     LABELS "unit" TIMEOUT 60)
