# api.cmake: gs_kube_api, the DRA driver's side towards the API server and
# gpusliced: the API server client (kube.c: libcurl + jansson, kubeconfig
# through core's YAML reader, gs_core_yaml), the device model (devmodel.c:
# GPUs -> ResourceSlices, pure) and the ResourceSlice publisher
# (rslices.c: gpusliced through the client library, gs_client), its
# semantic comparison of stored and wanted slices (slicecmp.c) and what
# the API server accepts (kprobe.c: version and DRA features).
add_library(gs_kube_api STATIC
  ${CMAKE_CURRENT_LIST_DIR}/kube.c
  ${CMAKE_CURRENT_LIST_DIR}/devmodel.c
  ${CMAKE_CURRENT_LIST_DIR}/rslices.c
  ${CMAKE_CURRENT_LIST_DIR}/slicecmp.c
  ${CMAKE_CURRENT_LIST_DIR}/kprobe.c)
set_target_properties(gs_kube_api PROPERTIES POSITION_INDEPENDENT_CODE ON)
target_include_directories(gs_kube_api PUBLIC ${CMAKE_CURRENT_LIST_DIR})
# slicecmp.c compares quantities with quantity.c (gs_kube_driver_core).
target_link_libraries(gs_kube_api PUBLIC gs_kube_driver_core gs_client gs_core gs_core_yaml
                      gs_common PkgConfig::CURL PkgConfig::JANSSON
                      Threads::Threads)
