#!/usr/bin/env bash
# `gpuslice run --mode auto` follows seeds/004's tree: without --isolation
# (tenants share a fault domain) it picks mps, with --isolation fault it
# picks turns, and --report says which and why; --isolation hard (MIG) and
# unknown modes are usage errors with a message. What each mode means on
# the sim: two slices' matmuls overlap under mps (the pair takes well
# under twice one alone) and never under turns (at least 1.7 x).
. "$(dirname "$0")/lib.sh" "$1"
sim_up
mm=("$B/bin/gs-matmul" --n 128 --iterations 30000)

pair() { # pair OUT ARGS...: two slices at once; reports in OUT.1, OUT.2
	local out=$1 p1 p2
	shift
	"${RUN[@]}" "$@" --report -- "${mm[@]}" >"$out.o1" 2>"$out.1" &
	p1=$!
	"${RUN[@]}" "$@" --report -- "${mm[@]}" >"$out.o2" 2>"$out.2" &
	p2=$!
	wait "$p1" || fail "$* failed: $(cat "$out.1")"
	wait "$p2" || fail "$* failed: $(cat "$out.2")"
}
"${RUN[@]}" --mode auto -- "${mm[@]}" >"$WORK/alone" 2>&1 || fail "alone: $(cat "$WORK/alone")"
pair "$WORK/auto" --mode auto
pair "$WORK/fault" --mode auto --isolation fault

rc=0
"${RUN[@]}" --mode auto --isolation hard -- true 2>"$WORK/hard" || rc=$?
[ "$rc" -eq 2 ] && grep -q MIG "$WORK/hard" || fail "--isolation hard: exit $rc, $(cat "$WORK/hard")"
rc=0
"${RUN[@]}" --mode sometimes -- true 2>"$WORK/bad" || rc=$?
[ "$rc" -eq 2 ] && grep -q "turns, mps or auto" "$WORK/bad" || fail "--mode sometimes: exit $rc, $(cat "$WORK/bad")"

"$PY" - "$WORK" <<'PY' || fail "see above"
import json, sys
w = sys.argv[1]
def last(path):
    ls = [l for l in open(path) if l.startswith("{")]
    return json.loads(ls[-1])
alone = last(f"{w}/alone")["wall_s"]
auto = [last(f"{w}/auto.{i}") for i in (1, 2)]
fault = [last(f"{w}/fault.{i}") for i in (1, 2)]
r_auto = max(last(f"{w}/auto.o{i}")["wall_s"] for i in (1, 2)) / alone
r_fault = max(last(f"{w}/fault.o{i}")["wall_s"] for i in (1, 2)) / alone
print(f"auto: {[r['mode'] for r in auto]} ({auto[0]['mode_why']}), {r_auto:.2f} x alone")
print(f"auto --isolation fault: {[r['mode'] for r in fault]} ({fault[0]['mode_why']}), {r_fault:.2f} x alone")
ok = (all(r["mode"] == "mps" and "fault domain" in r["mode_why"] for r in auto)
      and all(r["mode"] == "turns" and "fault domain" in r["mode_why"] for r in fault)
      and r_auto < 1.6 and r_fault >= 1.7)
sys.exit(0 if ok else 1)
PY
