# Unit tests for the Slurm plugin's logic (integrations/slurm, gs_slurm):
# options, limits and names; shards per GPU from gres.conf; a step's hold
# on its slice in a standalone region.
gs_add_unit_test(test_slurm_jobspec
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_slurm_jobspec.c
                 LIBS gs_slurm)
gs_add_unit_test(test_slurm_gresconf
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_slurm_gresconf.c
                 LIBS gs_slurm)
gs_add_unit_test(test_slurm_hold
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_slurm_hold.c
                 LIBS gs_slurm)
