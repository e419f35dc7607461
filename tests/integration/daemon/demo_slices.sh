#!/usr/bin/env bash
# `make demo`'s main job (scripts/demo-daemon.sh: gpusliced on the
# simulated node, an inference server, two notebooks and a batch job in
# four slices of one GPU) runs its honest workloads without the daemon
# acting on any of them: no watchdog kill or flag, no ledger divergence,
# each slice's GPU time share near what it asked for (a generous bound:
# at most its share + 10 points, the batch job at least half of its).
# (A charging regression had the watchdog kill the batch job's burn at
# 60-80 % of a 30 % share in its first two seconds.)
. "$(dirname "$0")/lib.sh" "$1"
out=$WORK/demo.out
GS_DEMO_SECONDS=9 bash "$SRC/scripts/demo-daemon.sh" "$B" >"$out" 2>&1 ||
	fail "the demo failed: $(tail -20 "$out")"
sed -n '/^  slice  priority/,/^$/p' "$out"
if grep -E "watchdog\.(kill|flag)|ledger\.divergence" "$out"; then
	fail "the demo's honest slices were acted on (above)"
fi
python3 - "$out" <<'PY' || fail "see above"
import re, sys
rows = {}
for l in open(sys.argv[1]):
    m = re.match(r"\s+(infer|nb-1|nb-2|batch)\s+\w+\s+[\d.]+ GiB / (\d+)%\s+[\d.]+ GiB / ([\d.]+)%", l)
    if m:
        rows[m.group(1)] = (int(m.group(2)), float(m.group(3)))
print(rows)
ok = len(rows) == 4 and all(got <= asked + 10 for asked, got in rows.values())
ok = ok and rows["batch"][1] >= rows["batch"][0] / 2
sys.exit(0 if ok else 1)
PY
echo ok
