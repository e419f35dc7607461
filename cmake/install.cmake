# cmake/install.cmake - what `cmake --install` (and `make install`) puts
# where. GNUInstallDirs names the directories; DESTDIR and
# CMAKE_INSTALL_PREFIX are honoured; every DESTINATION below is relative
# to the prefix unless a cache variable makes it absolute. Components
# match the Debian packages (debian/control):
#   gpuslice     bin/gpuslice, the workload kit (bin/gs-*),
#                sbin/gpusliced, <libdir>/libgpuslice.so, the simulator
#                under <libdir>/gpuslice/sim, <sysconfdir>/gpuslice/
#                gpusliced.yaml, the systemd unit and its drop-in example
#   slurm        the SPANK plugin in GS_SLURM_PLUGIN_DIR, with a link to
#                libgpuslice.so beside it
#   kubernetes   sbin/gpuslice-kubelet-plugin, sbin/gs-k8s-extender,
#                sbin/gpuslice-cdi-hook (the plugin's CDI hook), the
#                manifests under <datadir>/gpuslice/kubernetes
# The programs find the shim and the simulator from their own path first
# (include/gs/paths.h), so a tree installed under DESTDIR runs as it is.

# Where Slurm looks for SPANK plugins: pkg-config slurm's libdir/slurm
# where Slurm ships a .pc file; else Debian's <libdir>/slurm-wlm when this
# machine has it; else <libdir>/slurm (Slurm's own default).
# An empty cache variable means: find it at configure time.
set(GS_SLURM_PLUGIN_DIR "" CACHE STRING
    "where spank_gpuslice.so is installed (relative: under the prefix; empty: pkg-config slurm, else Debian's slurm-wlm, else <libdir>/slurm)")
set(_gs_slurm_dir "${GS_SLURM_PLUGIN_DIR}")
if(_gs_slurm_dir STREQUAL "")
  pkg_check_modules(GS_SLURM_PC QUIET slurm)
  if(GS_SLURM_PC_FOUND)
    set(_gs_slurm_dir "${GS_SLURM_PC_LIBDIR}/slurm")
  elseif(CMAKE_LIBRARY_ARCHITECTURE AND
         EXISTS "/usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/slurm-wlm")
    set(_gs_slurm_dir "${CMAKE_INSTALL_LIBDIR}/slurm-wlm")
  else()
    set(_gs_slurm_dir "${CMAKE_INSTALL_LIBDIR}/slurm")
  endif()
endif()
set(GS_SYSTEMD_UNITDIR "lib/systemd/system" CACHE STRING
    "where gpusliced.service is installed (relative: under the prefix; the .deb uses /lib/systemd/system)")

set(GS_SIM_INSTALL_DIR "${CMAKE_INSTALL_LIBDIR}/gpuslice/sim")

install(TARGETS gpuslice gs-alloc gs-burn gs-infer gs-matmul gs-fault
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT gpuslice)
install(TARGETS gpusliced
        RUNTIME DESTINATION ${CMAKE_INSTALL_SBINDIR} COMPONENT gpuslice)
install(TARGETS gpuslice_shim
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT gpuslice)
# The musl build of the shim, beside it (gpuslice run picks it for a
# program whose ELF interpreter is musl's); built only where musl-gcc is.
if(TARGET gpuslice_shim_musl)
  install(FILES ${CMAKE_BINARY_DIR}/lib/libgpuslice-musl.so
          DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT gpuslice)
endif()

# The simulator: private (never on the loader's default path, where its
# libcuda.so.1 would shadow the driver's); gpusliced --gpus sim and
# `gpuslice sim env` find it through gs_paths_sim_dir.
set_target_properties(gs_sim_smi PROPERTIES INSTALL_RPATH "$ORIGIN")
install(TARGETS cuda_sim gs_sim_nvml
        LIBRARY DESTINATION ${GS_SIM_INSTALL_DIR} COMPONENT gpuslice
        NAMELINK_SKIP)
install(TARGETS gs_sim_smi gs_sim_mps_control
        RUNTIME DESTINATION ${GS_SIM_INSTALL_DIR} COMPONENT gpuslice)

install(FILES ${CMAKE_SOURCE_DIR}/daemon/gpusliced.example.yaml
        DESTINATION ${CMAKE_INSTALL_FULL_SYSCONFDIR}/gpuslice
        RENAME gpusliced.yaml COMPONENT gpuslice)
