#!/usr/bin/env python3
"""fake_daemon.py - a gpusliced stand-in on a Unix socket for publisher
tests that need what the simulated node cannot do live (a GPU appearing or
disappearing, a daemon-reported health field). Serves GET /healthz,
/v1/gpus and /v1/events from STATE.json, re-read on every request, so a
test changes the node by rewriting the file.

usage: fake_daemon.py SOCKET STATE.json
STATE.json: {"driver": "...", "gpus": [...as /v1/gpus...], "events": [...]}
"""
import json
import os
import socketserver
import sys
import time
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit


STARTED = time.time()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def address_string(self):
        return "unix"

    def log_message(self, fmt, *args):
        pass

    def do_GET(self):
        u = urlsplit(self.path)
        q = {k: v[-1] for k, v in parse_qs(u.query).items()}
        with open(self.server.state) as f:
            st = json.load(f)
        if u.path == "/healthz":
            out = {"status": "ok", "api": "v1", "schema": 2, "uptime_seconds": int(time.time() - STARTED)}
        elif u.path == "/v1/gpus":
            out = {"source": "fake", "driver": st.get("driver", ""), "gpus": st["gpus"]}
        elif u.path == "/v1/events":
            after = int(q.get("after", 0))
            evs = [e for e in st.get("events", []) if e["id"] > after]
            out = {"events": evs, "last_id": evs[-1]["id"] if evs else after}
        else:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = json.dumps(out).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


def main():
    sock, state = sys.argv[1], sys.argv[2]
    if os.path.exists(sock):
        os.unlink(sock)
    srv = Server(sock, Handler)
    srv.state = state
    srv.serve_forever(poll_interval=0.1)


if __name__ == "__main__":
    main()
