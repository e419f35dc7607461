# Unit tests of the sim's NVML stand-in (sim/nvml/, sim/tools/): the library
# through its public API on a private node state, the MIG placement rules
# against a brute-force reference, and the MPS command parser.
gs_add_unit_test(test_sim_nvml SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sim_nvml.c
                 LIBS gs_sim_nvml gs_sim_state gs_core)
gs_add_unit_test(test_sim_nvml_place
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sim_nvml_place.c
                 LIBS gs_sim_nvml_rules gs_core)
gs_add_unit_test(test_sim_mps_cmd SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sim_mps_cmd.c
                 LIBS gs_sim_mps_cmd)
gs_add_unit_test(test_sim_nvml_acct
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sim_nvml_acct.c
                 LIBS gs_sim_nvml gs_sim_state gs_core)
