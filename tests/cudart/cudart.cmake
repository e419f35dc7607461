# tests/cudart: ordinary CUDA-runtime programs (cudart_probe.cu) built with
# nvcc at build time, four ways: static and shared cudart, nvcc's default
# target and -arch=sm_90, and run on the simulated GPU (the sim's
# libcuda.so.1 answers the runtime's export tables) and under `gpuslice
# run`. Included by tests/unit/cudart.cmake.
#
# Without nvcc the build says so and the tests exit 77 (reported skipped).
# In the ASan build the programs (uninstrumented, like any nvcc program)
# get the sanitizer runtime preloaded so the instrumented sim can load;
# the tests that also preload the (uninstrumented) shim are not labelled
# asan, as in tests/integration/shim.
find_program(GS_NVCC_CUDART nvcc HINTS ${CUDA_HOME}/bin)
set(GS_CUDART_OUT ${CMAKE_BINARY_DIR}/tests/cudart)
set(GS_CUDART_SRC ${CMAKE_CURRENT_LIST_DIR}/cudart_probe.cu)
if(GS_NVCC_CUDART)
  set(GS_CUDART_BINS "")
  foreach(spec
      "static|-cudart=static"
      "shared|-cudart=shared"
      "static-sm90|-cudart=static -arch=sm_90"
      "shared-sm90|-cudart=shared -arch=sm_90")
    string(REPLACE "|" ";" parts "${spec}")
    list(GET parts 0 kind)
    list(GET parts 1 f)
    separate_arguments(flags UNIX_COMMAND "${f}")
    set(out ${GS_CUDART_OUT}/gs-cudart-${kind})
    add_custom_command(
      OUTPUT ${out}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${GS_CUDART_OUT}
      # -rpath: the shared variants find libcudart.so.13 in the toolkit
      COMMAND ${GS_NVCC_CUDART} ${flags} -Xlinker -rpath=${CUDA_HOME}/lib64
              -o ${out} ${GS_CUDART_SRC} -lpthread
      DEPENDS ${GS_CUDART_SRC}
      COMMENT "nvcc: cudart test program gs-cudart-${kind}"
      VERBATIM)
    list(APPEND GS_CUDART_BINS ${out})
  endforeach()
  # The study's small batch job as a cudart program (gs-matmul's flags
  # and output), static cudart as nvcc links by default.
  set(out ${GS_CUDART_OUT}/gs-cudart-matmul)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${GS_CUDART_OUT}
    COMMAND ${GS_NVCC_CUDART} -o ${out}
            ${CMAKE_CURRENT_LIST_DIR}/cudart_matmul.cu
    DEPENDS ${CMAKE_CURRENT_LIST_DIR}/cudart_matmul.cu
    COMMENT "nvcc: cudart test program gs-cudart-matmul"
    VERBATIM)
  list(APPEND GS_CUDART_BINS ${out})
  # Graph memory nodes under the cap (cudart_graphmem.cu).
  set(out ${GS_CUDART_OUT}/gs-cudart-graphmem)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${GS_CUDART_OUT}
    COMMAND ${GS_NVCC_CUDART} -o ${out}
            ${CMAKE_CURRENT_LIST_DIR}/cudart_graphmem.cu
    DEPENDS ${CMAKE_CURRENT_LIST_DIR}/cudart_graphmem.cu
    COMMENT "nvcc: cudart test program gs-cudart-graphmem"
    VERBATIM)
  list(APPEND GS_CUDART_BINS ${out})
  add_custom_target(gs_cudart_programs ALL DEPENDS ${GS_CUDART_BINS})
else()
  message(STATUS "nvcc not found under ${CUDA_HOME}/bin: the cudart tests "
                 "(tests/cudart) will be reported as skipped")
endif()

set(GS_CUDART_ENV "")
  if(GS_SANITIZE)
  execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libasan.so
                  OUTPUT_VARIABLE _asan OUTPUT_STRIP_TRAILING_WHITESPACE)
  set(GS_CUDART_ENV "GS_ASAN_PRELOAD=${_asan}")
endif()
set(_t tests/cudart)
gs_add_shell_test(cudart_programs_run_on_the_sim
                  ${_t}/programs_run_on_the_sim.sh LABELS asan TIMEOUT 300)
set_property(TEST cudart_programs_run_on_the_sim APPEND PROPERTY
             ENVIRONMENT "${GS_CUDART_ENV}")
foreach(t memory_cap_holds_for_every_cudart_allocation
          graph_memory_is_charged_when_graphs_run
          compute_shares_and_priority_hold_for_cudart_programs
          study_small_batch_runs_as_a_cudart_program)
  gs_add_shell_test(cudart_${t} ${_t}/${t}.sh TIMEOUT 300)
  set_property(TEST cudart_${t} APPEND PROPERTY ENVIRONMENT
               "${GS_CUDART_ENV}")
endforeach()
set_tests_properties(cudart_programs_run_on_the_sim
  cudart_memory_cap_holds_for_every_cudart_allocation
  cudart_graph_memory_is_charged_when_graphs_run
  cudart_compute_shares_and_priority_hold_for_cudart_programs
  cudart_study_small_batch_runs_as_a_cudart_program
  PROPERTIES SKIP_RETURN_CODE 77)
# Share, latency and wall-time ratio measurements: run alone on the CI's
# 2 cores (next to the study's own test the small batch's "1 alone" took
# 1.84 s against 0.41 s, and four jobs no longer took 1.5x one).
set_tests_properties(
  cudart_compute_shares_and_priority_hold_for_cudart_programs
  cudart_study_small_batch_runs_as_a_cudart_program
  PROPERTIES RUN_SERIAL TRUE)
