#!/usr/bin/env bash
# Runs gpuslice's benchmarks and prints their figures.
#
#   scripts/bench.sh BUILD_DIR [SECTION...]
#
# One function per section, named bench_<section>; with no SECTION every
# section in SECTIONS runs in order. To add one: write bench_<name> (it gets
# the build dir as $1 and prints its own heading) and append <name> to
# SECTIONS. Numbers measured on the simulated GPU say so in their heading:
# they measure gpuslice's logic, not a GPU.
set -euo pipefail

# MIG planner: time per gs_migplan_solve call for every catalog model at
# its hardest input (pure CPU; no GPU or sim involved).
bench_migplan() {
	echo "== migplan: MIG layout planner (CPU only) =="
	"$1/bin/gs-bench-core"
}

# The sim's own overhead: what one kernel launch, one alloc+free pair and
# one event record + query cost on the simulated driver (sim/bench_sim.c).
# These are host-side costs of the stand-in, not GPU figures.
bench_sim() {
	echo "== sim: cost of the simulated CUDA driver itself (source: sim) =="
	"$1/bin/gs-bench-sim"
}

# Cluster placement on Alibaba's GPU-sharing trace (cluster-trace-gpu-v2023),
# as the FGD paper measured it: replay time of one default run at 1.3x on
# one core for FGD and for gpuslice's own policy, then the default matrix
# (the six published policies and ours, 10 seeds each) with unallocated
# GPU % at arrival 100 against the paper's published means. CPU only.
bench_trace() {
	local b=$1 src data tmp
	src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	data=$src/tests/data/trace
	tmp=$(mktemp -d)
	echo "== trace: placement replay on Alibaba's GPU-sharing trace (CPU only) =="
	local pin=()
	command -v taskset >/dev/null 2>&1 && pin=(taskset -c 0)
	echo "-- one default run (1213 nodes, ~10,700 tasks at 1.3x), CPU seconds of the replay on one core (mean of seeds 42-46):"
	"${pin[@]}" "$b/bin/gpuslice" bench trace --nodes "$data/openb_node_list_gpu_node.csv" \
		--pods "$data/openb_pod_list_default.csv" --policy fgd,gpuslice \
		--seeds 42-46 --jobs 1 2>/dev/null |
		awk '/^Unallocated/ {on=1; next} on && /^(FGD|gpuslice) / {printf "   %-9s %s s\n", $1, $NF} /^$/ {on=0}'
	echo "-- default list, 10 seeds, unallocated GPU % at arrival 100 (mean +- sd) vs published:"
	"$b/bin/gpuslice" bench trace --nodes "$data/openb_node_list_gpu_node.csv" \
		--pods "$data/openb_pod_list_default.csv" --policy all --seeds 42-51 \
		--jobs "$(nproc 2>/dev/null || echo 2)" --json 2>/dev/null >"$tmp/res.json"
	python3 - "$tmp/res.json" "$data/published_unalloc_100.csv" default <<'PY'
import csv, json, sys
res = json.load(open(sys.argv[1]))["results"]
pub = {r["policy"]: r for r in csv.DictReader(open(sys.argv[2])) if r["workload"] == sys.argv[3]}
print("   %-11s %16s %16s %7s" % ("policy", "replay", "published", "diff"))
for e in res:
    if e["arrived_pct"] != 100:
        continue
    p = pub.get(e["policy"])
    if p:
        print("   %-11s %8.2f +- %4.2f %8.2f +- %4.2f %+7.2f" % (e["policy"], e["unallocated_pct_mean"], e["unallocated_pct_sd"],
              float(p["unalloc_pct_mean"]), float(p["unalloc_pct_sd"]), e["unallocated_pct_mean"] - float(p["unalloc_pct_mean"])))
    else:
        f = pub["fgd"]
        print("   %-11s %8.2f +- %4.2f %16s %+7.2f vs published FGD" % (e["policy"], e["unallocated_pct_mean"], e["unallocated_pct_sd"], "(ours)",
              e["unallocated_pct_mean"] - float(f["unalloc_pct_mean"])))
PY
	rm -rf "$tmp"
}

