# gpuslice-cdi-hook (cdi_hook.c): the OCI createContainer hook each
# claim's CDI spec names. It runs on the host, outside the image it was
# built in, so it is linked statically (glibc's libc.a and jansson's
# libjansson.a: libc6-dev and libjansson-dev) and needs nothing of the
# host's libraries; installed next to the kubelet plugin and copied to
# the host by the DaemonSet's init container.
add_executable(gpuslice-cdi-hook ${CMAKE_CURRENT_LIST_DIR}/cdi_hook.c)
target_include_directories(gpuslice-cdi-hook PRIVATE ${JANSSON_INCLUDE_DIRS})
# The sanitizer build (GS_SANITIZE) links it dynamically: ASan's runtime
# cannot be linked statically.
if(GS_SANITIZE)
  target_link_libraries(gpuslice-cdi-hook PRIVATE gs_common
                        ${JANSSON_LIBRARIES})
else()
  target_link_libraries(gpuslice-cdi-hook PRIVATE gs_common
                        ${JANSSON_STATIC_LIBRARIES})
  target_link_options(gpuslice-cdi-hook PRIVATE -static)
endif()
