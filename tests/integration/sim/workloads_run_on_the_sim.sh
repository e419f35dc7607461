#!/usr/bin/env bash
# The workload kit (build/bin/gs-*) on the sim's libcuda.so.1: each runs
# and reports, two busy processes share a GPU by time-slicing, a fault hits
# only its own process (Xid 31 in status), memory held by a process killed
# with -9 is back for the next one at once, and status reports each
# process's busy time. Skipped (77) when the workloads are not built.
. "$(dirname "$0")/lib.sh"

for w in gs-matmul gs-burn gs-alloc gs-fault; do
	[ -x "$B/bin/$w" ] || { echo "SKIP: $B/bin/$w not built"; exit 77; }
done
"$GS" sim init --gpus 1xH100-SXM5-80GB >/dev/null

R=$("$B/bin/gs-matmul" --iterations 10 --n 512)
expect_eq "matmul error" "$(json 'j["error"]' <<<"$R")" None

# alone, then beside a long one: it gets about half the GPU. The short run
# starts once the long one is on the GPU and ends long before it would, so
# how late either process starts on a busy host does not matter.
A=$("$B/bin/gs-burn" --seconds 1 --memory 64MiB)
G1=$(json 'j["gflops"]' <<<"$A")
"$B/bin/gs-burn" --seconds 30 --memory 64MiB >"$WORK/long" &
PL=$!
PIDS+=("$PL")
for _ in $(seq 200); do
	"$GS" sim status --json |
		json "any(p['pid'] == $PL and p['busy_s'] > 0.05 for p in j['gpus'][0]['processes'])" |
		grep -q True && break
	sleep 0.05
done
R=$("$B/bin/gs-burn" --seconds 1 --memory 64MiB)
kill -0 "$PL" 2>/dev/null || fail "the long run ended before the short one: $(cat "$WORK/long")"
python3 -c "
import json, sys
r = json.loads(sys.argv[1])['gflops'] / $G1
sys.exit(0 if 0.3 < r < 0.7 else 'time-sliced share %.2f of the solo rate, want about 0.5' % r)" "$R"
kill -9 "$PL"
wait "$PL" 2>/dev/null || true

# a fault: its process fails with ILLEGAL_ADDRESS, a neighbour does not
"$B/bin/gs-burn" --seconds 1 --memory 64MiB >"$WORK/n" &
PN=$!
PIDS+=("$PN")
run_rc "$B/bin/gs-fault" --after-ms 50
expect_eq "fault exit" "$RC" 1
expect_eq "fault error" "$(json 'j["error"]' <<<"$OUT")" CUDA_ERROR_ILLEGAL_ADDRESS
wait "$PN"
expect_eq "neighbour error" "$(json 'j["error"]' <"$WORK/n")" None
S=$("$GS" sim status --json)
expect_eq "xid" "$(json 'j["gpus"][0]["xid_events"][0]["xid"]' <<<"$S")" 31

# kill -9 of a holder of 10 GiB: the next process can use it at once
"$B/bin/gs-alloc" --api pitch --chunk 10GiB --limit 10GiB --hold 60 >/dev/null &
PH=$!
PIDS+=("$PH")
for _ in $(seq 100); do
	U=$("$GS" sim status --json | json 'j["gpus"][0]["memory_used_bytes"]')
	[ "$U" -ge $((10 << 30)) ] && break
	sleep 0.05
done
[ "$U" -ge $((10 << 30)) ] || fail "holder never allocated (used $U)"
kill -9 "$PH"
R=$("$B/bin/gs-alloc" --api pitch --chunk 70GiB --limit 70GiB)
expect_eq "70 GiB after kill -9" "$(json 'j["allocated_bytes"]' <<<"$R")" $((70 << 30))

# busy time of finished processes is kept
S=$("$GS" sim status --json)
python3 -c "
import json, sys
j = json.loads(sys.argv[1])
busy = [x['busy_s'] for x in j['exited']]
sys.exit(0 if busy and max(busy) > 0.3 else 1)" "$S" || fail "no busy time in status: $S"
echo PASS
