#!/usr/bin/env bash
# Tenants cannot read each other's data. The state directory is 0700 and
# state.db (and its -wal, -shm) 0600, also when an older daemon left them
# open; an unprivileged tenant cannot open state.db. /metrics, as a
# tenant, holds its own slices' series and node aggregates but no other
# tenant's slice names or labels; GET /v1/slices lists only its own. A
# state directory shared with others (sticky, like /tmp) is refused.
. "$(dirname "$0")/lib.sh" "$1"
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null; then
	echo "SKIP: needs root and setpriv to act as a tenant"
	exit 77
fi
TENANT=(setpriv --reuid=65534 --regid=65534 --clear-groups)

mode() { stat -c %a "$1"; }

# check_modes: the state dir 700, the database files 600.
check_modes() {
	local f
	expect_eq "state dir mode" "$(mode "$STATE")" 700
	for f in "$STATE"/state.db "$STATE"/state.db-wal "$STATE"/state.db-shm; do
		[ -e "$f" ] || continue
		expect_eq "$(basename "$f") mode" "$(mode "$f")" 600
	done
	[ -e "$STATE/state.db" ] || fail "no state.db in $STATE"
}

# tenant METHOD PATH [BODY]: the body on stdout (the tenant cannot write
# into $WORK).
tenant() {
	local args=(-s --max-time 10 --unix-socket "$SOCK" -X "$1")
	[ $# -ge 3 ] && args+=(-H 'Content-Type: application/json' --data-binary "$3")
	"${TENANT[@]}" curl "${args[@]}" "http://localhost$2"
}

daemon_up
check_modes
api POST /v1/slices '{"name": "secret-alpha", "memory": "1GiB", "owner": 65533, "labels": {"project": "hushhush"}}' >/dev/null
expect_status "create another tenant's slice" 201
tenant POST /v1/slices '{"name": "mine-1", "memory": "1GiB"}' >"$WORK/mine.json"
jcheck "$(cat "$WORK/mine.json")" 'd["name"] == "mine-1"'

# The tenant cannot open the database or its WAL.
for f in state.db state.db-wal; do
	[ -e "$STATE/$f" ] || continue
	"${TENANT[@]}" cat "$STATE/$f" >/dev/null 2>"$WORK/cat.err" &&
		fail "a tenant could read $f"
	grep -q "Permission denied" "$WORK/cat.err" || fail "$f: $(cat "$WORK/cat.err")"
done

tenant GET /metrics >"$WORK/tenant.metrics"
grep -q 'slice="mine-1"' "$WORK/tenant.metrics" || fail "the tenant's own slice is missing from its /metrics"
grep -q '^gpuslice_gpu_slices{gpu="0"} 2$' "$WORK/tenant.metrics" ||
	grep -q '^gpuslice_gpu_slices{gpu="1"} 2$' "$WORK/tenant.metrics" ||
	fail "the node aggregates do not count every slice: $(grep gpuslice_gpu_slices "$WORK/tenant.metrics")"
grep -q '^gpuslice_slices 2$' "$WORK/tenant.metrics" || fail "gpuslice_slices is not the node's count"
for secret in secret-alpha hushhush 'project='; do
	grep -q -- "$secret" "$WORK/tenant.metrics" &&
		fail "a tenant's /metrics shows another tenant's '$secret': $(grep -- "$secret" "$WORK/tenant.metrics" | head -3)"
done
api GET /metrics >"$WORK/root.metrics"
grep -q 'slice="secret-alpha"' "$WORK/root.metrics" || fail "root's /metrics misses a slice"
grep -q 'project="hushhush"' "$WORK/root.metrics" || fail "root's /metrics misses a label"

tenant GET /v1/slices >"$WORK/list.json"
jcheck "$(cat "$WORK/list.json")" '[s["name"] for s in d["slices"]] == ["mine-1"]'

# Files an older daemon left readable are closed at the next start.
daemon_stop
chmod 755 "$STATE"
chmod 644 "$STATE/state.db"
daemon_up
check_modes
daemon_stop

# A shared state directory is refused.
mkdir -m 1777 "$WORK/shared"
"$D" --state-dir "$WORK/shared" --socket "$SOCK" --gpus sim >"$WORK/shared.out" 2>&1 &&
	fail "gpusliced started on a sticky, world-writable state dir"
grep -q "is a shared directory" "$WORK/shared.out" || fail "sticky state dir: $(cat "$WORK/shared.out")"
echo "ok: state.db is private; a tenant's /metrics and list hold only its own slices"
