# lib.sh - shared by the hostile-tenant tests: `. lib.sh BUILD_DIR`.
# On top of the daemon tests' harness (../daemon/lib.sh: a gpusliced on a
# simulated node under $WORK), it acts as unprivileged users the way an
# attacker would: two tenants, ALICE (65533) and MALLORY (65534, nobody),
# each with only their own uid and no groups. Needs root (to become
# them) and setpriv; skipped (77) otherwise.
. "$(dirname "${BASH_SOURCE[0]}")/../daemon/lib.sh" "$1"

if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null; then
	echo "SKIP: needs root and setpriv to act as unprivileged tenants"
	exit 77
fi
ALICE=65533
MALLORY=65534
SHIM=$B/lib/libgpuslice.so
ALLOC=$B/bin/gs-alloc
BURN=$B/bin/gs-burn
FORGE=$B/tests/gs-region-forge
[ -e "$SHIM" ] && [ -x "$FORGE" ] && [ -x "$ALLOC" ] ||
	{ echo "SKIP: no shim, gs-alloc or gs-region-forge in this build"; exit 77; }

# as_uid UID CMD...: CMD as that uid, no groups, with the node's env.
as_uid() {
	local u=$1
	shift
	setpriv --reuid="$u" --regid="$u" --clear-groups \
		env HOME=/ GPUSLICE_SOCKET="$SOCK" "$@"
}

