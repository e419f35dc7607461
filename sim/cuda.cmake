# sim/cuda.cmake - build/sim/libcuda.so.1 (+ libcuda.so), the CUDA driver
# stand-in, included by sim/CMakeLists.txt.
set(GS_SIM_OUT ${CMAKE_BINARY_DIR}/sim)
# Fatbinary entries are zstd- or LZ4-compressed (fatbin.c).
pkg_check_modules(ZSTD REQUIRED IMPORTED_TARGET GLOBAL libzstd)
pkg_check_modules(LZ4 REQUIRED IMPORTED_TARGET GLOBAL liblz4)

# The version script comes from the one symbol table, cuda_syms.def.
set(GS_CUDA_MAP ${CMAKE_CURRENT_BINARY_DIR}/cuda.map)
add_custom_command(
  OUTPUT ${GS_CUDA_MAP}
  COMMAND ${CMAKE_C_COMPILER} -E -P -x c -I${CMAKE_CURRENT_LIST_DIR}
          ${CMAKE_CURRENT_LIST_DIR}/cuda.map.in -o ${GS_CUDA_MAP}
  DEPENDS ${CMAKE_CURRENT_LIST_DIR}/cuda.map.in
          ${CMAKE_CURRENT_LIST_DIR}/cuda_syms.def
  COMMENT "Generating the libcuda.so.1 version script"
  VERBATIM)
add_custom_target(gs_cuda_map DEPENDS ${GS_CUDA_MAP})

add_library(cuda_sim SHARED
            ${CMAKE_CURRENT_LIST_DIR}/drv.c
            ${CMAKE_CURRENT_LIST_DIR}/ctx.c
            ${CMAKE_CURRENT_LIST_DIR}/mem.c
            ${CMAKE_CURRENT_LIST_DIR}/module.c
            ${CMAKE_CURRENT_LIST_DIR}/fatbin.c
            ${CMAKE_CURRENT_LIST_DIR}/costmodel.c
            ${CMAKE_CURRENT_LIST_DIR}/exec.c
            ${CMAKE_CURRENT_LIST_DIR}/handle.c
            ${CMAKE_CURRENT_LIST_DIR}/legacy.c
            ${CMAKE_CURRENT_LIST_DIR}/pt.c
            ${CMAKE_CURRENT_LIST_DIR}/procaddr.c
            ${CMAKE_CURRENT_LIST_DIR}/export.c
            ${CMAKE_CURRENT_LIST_DIR}/md2.c
            ${CMAKE_CURRENT_LIST_DIR}/stubs.c)
add_dependencies(cuda_sim gs_cuda_map)
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/pt.c PROPERTIES
  COMPILE_DEFINITIONS CUDA_API_PER_THREAD_DEFAULT_STREAM)
set_target_properties(cuda_sim PROPERTIES
  OUTPUT_NAME cuda
  SOVERSION 1
  LIBRARY_OUTPUT_DIRECTORY ${GS_SIM_OUT}
  LINK_DEPENDS ${GS_CUDA_MAP})
target_include_directories(cuda_sim PRIVATE ${CMAKE_CURRENT_LIST_DIR}
                           ${GS_CUDA_INCLUDE})
target_link_libraries(cuda_sim PRIVATE gs_sim_state gs_core gs_common
                      Threads::Threads m PkgConfig::ZSTD PkgConfig::LZ4)
target_link_options(cuda_sim PRIVATE
  -Wl,--version-script=${GS_CUDA_MAP} -Wl,--no-undefined)

# gs-bench-sim: the sim's own cost per launch and per alloc+free.
add_executable(gs-bench-sim ${CMAKE_CURRENT_LIST_DIR}/bench_sim.c)
target_include_directories(gs-bench-sim PRIVATE ${GS_CUDA_INCLUDE} ${CMAKE_SOURCE_DIR})
target_link_libraries(gs-bench-sim PRIVATE cuda_sim gs_sim_state gs_core
                      gs_common)
set_target_properties(gs-bench-sim PROPERTIES BUILD_RPATH ${GS_SIM_OUT})
