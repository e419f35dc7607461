# `gpuslice plan` and `gpuslice advise` from the shell (no daemon, no sim).
gs_add_shell_test(plan_cli_plans_layouts_and_checks_mig_parted_configs
                  tests/integration/cli_plan_advise/plan_cli.sh LABELS asan TIMEOUT 120)
gs_add_shell_test(advise_cli_reaches_every_leaf_and_rejects_missing_answers
                  tests/integration/cli_plan_advise/advise_cli.sh LABELS asan TIMEOUT 120)
