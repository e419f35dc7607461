# api.cmake: gs_kube_api, the DRA driver's side towards the API server and
# gpusliced: the API server client (kube.c: libcurl + jansson, kubeconfig
# through cli/yamldoc.c + libyaml), the device model (devmodel.c: GPUs ->
# ResourceSlices, pure) and the ResourceSlice publisher (rslices.c).
# Not built when libcurl's development files are missing.
pkg_check_modules(CURL IMPORTED_TARGET libcurl)
if(NOT CURL_FOUND)
  message(STATUS "kubernetes api: libcurl4-openssl-dev missing (scripts/deps.sh installs it); gs_kube_api is not built")
  return()
endif()
add_library(gs_kube_api STATIC
  ${CMAKE_CURRENT_LIST_DIR}/kube.c
  ${CMAKE_CURRENT_LIST_DIR}/devmodel.c
  ${CMAKE_CURRENT_LIST_DIR}/rslices.c
  ${CMAKE_SOURCE_DIR}/cli/yamldoc.c)
set_target_properties(gs_kube_api PROPERTIES POSITION_INDEPENDENT_CODE ON)
target_include_directories(gs_kube_api PUBLIC ${CMAKE_CURRENT_LIST_DIR}
                           PRIVATE ${CMAKE_SOURCE_DIR}/cli)
target_link_libraries(gs_kube_api PUBLIC gs_core gs_common PkgConfig::CURL
                      PkgConfig::JANSSON PkgConfig::YAML Threads::Threads)
