# Unit tests for core's /proc/PID/cgroup -> pod UID + container reader
# (core/podcgroup.c): cgroup v1 and v2, systemd and cgroupfs drivers,
# containerd, CRI-O and docker naming.
gs_add_unit_test(test_podcgroup
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_podcgroup.c
                 LIBS gs_core)
