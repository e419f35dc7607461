#!/usr/bin/env bash
# One user cannot take the API away from the others. An unprivileged
# tenant opens 300 idle connections to the Unix socket (more than the
# node-wide api.max_connections of 256): gpusliced keeps at most
# api.max_connections_per_user (16) of them open, and root and a second
# unprivileged user still get /healthz and a slice created and deleted
# within 2 s each. Then: a connection that sends nothing is closed after
# api.idle_timeout_s.
. "$(dirname "$0")/lib.sh" "$1"
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null; then
	echo "SKIP: needs root and setpriv to act as other users"
	exit 77
fi
FLOOD=$SRC/tests/integration/daemon/idle_conns.py
TENANT=(setpriv --reuid=65534 --regid=65534 --clear-groups)
OTHER=(setpriv --reuid=65533 --regid=65533 --clear-groups)
# The system's python (a root-only one may come first on PATH).
PY=/usr/bin/python3
[ -x "$PY" ] || { echo "SKIP: no $PY"; exit 77; }
# Where the tenant writes its report.
mkdir -m 1777 "$WORK/tenant"

DURING="during the flood"

# The defaults (the flood and the checks take well under the 10 s idle
# timeout, so the tenant's connections are not closed by it meanwhile).
daemon_up

"${TENANT[@]}" "$PY" "$FLOOD" "$SOCK" 300 "$WORK/tenant/flood.ready" \
	>"$WORK/flood.out" 2>&1 &
PIDS+=($!)
wait_until 30 test -s "$WORK/tenant/flood.ready" ||
	fail "the flood did not connect: $(cat "$WORK/flood.out")"
read -r connected open <"$WORK/tenant/flood.ready"
echo "flood: $connected connected, $open still open after 1 s"
[ "$open" -le 16 ] || fail "$open of one user's connections stay open (limit 16)"

for i in 1 2 3; do
	timed "root healthz $i" call GET /healthz
	timed "root create $i" call POST /v1/slices "{\"name\": \"root-$i\", \"memory\": \"1GiB\"}"
	timed "root delete $i" call DELETE "/v1/slices/root-$i"
	timed "uid 65533 healthz $i" "${OTHER[@]}" curl -sf --max-time 5 \
		--unix-socket "$SOCK" -o /dev/null http://localhost/healthz
	timed "uid 65533 create $i" "${OTHER[@]}" curl -sf --max-time 5 \
		--unix-socket "$SOCK" -o /dev/null -X POST \
		-H 'Content-Type: application/json' \
		--data-binary "{\"name\": \"other-$i\", \"memory\": \"1GiB\"}" \
		http://localhost/v1/slices
	timed "uid 65533 delete $i" "${OTHER[@]}" curl -sf --max-time 5 \
		--unix-socket "$SOCK" -o /dev/null -X DELETE \
		"http://localhost/v1/slices/other-$i"
done
grep -q "uid=65534 .*limit of 16 API connections" "$WORK/daemon.log" ||
	fail "the refused connections are not in the log"

# The flooding user itself is served again once its connections go.
kill -9 "${PIDS[-1]}"
wait_until 5 "${TENANT[@]}" curl -sf --max-time 2 --unix-socket "$SOCK" \
	-o /dev/null http://localhost/v1/slices ||
	fail "the tenant is still refused after closing its connections"
daemon_stop

# Idle connections are closed after api.idle_timeout_s.
cat >"$WORK/short.yaml" <<'YAML'
api:
  idle_timeout_s: 2
YAML
daemon_up --config "$WORK/short.yaml"
t=$("${TENANT[@]}" "$PY" -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.settimeout(30)
t0 = time.monotonic()
data = s.recv(1)
print("%.1f" % (time.monotonic() - t0) if data == b"" else "data")
' "$SOCK") || fail "idle probe failed"
echo "idle connection closed after ${t} s"
python3 -c 'import sys; t = float(sys.argv[1]); sys.exit(0 if 1.0 <= t <= 5.0 else 1)' "$t" ||
	fail "an idle connection was closed after ${t} s, want about 2"
echo "ok: a flooding user keeps 16 connections; others are served within 2 s; idle connections close"
