# Unit tests of the Kubernetes DRA driver (integrations/kubernetes,
# driver.cmake): quantities, the SliceConfig, CDI specs and the checkpoint
# (gs_kube_driver_core); the claim -> slice plan (prepare.c) once the
# device model (gs_kube_api) is built.
gs_add_unit_test(test_k8s_quantity
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_k8s_quantity.c
                 LIBS gs_kube_driver_core)
gs_add_unit_test(test_k8s_sliceconfig
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_k8s_sliceconfig.c
                 LIBS gs_kube_driver_core)
gs_add_unit_test(test_k8s_cdi
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_k8s_cdi.c
                 LIBS gs_kube_driver_core)
set_property(TEST test_k8s_quantity test_k8s_sliceconfig test_k8s_cdi
             APPEND PROPERTY LABELS kubernetes)
gs_add_unit_test(test_k8s_prepare
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_k8s_prepare.c
                 LIBS gs_kube_driver)
set_property(TEST test_k8s_prepare APPEND PROPERTY LABELS kubernetes)
gs_add_unit_test(test_k8s_layout
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_k8s_layout.c
                 LIBS gs_kube_driver)
set_property(TEST test_k8s_layout APPEND PROPERTY LABELS kubernetes)
