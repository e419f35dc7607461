# Where libgpuslice.so loads: its glibc symbol versions (nothing newer than
# GLIBC_2.17), the workload kit under Debian bullseye's glibc 2.31 with the
# cap enforced, and the musl build under a musl program. Label "shim_libc".
# The bullseye root is bootstrapped once with mmdebstrap into
# ~/.cache/gpuslice/ (the test skips, 77, when it cannot be); the musl test
# skips without musl-gcc.
gs_add_shell_test(shim_needs_nothing_newer_than_glibc_2_17
                  tests/integration/shim_libc/shim_needs_nothing_newer_than_glibc_2_17.sh
                  LABELS shim_libc TIMEOUT 60)
set_tests_properties(shim_needs_nothing_newer_than_glibc_2_17 PROPERTIES
                     SKIP_RETURN_CODE 77)

# The sources of the programs the bullseye test rebuilds against the
# bootstrapped root (gcc --sysroot): the workload kit's gs-alloc and the
# sim's libcuda.so.1, as lists the script reads (one "FILE -DDEF... -IDIR..."
# per line, with the defines and include folders its target compiles it
# with), so a file added to either target is picked up.
function(gs__sysroot_units out_var)
  set(lines "")
  foreach(t ${ARGN})
    get_target_property(srcs ${t} SOURCES)
    get_target_property(dir ${t} SOURCE_DIR)
    foreach(s ${srcs})
      if(NOT s MATCHES "\\.c$")
        continue()
      endif()
      if(NOT IS_ABSOLUTE ${s})
        set(s ${dir}/${s})
      endif()
      get_source_file_property(defs ${s} DIRECTORY ${dir} COMPILE_DEFINITIONS)
      set(line "${s} -I$<JOIN:$<TARGET_PROPERTY:${t},INCLUDE_DIRECTORIES>, -I>")
      if(defs)
        foreach(d ${defs})
          string(APPEND line " -D${d}")
        endforeach()
      endif()
      string(APPEND lines "${line}\n")
    endforeach()
  endforeach()
  set(${out_var} "${lines}" PARENT_SCOPE)
endfunction()
set(GS_SYSROOT_LISTS ${CMAKE_BINARY_DIR}/tests/shim_libc)
gs__sysroot_units(gs_units_alloc gs-alloc gs_wl gs_wl_util)
gs__sysroot_units(gs_units_sim cuda_sim gs_sim_state gs_core gs_common)
file(GENERATE OUTPUT ${GS_SYSROOT_LISTS}/alloc.units CONTENT "${gs_units_alloc}")
file(GENERATE OUTPUT ${GS_SYSROOT_LISTS}/sim.units CONTENT "${gs_units_sim}")

gs_add_shell_test(workload_kit_keeps_its_cap_under_glibc_2_31
                  tests/integration/shim_libc/workload_kit_keeps_its_cap_under_glibc_2_31.sh
                  LABELS shim_libc TIMEOUT 600)
set_tests_properties(workload_kit_keeps_its_cap_under_glibc_2_31 PROPERTIES
                     SKIP_RETURN_CODE 77)

# The musl side: gs-musl-cap-probe (a musl program) and gs-musl-glue (the
# gcompat stand-in that lets the glibc-built sim load under musl), built
# with musl-gcc when the shim's musl build is (shim/CMakeLists.txt).
if(GS_MUSL_GCC)
  set(GS_MUSL_PROBE ${CMAKE_BINARY_DIR}/tests/gs-musl-cap-probe)
  set(GS_MUSL_GLUE ${CMAKE_BINARY_DIR}/tests/musl-glue/ld-linux-x86-64.so.2)
  add_custom_command(
    OUTPUT ${GS_MUSL_PROBE}
    COMMAND ${GS_MUSL_GCC} -std=gnu11 -O2 -Wall -Wextra -Werror
            -I${GS_CUDA_INCLUDE} ${CMAKE_CURRENT_LIST_DIR}/musl_cap_probe.c
            -o ${GS_MUSL_PROBE}
    DEPENDS ${CMAKE_CURRENT_LIST_DIR}/musl_cap_probe.c
    COMMENT "Building gs-musl-cap-probe with musl-gcc"
    VERBATIM)
  add_custom_command(
    OUTPUT ${GS_MUSL_GLUE}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/tests/musl-glue
    COMMAND ${GS_MUSL_GCC} -std=gnu11 -O2 -fPIC -shared -Wall -Wextra -Werror
            -Wl,-soname,ld-linux-x86-64.so.2
            ${CMAKE_CURRENT_LIST_DIR}/musl_glibc_glue.c -o ${GS_MUSL_GLUE}
    DEPENDS ${CMAKE_CURRENT_LIST_DIR}/musl_glibc_glue.c
    COMMENT "Building the gcompat stand-in with musl-gcc"
    VERBATIM)
  add_custom_target(gs_shim_libc_musl ALL DEPENDS ${GS_MUSL_PROBE} ${GS_MUSL_GLUE})
endif()
gs_add_shell_test(musl_program_keeps_its_cap
                  tests/integration/shim_libc/musl_program_keeps_its_cap.sh
                  LABELS shim_libc TIMEOUT 120)
set_tests_properties(musl_program_keeps_its_cap PROPERTIES SKIP_RETURN_CODE 77)

# One robust shared mutex taken by glibc and musl processes: gs-mutex-cross
# (glibc's pthread) and gs-mutex-cross-musl (shim/musl_mutex.c, as the
# shim's musl build takes the region's locks).
add_executable(gs-mutex-cross ${CMAKE_CURRENT_LIST_DIR}/mutex_cross.c)
set_target_properties(gs-mutex-cross PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
target_link_libraries(gs-mutex-cross PRIVATE Threads::Threads)
if(GS_MUSL_GCC)
  set(GS_MUSL_MUTEX ${CMAKE_BINARY_DIR}/tests/gs-mutex-cross-musl)
  add_custom_command(
    OUTPUT ${GS_MUSL_MUTEX}
    COMMAND ${GS_MUSL_GCC} -std=gnu11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror
            -include ${CMAKE_SOURCE_DIR}/shim/libc_compat.h
            -isystem ${CMAKE_BINARY_DIR}/shim/musl-uapi
            ${CMAKE_CURRENT_LIST_DIR}/mutex_cross.c
            ${CMAKE_SOURCE_DIR}/shim/musl_mutex.c -o ${GS_MUSL_MUTEX}
    DEPENDS ${CMAKE_CURRENT_LIST_DIR}/mutex_cross.c
            ${CMAKE_SOURCE_DIR}/shim/musl_mutex.c
            ${CMAKE_SOURCE_DIR}/shim/libc_compat.h
    COMMENT "Building gs-mutex-cross-musl with musl-gcc"
    VERBATIM)
  add_custom_target(gs_mutex_cross_musl ALL DEPENDS ${GS_MUSL_MUTEX})
endif()
gs_add_shell_test(region_lock_excludes_across_glibc_and_musl
                  tests/integration/shim_libc/region_lock_excludes_across_glibc_and_musl.sh
                  LABELS shim_libc TIMEOUT 120)
set_tests_properties(region_lock_excludes_across_glibc_and_musl PROPERTIES
                     SKIP_RETURN_CODE 77)
