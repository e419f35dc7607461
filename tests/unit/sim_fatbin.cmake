# Unit tests of the sim's fatbinary reader (sim/cuda/fatbin.c), its cost model
# of unknown kernels (sim/cuda/costmodel.c) and loading nvcc-built fatbins
# through the sim's libcuda (sim/cuda/module.c). The fatbins are made at build
# time by nvcc from sim_fatbin_kernels.cu: default (zstd PTX + sm_75
# SASS), --compress-mode=speed (LZ4), =none, two PTX versions, SASS only.
# Without nvcc the build says so and the fatbin tests exit 77 (skipped).
find_program(GS_NVCC_FATBIN nvcc HINTS ${CUDA_HOME}/bin)
set(GS_FATBIN_DIR ${CMAKE_BINARY_DIR}/tests/fatbin)
set(GS_FATBIN_SRC ${CMAKE_CURRENT_LIST_DIR}/sim_fatbin_kernels.cu)
set(GS_FATBIN_FILES "")
if(GS_NVCC_FATBIN)
  foreach(spec
      "zstd|"
      "lz4|--compress-mode=speed"
      "none|--compress-mode=none"
      "ptx2|-gencode=arch=compute_75,code=compute_75 -gencode=arch=compute_90,code=compute_90"
      "sass|-gencode=arch=compute_90,code=sm_90")
    string(REPLACE "|" ";" parts "${spec}")
    list(GET parts 0 kind)
    list(LENGTH parts nparts)
    set(flags "")
    if(nparts GREATER 1)
      list(GET parts 1 f)
      separate_arguments(flags UNIX_COMMAND "${f}")
    endif()
    set(out ${GS_FATBIN_DIR}/k_${kind}.fatbin)
    add_custom_command(
      OUTPUT ${out}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${GS_FATBIN_DIR}
      COMMAND ${GS_NVCC_FATBIN} -fatbin ${flags} -o ${out} ${GS_FATBIN_SRC}
      DEPENDS ${GS_FATBIN_SRC}
      COMMENT "nvcc: test fatbin ${kind}"
      VERBATIM)
    list(APPEND GS_FATBIN_FILES ${out})
  endforeach()
  add_custom_target(gs_test_fatbins ALL DEPENDS ${GS_FATBIN_FILES})
  set(GS_FATBIN_DEF GS_FATBIN_DIR="${GS_FATBIN_DIR}")
else()
  message(STATUS "nvcc not found under ${CUDA_HOME}/bin: the sim's "
                 "fatbin tests will be reported as skipped")
  set(GS_FATBIN_DEF GS_FATBIN_DIR="")
endif()

gs_add_unit_test(test_sim_fatbin
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sim_fatbin.c
                         ${CMAKE_SOURCE_DIR}/sim/cuda/fatbin.c
                 LIBS PkgConfig::ZSTD PkgConfig::LZ4 gs_common)
target_include_directories(test_sim_fatbin PRIVATE ${GS_CUDA_INCLUDE}
                           ${CMAKE_SOURCE_DIR}/sim/cuda)
target_compile_definitions(test_sim_fatbin PRIVATE ${GS_FATBIN_DEF})
set_tests_properties(test_sim_fatbin PROPERTIES SKIP_RETURN_CODE 77)
if(GS_NVCC_FATBIN)
  add_dependencies(test_sim_fatbin gs_test_fatbins)
endif()

gs_add_unit_test(test_sim_costmodel
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sim_costmodel.c
                         ${CMAKE_SOURCE_DIR}/sim/cuda/costmodel.c
                 LIBS m gs_common)
target_include_directories(test_sim_costmodel PRIVATE ${GS_CUDA_INCLUDE}
                           ${CMAKE_SOURCE_DIR}/sim/cuda)
target_compile_definitions(test_sim_costmodel PRIVATE
  GS_KERNELS_PTX="${CMAKE_SOURCE_DIR}/workloads/kernels.ptx")

gs_add_unit_test(test_sim_fatbin_load
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sim_fatbin_load.c
                 LIBS cuda_sim gs_sim_state)
target_include_directories(test_sim_fatbin_load PRIVATE ${GS_CUDA_INCLUDE})
target_compile_definitions(test_sim_fatbin_load PRIVATE ${GS_FATBIN_DEF})
set_tests_properties(test_sim_fatbin_load PROPERTIES SKIP_RETURN_CODE 77)
# Its loop kernels (2^20 threads x 100000 iterations) are there for the
# cost model's timing: timed only, not interpreted (sim/cuda/exec.h).
set_property(TEST test_sim_fatbin_load APPEND PROPERTY ENVIRONMENT
             GPUSLICE_SIM_EXEC=0)
  if(GS_NVCC_FATBIN)
  add_dependencies(test_sim_fatbin_load gs_test_fatbins)
endif()