configure_file(${CMAKE_SOURCE_DIR}/deploy/systemd/gpusliced.service.in
               ${CMAKE_BINARY_DIR}/deploy/gpusliced.service @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/deploy/gpusliced.service
        DESTINATION ${GS_SYSTEMD_UNITDIR} COMPONENT gpuslice)
configure_file(${CMAKE_SOURCE_DIR}/deploy/systemd/watchdog-action.conf.example.in
               ${CMAKE_BINARY_DIR}/deploy/watchdog-action.conf.example @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/deploy/watchdog-action.conf.example
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples COMPONENT gpuslice)

# The plugin preloads libgpuslice.so "next to this plugin" unless
# plugstack.conf says shim=: a relative link there to the library dir.
if(TARGET spank_gpuslice)
  install(TARGETS spank_gpuslice
          LIBRARY DESTINATION ${_gs_slurm_dir} COMPONENT slurm)
  if(IS_ABSOLUTE "${_gs_slurm_dir}")
    set(_gs_slurm_full "${_gs_slurm_dir}")
  else()
    set(_gs_slurm_full "${CMAKE_INSTALL_PREFIX}/${_gs_slurm_dir}")
  endif()
  file(RELATIVE_PATH _gs_shim_rel "${_gs_slurm_full}"
       "${CMAKE_INSTALL_FULL_LIBDIR}/libgpuslice.so")
  install(CODE "file(CREATE_LINK \"${_gs_shim_rel}\" \"\$ENV{DESTDIR}${_gs_slurm_full}/libgpuslice.so\" SYMBOLIC)\nmessage(STATUS \"Linking: \$ENV{DESTDIR}${_gs_slurm_full}/libgpuslice.so -> ${_gs_shim_rel}\")"
          COMPONENT slurm)
endif()

install(TARGETS gpuslice-kubelet-plugin gs-k8s-extender gpuslice-cdi-hook
        RUNTIME DESTINATION ${CMAKE_INSTALL_SBINDIR} COMPONENT kubernetes)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/deploy/kubernetes/
        DESTINATION ${CMAKE_INSTALL_DATADIR}/gpuslice/kubernetes
        COMPONENT kubernetes FILES_MATCHING PATTERN "*.yaml")

# Manual pages, generated at build time from each program's --help
# (scripts/gen-man.sh), so they cannot drift from the usage text.
set(_gs_man_dir ${CMAKE_BINARY_DIR}/man)
set(_gs_man_pages)
function(gs_man target section component summary)
  get_target_property(_name ${target} OUTPUT_NAME)
  if(NOT _name)
    set(_name ${target})
  endif()
  set(_out ${_gs_man_dir}/${_name}.${section})
  add_custom_command(OUTPUT ${_out}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${_gs_man_dir}
    COMMAND sh ${CMAKE_SOURCE_DIR}/scripts/gen-man.sh $<TARGET_FILE:${target}>
            ${section} "${summary}" > ${_out}
    DEPENDS ${target} ${CMAKE_SOURCE_DIR}/scripts/gen-man.sh
    COMMENT "Generating the manual page ${_name}(${section})" VERBATIM)
  install(FILES ${_out} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section}
          COMPONENT ${component})
  set(_gs_man_pages ${_gs_man_pages} ${_out} PARENT_SCOPE)
endfunction()
gs_man(gpuslice 1 gpuslice "run programs in GPU slices and manage gpusliced")
gs_man(gs-alloc 1 gpuslice "grow device memory with one CUDA allocation API (workload kit)")
gs_man(gs-burn 1 gpuslice "keep a GPU busy with dependent kernels (workload kit)")
gs_man(gs-fault 1 gpuslice "raise an illegal-address fault on purpose (workload kit)")
gs_man(gs-infer 1 gpuslice "an inference-like server with latency percentiles (workload kit)")
gs_man(gs-matmul 1 gpuslice "matrix multiplications in one context (workload kit)")
gs_man(gpusliced 8 gpuslice "the gpuslice node daemon")
gs_man(gpuslice-kubelet-plugin 8 kubernetes "the gpuslice Kubernetes DRA kubelet plugin")
gs_man(gs-k8s-extender 8 kubernetes "the gpuslice Kubernetes scheduler extender")
gs_man(gpuslice-cdi-hook 8 kubernetes "CDI createContainer hook: refuse a container whose libc cannot load the gpuslice shim")
add_custom_target(gs_man_pages ALL DEPENDS ${_gs_man_pages})
