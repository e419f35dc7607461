# transport.cmake: the kubelet-facing side of the DRA driver.
#   gs_kube_grpc   static library: the gRPC server (grpc.c, nghttp2), the
#                  kubelet plugin (plugin.c: registration, DRA node service
#                  v1 + v1beta1, health stream v1 + v1alpha1) and the
#                  protobuf-c code generated at build time from proto/*.proto
#                  into <build>/integrations/kubernetes/proto/. It calls the
#                  driver through driver.h and leaves those symbols to the
#                  executable that links it.
#   gpuslice-kubelet-plugin   build/bin/: plugin_main.c + gs_kube_grpc +
#                  gs_kube_driver (driver.cmake).
# The test build of the plugin against a fake driver is in
# tests/integration/k8s_transport/tests.cmake.

set(GS_KUBE_PROTO_DIR ${CMAKE_CURRENT_LIST_DIR}/proto)
set(GS_KUBE_PROTO_OUT ${CMAKE_CURRENT_BINARY_DIR}/proto)
set(GS_KUBE_PROTOS dra_v1 dra_v1beta1 health_v1 health_v1alpha1
                   pluginregistration)
set(GS_KUBE_PROTO_SRCS)
set(GS_KUBE_PROTO_HDRS)
foreach(p ${GS_KUBE_PROTOS})
  add_custom_command(
    OUTPUT ${GS_KUBE_PROTO_OUT}/${p}.pb-c.c ${GS_KUBE_PROTO_OUT}/${p}.pb-c.h
    COMMAND ${CMAKE_COMMAND} -E make_directory ${GS_KUBE_PROTO_OUT}
    COMMAND ${GS_PROTOC_C} --c_out=${GS_KUBE_PROTO_OUT}
            -I${GS_KUBE_PROTO_DIR} ${GS_KUBE_PROTO_DIR}/${p}.proto
    DEPENDS ${GS_KUBE_PROTO_DIR}/${p}.proto
    COMMENT "protoc-c ${p}.proto"
    VERBATIM)
  list(APPEND GS_KUBE_PROTO_SRCS ${GS_KUBE_PROTO_OUT}/${p}.pb-c.c)
  list(APPEND GS_KUBE_PROTO_HDRS ${GS_KUBE_PROTO_OUT}/${p}.pb-c.h)
endforeach()
# Every header exists before any object of gs_kube_grpc compiles (plugin.c
# includes all of them).
add_custom_target(gs_kube_protos DEPENDS ${GS_KUBE_PROTO_SRCS}
                  ${GS_KUBE_PROTO_HDRS})
# Generated code is not ours to fix: only our own warnings are errors.
set_source_files_properties(${GS_KUBE_PROTO_SRCS} PROPERTIES
  COMPILE_OPTIONS "-Wno-missing-prototypes;-Wno-shadow;-Wno-unused-parameter")

add_library(gs_kube_grpc STATIC
            ${CMAKE_CURRENT_LIST_DIR}/grpc.c
            ${CMAKE_CURRENT_LIST_DIR}/plugin.c
            ${GS_KUBE_PROTO_SRCS})
target_include_directories(gs_kube_grpc PUBLIC ${CMAKE_CURRENT_LIST_DIR}
                           ${GS_KUBE_PROTO_OUT})
target_link_libraries(gs_kube_grpc PUBLIC gs_common PkgConfig::NGHTTP2
                      PkgConfig::PROTOBUFC Threads::Threads)
add_dependencies(gs_kube_grpc gs_kube_protos)

add_executable(gpuslice-kubelet-plugin
               ${CMAKE_CURRENT_LIST_DIR}/plugin_main.c)
target_link_libraries(gpuslice-kubelet-plugin PRIVATE gs_kube_grpc
                      gs_kube_driver)
