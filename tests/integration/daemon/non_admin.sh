#!/usr/bin/env bash
# Authorisation from SO_PEERCRED and SO_PEERGROUPS: a user who is not root and not in the
# admin group creates, sees and deletes only their own slices; another
# user's slices are invisible (404, exit 3) and cannot be created on their
# behalf (403, exit 4); members of the admin group administer everything.
# Needs root (useradd, setpriv); skipped otherwise.
. "$(dirname "$0")/lib.sh" "$1"

if [ "$(id -u)" -ne 0 ] || ! command -v useradd >/dev/null ||
	! command -v setpriv >/dev/null; then
	echo "SKIP: needs root, useradd and setpriv to act as other users"
	exit 77
fi
tag=$$
ua=gsta$tag ub=gstb$tag uc=gstc$tag grp=gsadm$tag
CLEANUP_CMDS+=("userdel $ua" "userdel $ub" "userdel $uc" "groupdel $grp")
groupadd "$grp" 2>/dev/null || { echo "SKIP: groupadd failed"; exit 77; }
for u in "$ua" "$ub" "$uc"; do
	useradd -M -N -s /usr/sbin/nologin "$u" 2>/dev/null ||
		{ echo "SKIP: useradd failed"; exit 77; }
done
usermod -a -G "$grp" "$uc"
uid_a=$(id -u "$ua")

cat >"$WORK/auth.yaml" <<YAML
api:
  admin_group: $grp
YAML
daemon_up --config "$WORK/auth.yaml"
chmod 755 "$RUNDIR"

# as USER CMD...: runs CMD as that user (with the user's groups).
as() {
	local u=$1
	shift
	setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups \
		env GPUSLICE_SOCKET="$SOCK" HOME=/ "$@"
}

as "$ua" "$G" create --name a-1 --memory 1GiB --compute 10 --json >"$WORK/a1.json" ||
	fail "user a cannot create a slice"
jcheck "$(cat "$WORK/a1.json")" "d['owner_uid'] == $uid_a"
as "$ub" "$G" create --name b-1 --memory 1GiB >/dev/null || fail "user b cannot create"

# b does not see a's slice, cannot read it, delete it or join it.
as "$ub" "$G" list --json | python3 -c '
import json, sys
names = [s["name"] for s in json.load(sys.stdin)["slices"]]
sys.exit(0 if names == ["b-1"] else 1)' || fail "user b sees other slices"
rc=0; as "$ub" "$G" show a-1 2>/dev/null || rc=$?
expect_eq "b shows a-1: exit" "$rc" 3
rc=0; as "$ub" "$G" delete a-1 2>/dev/null || rc=$?
expect_eq "b deletes a-1: exit" "$rc" 3
st=$(as "$ub" curl -s -o /dev/null -w '%{http_code}' --unix-socket "$SOCK" \
	-X POST -d '{}' http://localhost/v1/slices/a-1/attach)
expect_eq "b attaches to a-1: status" "$st" 404
rc=0; as "$ub" "$G" create --name b-2 --owner "$uid_a" 2>/dev/null || rc=$?
expect_eq "b creates for a: exit" "$rc" 4
rc=0; as "$ub" "$G" quota set bteam --memory 1GiB 2>/dev/null || rc=$?
expect_eq "b sets a quota: exit" "$rc" 4
as "$ub" "$G" events --json | python3 -c '
import json, sys
ev = json.load(sys.stdin)["events"]
sys.exit(0 if ev and all(e["slice"] == "b-1" for e in ev) else 1)' ||
	fail "user b sees events of others"
as "$ub" "$G" usage --by slice --json | python3 -c '
import json, sys
rows = json.load(sys.stdin)["rows"]
sys.exit(0 if all(r["slice"] == "b-1" for r in rows) else 1)' ||
	fail "user b sees usage of others"

# a sees and deletes its own.
as "$ua" "$G" show a-1 >/dev/null || fail "a cannot show its slice"
as "$ua" "$G" list | grep -q '^a-1 ' || fail "a does not list its slice"
rc=0; as "$ua" "$G" delete b-1 2>/dev/null || rc=$?
expect_eq "a deletes b-1: exit" "$rc" 3

# c is in the admin group: sees both, deletes b's.
as "$uc" "$G" list --json | python3 -c '
import json, sys
names = sorted(s["name"] for s in json.load(sys.stdin)["slices"])
sys.exit(0 if names == ["a-1", "b-1"] else 1)' || fail "the admin group does not see all"
# Membership is the kernel's record of the connecting process's groups
# (SO_PEERGROUPS), not the group database nor /proc read afterwards: c
# with the group dropped from its process is not an admin; a, whose
# process holds the group though the database does not list a in it, is.
gid_grp=$(getent group "$grp" | cut -d: -f3)
names_as() { # SETPRIV-GROUP-ARGS USER: the slice names USER's process sees
	setpriv --reuid="$2" --regid="$(id -g "$2")" $1 \
		env GPUSLICE_SOCKET="$SOCK" HOME=/ "$G" list --json | python3 -c '
import json, sys
print(" ".join(sorted(s["name"] for s in json.load(sys.stdin)["slices"])))'
}
expect_eq "c without the group in its process sees" "$(names_as --clear-groups "$uc")" ""
expect_eq "a with the group in its process sees" "$(names_as "--groups $gid_grp" "$ua")" "a-1 b-1"
as "$uc" "$G" delete b-1 >/dev/null || fail "the admin group cannot delete"
as "$ua" "$G" delete a-1 >/dev/null || fail "a cannot delete its own slice"
out=$(api GET /v1/slices)
jcheck "$out" 'd["slices"] == []'
echo "ok: authorisation"
