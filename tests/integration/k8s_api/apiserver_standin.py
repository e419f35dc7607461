#!/usr/bin/env python3
"""apiserver_standin.py - a Kubernetes API server stand-in for gpuslice's
DRA driver tests. Keeps resource.k8s.io/v1 objects in memory (optionally
persisted to --state so a killed and restarted stand-in keeps them, as a
real API server keeps etcd) and serves the REST paths and watches the
driver uses:

  /apis/resource.k8s.io/v1/resourceslices[/NAME]          cluster-scoped
  /apis/resource.k8s.io/v1/deviceclasses[/NAME]           cluster-scoped
  /apis/resource.k8s.io/v1/namespaces/NS/resourceclaims[/NAME[/status]]

GET (list, with fieldSelector spec.nodeName / spec.driver / spec.pool.name
and watch=1&resourceVersion=&allowWatchBookmarks=&timeoutSeconds=), POST,
PUT (optimistic concurrency on metadata.resourceVersion), DELETE. Answers
errors as metav1.Status. Every object written is checked with validate.py
(resource_v1_schema.json): an invalid one is refused with 422 and recorded.

Behaves as the API server of one release (--k8s-version 1.34|1.35|1.36 or
$STANDIN_K8S_VERSION, default 1.36) with its default DRA feature gates,
overridden by --feature-gates / $STANDIN_FEATURE_GATES ("DRADeviceTaints=
true,..."): see apiserver_versions.py (fields of disabled gates dropped,
taints[].timeAdded defaulted, quantities canonicalised, that release's
ResourceSlice validation). GET /version answers that release;
?dryRun=All on POST/PUT answers what would be stored and stores nothing.

Test controls (not Kubernetes):
  POST /standin/fail   {"status": 500, "count": N}  next N API requests answer it
  POST /standin/hang   {"count": N, "seconds": S}   next N API requests stall S s
  GET  /api/v1/nodes/NAME  a Node (--node NAME), for owner references
  GET  /standin/log    every write: [{"method","path","name","status"}]
  GET  /standin/violations   schema problems of refused writes
  GET  /standin/writes       every object stored by a write, as stored
  POST /standin/compact      forget watch history (next old watch gets 410)

usage: apiserver_standin.py [--port P] [--port-file F] [--token T]
       [--tls-cert C --tls-key K] [--state F] [--load FIXTURES.json]
       [--bookmark-ms MS] [--node NAME]...
"""
import argparse
import json
import os
import ssl
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import validate  # noqa: E402
import apiserver_versions  # noqa: E402

GROUP = "/apis/resource.k8s.io/v1"
KINDS = {"resourceslices": "ResourceSlice", "deviceclasses": "DeviceClass",
         "resourceclaims": "ResourceClaim"}
HISTORY = 1000


class Store:
    """Objects by (resource, namespace, name); a global resourceVersion;
    the last HISTORY events for watches."""

    def __init__(self, state):
        self.lock = threading.Condition()
        self.objs = {}
        self.rv = 1
        self.events = []  # (rv, resource, ns, type, obj)
        self.oldest = 1   # watches from before this get 410
        self.log = []
        self.violations = []
        self.written = []
        self.dry_refusals = []
        self.fail = []    # pending injected failures
        self.state = state
        if state and os.path.exists(state):
            with open(state) as f:
                d = json.load(f)
            self.rv = d["rv"]
            self.oldest = self.rv + 1  # history is not kept across restarts
            for o in d["objs"]:
                self.objs[(o[0], o[1], o[2])] = o[3]

    def save(self):
        if not self.state:
            return
        tmp = self.state + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"rv": self.rv, "objs": [[k[0], k[1], k[2], v] for k, v in self.objs.items()]}, f)
        os.replace(tmp, self.state)

    def bump(self, res, ns, typ, obj):
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        self.events.append((self.rv, res, ns, typ, json.loads(json.dumps(obj))))
        if len(self.events) > HISTORY:
            self.events.pop(0)
            self.oldest = self.events[0][0]
        self.save()
        self.lock.notify_all()


def status(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}