# Our policy against FGD on every task list of the trace (default, cpu*,
# gpushare*): 10 seeds each, unallocated GPU % at arrival 100. The lists
# are read from $GS_TRACE_DIR (default: ../shared/traces/gpu-v2023/csv
# next to the checkout); the section is skipped when they are not there.
bench_trace_lists() {
	local b=$1 src dir tmp f w
	src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	dir=${GS_TRACE_DIR:-$src/../shared/traces/gpu-v2023/csv}
	echo "== trace_lists: gpuslice vs FGD on every trace list (CPU only) =="
	if [ ! -f "$dir/openb_node_list_gpu_node.csv" ]; then
		echo "   skipped: no trace lists in $dir (set GS_TRACE_DIR)"
		return 0
	fi
	tmp=$(mktemp -d)
	printf '   %-12s %14s %14s %14s\n' list "gpuslice" "FGD (replay)" "FGD published"
	for f in "$dir"/openb_pod_list_*.csv; do
		w=$(basename "$f" .csv)
		w=${w#openb_pod_list_}
		"$b/bin/gpuslice" bench trace --nodes "$dir/openb_node_list_gpu_node.csv" --pods "$f" \
			--policy gpuslice,fgd --seeds 42-51 --jobs "$(nproc 2>/dev/null || echo 2)" \
			--json 2>/dev/null >"$tmp/r.json"
		python3 - "$tmp/r.json" "$src/tests/data/trace/published_unalloc_100.csv" "$w" <<'PY'
import csv, json, sys
res = {e["policy"]: e for e in json.load(open(sys.argv[1]))["results"] if e["arrived_pct"] == 100}
pub = [r for r in csv.DictReader(open(sys.argv[2])) if r["workload"] == sys.argv[3] and r["policy"] == "fgd"]
g, f = res["gpuslice"], res["fgd"]
p = "%8.2f" % float(pub[0]["unalloc_pct_mean"]) if pub else "       -"
print("   %-12s %7.2f +- %4.2f %7.2f +- %4.2f %14s" % (sys.argv[3], g["unallocated_pct_mean"], g["unallocated_pct_sd"],
      f["unallocated_pct_mean"], f["unallocated_pct_sd"], p))
PY
	done
	rm -rf "$tmp"
}

# gpusliced: durable slice create+delete through the API socket, from
# several concurrent clients each on a keep-alive connection
# (tests/integration/daemon/loadgen.c). "Durable": acknowledged only after
# the SQLite commit (WAL): with synchronous=normal (the default) that
# survives any crash of the daemon, kill -9 included (the crash test checks
# it); synchronous=full adds an fsync per group commit and survives a power
# loss too. The GPUs are the simulator's, which creates and deletes do not
# touch.
bench_daemon() {
	local b=$1 tmp pid sync c
	tmp=$(mktemp -d)
	echo "== daemon: durable slice create+delete through the socket (ops/s, latency; GPUs: sim) =="
	echo "   machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) before the run"
	for sync in normal full; do
		printf 'node:\n  gpus: sim\nstore:\n  synchronous: %s\n' "$sync" >"$tmp/$sync.yaml"
		rm -rf "$tmp/state" "$tmp/run"
		GPUSLICE_SIM_DIR=$tmp/sim "$b/bin/gpusliced" --config "$tmp/$sync.yaml" \
			--state-dir "$tmp/state" --socket "$tmp/run/api.sock" \
			--log-level warn 2>"$tmp/daemon.log" &
		pid=$!
		for _ in $(seq 100); do
			[ -S "$tmp/run/api.sock" ] && break
			sleep 0.1
		done
		"$b/tests/gs-daemon-loadgen" bench --socket "$tmp/run/api.sock" \
			--clients 4 --ops 2000 --prefix w >/dev/null
		for c in 1 4 8 16; do
			"$b/tests/gs-daemon-loadgen" bench --socket "$tmp/run/api.sock" \
				--clients "$c" --ops 20000 --prefix "c$c-" |
				python3 -c '
import json, sys
d = json.loads(sys.stdin.read())
print("   synchronous=%-6s clients=%-3d %6.0f ops/s  p50 %.2f ms  p99 %.2f ms  max %.1f ms  errors %d" % (
      sys.argv[1], d["clients"], d["ops_per_s"], d["p50_ms"], d["p99_ms"], d["max_ms"], d["errors"]))' "$sync"
		done
		curl -s --unix-socket "$tmp/run/api.sock" http://localhost/metrics |
			awk '/^gpuslice_store_commits_total/ {c=$2} /^gpuslice_store_writes_total/ {w=$2}
			     END {if (c) printf "   synchronous=%-6s %d writes in %d commits (%.1f per commit)\n", "'"$sync"'", w, c, w / c}'
		kill "$pid"
		wait "$pid" 2>/dev/null || true
		# The MPS control daemons it started outlive it (so that their
		# clients keep running across a restart): stop them, or the
		# next daemon's MPS slices could not start theirs.
		for f in "$tmp"/run/mps/*/pipe/nvidia-cuda-mps-control.pid; do
			[ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null || true
		done
	done
	rm -rf "$tmp"
}

# The shim (libgpuslice.so): CPU time it adds per cuLaunchKernel and per
# cuMemAlloc+cuMemFree against the same calls made straight to the driver
# in one process, without and with a compute limit, and the resident memory
# it adds (shim/bench_shim.c). Run on a private simulated node, so the
# "direct" figures are the sim's own costs, not a GPU's.
bench_shim() {
	local b=$1 tmp
	tmp=$(mktemp -d)
	echo "== shim: libgpuslice.so's added cost per call (source: sim, host CPU time) =="
	"$b/bin/gpuslice" sim init --gpus 1xH100-SXM5-80GB --dir "$tmp/sim" >/dev/null
	(
		eval "$("$b/bin/gpuslice" sim env --dir "$tmp/sim")"
		"$b/bin/gs-bench-shim" "$b/lib/libgpuslice.so"
	)
	rm -rf "$tmp"
}

# Compute shares (#12 item 6): three saturating gs-burn in slices of
# 20/30/50 % on one simulated GPU, by the sim's own accounting, with the
# default ~65 ms kernels (10 s) and with ~1 ms kernels (16 s, three runs):
# each slice's share and the GPU's busy share. Wall-clock on the sim:
# about 1.5 minutes, and the host's load moves the figures.
bench_shares() {
	local b=$1 src
	src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	echo "== shares: 20/30/50 % slices of saturating gs-burn (source: sim) =="
	(
		. "$src/tests/integration/shim/lib.sh" "$b"
		sim_up
		echo "-- ~65 ms kernels, 10 s window --"
		burn_shares 10 100 0
		for i in 1 2 3; do
			echo "-- ~1 ms kernels, 16 s window, run $i --"
			burn_shares 16 100 0 --memory 64MiB --iters 64
		done
	)
}

# Placement: 100k mixed requests (fractions, whole GPUs, MIG profiles,
# gangs) on a simulated cluster of 1000 nodes x 8 GPUs, both policies
# (pure CPU: gs_place on an in-memory inventory; no GPU or sim involved).
bench_placement() {
	echo "== placement: 100k requests on 1000 nodes x 8 GPUs (CPU only) =="
	"$1/bin/gs-bench-placement" --policy binpack
	"$1/bin/gs-bench-placement" --policy spread
}

# Placement on one node under churn: requests refused per policy, and what
# the demand history buys `frag` (pure CPU; bench/bench_demand.c).
bench_placement_demand() {
	echo "== placement_demand: refused requests on one node, 8 x 80 GiB (CPU only) =="
	"$1/bin/gs-bench-demand" --load 1.2
	"$1/bin/gs-bench-demand" --load 1.2 --mix 25:60,45:30,0:10
}

# gpuslice-kubelet-plugin's memory (budget 16 MiB): peak RSS of the
# transport with the fake driver of tests/integration/k8s_transport after
# 2,000 claim calls from the kubelet stand-in (CPU only), then of the whole
# binary (driver and ResourceSlice publisher) on the simulated node against
# the API server stand-in (e2e_cluster.sh: publish, re-register, one claim).
bench_kubelet_plugin() {
	local src
	src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	echo "== kubelet-plugin: RSS of gpuslice-kubelet-plugin (budget 16 MiB) =="
	if [ -x "$1/tests/gs-kplugin-fake" ]; then
		echo "-- transport, fake driver:"
		GS_SRC=$src GS_BUILD=$1 python3 "$src/tests/integration/k8s_transport/kubelet.py" rss |
			sed -e '/^ok: /d' -e 's/^/   /' || echo "   skipped (see above)"
	else
		echo "   skipped: $1/tests/gs-kplugin-fake is not built"
	fi
	if [ -x "$1/bin/gpuslice-kubelet-plugin" ]; then
		echo "-- whole plugin on the sim node, publisher on (source: sim):"
		GS_SRC=$src bash "$src/tests/integration/k8s_transport/e2e_cluster.sh" "$1" 2>&1 |
			grep -E 'peak RSS|published:|SKIP|FAIL' | sed -e 's/^/   /' || true
	else
		echo "   skipped: $1/bin/gpuslice-kubelet-plugin is not built"
	fi
}

# The DRA driver's NodePrepareResources latency on the sim: claim GET from
# a loopback stand-in API server, slice creation in gpusliced, CDI spec and
# checkpoint (tests/integration/k8s_driver/bench.sh). Target p99 <= 50 ms.
bench_kubelet_prepare() {
	local src
	src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	echo "== kubelet-prepare: DRA driver NodePrepareResources latency (sim) =="
	if [ ! -x "$1/tests/gs-kdra-probe" ]; then
		echo "   skipped: $1/tests/gs-kdra-probe is not built"
		return 0
	fi
	GS_SRC=$src bash "$src/tests/integration/k8s_driver/bench.sh" "$1" 200 ||
		echo "   skipped or failed (see above)"
}

# Watchdog (#25): time to stop, per attack, as unprivileged tenants on the
# simulated node (the security tests' attacks, action kill at 300 ms, or
# the default where two tenants share the node). Needs root (to act as
# tenants); skipped otherwise. Wall-clock on the sim; load moves it.
bench_watchdog() {
	local b=$1 src t out
	src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	echo "== watchdog: time to stop, per attack (source: sim) =="
	if [ "$(id -u)" -ne 0 ]; then
		echo "   skipped: needs root to act as unprivileged tenants"
		return 0
	fi
	for t in watchdog_stops_processes_in_no_slice_or_over_their_share \
		lies_about_ones_own_books_or_bucket_are_stopped_by_the_watchdog \
		a_slices_seventeenth_process_does_not_escape_the_watchdog \
		compute_split_over_two_slices_is_judged_per_owner \
		short_processes_in_no_slice_are_caught_and_their_owner_reported; do
		out=$(GS_SRC=$src bash "$src/tests/integration/security/$t.sh" "$b" 2>&1) ||
			{ echo "   $t: failed or skipped"; continue; }
		echo "-- $t --"
		grep -E '^(bench|ok):' <<<"$out" | sed 's/^/   /'
	done
}

SECTIONS=(migplan sim trace trace_lists daemon shim shares placement
          placement_demand kubelet_plugin kubelet_prepare watchdog)

build=${1:-}
if [ -z "$build" ] || [ ! -d "$build" ]; then
	echo "usage: scripts/bench.sh BUILD_DIR [SECTION...] (sections: ${SECTIONS[*]})" >&2
	exit 2
fi
shift
run=("$@")
[ ${#run[@]} -eq 0 ] && run=("${SECTIONS[@]}")
for s in "${run[@]}"; do
	if ! declare -F "bench_$s" >/dev/null; then
		echo "bench: unknown section '$s' (sections: ${SECTIONS[*]})" >&2
		exit 2
	fi
	"bench_$s" "$build"
	echo
done
