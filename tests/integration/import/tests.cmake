# `gpuslice import` from the shell: device-plugin and DRA files in
# tests/data/import, exit statuses, FILE:LINE messages, JSON output.
gs_add_shell_test(import_cli_translates_device_plugin_and_dra_configs
                  tests/integration/import/import_cli.sh LABELS asan TIMEOUT 120)
# `gpuslice import ... --k8s`: the DRA objects pass the resource.k8s.io/v1
# schema and carry SliceConfigs the gpuslice.io driver accepts.
gs_add_shell_test(import_k8s_emits_valid_gpuslice_claims
                  tests/integration/import/import_k8s.sh LABELS kubernetes TIMEOUT 120)
# `gpuslice import --k8s` keeps the meaning of documented NVIDIA configs
# (replicas as pods per GPU, shared claims, MIG, per-client MPS), unwraps
# ConfigMaps and Helm values, and refuses what it cannot carry with
# FILE:LINE: FIELD (fixtures/ are our own files).
gs_add_shell_test(import_k8s_output_means_what_the_nvidia_config_meant
                  tests/integration/import/import_meaning.sh LABELS kubernetes TIMEOUT 120)
