#!/usr/bin/env bash
# A slice created with mode auto (the default) says how the daemon chose
# its mode: the slice.created event names the decision tree's answers
# (seeds/004, core/advisor.c) and the mechanism it reached; a slice whose
# mode was asked for says nothing of the kind. isolation hard reaches a MIG
# instance, isolation none (tenants accept a shared fault domain) MPS,
# isolation memory software fractions (turns). A slice auto sends to MPS
# where no GPU can take an MPS client takes turns, and so does every such
# slice on a node without an MPS control program; both say why.
. "$(dirname "$0")/lib.sh" "$1"

cat >"$WORK/cfg.yaml" <<YAML
node:
  sim_count: 3
YAML
daemon_up --config "$WORK/cfg.yaml"

msg() {
	api GET "/v1/events?slice=$1" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print("".join(e["message"] for e in d["events"] if e["type"] == "slice.created"))'
}
gpu_of() { "$G" show "$1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["gpu"]["index"])' || fail "cannot read the GPU of $1"; }

api POST /v1/slices '{"name": "auto-hard", "memory": "10GiB", "isolation": "hard"}' >/dev/null
expect_status "auto-hard" 201
out=$(api POST /v1/slices '{"name": "auto-none", "memory": "1GiB", "compute": 30}')
expect_status "auto-none" 201
jcheck "$out" 'd["mode"] == "mps" and d["env"]["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] == "30"'
api POST /v1/slices '{"name": "auto-mem", "memory": "1GiB", "compute": 20, "isolation": "memory"}' >/dev/null
expect_status "auto-mem" 201
api POST /v1/slices '{"name": "asked", "memory": "1GiB", "mode": "timeslice"}' >/dev/null
expect_status "asked" 201

m=$(msg auto-mem)
echo "auto-mem: $m"
case "$m" in
*"(auto: hard-isolation=no"*"memory-isolation=yes"*"-> fractions)"*) ;;
*) fail "auto-mem's event does not say how auto chose: $m" ;;
esac
jcheck "$("$G" show auto-mem --json)" 'd["mode"] == "timeslice"'
m=$(msg auto-hard)
echo "auto-hard: $m"
case "$m" in
mode=mig*"(auto: hard-isolation=yes"*"-> mig)"*) ;;
*) fail "auto-hard's event does not say it chose MIG and why: $m" ;;
esac
m=$(msg asked)
case "$m" in
*auto:*) fail "a mode asked for is reported as chosen by auto: $m" ;;
esac
m=$(msg auto-none)
echo "auto-none: $m"
case "$m" in
mode=mps*"(auto: hard-isolation=no"*"accept-fault-sharing=yes -> mps)"*) ;;
*) fail "auto-none's event does not say it chose MPS and why: $m" ;;
esac

# Pinned to the GPU that runs turns: no MPS client fits there, so turns.
turns_gpu=$(gpu_of auto-mem)
echo "auto-mem runs on gpu $turns_gpu"
out=$(api POST /v1/slices "{\"name\": \"auto-pinned\", \"memory\": \"1GiB\", \"compute\": 10, \"gpu\": $turns_gpu}")
expect_status "auto-pinned" 201
jcheck "$out" 'd["mode"] == "timeslice" and d["gpu"]["index"] == '"$turns_gpu"
m=$(msg auto-pinned)
echo "auto-pinned: $m"
case "$m" in
*"-> mps; no GPU takes an MPS client now -> timeslice)"*) ;;
*) fail "auto-pinned's event does not say why it got turns: $m" ;;
esac

# The same request on a node without nvidia-cuda-mps-control: turns.
daemon_stop
cat >>"$WORK/cfg.yaml" <<YAML
mps:
  control: $WORK/no-such-dir/nvidia-cuda-mps-control
YAML
daemon_up --config "$WORK/cfg.yaml"
grep -q "MPS control daemon '.*' not found" "$WORK/daemon.log" ||
	fail "the daemon does not say at start that MPS is missing"
out=$(api POST /v1/slices '{"name": "auto-nomps", "memory": "1GiB", "compute": 30}')
expect_status "auto-nomps" 201
jcheck "$out" 'd["mode"] == "timeslice"'
m=$(msg auto-nomps)
echo "auto-nomps: $m"
case "$m" in
*"-> mps; no MPS control daemon here -> timeslice)"*) ;;
*) fail "auto-nomps's event does not say why it got turns: $m" ;;
esac
echo ok
