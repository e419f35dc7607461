#!/usr/bin/env bash
# Two pods' slices, made by root with no owner as the Kubernetes driver
# makes a claim's (owner uid 0): each keeps its books, token buckets and
# process entries in a file of its own (region.books,
# <run>/books/usage.0.<slot>, in a directory only root can enter), and
# each pod gets only its own slice's file, at <run>/usage.0 where the
# shim looks (hard links stand in for the CDI bind mounts; both pods run
# as uid 65534, as many pods do). Pod A, with its own hands
# (gs-region-forge), zeroes pod B's memory books, forges a process entry
# for B and keeps B's token buckets empty: it reaches only its own file.
# B's books, processes and compute share stay intact (its burn keeps its
# throughput within 30 % of what it gets alone), as the daemon reads
# them. Pod A naming B's slice (GPUSLICE_SLICE) is refused and gets no
# GPU memory; a user on the host (not root) can neither open B's file
# nor join B. (Before, every pod had the shared usage.0 mounted
# read-write, and the same drain took B's share to 0.)
. "$(dirname "$0")/lib.sh" "$1"
[ -x "$BURN" ] || { echo "SKIP: no gs-burn"; exit 77; }

sim_node
node_up

# The pods' slices, as the driver makes them: root, no owner.
declare -A SLOT BOOKS
for p in pod-a pod-b; do
	s=$(api POST /v1/slices '{"name": "'$p'", "memory": "2GiB", "compute": 50, "mode": "timeslice"}')
	expect_status "create $p" 201
	jcheck "$s" 'd["owner_uid"] == 0 and d["mode"] == "timeslice"' || fail "$p: $s"
	SLOT[$p]=$(jq_py "$s" 'd["region"]["slot"]')
	# The file the driver mounts into the pod (a daemon that does not
	# say keeps uid 0's books in the shared usage.0).
	BOOKS[$p]=$(jq_py "$s" 'd["region"].get("books", "'"$RUNDIR"'/usage.0")')
	# What the pod sees of the run directory: the CDI spec's mounts.
	mkdir "$WORK/$p"
	chmod 755 "$WORK/$p"
	for f in limits limits.public usage; do
		ln "$RUNDIR/$f" "$WORK/$p/$f"
	done
	ln "${BOOKS[$p]}" "$WORK/$p/usage.0"
done
[ "${BOOKS[pod-a]}" != "${BOOKS[pod-b]}" ] ||
	fail "both pods' slices keep their books in ${BOOKS[pod-a]}"
: >"$WORK/shim.log"
chmod 666 "$WORK/shim.log"

# in_pod POD SLICE CMD...: CMD as uid 65534 in POD's view of the run
# directory, joining SLICE through the preloaded shim.
in_pod() {
	local pod=$1 slice=$2
	shift 2
	as_uid $MALLORY GPUSLICE_RUN_DIR="$WORK/$pod" GPUSLICE_SLICE="$slice" \
		GPUSLICE_LOG="$WORK/shim.log" LD_PRELOAD="$SHIM" "$@"
}
# b_usage EXPR: EXPR over pod-b's usage, as the daemon reads it.
b_usage() {
	jq_py "$(api GET /v1/slices/pod-b)" "$1"
}

# A user on the host cannot open B's books nor join B.
as_uid $MALLORY cat "${BOOKS[pod-b]}" >/dev/null 2>"$WORK/cat.err" &&
	fail "uid $MALLORY read pod-b's books on the host"
grep -q "Permission denied" "$WORK/cat.err" ||
	fail "reading pod-b's books failed for another reason: $(cat "$WORK/cat.err")"
out=$(as_uid $MALLORY GPUSLICE_SLICE=pod-b GPUSLICE_RUN_DIR="$RUNDIR" \
	GPUSLICE_LOG="$WORK/shim.log" LD_PRELOAD="$SHIM" \
	"$ALLOC" --api plain --chunk 256MiB --limit 512MiB 2>"$WORK/h.err" || true)
jcheck "$out" 'd.get("allocated_bytes", 0) == 0 and d["error"] == "CUDA_ERROR_NOT_PERMITTED"' ||
	fail "uid $MALLORY joined pod-b on the host: $out $(cat "$WORK/h.err")"
grep -q "only root and the pod the slice was made for" "$WORK/shim.log" ||
	fail "the host refusal does not say why: $(cat "$WORK/shim.log")"

# Pod A naming pod B's slice: refused, no GPU memory.
: >"$WORK/shim.log"
out=$(in_pod pod-a pod-b "$ALLOC" --api plain --chunk 256MiB --limit 512MiB 2>"$WORK/a.err" || true)
jcheck "$out" 'd.get("allocated_bytes", 0) == 0 and d["error"] == "CUDA_ERROR_NOT_PERMITTED"' ||
	fail "pod A allocated in pod B's slice: $out $(cat "$WORK/a.err")"
