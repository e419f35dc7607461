# tests/integration/install: what `cmake --install`, the systemd unit and
# the Debian packages give a node (docs/install.md).
gs_add_shell_test(install_tree_runs_without_build_tree
  tests/integration/install/install_tree_runs_without_build_tree.sh
  LABELS install TIMEOUT 180)
