#!/usr/bin/env python3
"""claims_standin.py - the part of an API server the DRA driver reads in
NodePrepareResources: GET /apis/resource.k8s.io/v1/namespaces/NS/
resourceclaims/NAME, served from DIR/NS/NAME.json (404 with a Status when
absent); and, for the scheduler extender, .../resourceclaimtemplates/NAME
from DIR/NS/NAME.template.json. Faults for the error tests come from DIR/fault, re-read on every
request: "500" (an Internal Server Error Status), "403", "hang" (no answer
for 60 s) or empty. Every request is appended to DIR/requests.log.

usage: claims_standin.py DIR PORTFILE   (listens on 127.0.0.1, port 0,
writes the port chosen to PORTFILE)
"""
import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROOT = sys.argv[1]
PREFIX = "/apis/resource.k8s.io/v1/namespaces/"


def status(code, reason, msg):
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure",
            "message": msg, "reason": reason, "code": code}


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        with open(os.path.join(ROOT, "requests.log"), "a") as f:
            f.write(f"GET {self.path} {self.headers.get('Authorization', '')}\n")
        try:
            fault = open(os.path.join(ROOT, "fault")).read().strip()
        except OSError:
            fault = ""
        if fault == "hang":
            time.sleep(60)
            return
        if fault == "500":
            return self.send(500, status(500, "InternalError", "etcd is down"))
        if fault == "403":
            return self.send(403, status(403, "Forbidden", "no RBAC for claims"))
        path = self.path.split("?")[0]
        parts = path[len(PREFIX):].split("/") if path.startswith(PREFIX) else []
        kinds = {"resourceclaims": ".json", "resourceclaimtemplates": ".template.json"}
        if len(parts) != 3 or parts[1] not in kinds:
            return self.send(404, status(404, "NotFound", "not served here"))
        f = os.path.join(ROOT, parts[0], parts[2] + kinds[parts[1]])
        if not os.path.exists(f):
            return self.send(404, status(404, "NotFound",
                             f'{parts[1]} "{parts[2]}" not found'))
        self.send(200, json.load(open(f)))


srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
srv.daemon_threads = True
with open(sys.argv[2] + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
srv.serve_forever()
