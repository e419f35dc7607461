# Integration tests of the kubelet-facing side of the DRA driver
# (integrations/kubernetes: grpc.c, plugin.c). gs-kplugin-fake is
# gpuslice-kubelet-plugin built against fake_driver.c instead of the real
# driver; kubelet.py is a kubelet stand-in on an independent gRPC
# implementation (python3-grpcio) with message classes generated at test
# time by protoc --python_out from integrations/kubernetes/proto/. Tests
# exit 77 (skipped) when grpcio, protobuf or protoc are missing.
add_executable(gs-kplugin-fake
               ${CMAKE_SOURCE_DIR}/integrations/kubernetes/plugin_main.c
               ${CMAKE_CURRENT_LIST_DIR}/fake_driver.c)
set_target_properties(gs-kplugin-fake PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
target_link_libraries(gs-kplugin-fake PRIVATE gs_kube_grpc)

foreach(t registration_answers_driver_endpoint_and_v1_first
          prepare_and_unprepare_reach_the_driver_in_v1_and_v1beta1
          per_claim_errors_come_back_to_the_kubelet
          bad_requests_get_a_clear_grpc_error
          unknown_method_is_unimplemented
          any_authority_is_accepted
          kubelet_restart_redials_and_reregisters
          plugin_restart_while_the_kubelet_retries
          a_second_instance_takes_over_without_a_fight
          health_stream_sends_the_full_list_on_every_change
          concurrent_calls_from_many_kubelet_threads
          sigterm_removes_the_registration_socket
          bad_flags_exit_2)
  add_test(NAME k8s_transport_${t}
           COMMAND ${Python3_EXECUTABLE}
                   ${CMAKE_CURRENT_LIST_DIR}/kubelet.py ${t})
  set_tests_properties(k8s_transport_${t} PROPERTIES
    LABELS "integration;kubernetes;asan" TIMEOUT 120
    SKIP_RETURN_CODE 77
    ENVIRONMENT "GS_SRC=${CMAKE_SOURCE_DIR};GS_BUILD=${CMAKE_BINARY_DIR};GS_SANITIZE=${GS_SANITIZE}")
endforeach()

# The real binary (transport + driver) end to end on the sim, with
# gpusliced, the k8s_driver tests' claims stand-in and the kubelet stand-in.
gs_add_shell_test(k8s_plugin_prepares_claims_for_the_kubelet_end_to_end
                  tests/integration/k8s_transport/e2e.sh
                  LABELS "kubernetes;asan" TIMEOUT 180)
set_tests_properties(k8s_plugin_prepares_claims_for_the_kubelet_end_to_end
                     PROPERTIES SKIP_RETURN_CODE 77)

# The whole plugin (publisher included) against the k8s_api tests' API
# server stand-in: publish, the kubelet's wipe and re-registration, a claim
# with a server-given UID.
gs_add_shell_test(k8s_plugin_publishes_registers_and_prepares_against_an_api_server
                  tests/integration/k8s_transport/e2e_cluster.sh
                  LABELS "kubernetes;asan" TIMEOUT 180)
set_tests_properties(
  k8s_plugin_publishes_registers_and_prepares_against_an_api_server
  PROPERTIES SKIP_RETURN_CODE 77)

add_test(NAME k8s_deploy_manifests_parse_and_are_consistent
         COMMAND ${Python3_EXECUTABLE}
                 ${CMAKE_CURRENT_LIST_DIR}/manifests.py
                 ${CMAKE_SOURCE_DIR}/deploy/kubernetes)
set_tests_properties(k8s_deploy_manifests_parse_and_are_consistent PROPERTIES
  LABELS "integration;kubernetes" TIMEOUT 60 SKIP_RETURN_CODE 77)
