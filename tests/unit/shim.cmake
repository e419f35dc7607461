# Unit tests for the shim (shim/): the compute scheduler's decisions on a
# model GPU with a fake clock, the shared region (files, slices, books,
# reaping, robust locks), the allocation table.
gs_add_unit_test(test_shim_sched
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_shim_sched.c
                 LIBS gs_shim_sched)
gs_add_unit_test(test_region
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_region.c
                 LIBS gs_region)
target_include_directories(test_region PRIVATE ${CMAKE_SOURCE_DIR}/region)
# The memory books without a lock (region/memword.c): threads in
# processes racing one cap, processes killed mid-update, reaping.
gs_add_unit_test(test_region_memword
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_region_memword.c
                 LIBS gs_region)
target_include_directories(test_region_memword PRIVATE ${CMAKE_SOURCE_DIR}/region)
# Region files cut short under a live mapping: the SIGBUS guard, the
# report, the shared file's rebuild.
gs_add_unit_test(test_region_guard
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_region_guard.c
                 LIBS gs_region)
target_include_directories(test_region_guard PRIVATE ${CMAKE_SOURCE_DIR}/region)
# What a batch of launches is charged (shim/charge.c, pure).
gs_add_unit_test(test_shim_charge
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_shim_charge.c
                         ${CMAKE_SOURCE_DIR}/shim/charge.c)
target_include_directories(test_shim_charge PRIVATE ${CMAKE_SOURCE_DIR}/shim
                           ${GS_CUDA_INCLUDE})
# A slice's charge ratio in the region and what the shim charges by it.
gs_add_unit_test(test_region_charge
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_region_charge.c
                 LIBS gs_region)
# The node's need wait (swap.need_wait): written into the region and its
# views, and the bound of the shim's wait for memory (shim/swapneed.c).
gs_add_unit_test(test_shim_need_wait
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_shim_need_wait.c
                         ${CMAKE_SOURCE_DIR}/shim/swapneed.c
                 LIBS gs_region)
target_include_directories(test_shim_need_wait PRIVATE
                           ${CMAKE_SOURCE_DIR}/shim ${CMAKE_SOURCE_DIR}/region
                           ${GS_CUDA_INCLUDE})
