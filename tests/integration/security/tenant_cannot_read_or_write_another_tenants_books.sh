#!/usr/bin/env bash
# A tenant's books, token buckets and process entries are in its owner
# file (usage.<uid>, its own, mode 0600), not in the file every tenant
# writes, and its slices' names and caps in its view of the limits
# (limits.<uid>, readable by it alone): Mallory can neither read Alice's
# slice names, caps, pids or memory in use (gs-region-forge peek, by name
# or by slot) nor zero her books, nor forge entries into her slice. Alice
# reads her own; the daemon (root) still sees her usage. (Before, all of
# this was in the 0666 usage file and the 0644 limits file.)
. "$(dirname "$0")/lib.sh" "$1"

sim_node
node_up

tenant_api $ALICE POST /v1/slices '{"name": "alice-secret", "memory": "1GiB"}' >/dev/null
expect_status "create alice-secret" 201
tenant_start $ALICE a alice-secret
APID=$TPID
echo "alloc $((256 << 20))" >&$TIN
wait_until 10 grep -q '^alloc ' "$WORK/a.out" || fail "Alice's tenant did not allocate"
expect_eq "Alice's 256 MiB" "$(awk '/^alloc /{print $3}' "$WORK/a.out")" 0

# Mallory sees and touches nothing of it: not by name (her view of the
# limits does not show it), not by slot.
SLOT=$("$FORGE" slot "$RUNDIR" alice-secret) || fail "root cannot find Alice's slot"
if out=$(as_uid $MALLORY "$FORGE" peek "$RUNDIR" alice-secret 2>&1); then
	fail "Mallory read Alice's books by name: $out"
fi
if out=$(as_uid $MALLORY "$FORGE" peek "$RUNDIR" "#$SLOT" 2>&1); then
	fail "Mallory read Alice's books by slot: $out"
fi
grep -q "Permission denied" <<<"$out" || fail "peek did not fail on permissions: $out"
for l in "$RUNDIR"/limits*; do
	if as_uid $MALLORY cat "$l" 2>/dev/null | grep -aq alice-secret; then
		fail "Mallory read Alice's slice name in $l ($(stat -c '%U %a' "$l"))"
	fi
done
as_uid $MALLORY cat "$RUNDIR/limits" >/dev/null 2>&1 && fail "Mallory read the daemon's limits"
as_uid $MALLORY "$FORGE" zero "$RUNDIR" "#$SLOT" >/dev/null 2>&1 && fail "Mallory zeroed Alice's books"
as_uid $MALLORY "$FORGE" proc "$RUNDIR" "#$SLOT" $$ >/dev/null 2>&1 &&
	fail "Mallory forged an entry into Alice's slice"

# Her owner file is hers alone.
f="$RUNDIR/usage.$ALICE"
[ -f "$f" ] || fail "no owner file $f: $(ls -l "$RUNDIR")"
expect_eq "owner and mode of $f" "$(stat -c '%u %a' "$f")" "$ALICE 600"

# Alice sees her own.
out=$(as_uid $ALICE "$FORGE" peek "$RUNDIR" alice-secret) || fail "Alice cannot read her own books"
grep -qx "pid $APID" <<<"$out" || fail "Alice's books do not list her process: $out"
mem=$(awk '/^mem /{print $2}' <<<"$out")
[ "${mem:-0}" -ge $((256 << 20)) ] || fail "Alice's books do not show her 256 MiB (and context): $out"

# The shared file names no process and holds no books: no live process
# entry (state 1, then the pid) with Alice's pid is in it.
python3 - "$RUNDIR/usage" "$APID" <<'PY' || fail "Alice's pid is in the shared usage file"
import struct, sys
data = open(sys.argv[1], "rb").read()
sys.exit(1 if struct.pack("<Ii", 1, int(sys.argv[2])) in data else 0)
PY

# The daemon still sees Alice's memory.
wait_until 5 eval 'api GET /v1/slices/alice-secret | grep -q "$mem"' ||
	fail "the daemon does not see Alice's usage: $(api GET /v1/slices/alice-secret)"
echo quit >&$TIN
exec {TIN}>&-
echo "ok: Alice's owner file is hers (0600) and her slice names are in her view only; Mallory cannot read, zero or forge into them; the daemon sees them"
