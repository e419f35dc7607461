#!/usr/bin/env bash
# Issue #25, Why 9 (leaks): creating a slice under a name another tenant
# holds answered 409 "slice 'a1' already exists", telling Mallory that
# Alice's slice exists; /v1/demand showed every tenant's slice shapes and
# when they asked; a symbolic link planted at /tmp/gpuslice-<uid> was
# followed (stat, not lstat). Now the name is "not available" (nothing
# said of its owner), a tenant sees only the demand's aggregates, and a
# link at a /tmp run directory is refused.
. "$(dirname "$0")/lib.sh" "$1"

sim_node
node_up
tenant_api $ALICE POST /v1/slices '{"name": "a1", "mode": "timeslice", "memory": "1GiB"}' >/dev/null
expect_status "create a1" 201
tenant_api $MALLORY POST /v1/slices '{"name": "a1", "mode": "timeslice", "memory": "1GiB"}' >/dev/null
expect_status "Mallory creating a1" 409
grep -q "not available" "$WORK/body" && ! grep -q "exists" "$WORK/body" ||
	fail "the refusal tells Mallory that a1 exists: $(cat "$WORK/body")"
tenant_api $ALICE POST /v1/slices '{"name": "a1", "mode": "timeslice", "memory": "1GiB"}' >/dev/null
expect_status "Alice creating a1 again" 409
grep -q "already exists" "$WORK/body" || fail "Alice is not told her own slice exists: $(cat "$WORK/body")"

tenant_api $MALLORY GET /v1/demand >/dev/null
expect_status "Mallory's demand" 200
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert "classes" not in d and "n_classes" in d and "total_weight" in d, d' "$WORK/body" ||
	fail "a tenant sees the demand's classes: $(cat "$WORK/body")"
api GET /v1/demand >/dev/null
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert "classes" in d, d' "$WORK/body" ||
	fail "root does not see the demand's classes: $(cat "$WORK/body")"

# A link planted at Mallory's default run directory is not followed.
link=/tmp/gpuslice-$MALLORY
if [ -e /run/gpuslice ] || [ -e "$link" ] || [ -L "$link" ]; then
	echo "note: $link or /run/gpuslice exists here; the link check is skipped"
else
	mkdir -m 755 "$WORK/rootdir"
	ln -s "$WORK/rootdir" "$link"
	CLEANUP_CMDS+=("rm -f '$link'")
	out=$(setpriv --reuid=$MALLORY --regid=$MALLORY --clear-groups env -u XDG_RUNTIME_DIR \
		-u GPUSLICE_RUN_DIR HOME=/ "$G" run --mem 1GiB -- true 2>&1) && rc=0 || rc=$?
	rm -f "$link"
	[ "$rc" -ne 0 ] && grep -q "symbolic link" <<<"$out" ||
		fail "a link at $link was followed (exit $rc): $out"
fi
echo "ok: another owner's slice name is not available, demand shows tenants aggregates, a planted link is refused"
