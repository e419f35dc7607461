#!/usr/bin/env bash
# Team quotas end to end through the API: a team borrows idle capacity
# above its guarantee, is stopped at its max, and when another team needs
# its guarantee back the borrowed slice that quotas name (lowest priority,
# newest) is preempted, and only as many as make room.
. "$(dirname "$0")/lib.sh" "$1"

# binpack: the preemptions below depend on r1 and r2 sharing GPU 0 (under
# frag, which keeps room for the 30 GiB shape seen, they would not, and p1
# would need both r3 and r2 gone); placement_demand.sh tests placement.
cat >"$WORK/teams.yaml" <<'YAML'
node:
  placement: binpack
teams:
  research:
    guarantee: {memory: 40GiB, compute: 100}
    max: {memory: 120GiB, compute: 150}
  prod:
    guarantee: {memory: 100GiB, compute: 100}
YAML
daemon_up --config "$WORK/teams.yaml"

out=$(api GET /v1/teams/research)
expect_status "research from the config" 200
jcheck "$out" 'd["from_config"] and d["guarantee"]["memory_bytes"] == 40 << 30 and d["max"]["compute"] == 150'

create() { # NAME TEAM MEMORY COMPUTE PRIORITY
	api POST /v1/slices "{\"name\": \"$1\", \"team\": \"$2\", \"memory\": \"$3\", \"compute\": $4, \"priority\": \"$5\"}"
}

# Within the guarantee, then borrowing idle capacity.
out=$(create r1 research 30GiB 40 normal)
expect_status "r1" 201
jcheck "$out" 'd["borrowed"] is False and d["team"] == "research"'
out=$(create r2 research 30GiB 40 normal)
expect_status "r2" 201
jcheck "$out" 'd["borrowed"] is True'
out=$(create r3 research 30GiB 40 low)
expect_status "r3" 201
jcheck "$out" 'd["borrowed"] is True'
out=$(api GET /v1/teams/research)
jcheck "$out" 'd["usage"]["memory_bytes"] == 90 << 30 and d["usage"]["compute"] == 120'

# The max holds.
create r4 research 40GiB 10 normal >/dev/null
expect_status "over research's max" 409
jcheck "$(cat "$WORK/body")" 'd["error"] == "QUOTA"'
rc=0; "$G" create --name r4 --team research --memory 40GiB 2>/dev/null || rc=$?
expect_eq "CLI over max: exit" "$rc" 5

# prod needs 60 GiB on one GPU; no GPU has it while research borrows.
out=$(create p1 prod 60GiB 60 normal)
expect_status "prod reclaims its guarantee" 201
jcheck "$out" 'd["preempted"] == ["r3"] and d["borrowed"] is False'
out=$(api GET /v1/slices)
jcheck "$out" 'sorted(s["name"] for s in d["slices"]) == ["p1", "r1", "r2"]'
out=$(api GET "/v1/events?slice=r3")
jcheck "$out" '"quota.reclaim" in [e["type"] for e in d["events"]] and any("p1" in e["message"] for e in d["events"])'
api GET /metrics | grep -q '^gpuslice_reclaims_total 1$' || fail "metrics: reclaims"

# research may not reclaim from prod (prod is within its guarantee), and
# a team already above its guarantee may not reclaim at all.
create r5 research 50GiB 10 normal >/dev/null
expect_status "research cannot take prod's room" 409
out=$(api GET /v1/slices)
jcheck "$out" 'len(d["slices"]) == 3'

# Quota changes through the API are checked as a tree.
api PUT /v1/teams/research '{"guarantee": {"memory": "1GiB"}}' >/dev/null
expect_status "config teams are read-only through the API" 403
api PUT /v1/teams/lab '{"parent": "research", "guarantee": {"memory": "50GiB"}}' >/dev/null
expect_status "a child guaranteed more than its parent" 400
api PUT /v1/teams/lab '{"parent": "research", "guarantee": {"memory": "10GiB"}, "max": {"memory": "20GiB"}}' >/dev/null
expect_status "a sub-team" 200
out=$(create l1 lab 15GiB 5 normal)
expect_status "lab within its max" 201
create l2 lab 10GiB 5 normal >/dev/null
expect_status "lab over its max" 409
out=$(api GET /v1/teams/research)
jcheck "$out" 'd["usage"]["memory_bytes"] == 75 << 30'
echo "ok: quotas"
