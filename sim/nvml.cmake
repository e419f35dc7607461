# sim/nvml.cmake - the NVML stand-in and the tools over it, included by
# sim/CMakeLists.txt:
#   build/sim/libnvidia-ml.so.1 (+ libnvidia-ml.so)   NVML subset on the sim
#   build/sim/nvidia-smi                               nvidia-smi stand-in
#   build/sim/nvidia-cuda-mps-control                  MPS control stand-in
# All three read and write the node state (gs_sim_state) and take MIG
# geometry from the catalog (gs_core).

set(GS_SIM_OUT ${CMAKE_BINARY_DIR}/sim)

# Pure pieces shared by the library, the tools and the unit tests.
add_library(gs_sim_nvml_rules STATIC
            ${CMAKE_CURRENT_LIST_DIR}/nvml_place.c
            ${CMAKE_CURRENT_LIST_DIR}/mps_cmd.c)
set_target_properties(gs_sim_nvml_rules PROPERTIES POSITION_INDEPENDENT_CODE ON)
target_include_directories(gs_sim_nvml_rules PUBLIC ${CMAKE_CURRENT_LIST_DIR}
                           ${CMAKE_SOURCE_DIR}/include)
target_link_libraries(gs_sim_nvml_rules PUBLIC gs_core)

add_library(gs_sim_nvml SHARED
            ${CMAKE_CURRENT_LIST_DIR}/nvml.c
            ${CMAKE_CURRENT_LIST_DIR}/nvml_abi.c
            ${CMAKE_CURRENT_LIST_DIR}/nvml_dev.c
            ${CMAKE_CURRENT_LIST_DIR}/nvml_proc.c
            ${CMAKE_CURRENT_LIST_DIR}/nvml_mig.c
            ${CMAKE_CURRENT_LIST_DIR}/nvml_event.c)
set_target_properties(gs_sim_nvml PROPERTIES
  OUTPUT_NAME nvidia-ml
  SOVERSION 1
  LIBRARY_OUTPUT_DIRECTORY ${GS_SIM_OUT}
  LINK_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/nvml.map)
target_include_directories(gs_sim_nvml PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(gs_sim_nvml PRIVATE gs_sim_nvml_rules gs_sim_state
                      gs_core gs_common Threads::Threads)
target_link_options(gs_sim_nvml PRIVATE
  -Wl,--version-script=${CMAKE_CURRENT_LIST_DIR}/nvml.map -Wl,--no-undefined)

add_executable(gs_sim_smi ${CMAKE_CURRENT_LIST_DIR}/smi.c)
set_target_properties(gs_sim_smi PROPERTIES
  OUTPUT_NAME nvidia-smi
  RUNTIME_OUTPUT_DIRECTORY ${GS_SIM_OUT}
  BUILD_RPATH "$ORIGIN")
target_include_directories(gs_sim_smi PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(gs_sim_smi PRIVATE gs_sim_nvml gs_sim_nvml_rules
                      gs_sim_state gs_core gs_common)

add_executable(gs_sim_mps_control ${CMAKE_CURRENT_LIST_DIR}/mps_control.c)
set_target_properties(gs_sim_mps_control PROPERTIES
  OUTPUT_NAME nvidia-cuda-mps-control
  RUNTIME_OUTPUT_DIRECTORY ${GS_SIM_OUT})
target_include_directories(gs_sim_mps_control PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(gs_sim_mps_control PRIVATE gs_sim_nvml_rules
                      gs_sim_state gs_core gs_common)
