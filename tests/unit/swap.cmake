# Unit tests for swap (docs/swap.md): core's policy and oversubscription,
# and the daemon's swap settings.
gs_add_unit_test(test_swap SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_swap.c
                 LIBS gs_core)
# Declared oversubscription in admission (swap.oversubscribe).
gs_add_unit_test(test_swap_admission
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_swap_admission.c
                 LIBS gs_core)
# The daemon's swap section (daemon/config.c): defaults, keys, bad values.
gs_add_unit_test(test_daemon_config_swap
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_daemon_config_swap.c LIBS gs_daemon)
# The need protocol of the swap record (memory on demand, region/swaprec.c).
gs_add_unit_test(test_swap_need
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_swap_need.c
                 LIBS gs_region)
# A slice's swap counts and times kept across restarts (daemon/store.c
# schema 7, gs__slot_swap_merge in daemon/slots.c).
gs_add_unit_test(test_daemon_swap_counts
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_daemon_swap_counts.c LIBS gs_daemon)
# What admission's auto choice (the advisor, the MIG planner's profile)
# says about promised and resident memory on an oversubscribed node.
gs_add_unit_test(test_swap_advice
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_swap_advice.c
                 LIBS gs_core)
# Parking a reclaim's victim instead of killing it (gs/park.h): who may be
# parked, who resumes when.
gs_add_unit_test(test_park SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_park.c
                 LIBS gs_core)
# A parked slice kept parked across a restart (daemon/store.c schema 8).
gs_add_unit_test(test_daemon_park
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_daemon_park.c LIBS gs_daemon)
