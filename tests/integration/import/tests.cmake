# `gpuslice import` from the shell: device-plugin and DRA files in
# tests/data/import, exit statuses, FILE:LINE messages, JSON output.
gs_add_shell_test(import_cli_translates_device_plugin_and_dra_configs
                  tests/integration/import/import_cli.sh LABELS asan TIMEOUT 120)
