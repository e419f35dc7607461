# Unit tests for the node daemon (daemon/, library gs_daemon).
gs_add_unit_test(test_daemon_store
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_daemon_store.c LIBS gs_daemon)
gs_add_unit_test(test_daemon_config
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_daemon_config.c LIBS gs_daemon)
target_compile_definitions(test_daemon_config PRIVATE
  GS_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
# The create path on a real node model (fake GPUs, scratch store):
# carrying out core's admission decision, refusals, reclaim, failed MIG.
gs_add_unit_test(test_daemon_admission
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_daemon_admission.c LIBS gs_daemon)
# The reconciler on a real node model with a stand-in MPS control program.
gs_add_unit_test(test_daemon_reconcile
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_daemon_reconcile.c LIBS gs_daemon)
# The two-phase create: pending slices, delete while pending, recovery of
# a pending row after a crash.
gs_add_unit_test(test_daemon_create
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_daemon_create.c LIBS gs_daemon)
# Who ran a process, recorded as it starts (daemon/procwatch.c).
gs_add_unit_test(test_daemon_procwatch
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_daemon_procwatch.c LIBS gs_daemon)
# A limited slice's charge ratio, NVML over its books (daemon/chargeratio.c).
gs_add_unit_test(test_daemon_chargeratio
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_daemon_chargeratio.c LIBS gs_daemon)
