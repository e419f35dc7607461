#!/usr/bin/env bash
# A slice's compute mode (spec compute-mode / API compute_mode): share is
# shown by `gpuslice show --json`, written into the slice's region limits
# (where the shim's scheduler reads it) and kept across a restart; strict
# stays the default; an unknown mode is refused naming the field.
. "$(dirname "$0")/lib.sh" "$1"
[ -x "$LOADGEN" ] || { echo "SKIP: no gs-daemon-loadgen"; exit 77; }

daemon_up
api POST /v1/slices '{"name": "cm-share", "memory": "1GiB", "compute": 30, "compute_mode": "share"}' >/dev/null
expect_status "cm-share" 201
api POST /v1/slices '{"name": "cm-strict", "memory": "1GiB", "compute": 30}' >/dev/null
expect_status "cm-strict" 201
api POST /v1/slices '{"name": "cm-bad", "memory": "1GiB", "compute_mode": "greedy"}' >"$WORK/bad"
expect_status "an unknown compute mode is refused" 400
grep -q "compute-mode 'greedy'" "$WORK/bad" || fail "the error does not name compute-mode: $(cat "$WORK/bad")"

check() {
	jcheck "$("$G" show cm-share --json)" 'd["spec"]["compute_mode"] == "share"'
	jcheck "$("$G" show cm-strict --json)" 'd["spec"]["compute_mode"] == "strict"'
	"$LOADGEN" limits "$RUNDIR" | sort >"$WORK/limits"
	grep -qx "cm-share compute=30 mode=share" "$WORK/limits" ||
		fail "region limits of cm-share: $(cat "$WORK/limits")"
	grep -qx "cm-strict compute=30 mode=strict" "$WORK/limits" ||
		fail "region limits of cm-strict: $(cat "$WORK/limits")"
}
check
daemon_kill9
daemon_up
check
echo ok