grep -q "another pod" "$WORK/shim.log" ||
	fail "pod A's refusal does not say why: $(cat "$WORK/shim.log")"
[ "$(b_usage 'd["usage"]["processes"]')" = 0 ] || fail "pod A's process is attached to pod-b"

# Each pod uses its own slice, capped.
for p in pod-a pod-b; do
	out=$(in_pod $p $p "$ALLOC" --api plain --chunk 256MiB 2>"$WORK/$p.err")
	jcheck "$out" 'd["error"] == "CUDA_ERROR_OUT_OF_MEMORY" and 0 < d["allocated_bytes"] <= 2 << 30' ||
		fail "$p in its own slice: $out $(cat "$WORK/$p.err")"
done

# burn OUT: pod B's 8 s burn holding 1 GiB; its JSON line in OUT, how
# long the whole run took (ms) in OUT.took.
burn() {
	local t0=$(date +%s%N)
	in_pod pod-b pod-b timeout 40 "$BURN" --seconds 8 --memory 1GiB >"$1" 2>"$1.err" ||
		fail "pod B's burn failed: $(cat "$1.err")"
	echo $((($(date +%s%N) - t0) / 1000000)) >"$1.took"
}
b_holds_1g() {
	[ "$(b_usage 'd["usage"]["memory_used_bytes"]')" -ge $((1 << 30)) ]
}
gflops() { python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])["gflops"])' "$1"; }

burn "$WORK/alone.json"
alone=$(gflops "$WORK/alone.json")
took_alone=$(cat "$WORK/alone.json.took")

# Pod A keeps every bucket it can see empty (pod-b's by name, in the
# file it has at usage.0), and meanwhile zeroes B's books and forges an
# entry for B's burn.
in_pod pod-a pod-a "$FORGE" drain "$WORK/pod-a" '*' 10 >"$WORK/drain.out" 2>"$WORK/drain.err" &
DRAIN=$!
PIDS+=("$DRAIN")
sleep 0.5
burn "$WORK/attacked.json" &
BPID=$!
wait_until 5 b_holds_1g ||
	fail "pod B's burn never held its 1 GiB: $(api GET /v1/slices/pod-b)"
VICTIM=$(pgrep -u $MALLORY -f "$BURN --seconds 8" | head -1)
[ -n "$VICTIM" ] || fail "no burn process in pod B"
in_pod pod-a pod-a "$FORGE" zero "$WORK/pod-a" pod-b >"$WORK/zero.out" 2>&1 ||
	fail "pod A could not even write its own file: $(cat "$WORK/zero.out")"
in_pod pod-a pod-a "$FORGE" proc "$WORK/pod-a" pod-b "$VICTIM" "$VICTIM" >"$WORK/proc.out" 2>&1 ||
	fail "pod A could not even write its own file: $(cat "$WORK/proc.out")"
sleep 0.3
# (An 8 s burn: on a loaded host its start alone can take seconds, and
# these checks must see it running.)
kill -0 "$VICTIM" 2>/dev/null || fail "pod B's burn ended before the checks: the host is too slow for this test"
mem=$(b_usage 'd["usage"]["memory_used_bytes"]')
procs=$(b_usage 'd["usage"]["processes"]')
[ "$mem" -ge $((1 << 30)) ] || fail "pod A zeroed pod B's books: B has $mem bytes in use"
[ "$procs" = 1 ] || fail "pod A's forged entries count as pod B's processes: $procs"
"$FORGE" peek "$WORK/pod-b" pod-b >"$WORK/peek.out"
[ "$(grep -c '^pid ' "$WORK/peek.out")" = 1 ] &&
	[ "$(sed -n 's/^mem //p' "$WORK/peek.out")" -ge $((1 << 30)) ] ||
	fail "pod B's own file was changed: $(cat "$WORK/peek.out")"
wait "$BPID" || fail "pod B's burn under attack failed"
attacked=$(gflops "$WORK/attacked.json")
took=$(cat "$WORK/attacked.json.took")
grep -q "holding tokens" "$WORK/drain.out" ||
	fail "the drain did not run: $(cat "$WORK/drain.out" "$WORK/drain.err")"
echo "pod B's burn: ${alone} GFLOP/s in ${took_alone} ms alone, ${attacked} in ${took} ms under attack"
python3 -c 'import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if a > 0 and b >= 0.7 * a else 1)' \
	"$alone" "$attacked" ||
	fail "pod B's share fell under pod A's drain: ${attacked} GFLOP/s against ${alone} alone"
[ "$took" -le $((took_alone * 3 / 2 + 1000)) ] ||
	fail "pod B's burn was held back under attack: ${took} ms against ${took_alone} ms alone"
echo "ok: pod A reached only its own books; pod B kept its books, processes and share, and its slice cannot be joined from pod A or the host"
