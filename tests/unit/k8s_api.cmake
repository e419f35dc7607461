# Unit tests of the DRA driver's API side (integrations/kubernetes/
# api.cmake, library gs_kube_api): the device model.
gs_add_unit_test(test_kube_devmodel
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_kube_devmodel.c LIBS gs_kube_api)
set_property(TEST test_kube_devmodel APPEND PROPERTY LABELS kubernetes)