# sim_node [GPUS]: a simulated node the tenants can use (on a real node the
# device files are theirs to open; here the sim's state file must be).
sim_node() {
	"$G" sim init --gpus "${1:-1xH100-SXM5-80GB}" --dir "$GPUSLICE_SIM_DIR" >/dev/null
	eval "$("$G" sim env --dir "$GPUSLICE_SIM_DIR")"
	chmod 755 "$GPUSLICE_SIM_DIR"
	chmod 666 "$GPUSLICE_SIM_DIR"/*
}

# tenant_api UID METHOD PATH [BODY]: the API as that tenant; body on
# stdout, status in $WORK/status.
tenant_api() {
	local u=$1 out
	shift
	local args=(-s --max-time 30 --unix-socket "$SOCK" -X "$1" -w '\n%{http_code}')
	[ $# -ge 3 ] && args+=(-H 'Content-Type: application/json' --data-binary "$3")
	out=$(as_uid "$u" curl "${args[@]}" "http://localhost$2" || true)
	printf '%s\n' "${out##*$'\n'}" >"$WORK/status"
	printf '%s\n' "${out%$'\n'*}" >"$WORK/body"
	cat "$WORK/body"
}

# events_of SLICE TYPE: how many events of TYPE the slice has.
events_of() {
	api GET "/v1/events?slice=$1" | python3 -c '
import json, sys
print(sum(1 for e in json.load(sys.stdin)["events"] if e["type"] == sys.argv[1]))' "$2"
}

# node_events TYPE: how many node-wide events of TYPE there are.
node_events() {
	api GET "/v1/events?limit=1000" | python3 -c '
import json, sys
print(sum(1 for e in json.load(sys.stdin)["events"] if e["type"] == sys.argv[1]))' "$1"
}

# node_up [watchdog-kill]: the daemon on the sim node, its run directory
# open to tenants; with "kill", the watchdog kills (every 300 ms).
node_up() {
	if [ "${1:-}" = kill ]; then
		printf 'watchdog:\n  action: kill\n  interval_ms: 300\n' >"$WORK/kill.yaml"
		daemon_up --config "$WORK/kill.yaml"
	else
		daemon_up
	fi
	chmod 755 "$RUNDIR"
}

# capped_run UID SLICE GIB: UID runs gs-alloc in SLICE through `gpuslice
# run --slice` (within 30 s) and must hit the cap at no more than GIB.
capped_run() {
	local out
	out=$(timeout 30 setpriv --reuid="$1" --regid="$1" --clear-groups \
		env HOME=/ GPUSLICE_SOCKET="$SOCK" "$G" run --slice "$2" -- \
		"$ALLOC" --api plain --chunk 256MiB 2>"$WORK/capped.err") ||
		fail "uid $1's run in $2 failed: $(cat "$WORK/capped.err")"
	jcheck "$out" 'd["error"] == "CUDA_ERROR_OUT_OF_MEMORY" and 0 < d["allocated_bytes"] <= '"$3"' << 30' ||
		fail "uid $1's run in $2: $out"
}

# alice_burn SLICE SECONDS OUT: Alice's gs-burn (256 MiB) in SLICE through
# `gpuslice run`; its JSON line in OUT; the whole run's wall time in $took
# (ms: a burn held back at its first launch reports its rate only from
# there). Fails the test when the burn fails.
alice_burn() {
	local t0=$(date +%s%N)
	timeout $(($2 + 40)) setpriv --reuid=$ALICE --regid=$ALICE --clear-groups \
		env HOME=/ GPUSLICE_SOCKET="$SOCK" "$G" run --slice "$1" -- \
		"$BURN" --seconds "$2" --memory 256MiB >"$3" 2>"$3.err" ||
		fail "Alice's burn in $1 failed: $(cat "$3.err")"
	took=$((($(date +%s%N) - t0) / 1000000))
}

# burn_field OUT FIELD: a field of a burn's JSON line (gflops, kernels).
burn_field() {
	python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])[sys.argv[2]])' "$1" "$2"
}

# tenant_start UID NAME SLICE: an interactive tenant (tenant.py, under the
# shim) of UID in SLICE, fed one command per line through fd $TIN; its
# answers in $WORK/NAME.out. OUT: TPID (its pid), TJOB (the job to wait).
TENANT="$SRC/tests/integration/security/tenant.py"
tenant_start() {
	mkfifo -m 666 "$WORK/$2.in"
	as_uid "$1" GPUSLICE_SLICE="$3" GPUSLICE_RUN_DIR="$RUNDIR" \
		LD_PRELOAD="$SHIM" LD_LIBRARY_PATH="$LD_LIBRARY_PATH" \
		python3 "$TENANT" <"$WORK/$2.in" >"$WORK/$2.out" 2>"$WORK/$2.err" &
	TJOB=$!
	PIDS+=($TJOB)
	exec {TIN}>"$WORK/$2.in"
	wait_until 10 grep -q '^pid ' "$WORK/$2.out" ||
		fail "tenant $2 of uid $1 did not start: $(cat "$WORK/$2.out" "$WORK/$2.err")"
	TPID=$(awk '/^pid /{print $2; exit}' "$WORK/$2.out")
}

# hold_usage_lock: the shared usage file's mutex is held by a stopped
# process. No tenant can take it (the file is the daemon's, 0644: Mallory
# is refused first, on permissions); what is left is a root process, such
# as a debugger or a crashed tool, stopped holding it. OUT: HPID.
HOLD=$B/tests/gs-daemon-lock-holder
hold_usage_lock() {
	[ -x "$HOLD" ] || { echo "SKIP: no gs-daemon-lock-holder"; exit 77; }
	timeout 5 setpriv --reuid=$MALLORY --regid=$MALLORY --clear-groups \
		"$HOLD" mutex "$RUNDIR/usage" >"$WORK/deny.out" 2>&1 &&
		fail "Mallory took the shared usage mutex"
	grep -q "Permission denied" "$WORK/deny.out" ||
		fail "Mallory was not refused the shared usage file: $(cat "$WORK/deny.out")"
	"$HOLD" mutex "$RUNDIR/usage" >"$WORK/hold.out" 2>&1 &
	HPID=$!
	PIDS+=($HPID)
	wait_until 5 grep -q held "$WORK/hold.out" || fail "the holder did not take the lock: $(cat "$WORK/hold.out")"
	kill -STOP "$HPID"
}

# root_slice NAME [SPEC-JSON-FIELDS]: a 4 GiB time-sliced slice of root's
# on GPU 0; the fields (", \"compute\": 40", ...) are appended to its spec.
root_slice() {
	api POST /v1/slices "{\"name\": \"$1\", \"mode\": \"timeslice\", \"memory\": \"4GiB\", \"gpu\": 0$2}" >/dev/null
	expect_status "create $1" 201
}
ROOT_RUNS=()
# root_run SLICE PROGRAM ARGS...: root's PROGRAM in SLICE, in the
# background, its output in $WORK/SLICE.out; wait_root_runs waits for all
# of them and fails the test when one failed.
root_run() {
	local s=$1
	shift
	"$G" run --slice "$s" -- "$@" >"$WORK/$s.out" 2>&1 &
	ROOT_RUNS+=($!)
	PIDS+=($!)
}
wait_root_runs() {
	local p
	for p in "${ROOT_RUNS[@]}"; do wait "$p" || fail "a workload failed: $(cat "$WORK"/*.out)"; done
	ROOT_RUNS=()
}
