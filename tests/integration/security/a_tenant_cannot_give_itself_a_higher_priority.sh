#!/usr/bin/env bash
# Issue #25, Why 2: a tenant gave itself `priority: high` and took the GPU
# from a neighbour's strict 50 % slice. Priority and weight are policy
# now: a non-admin user may ask for at most what its team allows
# (teams.<team>.max_priority / max_weight), else quota.default_user's
# (normal, weight 10); more is refused with 403 naming the limit. An
# administrator is not bound (the Kubernetes and Slurm integrations map
# their own classes onto priorities as root).
. "$(dirname "$0")/lib.sh" "$1"

sim_node
user_of() { getent passwd "$1" | cut -d: -f1 || true; }
alice=$(user_of $ALICE)
alice=${alice:-uid:$ALICE}
cat >"$WORK/policy.yaml" <<YAML
teams:
  ml:
    max_priority: high
    max_weight: 50
    members: ["$alice"]
YAML
daemon_up --config "$WORK/policy.yaml"
chmod 755 "$RUNDIR"

tenant_api $MALLORY POST /v1/slices '{"name": "mh", "mode": "timeslice", "compute": 50, "priority": "high"}' >/dev/null
expect_status "Mallory asking for priority high" 403
grep -q "quota.default_user.max_priority" "$WORK/body" && grep -q "'normal'" "$WORK/body" ||
	fail "the refusal does not name the limit: $(cat "$WORK/body")"
tenant_api $MALLORY POST /v1/slices '{"name": "mw", "mode": "timeslice", "compute": 50, "weight": 1000}' >/dev/null
expect_status "Mallory asking for weight 1000" 403
grep -q "quota.default_user.max_weight" "$WORK/body" || fail "the refusal does not name the limit: $(cat "$WORK/body")"
tenant_api $MALLORY POST /v1/slices '{"name": "mn", "mode": "timeslice", "compute": 20, "weight": 10}' >/dev/null
expect_status "Mallory asking for normal, weight 10" 201
# Alice's team allows high.
tenant_api $ALICE POST /v1/slices '{"name": "ah", "mode": "timeslice", "compute": 20, "priority": "high", "weight": 50}' >/dev/null
expect_status "Alice (team ml) asking for priority high" 201
tenant_api $ALICE POST /v1/slices '{"name": "aw", "mode": "timeslice", "compute": 20, "weight": 51}' >/dev/null
expect_status "Alice asking for weight 51" 403
grep -q "teams.<team>.max_weight" "$WORK/body" || fail "the refusal does not name the team limit: $(cat "$WORK/body")"
# Root is not bound.
api POST /v1/slices '{"name": "rh", "mode": "timeslice", "compute": 10, "priority": "high", "weight": 1000}' >/dev/null
expect_status "root asking for priority high, weight 1000" 201
echo "ok: priority and weight over the limits are refused with 403 naming them; a team's own limit and root's requests hold"
