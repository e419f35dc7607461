#!/usr/bin/env bash
# A MIG create that gpusliced stopped in the middle of is carried on at the
# next start from the decision saved with its PENDING row (slices.mig_plan,
# daemon/recovery.c): the instance the change made is found and taken, or
# the change is made again where it was not (a half-made instance, a GPU
# instance without its compute instance, undone first); one that cannot be
# carried on now fails (slice.failed) and undoes the instance it made. The slice
# ends ready or gone, never pending, and no instance stays that no slice
# holds. A kill -9 inside the change is staged on the store a clean stop
# leaves: the row put back as the create saved it before its MIG steps
# (PENDING, no instance, its plan), with the instance made or not.
. "$(dirname "$0")/lib.sh" "$1"

SMI=$B/sim/nvidia-smi
instances() { # GPU 1's MIG instances: "uuid profile_id start gi" lines
	"$G" sim status --json --dir "$GPUSLICE_SIM_DIR" | python3 -c '
import json, sys
for m in json.load(sys.stdin)["gpus"][1]["mig_instances"] or []:
    print(m["uuid"], m["profile_id"], m["placement_start"], m["gi_id"])'
}
n_instances() {
	instances | wc -l | tr -d ' '
}
sql() { # SQL [ARG...]: runs SQL on the stopped daemon's store, prints rows
	python3 - "$STATE/state.db" "$@" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for row in db.execute(sys.argv[2], sys.argv[3:]).fetchall():
    print(*row)
db.commit()
PY
}
# crash_before_ready NAME PLAN: the row as the create saved it
crash_before_ready() {
	sql "UPDATE slices SET state = 3, mig_uuid = '', gi_id = -1, ci_id = -1, region_slot = -1, mig_plan = ? WHERE name = ?" "$2" "$1"
	expect_eq "pending rows" "$(sql "SELECT count(*) FROM slices WHERE state = 3")" 1
}
settled() { # NAME: it is no longer pending (ready, or gone)
	api GET "/v1/slices/$1" >/dev/null
	[ "$(st)" = 404 ] || jcheck "$(cat "$WORK/body")" 'd["state"] == "ready"'
}
last_event() { # NAME: the type of its last event
	api GET "/v1/events?slice=$1" | python3 -c '
import json, sys
print(json.load(sys.stdin)["events"][-1]["type"])'
}

daemon_up
out=$(api POST /v1/slices '{"name": "m", "mode": "mig", "mig-profile": "1g.10gb", "gpu": 1}')
expect_status "create m" 201
uuid=$(jq_py "$out" 'd["mig"]["uuid"]')
read -r u prof start gi <<<"$(instances)"
expect_eq "m's instance" "$u" "$uuid"
plan="v1 on=1 off=0 prof=$prof gi=-1 take=$start;c$prof@$start;"
daemon_stop
expect_eq "a ready row keeps no plan" "$(sql "SELECT mig_plan FROM slices WHERE name = 'm'")" ""

# 1. Killed after the instance was made, before the slice was saved
# ready: the restart takes the instance the change made.
crash_before_ready m "$plan"
daemon_up
wait_until 10 settled m || fail "m is still pending after the restart"
out=$(api GET /v1/slices/m)
expect_status "m after the restart" 200
jcheck "$out" 'd["state"] == "ready" and d["mig"]["uuid"] == "'"$uuid"'"'
expect_eq "instances" "$(n_instances)" 1
# (the event's batch commits just after the model shows it)
wait_until 5 eval '[ "$(last_event m)" = slice.created ]' ||
	fail "m's last event is $(last_event m), not slice.created"
grep -q 'slice=m pending since the last start: resumed with its MIG change' "$WORK/daemon.log" ||
	fail "the log does not say m's MIG change was resumed"
daemon_stop

# 2. Killed before the instance was made: the restart makes it.
"$SMI" mig -i 1 -dci -gi "$gi" >/dev/null
"$SMI" mig -i 1 -dgi -gi "$gi" >/dev/null
expect_eq "instances after the staged crash" "$(n_instances)" 0
crash_before_ready m "$plan"
daemon_up
wait_until 10 settled m || fail "m is still pending after the second restart"
out=$(api GET /v1/slices/m)
expect_status "m after the second restart" 200
jcheck "$out" 'd["state"] == "ready" and d["mig"]["uuid"].startswith("MIG-")'
read -r u _ _ gi <<<"$(instances)"
jcheck "$out" 'd["mig"]["uuid"] == "'"$u"'"'
expect_eq "instances" "$(n_instances)" 1
daemon_stop

# 3. Killed inside the instance's making, between its GPU instance and
# its compute instance: the half-made instance holds the placement; the
# restart destroys it and makes the instance again.
"$SMI" mig -i 1 -dci -gi "$gi" >/dev/null
"$SMI" mig -i 1 -dgi -gi "$gi" >/dev/null
"$SMI" mig -i 1 -cgi "$prof" >/dev/null
read -r _ _ hstart _ <<<"$("$G" sim status --json --dir "$GPUSLICE_SIM_DIR" | python3 -c '
import json, sys
for m in json.load(sys.stdin)["gpus"][1]["mig_instances"] or []:
    print(m["uuid"] or "-", m["profile_id"], m["placement_start"], m["gi_id"])')"
expect_eq "the half-made instance's placement" "$hstart" "$start"
crash_before_ready m "$plan"
daemon_up
wait_until 10 settled m || fail "m is still pending after the third restart"
out=$(api GET /v1/slices/m)
expect_status "m after the half-made instance" 200
read -r u _ _ gi <<<"$(instances)"
jcheck "$out" 'd["state"] == "ready" and d["mig"]["uuid"] == "'"$u"'" and d["mig"]["uuid"].startswith("MIG-")'
expect_eq "instances" "$(n_instances)" 1
grep -q 'without a compute instance (a create cut short) destroyed' "$WORK/daemon.log" ||
	fail "the log does not say the half-made instance was destroyed"
daemon_stop

# 4. Killed after the instance was made, and the rest of the plan fails
# for good at the restart (its limits cannot be written to the region):
# the slice fails, and the instance its change made goes with it.
crash_before_ready m "$plan"
GPUSLICE_FAULT='region.write:1+' daemon_up
wait_until 10 settled m || fail "m is still pending after the fourth restart"
api GET /v1/slices/m >/dev/null
expect_status "m after its plan failed" 404
wait_until 5 eval '[ "$(last_event m)" = slice.failed ]' ||
	fail "m's last event is $(last_event m), not slice.failed"
wait_until 5 eval '[ "$(n_instances)" = 0 ]' ||
	fail "the instance made for m stays: $(instances)"
daemon_stop
daemon_up
api GET /v1/slices/m >/dev/null
expect_status "m after a clean restart" 404
expect_eq "instances after a clean restart" "$(n_instances)" 0
healthy || fail "daemon unhealthy"
echo "ok: a MIG create cut short takes the instance it made, makes it again (undoing a half-made one), or fails and undoes it"
