# End-to-end tests of the Kubernetes DRA driver (driver.h: prepare,
# unprepare, CDI specs, checkpoint) on the simulated node: gpusliced on a
# sim, a ResourceClaim stand-in for the API server (claims_standin.py),
# and gs-kdra-probe calling the driver as the kubelet plugin would.
add_executable(gs-kdra-probe ${CMAKE_CURRENT_LIST_DIR}/kdra_probe.c)
set_target_properties(gs-kdra-probe PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
target_link_libraries(gs-kdra-probe PRIVATE gs_kube_driver
                      PkgConfig::JANSSON Threads::Threads)
# Tests that preload the shim (not instrumented) into a workload are not
# labelled asan; the others run the instrumented driver and daemon too.
set(GS_KDRA_TESTS
    k8s_claim_prepares_a_capped_slice_and_unprepare_frees_it:claim_e2e.sh:
    k8s_bad_claims_and_api_errors_leave_nothing_behind:bad_input.sh:asan
    k8s_restart_mid_prepare_neither_loses_nor_duplicates:restart.sh:asan
    k8s_mig_claim_creates_its_instance:mig.sh:
    k8s_device_health_follows_the_daemon:health.sh:asan
    k8s_mps_claim_gets_the_mps_client_env_and_pipe:mps.sh:
    k8s_each_server_version_and_gate_gets_a_layout_it_accepts:matrix.sh:
    k8s_a_container_from_the_cdi_spec_alone_runs_on_the_sim:cdi_container.sh:
    k8s_a_pod_process_over_or_outside_its_claim_is_killed:pod_cgroup.sh:
    k8s_a_pod_joining_a_shared_claim_later_is_held_to_it:pod_joins_claim.sh:
    k8s_without_partitionable_devices_existing_mig_instances_are_published:mig_existing.sh:
    k8s_oversubscribed_memory_is_published_and_claims_placed_on_it:oversubscribe.sh:)
foreach(t ${GS_KDRA_TESTS})
  string(REPLACE ":" ";" parts "${t}")
  list(GET parts 0 name)
  list(GET parts 1 script)
  list(LENGTH parts n)
  set(extra "")
    if(n GREATER 2)
    list(GET parts 2 extra)
  endif()
  gs_add_shell_test(${name} tests/integration/k8s_driver/${script}
                    LABELS kubernetes ${extra} TIMEOUT 240)
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77)
endforeach()
# Nine API server cells, each with its own publisher, claim and fault.
set_tests_properties(k8s_each_server_version_and_gate_gets_a_layout_it_accepts
                     PROPERTIES TIMEOUT 480)
