#!/usr/bin/env bash
# Issue #25, Why 8 (the shared socket): one tenant connecting and closing
# in a tight loop on api.sock slowed every other tenant down (root and the
# kubelet plugin have admin.sock). The daemon now admits connections
# itself, before libmicrohttpd sees them: it accepts in a loop of its own
# from a large backlog, reads the peer's uid (SO_PEERCRED) and closes the
# connection of a uid over its churn budget or its connection limit at
# once, before any other work (no thread, no user lookup). While Mallory
# hammers api.sock with 8 threads, Alice's 16 requests on it are answered
# (at least 14, each within 2 s: a generous bound; the figures are printed
# for `make bench`).
. "$(dirname "$0")/lib.sh" "$1"

sim_node
node_up

cat >"$WORK/hammer.py" <<'PY'
import socket, sys, threading, time
end = time.time() + float(sys.argv[2])
n = [0]
def loop():
    while time.time() < end:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect(sys.argv[1])
            n[0] += 1
        except OSError:
            pass
        s.close()
ts = [threading.Thread(target=loop) for _ in range(8)]
for t in ts: t.start()
for t in ts: t.join()
print(n[0])
PY
cat >"$WORK/alice.py" <<'PY'
import json, socket, sys, time
ok, lat, errs = 0, [], {}
for i in range(16):
    t0 = time.monotonic()
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        s.connect(sys.argv[1])
        s.sendall(b"GET /v1/slices HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        buf = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            buf += b
        s.close()
        if buf.startswith(b"HTTP/1.1 200"):
            ok += 1
            lat.append(time.monotonic() - t0)
        else:
            errs[buf[:12].decode(errors="replace") or "eof"] = errs.get(buf[:12].decode(errors="replace") or "eof", 0) + 1
    except OSError as e:
        errs[e.strerror or str(e)] = errs.get(e.strerror or str(e), 0) + 1
    time.sleep(0.2)
lat.sort()
print(json.dumps({"ok": ok, "p50_ms": 1000 * lat[len(lat) // 2] if lat else None,
                  "max_ms": 1000 * lat[-1] if lat else None, "failures": errs}))
PY
as_uid $MALLORY python3 "$WORK/hammer.py" "$SOCK" 8 >"$WORK/hammer.out" &
HJOB=$!
PIDS+=($HJOB)
sleep 1
got=$(as_uid $ALICE python3 "$WORK/alice.py" "$SOCK")
wait "$HJOB" || true
echo "bench: api, Alice's 16 requests on api.sock while Mallory reconnects in a loop ($(cat "$WORK/hammer.out") connects in 8 s): $got"
jcheck "$got" 'd["ok"] >= 14 and d["max_ms"] < 2000' ||
	fail "Alice got $got while Mallory reconnected in a loop"
grep -q "opens more than [0-9]* API connections a second" "$WORK/daemon.log" ||
	fail "Mallory's connection churn was not bounded"
echo "ok: another tenant's requests are answered while one reconnects in a loop"
