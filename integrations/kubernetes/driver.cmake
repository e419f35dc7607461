# driver.cmake: the DRA driver behind the kubelet plugin (driver.h).
#   gs_kube_driver_core  static: the parts with no API-server client:
#                        quantities (quantity.c), the SliceConfig
#                        (sliceconfig.c), CDI specs (cdi.c), the
#                        checkpoint and atomic files (checkpoint.c), the
#                        driver's files for CDI specs (driverfiles.c)
#   gs_kube_driver       static: driver.c (prepare/unprepare effects,
#                        health) and prepare.c (claim -> slice plan, pure),
#                        with the client library for gpusliced (gs_client)
#                        and gs_kube_api (kube.c, devmodel.c, rslices.c).
add_library(gs_kube_driver_core STATIC
            ${CMAKE_CURRENT_LIST_DIR}/quantity.c
            ${CMAKE_CURRENT_LIST_DIR}/sliceconfig.c
            ${CMAKE_CURRENT_LIST_DIR}/cdi.c
            ${CMAKE_CURRENT_LIST_DIR}/checkpoint.c
            ${CMAKE_CURRENT_LIST_DIR}/driverfiles.c)
target_include_directories(gs_kube_driver_core PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(gs_kube_driver_core PUBLIC gs_core gs_common
                      PkgConfig::JANSSON)

add_library(gs_kube_driver STATIC
            ${CMAKE_CURRENT_LIST_DIR}/driver.c
            ${CMAKE_CURRENT_LIST_DIR}/prepare.c)
target_include_directories(gs_kube_driver PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(gs_kube_driver PUBLIC gs_kube_driver_core gs_kube_api
                      gs_client gs_core gs_common PkgConfig::JANSSON
                      Threads::Threads)
