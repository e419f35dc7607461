#!/usr/bin/env bash
# The shim times a batch by the events around it; on a time-sliced GPU the
# span also covers what a neighbour ran meanwhile, so a limited slice's
# books run above NVML's count and, charged them, it got less than its
# share: a 40 % high-priority inference slice beside a 30 % burn got
# 28.6-29.5 % of the GPU by the driver's count (39.6 % alone). The daemon
# now publishes each limited slice's charge ratio, NVML over its books
# (daemon/chargeratio.c), and the shim charges its bucket that share of
# each batch (the books keep the raw figure).
#
#   alone:  the inference slice alone keeps its share and a ratio of 1;
#   pair:   beside the burn, it gets within 3 pp of its share, measured
#           on the sim's own count once the ratio settled (SETTLE s);
#           the burn stays within its own.
#
# GS_TEST_SHARES="P Q" runs the pair at other shares (tuned on 40 30;
# `make bench` reports 25 50 as well). Figures print as `bench:` lines.
. "$(dirname "$0")/lib.sh" "$1"
INFER=$B/bin/gs-infer
[ -x "$BURN" ] && [ -x "$INFER" ] || { echo "SKIP: no gs-burn or gs-infer"; exit 77; }
read -r P Q <<<"${GS_TEST_SHARES:-40 30}"
SETTLE=${GS_TEST_SETTLE:-15}
MEASURE=${GS_TEST_MEASURE:-10}
SECS=$((SETTLE + MEASURE + 2))

sim_node
daemon_up
chmod 755 "$RUNDIR"

# busy_of NAME...: the sim's own GPU time (s) of the running processes
# named NAME, one figure per name, and the time (s) it was read at.
busy_of() {
	"$G" sim status --json | python3 -c '
import json, sys, time
d = json.load(sys.stdin)
procs = [p for g in d["gpus"] for p in g["processes"]]
print(" ".join("%.6f" % sum(p["busy_s"] for p in procs if p["name"] == n)
               for n in sys.argv[1:]), "%.6f" % time.time())' "$@"
}
# shares NAME...: each NAME's share (%) of the GPU over MEASURE s, from
# SETTLE s after the workloads started.
shares() {
	local a b
	sleep "$SETTLE"
	a=$(busy_of "$@")
	sleep "$MEASURE"
	b=$(busy_of "$@")
	python3 -c '
import sys
a = [float(x) for x in sys.argv[1].split()]
b = [float(x) for x in sys.argv[2].split()]
dt = b[-1] - a[-1]
print(" ".join("%.1f" % (100 * (y - x) / dt) for x, y in zip(a[:-1], b[:-1])))' "$a" "$b"
}
# ratio SLICE: the charge ratio the daemon last published for SLICE.
ratio() {
	grep -o "slice=$1 charge ratio [0-9.]*" "$WORK/daemon.log" | tail -1 | awk '{print $4}'
}
within() { python3 -c 'import sys; sys.exit(0 if abs(float(sys.argv[1]) - float(sys.argv[2])) <= float(sys.argv[3]) else 1)' "$@"; }

root_slice infer ", \"compute\": $P, \"priority\": \"high\""
root_run infer "$INFER" --light --seconds "$SECS"
read -r alone < <(shares gs-infer)
wait_root_runs
echo "bench: charge ratio, ${P} % high-priority gs-infer alone: ${alone} % of the GPU (sim's count), ratio $(ratio infer)"
within "$alone" "$P" 3 || fail "alone, the ${P} % slice got ${alone} %"
[ "$(ratio infer)" = 1.000 ] || fail "alone, the slice's charge ratio is $(ratio infer), not 1"

root_slice batch ", \"compute\": $Q"
root_run infer "$INFER" --light --seconds "$SECS"
root_run batch "$BURN" --seconds "$SECS" --memory 256MiB
read -r got burn < <(shares gs-infer gs-burn)
wait_root_runs
echo "bench: charge ratio, ${P} % high-priority gs-infer beside a ${Q} % gs-burn: ${got} % and ${burn} % of the GPU (sim's count), ratios $(ratio infer) and $(ratio batch)"
grep "charge ratio" "$WORK/daemon.log" | sed 's/^/  /' | tail -20
within "$got" "$P" 3 || fail "beside the burn, the ${P} % slice got ${got} %"
python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) <= float(sys.argv[2]) + 3 else 1)' "$burn" "$Q" ||
	fail "the ${Q} % burn got ${burn} %"
echo "ok: a ${P} % slice gets its share by NVML beside a time-sliced ${Q} % neighbour, and alone"
