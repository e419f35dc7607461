#!/usr/bin/env bash
# A slice created with mode auto (the default) says how the daemon chose
# its mode: the slice.created event names the decision tree's answers
# (seeds/004, core/advisor.c) and the mechanism it reached; a slice whose
# mode was asked for says nothing of the kind. isolation memory reaches
# software fractions (turns), isolation hard a MIG instance.
. "$(dirname "$0")/lib.sh" "$1"

daemon_up
api POST /v1/slices '{"name": "auto-mem", "memory": "1GiB", "compute": 20, "isolation": "memory"}' >/dev/null
expect_status "auto-mem" 201
api POST /v1/slices '{"name": "auto-hard", "memory": "10GiB", "isolation": "hard"}' >/dev/null
expect_status "auto-hard" 201
api POST /v1/slices '{"name": "asked", "memory": "1GiB", "mode": "timeslice"}' >/dev/null
expect_status "asked" 201

msg() {
	api GET "/v1/events?slice=$1" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print("".join(e["message"] for e in d["events"] if e["type"] == "slice.created"))'
}
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
echo ok
