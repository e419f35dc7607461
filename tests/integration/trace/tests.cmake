# `gpuslice bench trace` from the shell: the JSON contract, the CSV and SVG
# it writes, and clean failures on bad input.
gs_add_shell_test(bench_trace_prints_the_json_contract_and_writes_csv_and_svg
                  tests/integration/trace/cli_contract.sh LABELS asan TIMEOUT 300)
gs_add_shell_test(bench_trace_rejects_bad_input_with_file_and_line
                  tests/integration/trace/bad_input.sh LABELS asan TIMEOUT 120)
gs_add_shell_test(bench_trace_family_prints_each_variant_and_the_worst_case
                  tests/integration/trace/family.sh LABELS asan TIMEOUT 300)
