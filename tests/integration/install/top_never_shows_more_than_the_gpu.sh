#!/usr/bin/env bash
# `gpuslice top` never shows a GPU above 100 % or a slice above 100 %,
# whatever window the daemon's figures came from: here a stand-in daemon
# answers with two slices on GPU 0 measured at 70 % and 48 % (118 % in
# all, the figure a real run once showed) and one on GPU 1 at 130 %. The
# frame shows GPU 0 at 100 % with the two scaled by one factor (59.3 and
# 40.7: their proportion kept), GPU 1 at 100 %; --json gives the same.
. "$(dirname "$0")/lib.sh" "$1"

SOCK=$WORK/api.sock
python3 - "$SOCK" <<'EOP' >"$WORK/fake.log" 2>&1 &
import http.server, json, socketserver, sys

def gpu(i):
    return {"index": i, "model": "H100-SXM5-80GB", "memory_bytes": 80 << 30,
            "allocated": {"memory_bytes": 8 << 30, "compute": 60},
            "mig": {"enabled": False}, "mps": {"daemons": []}}

def sl(name, gpu_index, share, got):
    return {"name": name, "team": "t", "mode": "timeslice", "priority": "normal",
            "memory_bytes": 4 << 30, "compute": share, "sm_share": 1.0,
            "state": "ready", "gpu": {"index": gpu_index},
            "usage": {"memory_used_bytes": 1 << 30, "compute_achieved": got,
                      "sm_seconds": 1.0, "processes": 1}}

ANSWERS = {
    "/v1/gpus": {"source": "sim", "driver": "sim", "gpus": [gpu(0), gpu(1)]},
    "/v1/slices?usage=1": {"slices": [sl("a15", 0, 15, 70.0), sl("b30", 0, 30, 48.0),
                                      sl("c50", 1, 50, 130.0)]},
}

class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        body = json.dumps(ANSWERS.get(self.path, {})).encode()
        self.send_response(200 if self.path in ANSWERS else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def address_string(self):
        return "unix"
    def log_message(self, *a):
        pass

class S(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

S(sys.argv[1], H).serve_forever()
EOP
PIDS+=($!)
wait_until 10 test -S "$SOCK" || fail "the stand-in daemon did not start: $(cat "$WORK/fake.log")"

frame=$(GPUSLICE_SOCKET=$SOCK "$B/bin/gpuslice" top --once) || fail "top --once failed: $frame"
echo "$frame" >"$WORK/frame.txt"
python3 - "$WORK/frame.txt" <<'EOP' || fail "frame: $frame"
import re, sys
text = open(sys.argv[1]).read()
gpus = [float(x) for x in re.findall(r"^GPU \d+ .*?compute \[[#.]*\]\s*([\d.]+)%", text, re.M)]
assert gpus == [100.0, 100.0], gpus
got = {m.group(1): float(m.group(2))
       for m in re.finditer(r"^\s+(\w+)\s.*?\]\s+([\d.]+)/\d+%", text, re.M)}
assert abs(got["a15"] - 59.3) < 0.11 and abs(got["b30"] - 40.7) < 0.11, got
assert got["c50"] == 100.0, got
assert all(v <= 100.0 for v in got.values()), got
EOP
js=$(GPUSLICE_SOCKET=$SOCK "$B/bin/gpuslice" top --json) || fail "top --json failed"
python3 -c '
import json, sys
d = json.loads(sys.argv[1])
per = {}
for s in d["slices"]:
    v = s["usage"]["compute_achieved"]
    assert v <= 100.0, s
    per[s["gpu"]["index"]] = per.get(s["gpu"]["index"], 0) + v
assert all(v <= 100.0 + 1e-9 for v in per.values()), per
' "$js" || fail "top --json: $js"
echo "ok"
