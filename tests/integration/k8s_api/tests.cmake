# Integration tests of the DRA driver's API side (integrations/kubernetes/
# api.cmake): the device model's output against the resource.k8s.io/v1
# schema, the API server client against apiserver_standin.py, and the
# ResourceSlice publisher end to end (sim node + gpusliced + stand-in).
foreach(t kdev_dump:gs-kdev-dump kube_client_test:gs-kube-client-test
          krs_run:gs-krs-run)
  string(REPLACE ":" ";" tp ${t})
  list(GET tp 0 src)
  list(GET tp 1 exe)
  add_executable(${exe} ${CMAKE_CURRENT_LIST_DIR}/${src}.c)
  set_target_properties(${exe} PROPERTIES
    RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  target_link_libraries(${exe} PRIVATE gs_kube_api)
endforeach()
target_link_libraries(gs-kube-client-test PRIVATE PkgConfig::CMOCKA)
gs_add_shell_test(k8s_device_model_output_validates_against_the_resource_v1_schema
  tests/integration/k8s_api/devmodel_schema.sh LABELS kubernetes asan TIMEOUT 120)
gs_add_shell_test(k8s_api_client_talks_rest_watch_and_credentials_to_a_standin
  tests/integration/k8s_api/kube_client.sh LABELS kubernetes asan TIMEOUT 180)
gs_add_shell_test(k8s_publisher_follows_gpus_lost_added_and_daemon_health
  tests/integration/k8s_api/publisher_gpus.sh LABELS kubernetes asan TIMEOUT 180)
set_tests_properties(
  k8s_device_model_output_validates_against_the_resource_v1_schema
  k8s_api_client_talks_rest_watch_and_credentials_to_a_standin
  k8s_publisher_follows_gpus_lost_added_and_daemon_health
  PROPERTIES SKIP_RETURN_CODE 77)
add_executable(gs-k8s-xid ${CMAKE_CURRENT_LIST_DIR}/xid_post.c)
set_target_properties(gs-k8s-xid PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
target_include_directories(gs-k8s-xid PRIVATE ${CMAKE_SOURCE_DIR})
target_link_libraries(gs-k8s-xid PRIVATE gs_sim_state gs_common)
gs_add_shell_test(k8s_publisher_keeps_slices_exact_through_health_changes_and_api_outages
  tests/integration/k8s_api/publisher.sh LABELS kubernetes TIMEOUT 240)
set_tests_properties(
  k8s_publisher_keeps_slices_exact_through_health_changes_and_api_outages
  PROPERTIES SKIP_RETURN_CODE 77)
gs_add_shell_test(k8s_publisher_writes_each_slice_once_per_gpu_fault_on_a_real_servers_defaults
  tests/integration/k8s_api/publisher_converges.sh LABELS kubernetes TIMEOUT 120)
set_tests_properties(
  k8s_publisher_writes_each_slice_once_per_gpu_fault_on_a_real_servers_defaults
  PROPERTIES SKIP_RETURN_CODE 77)
