#!/usr/bin/env bash
# `gpuslice advise` from the shell: every leaf through flags, the JSON
# shape, and missing or bad answers without a terminal (exit 2).
set -euo pipefail
build=$1
gs="$build/bin/gpuslice"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# leaf MECHANISM MODE FLAGS...: the advice for FLAGS must be MECHANISM.
leaf() {
	local mech=$1 mode=$2
	shift 2
	"$gs" advise "$@" --json </dev/null >"$tmp/out" || fail "advise $* failed"
	python3 - "$tmp/out" "$mech" "$mode" <<'PY' || fail "advise $*: $(cat "$tmp/out")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["mechanism"] == sys.argv[2], j["mechanism"]
assert j["mode"] == sys.argv[3], j["mode"]
assert len(j["tradeoff"]) > 40
assert all("question" in p and "answer" in p for p in j["path"])
PY
}

leaf none timeslice --hard-isolation single-tenant
leaf mig mig --hard-isolation yes --gpu H100
leaf none timeslice --hard-isolation yes --gpu T4
leaf fractions timeslice --hard-isolation no --workload latency --memory-isolation yes --soft-compute-ok yes
leaf mig mig --hard-isolation no --workload latency --memory-isolation yes --soft-compute-ok no --gpu A100-40GB
leaf timeslice-plugin timeslice --hard-isolation no --workload batch --own-driver no
leaf timeslice-operator timeslice --hard-isolation no --workload batch --own-driver yes --sm-bound no
leaf mps mps --hard-isolation no --workload latency --memory-isolation no --own-driver yes --sm-bound yes --accept-fault-sharing yes
leaf timeslice-operator timeslice --hard-isolation=no --workload=batch --own-driver=yes --sm-bound=yes --accept-fault-sharing=no

# Answers the path does not reach are accepted and ignored.
leaf none timeslice --hard-isolation single-tenant --workload batch --sm-bound yes

# The path lists only the questions asked.
"$gs" advise --hard-isolation yes --gpu H100 --json </dev/null >"$tmp/out"
python3 -c "import json; j=json.load(open('$tmp/out')); assert [p['question'] for p in j['path']] == ['hard-isolation','gpu'], j['path']" ||
	fail "path: $(cat "$tmp/out")"

# Text output names the mechanism and the trade-off.
"$gs" advise --hard-isolation no --workload batch --own-driver no </dev/null >"$tmp/out"
grep -q "^mechanism: timeslice-plugin" "$tmp/out" || fail "$(cat "$tmp/out")"
grep -q "^trade-off: " "$tmp/out" || fail "$(cat "$tmp/out")"

# Missing answers without a terminal name the flag; bad answers too.
rc=0; "$gs" advise --hard-isolation no </dev/null >/dev/null 2>"$tmp/err" || rc=$?
[ $rc -eq 2 ] || fail "missing answer exited $rc"
grep -q -- "needs --workload batch|latency" "$tmp/err" || fail "$(cat "$tmp/err")"
rc=0; "$gs" advise --hard-isolation yes </dev/null >/dev/null 2>"$tmp/err" || rc=$?
[ $rc -eq 2 ] && grep -q -- "needs --gpu MODEL" "$tmp/err" || fail "gpu: $rc $(cat "$tmp/err")"
rc=0; "$gs" advise --workload maybe </dev/null >/dev/null 2>"$tmp/err" || rc=$?
[ $rc -eq 2 ] && grep -q -- "--workload takes batch|latency, got 'maybe'" "$tmp/err" || fail "bad: $(cat "$tmp/err")"
rc=0; "$gs" advise --colour red </dev/null >/dev/null 2>&1 || rc=$?
[ $rc -eq 2 ] || fail "unknown option exited $rc"
"$gs" advise --help | grep -q "usage: gpuslice advise" || fail "help"

# On a terminal the missing answers are asked for (script(1) gives one).
if command -v script >/dev/null 2>&1; then
	printf 'no\nbatch\nmaybe\nyes\nyes\nyes\n' |
		script -qec "$gs advise --json" /dev/null >"$tmp/tty" 2>&1 || fail "interactive: $(cat "$tmp/tty")"
	grep -q '"mechanism": "mps"' "$tmp/tty" || fail "interactive: $(cat "$tmp/tty")"
	grep -q "please answer yes|no" "$tmp/tty" || fail "interactive retry: $(cat "$tmp/tty")"
fi
echo "advise_cli: ok"
