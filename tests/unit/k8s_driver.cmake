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
# The CDI createContainer hook (gpuslice-cdi-hook) against fake bundles:
# roots with an old (2.12) or new (2.99) glibc's libc.so.6 (tiny shared
# libraries with glibc's version definitions, fixtures/libc), musl's
# loader, or no libc; the real shims of this build.
foreach(_v 2.12 2.99)
  add_library(gs_fake_glibc_${_v} SHARED
              ${CMAKE_CURRENT_LIST_DIR}/fixtures/libc/fake_libc.c)
  target_link_options(gs_fake_glibc_${_v} PRIVATE -nostdlib
    -Wl,--version-script=${CMAKE_CURRENT_LIST_DIR}/fixtures/libc/glibc-${_v}.map)
  set_target_properties(gs_fake_glibc_${_v} PROPERTIES
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/fixtures
    LINK_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/fixtures/libc/glibc-${_v}.map)
endforeach()
gs_add_unit_test(test_k8s_cdi_hook
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_k8s_cdi_hook.c
                 LIBS gs_common)
add_dependencies(test_k8s_cdi_hook gpuslice-cdi-hook gpuslice_shim
                 gs_fake_glibc_2.12 gs_fake_glibc_2.99)
set(_gs_musl_shim "")
if(TARGET gpuslice_shim_musl)
  add_dependencies(test_k8s_cdi_hook gpuslice_shim_musl)
  set(_gs_musl_shim ${CMAKE_BINARY_DIR}/lib/libgpuslice-musl.so)
endif()
target_compile_definitions(test_k8s_cdi_hook PRIVATE
  GS_HOOK_BIN="$<TARGET_FILE:gpuslice-cdi-hook>"
  GS_SHIM="$<TARGET_FILE:gpuslice_shim>"
  GS_MUSL_SHIM="${_gs_musl_shim}"
  GS_OLD_LIBC="$<TARGET_FILE:gs_fake_glibc_2.12>"
  GS_NEW_LIBC="$<TARGET_FILE:gs_fake_glibc_2.99>")
set_property(TEST test_k8s_cdi_hook APPEND PROPERTY LABELS kubernetes)
