# tenants_lib.sh - shared by the swap tests where tenants share a node
# (`. tenants_lib.sh BUILD_DIR`): ../security/lib.sh (uids ALICE and
# MALLORY, tenant_api, as_uid; skips without root and setpriv), plus
# tenants_swap_node: a simulated 24 GiB A30 with swap on (oversubscribe
# 2, host memory 64 GiB), the daemon up, and four slices: root's
# "ballast" (swap: never, BALLAST_MIB + 520 MiB: it fills the GPU but
# for what the others need) and high-priority "rh" (2 GiB), Alice's
# low-priority "al" and Mallory's "mal" (2 GiB each).
. "$(dirname "${BASH_SOURCE[0]}")/../security/lib.sh" "$1"

tenants_swap_node() {
	sim_node 1xA30-24GB
	cat >"$WORK/cfg.yaml" <<'YAML'
node:
  default_mode: timeslice
swap:
  oversubscribe: 2
  idle_after: 30s
  min_residency: 1s
  host_memory: 64GiB
YAML
	daemon_up --config "$WORK/cfg.yaml"
	chmod 755 "$RUNDIR"
	BALLAST_MIB=21540
	"$G" create --name ballast --memory "$((BALLAST_MIB + 520))MiB" \
		--swap never >/dev/null || fail "create ballast"
	"$G" create --name rh --memory 2GiB --priority high >/dev/null || fail "create rh"
	tenant_api $ALICE POST /v1/slices '{"name": "al", "memory": "2GiB", "priority": "low", "mode": "timeslice"}' >/dev/null
	expect_status "Alice's slice" 201
	tenant_api $MALLORY POST /v1/slices '{"name": "mal", "memory": "2GiB", "mode": "timeslice"}' >/dev/null
	expect_status "Mallory's slice" 201
}