def field_match(obj, sel):
    if not sel:
        return True
    for term in sel.split(","):
        if "=" not in term:
            return False
        k, v = term.split("=", 1)
        k = k.rstrip("=")
        cur = obj
        for part in k.split("."):
            cur = cur.get(part) if isinstance(cur, dict) else None
        if cur != v:
            return False
    return True


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return  # a client closed its keep-alive connection
        super().handle_error(request, client_address)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "apiserver-standin"

    def log_message(self, fmt, *args):
        if os.environ.get("STANDIN_VERBOSE"):
            sys.stderr.write("standin: " + fmt % args + "\n")

    # ---- plumbing ----
    def send_json(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return ValueError

    def route(self):
        u = urlsplit(self.path)
        q = {k: v[-1] for k, v in parse_qs(u.query).items()}
        parts = [p for p in u.path.split("/") if p]
        if u.path.startswith("/standin/"):
            return ("control", parts[1], None, None, None, q)
        if u.path == "/version":
            return ("version", None, None, None, None, q)
        if len(parts) == 4 and parts[:3] == ["api", "v1", "nodes"]:
            return ("node", parts[3], None, None, None, q)
        if not u.path.startswith(GROUP + "/"):
            return None
        rest = parts[3:]
        ns = None
        if rest and rest[0] == "namespaces" and len(rest) >= 3:
            ns, rest = rest[1], rest[2:]
        if not rest or rest[0] not in KINDS:
            return None
        res = rest[0]
        if (res == "resourceclaims") != (ns is not None):
            return None
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if sub not in (None, "status") or len(rest) > 3:
            return None
        return ("api", res, ns, name, sub, q)

    def injected(self):
        st = self.server.store
        with st.lock:
            if not st.fail:
                return False
            f = st.fail[0]
            f["count"] -= 1
            if f["count"] <= 0:
                st.fail.pop(0)
        if f.get("seconds"):
            time.sleep(f["seconds"])
            self.close_connection = True
            return True
        self.send_json(f["status"], status(f["status"], "InternalError",
                                           "injected failure %d" % f["status"]))
        return True

    def authorized(self):
        tok = self.server.token
        if not tok:
            return True
        if self.headers.get("Authorization") == "Bearer " + tok:
            return True
        self.send_json(401, status(401, "Unauthorized", "Unauthorized"))
        return False

    def handle_any(self, method):
        r = self.route()
        if r is None:
            return self.send_json(404, status(404, "NotFound", "the server could not find the requested resource"))
        if r[0] == "control":
            return self.control(method, r[1])
        if r[0] == "version":
            return self.send_json(200, self.server.version.version_info())
        if r[0] == "node":
            if not self.authorized():
                return
            n = self.server.nodes.get(r[1])
            if method != "GET" or n is None:
                return self.send_json(404, status(404, "NotFound", 'nodes "%s" not found' % r[1]))
            return self.send_json(200, n)
        if not self.authorized() or self.injected():
            return
        _, res, ns, name, sub, q = r
        getattr(self, "api_" + method.lower())(res, ns, name, sub, q)

    def do_GET(self):
        self.handle_any("GET")

    def do_POST(self):
        self.handle_any("POST")

    def do_PUT(self):
        self.handle_any("PUT")

    def do_DELETE(self):
        self.handle_any("DELETE")

    def do_PATCH(self):
        self.send_json(405, status(405, "MethodNotAllowed", "PATCH is not served by the stand-in"))

    # ---- controls ----
    def control(self, method, what):
        st = self.server.store
        if what == "fail" and method == "POST":
            b = self.body()
            with st.lock:
                st.fail.append({"status": int(b.get("status", 500)), "count": int(b.get("count", 1))})
            return self.send_json(200, {})
        if what == "hang" and method == "POST":
            b = self.body()
            with st.lock:
                st.fail.append({"seconds": float(b.get("seconds", 30)), "count": int(b.get("count", 1))})
            return self.send_json(200, {})
        if what == "log":
            with st.lock:
                return self.send_json(200, list(st.log))
        if what == "writes":
            with st.lock:
                return self.send_json(200, list(st.written))
        if what == "violations":
            with st.lock:
                return self.send_json(200, list(st.violations))
        if what == "compact" and method == "POST":
            with st.lock:
                st.events.clear()
                st.oldest = st.rv + 1
            return self.send_json(200, {})
        return self.send_json(404, {"error": "unknown control"})

    # ---- API ----
    def key(self, res, ns, name):
        return (res, ns or "", name)

    def api_get(self, res, ns, name, sub, q):
        st = self.server.store
        if name:
            with st.lock:
                o = st.objs.get(self.key(res, ns, name))
            if o is None:
                return self.send_json(404, status(404, "NotFound", '%s "%s" not found' % (res, name)))
            return self.send_json(200, o)
        if q.get("watch") in ("1", "true"):
            return self.watch(res, ns, q)
        sel = q.get("fieldSelector", "")
        with st.lock:
            items = [o for (r, n, _), o in sorted(st.objs.items())
                     if r == res and (ns is None or n == ns) and field_match(o, sel)]
            rv = str(st.rv)
        self.send_json(200, {"kind": KINDS[res] + "List", "apiVersion": "resource.k8s.io/v1",
                             "metadata": {"resourceVersion": rv}, "items": items})

    def check(self, res, obj, method, path, name, old=None):
        """Applies the release's write behaviour (apiserver_versions.py)
        to obj in place, then validates it: False (answered) if invalid."""
        st = self.server.store
        if obj is ValueError or not isinstance(obj, dict):
            self.send_json(400, status(400, "BadRequest", "body is not a JSON object"))
            return False
        self.server.version.prepare(res, obj, old)
        probs = validate.problems([obj], pool=False, minor=self.server.version.minor)
        probs += self.server.version.problems(res, obj)
        if obj.get("kind") != KINDS[res]:
            probs.append("kind %r on %s" % (obj.get("kind"), res))
        if probs:
            with st.lock:
                # A dry run's refusal is an answer, not a refused write.
                (st.dry_refusals if "dryRun=All" in path else st.violations).extend(probs)
                st.log.append({"method": method, "path": path, "name": name, "status": 422})
            self.send_json(422, status(422, "Invalid", "; ".join(probs)[:2000]))
            return False
        return True

    def api_post(self, res, ns, name, sub, q):
        st = self.server.store
        obj = self.body()
        if name:
            return self.send_json(405, status(405, "MethodNotAllowed", "POST to a named object"))
        if not self.check(res, obj, "POST", self.path, (obj or {}).get("metadata", {}).get("name") if isinstance(obj, dict) else None):
            return
        md = obj["metadata"]
        if "name" not in md:
            md["name"] = md["generateName"] + uuid.uuid4().hex[:5]
        if ns:
            md["namespace"] = ns
        k = self.key(res, ns, md["name"])
        if q.get("dryRun") == "All":
            md["uid"] = str(uuid.uuid4())
            md["creationTimestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            md["generation"] = 1
            return self.send_json(201, obj)
        with st.lock:
            if k in st.objs:
                st.log.append({"method": "POST", "path": self.path, "name": md["name"], "status": 409})
                return self.send_json(409, status(409, "AlreadyExists", '%s "%s" already exists' % (res, md["name"])))
            md["uid"] = str(uuid.uuid4())
            md["creationTimestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            md["generation"] = 1
            st.objs[k] = obj
            st.bump(res, ns, "ADDED", obj)
            st.written.append(json.loads(json.dumps(obj)))
            st.log.append({"method": "POST", "path": self.path, "name": md["name"], "status": 201})
            out = json.loads(json.dumps(obj))
        self.send_json(201, out)

    def api_put(self, res, ns, name, sub, q):
        st = self.server.store
        obj = self.body()
        if not name:
            return self.send_json(405, status(405, "MethodNotAllowed", "PUT needs a name"))
        with st.lock:
            old = json.loads(json.dumps(st.objs.get(self.key(res, ns, name))))
        if not self.check(res, obj, "PUT", self.path, name, old):
            return
        md = obj["metadata"]
        if md.get("name") != name:
            return self.send_json(400, status(400, "BadRequest", "metadata.name does not match the path"))
        k = self.key(res, ns, name)
        with st.lock:
            cur = st.objs.get(k)
            if cur is None:
                st.log.append({"method": "PUT", "path": self.path, "name": name, "status": 404})
                return self.send_json(404, status(404, "NotFound", '%s "%s" not found' % (res, name)))
            rv = md.get("resourceVersion")
            if rv and rv != cur["metadata"]["resourceVersion"]:
                st.log.append({"method": "PUT", "path": self.path, "name": name, "status": 409})
                return self.send_json(409, status(409, "Conflict",
                    'Operation cannot be fulfilled on %s "%s": the object has been modified' % (res, name)))
            new = json.loads(json.dumps(cur))
            if sub == "status":
                new["status"] = obj.get("status")
            else:
                new["spec"] = obj.get("spec")
                for f in ("labels", "annotations", "finalizers", "ownerReferences"):
                    if f in md:
                        new["metadata"][f] = md[f]
                if new["spec"] != cur.get("spec"):
                    new["metadata"]["generation"] = cur["metadata"].get("generation", 1) + 1
            if q.get("dryRun") == "All":
                return self.send_json(200, new)
            st.objs[k] = new
            st.bump(res, ns, "MODIFIED", new)
            st.written.append(json.loads(json.dumps(new)))
            st.log.append({"method": "PUT", "path": self.path, "name": name, "status": 200})
            out = json.loads(json.dumps(new))
        self.send_json(200, out)

    def api_delete(self, res, ns, name, sub, q):
        st = self.server.store
        if not name:
            return self.send_json(405, status(405, "MethodNotAllowed", "DELETE collection is not served"))
        k = self.key(res, ns, name)
        with st.lock:
            cur = st.objs.pop(k, None)
            if cur is None:
                st.log.append({"method": "DELETE", "path": self.path, "name": name, "status": 404})
                return self.send_json(404, status(404, "NotFound", '%s "%s" not found' % (res, name)))
            st.bump(res, ns, "DELETED", cur)
            st.log.append({"method": "DELETE", "path": self.path, "name": name, "status": 200})
            out = json.loads(json.dumps(cur))
        self.send_json(200, out)

    # ---- watch ----
    def chunk(self, obj):
        data = (json.dumps(obj) + "\n").encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def watch(self, res, ns, q):
        st = self.server.store
        sel = q.get("fieldSelector", "")
        bookmarks = q.get("allowWatchBookmarks") in ("1", "true")
        timeout = float(q.get("timeoutSeconds", 0) or 0)
        end = time.time() + timeout if timeout > 0 else None
        with st.lock:
            rv = int(q.get("resourceVersion") or 0) or st.rv
            gone = rv < st.oldest - 1
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            if gone:
                self.chunk({"type": "ERROR", "object": status(410, "Expired",
                            "too old resource version: %d (%d)" % (rv, st.oldest))})
                return self.finish_chunks()
            last_bm = time.time()
            while True:
                with st.lock:
                    evs = [e for e in st.events if e[0] > rv and e[1] == res and (ns is None or e[2] == ns)]
                    cur_rv = st.rv  # what evs covers; later events come next round
                    if not evs:
                        st.lock.wait(0.05)
                for e in evs:
                    rv = e[0]
                    if field_match(e[4], sel):
                        self.chunk({"type": e[3], "object": e[4]})
                if evs:
                    continue
                rv = max(rv, cur_rv)
                now = time.time()
                if bookmarks and (now - last_bm) * 1000 >= self.server.bookmark_ms:
                    last_bm = now
                    self.chunk({"type": "BOOKMARK", "object": {"kind": KINDS[res], "apiVersion": "resource.k8s.io/v1",
                                "metadata": {"resourceVersion": str(rv)}}})
                if end and now >= end:
                    return self.finish_chunks()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def finish_chunks(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        self.close_connection = True


def main():
    ap = argparse.ArgumentParser(description="Kubernetes API server stand-in (resource.k8s.io/v1)")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--token")
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    ap.add_argument("--state")
    ap.add_argument("--load", action="append", default=[])
    ap.add_argument("--bookmark-ms", type=int, default=1000)
    ap.add_argument("--node", action="append", default=[], help="serve a Node object of this name")
    ap.add_argument("--k8s-version", default=os.environ.get("STANDIN_K8S_VERSION") or "1.36",
                    help="behave as this release: 1.34, 1.35 or 1.36")
    ap.add_argument("--feature-gates", default=os.environ.get("STANDIN_FEATURE_GATES", ""),
                    help="GATE=true|false,... over the release's defaults")
    a = ap.parse_args()
    try:
        version = apiserver_versions.Version(a.k8s_version, a.feature_gates)
    except ValueError as e:
        print("standin: %s" % e, file=sys.stderr)
        return 2
    store = Store(a.state)
    for path in a.load:
        with open(path) as f:
            objs = validate._objects(json.load(f))
        probs = validate.problems(objs)
        if probs:
            print("standin: fixture %s is not valid resource.k8s.io/v1:\n  %s" % (path, "\n  ".join(probs)),
                  file=sys.stderr)
            return 1
        for o in objs:
            res = {v: k for k, v in KINDS.items()}[o["kind"]]
            md = o["metadata"]
            md.setdefault("uid", str(uuid.uuid4()))
            store.objs[(res, md.get("namespace", ""), md["name"])] = o
            store.bump(res, md.get("namespace"), "ADDED", o)
    srv = Server(("127.0.0.1", a.port), Handler)
    srv.store = store
    srv.version = version
    srv.token = a.token
    srv.bookmark_ms = a.bookmark_ms
    srv.nodes = {n: {"apiVersion": "v1", "kind": "Node", "metadata": {"name": n, "uid": str(uuid.uuid4())}}
                 for n in a.node}
    if a.tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(a.tls_cert, a.tls_key)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    if a.port_file:
        tmp = a.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % srv.server_address[1])
        os.replace(tmp, a.port_file)
    try:
        srv.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
