#!/usr/bin/env bash
# A tenant that allocates around the shim (the driver loaded into its own
# link-map namespace, where no LD_PRELOAD reaches) is still seen by the
# watchdog through NVML, within 2 s: with action "flag" the slice is
# flagged (and cleared once the memory is gone); with action "kill" the
# process is killed, also when it was started by `gpuslice run --slice`.
. "$(dirname "$0")/lib.sh" "$1"

BYPASS=$B/tests/gs-daemon-bypass
LIBCUDA=$B/sim/libcuda.so.1
[ -x "$BYPASS" ] && [ -e "$LIBCUDA" ] || { echo "SKIP: no sim libcuda"; exit 77; }

# The tenant allocates 1 GiB against a 256 MiB cap; NVML also shows its
# context (the sim charges 500 MiB, within the default allowance).

# start_bypass NAME [PREFIX...]: a bypassing tenant waiting on a fifo.
start_bypass() {
	local name=$1
	shift
	mkfifo "$WORK/$name.go"
	"$@" "$BYPASS" "$LIBCUDA" $((1 << 30)) <"$WORK/$name.go" \
		>"$WORK/$name.out" 2>&1 &
	PIDS+=($!)
	disown $!
	exec {GOFD}>"$WORK/$name.go"
	wait_until 10 grep -q '^pid ' "$WORK/$name.out" ||
		fail "$name did not start: $(cat "$WORK/$name.out")"
	TENANT=$(awk '/^pid /{print $2; exit}' "$WORK/$name.out")
}

# within_2s SLICE OUTFILE EVENT: the slice's EVENT came at most 2 s after
# the allocation the tenant reported in OUTFILE.
within_2s() {
	local t_alloc ev
	t_alloc=$(awk '/^allocated /{print $2; exit}' "$WORK/$2")
	ev=$(api GET "/v1/events?slice=$1")
	python3 - "$ev" "$t_alloc" "$3" <<'PY' || fail "$3 on $1 came more than 2 s after the allocation"
import json, sys
d = json.loads(sys.argv[1]); t = float(sys.argv[2])
ts = [e["ts_ns"] / 1e9 for e in d["events"] if e["type"] == sys.argv[3]]
assert ts, "no event " + sys.argv[3]
dt = ts[0] - t
print("%s after %.2f s" % (sys.argv[3], dt))
sys.exit(0 if dt <= 2.0 else 1)
PY
}

state_of() {
	api GET "/v1/slices/$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])'
}

is_state() {
	[ "$(state_of "$1")" = "$2" ]
}

# ---- action flag, tenant attached through the API ----
daemon_up
out=$(api POST /v1/slices '{"name": "wd", "memory": "256MiB", "compute": 50}')
expect_status "create wd" 201
uuid=$(jq_py "$out" 'd["gpu"]["uuid"]')
CUDA_VISIBLE_DEVICES=$uuid start_bypass wd env
api POST /v1/slices/wd/attach "{\"pid\": $TENANT}" >/dev/null
expect_status "attach the tenant" 200
echo go >&$GOFD
wait_until 10 grep -q '^allocated' "$WORK/wd.out" ||
	fail "the tenant could not allocate: $(cat "$WORK/wd.out")"
wait_until 10 is_state wd flagged || fail "wd was never flagged"
# From the allocation (the tenant's clock) to the watchdog's event.
within_2s wd wd.out watchdog.flag
out=$(api GET /v1/slices/wd)
jcheck "$out" '"limit 256 MiB" in d["reason"] and d["usage"]["nvml_memory_bytes"] >= 1 << 30'
out=$(api GET "/v1/events?slice=wd")
jcheck "$out" '"watchdog.flag" in [e["type"] for e in d["events"]]'
api GET /metrics | grep -q '^gpuslice_watchdog_actions_total{action="flag"} 1$' ||
	fail "metrics do not count the flag"
kill -0 "$TENANT" || fail "action flag must not kill"
kill -9 "$TENANT"
wait_until 10 is_state wd ready || fail "the flag was not cleared once the memory was gone"

# ---- action kill ----
daemon_stop
cat >"$WORK/kill.yaml" <<'YAML'
watchdog:
  action: kill
  interval_ms: 500
YAML
daemon_up --config "$WORK/kill.yaml"
out=$(api POST /v1/slices '{"name": "wk", "memory": "256MiB"}')
expect_status "create wk" 201
uuid=$(jq_py "$out" 'd["gpu"]["uuid"]')
CUDA_VISIBLE_DEVICES=$uuid start_bypass wk env
api POST /v1/slices/wk/attach "{\"pid\": $TENANT}" >/dev/null
echo go >&$GOFD
wait_until 10 grep -q '^allocated' "$WORK/wk.out" || fail "wk could not allocate"
wait_until 10 eval '! kill -0 '"$TENANT"' 2>/dev/null' || fail "the tenant was not killed"
within_2s wk wk.out watchdog.kill

# ---- the same tenant started by `gpuslice run --slice` (shim loaded) ----
if [ -e "$B/lib/libgpuslice.so" ] && "$G" run --help >/dev/null 2>&1; then
	out=$(api POST /v1/slices '{"name": "wr", "memory": "256MiB"}')
	uuid=$(jq_py "$out" 'd["gpu"]["uuid"]')
	CUDA_VISIBLE_DEVICES=$uuid start_bypass wr "$G" run --slice wr --run-dir "$RUNDIR" --
	echo go >&$GOFD
	wait_until 10 grep -q '^allocated' "$WORK/wr.out" ||
		fail "wr could not allocate: $(cat "$WORK/wr.out")"
	wait_until 5 eval '! kill -0 '"$TENANT"' 2>/dev/null' ||
		fail "a tenant under gpuslice run was not killed"
	echo "ok: tenant under gpuslice run killed"
else
	echo "note: gpuslice run is not built here; that case was skipped"
fi
echo "ok: watchdog"
