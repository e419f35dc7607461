# Unit tests of what the CUDA runtime needs from the sim's driver beyond
# the public API: MD2/HMAC-MD2 (sim/cuda/md2.c, the integrity answer's hash),
# the export tables (sim/cuda/export.c) and primary contexts as the runtime
# uses them (sim/cuda/ctx.c).
gs_add_unit_test(test_sim_md2
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sim_md2.c
                         ${CMAKE_SOURCE_DIR}/sim/cuda/md2.c)
target_include_directories(test_sim_md2 PRIVATE ${CMAKE_SOURCE_DIR}/sim/cuda)

gs_add_unit_test(test_sim_primary_ctx
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sim_primary_ctx.c
                         ${CMAKE_SOURCE_DIR}/sim/cuda/md2.c
                 LIBS cuda_sim gs_sim_state Threads::Threads)
target_include_directories(test_sim_primary_ctx PRIVATE ${GS_CUDA_INCLUDE}
                           ${CMAKE_SOURCE_DIR}/sim/cuda)
