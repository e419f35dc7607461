#!/usr/bin/env bash
# quota.default_user bounds what one non-admin user may hold, whatever
# its team allows: past max_slices, or past max_memory_percent of the
# node's GPU memory, a create answers 409 QUOTA naming the key. Another
# user and root are not held back by it.
. "$(dirname "$0")/lib.sh" "$1"
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null; then
	echo "SKIP: needs root and setpriv to act as other users"
	exit 77
fi
TENANT=(setpriv --reuid=65534 --regid=65534 --clear-groups)
OTHER=(setpriv --reuid=65533 --regid=65533 --clear-groups)

# as WHO METHOD PATH [BODY]: like api, as another user (who cannot write
# into $WORK: the body and status come back on stdout).
as() {
	local -n who=$1
	shift
	local out args=(-s --max-time 10 --unix-socket "$SOCK" -X "$1"
			-w '\n%{http_code}')
	[ $# -ge 3 ] && args+=(-H 'Content-Type: application/json' --data-binary "$3")
	out=$("${who[@]}" curl "${args[@]}" "http://localhost$2") || true
	printf '%s' "${out%$'\n'*}" >"$WORK/body"
	printf '%s' "${out##*$'\n'}" >"$WORK/status"
	cat "$WORK/body"
}

cat >"$WORK/cfg.yaml" <<'YAML'
quota:
  default_user:
    max_slices: 3
    max_memory_percent: 10
YAML
# The sim's 2 GPUs of 80 GiB: 10% is 16 GiB.
daemon_up --config "$WORK/cfg.yaml"

for i in 1 2 3; do
	as TENANT POST /v1/slices "{\"name\": \"t-$i\", \"memory\": \"1GiB\"}" >/dev/null
	expect_status "tenant create $i" 201
done
as TENANT POST /v1/slices '{"name": "t-4", "memory": "1GiB"}' >/dev/null
expect_status "tenant create 4 (over max_slices)" 409
jcheck "$(cat "$WORK/body")" 'd["error"] == "QUOTA" and "quota.default_user.max_slices" in d["message"]'
as TENANT GET /v1/slices/t-4 >/dev/null
expect_status "the refused slice" 404

# Another user has its own count; root is not counted.
as OTHER POST /v1/slices '{"name": "o-1", "memory": "1GiB"}' >/dev/null
expect_status "other user create" 201
for i in 1 2 3 4; do
	api POST /v1/slices "{\"name\": \"r-$i\", \"memory\": \"1GiB\"}" >/dev/null
	expect_status "root create $i" 201
done

# Freeing one makes room again.
as TENANT DELETE /v1/slices/t-3 >/dev/null
expect_status "tenant delete" 200
# Memory: 2 GiB held; 10% of 2 x 81559 MiB is just under 16 GiB.
as TENANT POST /v1/slices '{"name": "t-big", "memory": "15GiB"}' >/dev/null
expect_status "tenant create over max_memory_percent" 409
jcheck "$(cat "$WORK/body")" 'd["error"] == "QUOTA" and "max_memory_percent" in d["message"]'
as TENANT POST /v1/slices '{"name": "t-ok", "memory": "13GiB"}' >/dev/null
expect_status "tenant create within max_memory_percent" 201

# Bad values are refused at start, naming the key.
printf 'quota:\n  default_user:\n    max_slices: 0\n' >"$WORK/bad.yaml"
"$D" --config "$WORK/bad.yaml" --check-config >"$WORK/bad.out" 2>&1 &&
	fail "max_slices: 0 accepted"
grep -q "bad.yaml:3: max_slices must be 1..1000000" "$WORK/bad.out" ||
	fail "bad max_slices: $(cat "$WORK/bad.out")"
printf 'quota:\n  default_user:\n    max_memory_percent: 101\n' >"$WORK/bad.yaml"
"$D" --config "$WORK/bad.yaml" --check-config >"$WORK/bad.out" 2>&1 &&
	fail "max_memory_percent: 101 accepted"
grep -q "max_memory_percent must be 1..100" "$WORK/bad.out" ||
	fail "bad max_memory_percent: $(cat "$WORK/bad.out")"
echo "ok: one user's slices and memory are capped by quota.default_user"
