#!/usr/bin/env python3
"""api_contract.py SOCKET - every endpoint of gpusliced's API v1, its
success shape and its 4xx answers, over the daemon's Unix socket in one
process (run by api_contract.sh, which starts the daemon and then checks
the CLI on top). Exits 1 with the first failed check."""
import http.client
import json
import os
import socket
import sys


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=30)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(30)
        self.sock.connect(self.path)


SOCK = sys.argv[1]
conn = UnixConnection(SOCK)
checks = 0


def call(method, path, body=None, raw=None):
    global conn
    data = raw if raw is not None else (json.dumps(body) if body is not None else None)
    headers = {"Content-Type": "application/json"} if data is not None else {}
    try:
        conn.request(method, path, body=data, headers=headers)
        r = conn.getresponse()
    except (http.client.HTTPException, OSError):
        # A 413 closes the connection: reconnect and report the status.
        conn.close()
        conn = UnixConnection(SOCK)
        raise
    text = r.read().decode("utf-8", "replace")
    if r.getheader("Connection", "").lower() == "close":
        conn.close()
        conn = UnixConnection(SOCK)
    try:
        return r.status, json.loads(text) if text else None
    except ValueError:
        return r.status, text


def expect(what, cond, detail=""):
    global checks
    checks += 1
    if not cond:
        print("FAIL: %s %s" % (what, detail), file=sys.stderr)
        sys.exit(1)


def status(what, method, path, want, body=None, raw=None, error=None):
    st, d = call(method, path, body, raw)
    expect(what, st == want, "(%s %s: status %s, want %s; body %r)" % (method, path, st, want, d))
    if st >= 400:
        expect(what + " error body", isinstance(d, dict) and "error" in d and d.get("message"), repr(d))
        if error:
            expect(what + " error name", d["error"] == error, "(got %r, want %s)" % (d, error))
    return d


# ---- health, metrics, routing ----
d = status("healthz", "GET", "/healthz", 200)
expect("healthz body", d["status"] == "ok" and d["api"] == "v1" and d["schema"] >= 2, repr(d))
status("POST healthz", "POST", "/healthz", 405)
st, text = call("GET", "/metrics")
expect("metrics", st == 200 and "gpuslice_slices 0\n" in text, text[:200])
status("unknown path", "GET", "/nope", 404, error="NOT_FOUND")
status("unknown v1 path", "GET", "/v1/nope", 404)
status("too deep", "GET", "/v1/slices/a/b/c/d", 404)
status("too many args", "GET", "/v1/slices?" + "&".join("a%d=1" % i for i in range(20)), 400)

# ---- slices: bad input ----
status("malformed JSON", "POST", "/v1/slices", 400, raw='{"name": "x", ', error="PARSE")
status("array body", "POST", "/v1/slices", 400, raw="[1,2]")
d = status("unknown key", "POST", "/v1/slices", 400, {"name": "x", "colour": "red"}, error="INVALID")
expect("unknown key named", "colour" in d["message"], d["message"])
status("bad memory", "POST", "/v1/slices", 400, {"name": "x", "memory": "4XB"})
status("compute out of range", "POST", "/v1/slices", 400, {"name": "x", "compute": 140}, error="RANGE")
status("bad name", "POST", "/v1/slices", 400, {"name": "bad name!"})
status("bad on_exit", "POST", "/v1/slices", 400, {"name": "x", "on_exit": "never"})
status("unknown team", "POST", "/v1/slices", 404, {"name": "x", "team": "nosuchteam"})
status("bad owner", "POST", "/v1/slices", 400, {"name": "x", "owner": "root"})
status("bad UTF-8", "POST", "/v1/slices", 400, raw=b'{"name": "\xff\xfe"}')
try:
    status("oversized body", "POST", "/v1/slices", 413, raw='{"name": "' + "a" * 70000 + '"}')
except (http.client.HTTPException, OSError):
    pass  # the daemon may close before reading it all: refused either way
status("does not fit", "POST", "/v1/slices", 409, {"name": "huge", "memory": "500GiB"}, error="NO_FIT")

# ---- slices: life cycle ----
d = status("create", "POST", "/v1/slices", 201,
           {"name": "nb-1", "memory": "4GiB", "compute": 25, "priority": "high", "mode": "timeslice"})
expect("create shape", d["name"] == "nb-1" and d["memory_bytes"] == 4 << 30 and d["compute"] == 25
       and d["priority"] == "high" and d["mode"] == "timeslice" and d["state"] == "ready", repr(d))
expect("create placement", d["gpu"]["uuid"].startswith("GPU-") and d["env"]["GPUSLICE_SLICE"] == "nb-1"
       and d["region"]["slot"] >= 0 and d["env"]["GPUSLICE_RUN_DIR"]
       and d["env"]["CUDA_VISIBLE_DEVICES"] == d["gpu"]["uuid"], repr(d))
status("duplicate name", "POST", "/v1/slices", 409, {"name": "nb-1", "memory": "1GiB"}, error="EXISTS")
d = status("create with a picked name", "POST", "/v1/slices", 201,
           {"memory": 1073741824, "mode": "mps", "compute": 10})
picked = d["name"]
expect("picked name", picked.startswith("slice-"), picked)
expect("mps env", d["mode"] == "mps" and "CUDA_MPS_PIPE_DIRECTORY" in d["env"]
       and d["env"]["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] == "10"
       and d["env"]["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] == "0=1024M", repr(d["env"]))
d = status("list", "GET", "/v1/slices", 200)
expect("list names", sorted(s["name"] for s in d["slices"]) == sorted(["nb-1", picked]), repr(d))
d = status("list by team with usage", "GET", "/v1/slices?team=default&usage=1", 200)
expect("list usage", len(d["slices"]) == 2 and "usage" in d["slices"][0], repr(d))
status("list with a bad team", "GET", "/v1/slices?team=bad%20team", 400)
d = status("get", "GET", "/v1/slices/nb-1", 200)
expect("get shape", d["name"] == "nb-1" and d["usage"]["processes"] == 0, repr(d))
status("get missing", "GET", "/v1/slices/missing", 404)
status("get a bad name", "GET", "/v1/slices/%2e%2e", 404)
status("PUT on a slice", "PUT", "/v1/slices/nb-1", 405, {})
d = status("attach", "POST", "/v1/slices/nb-1/attach", 200, {"pid": os.getpid()})
expect("attach pid", os.getpid() in d["pids"], repr(d["pids"]))
status("attach a bad pid", "POST", "/v1/slices/nb-1/attach", 400, {"pid": -4})
status("attach with an unknown key", "POST", "/v1/slices/nb-1/attach", 400, {"pid": 1, "x": 2})
status("attach a missing process", "POST", "/v1/slices/nb-1/attach", 404, {"pid": 999999999})
d = status("attach the caller", "POST", "/v1/slices/nb-1/attach", 200, {})
status("unknown slice action", "POST", "/v1/slices/nb-1/bogus", 404, {})
status("GET attach", "GET", "/v1/slices/nb-1/attach", 405)

# ---- GPUs ----
d = status("gpus", "GET", "/v1/gpus", 200)
expect("gpus shape", d["source"] == "sim" and len(d["gpus"]) == 2 and d["sim_dir"]
       and d["gpus"][0]["model"] == "H100-SXM5-80GB" and d["gpus"][0]["mig"]["capable"]
       and sum(g["allocated"]["slices"] for g in d["gpus"]) == 2, repr(d))
status("DELETE gpus", "DELETE", "/v1/gpus", 405)

# ---- the demand seen (every create so far, placed or not) ----
d = status("demand", "GET", "/v1/demand", 200)
expect("demand shape", d["placement"] in ("frag", "binpack", "spread")
       and d["classes"] and d["total_weight"] >= 2
       and all(c["kind"] in ("fraction", "whole", "mig") and c["weight"] > 0
               and c["num_gpu"] == 1 for c in d["classes"])
       and [c["weight"] for c in d["classes"]] == sorted((c["weight"] for c in d["classes"]), reverse=True),
       repr(d))
status("POST demand", "POST", "/v1/demand", 405, {})

# ---- teams and quotas ----
d = status("teams", "GET", "/v1/teams", 200)
expect("default team", "default" in [t["name"] for t in d["teams"]], repr(d))
d = status("put team", "PUT", "/v1/teams/ml", 200,
           {"guarantee": {"memory": "8GiB", "compute": 50}, "max": {"memory": "16GiB"}})
expect("put team shape", d["guarantee"]["memory_bytes"] == 8 << 30 and d["max"]["compute"] is None, repr(d))
d = status("get team", "GET", "/v1/teams/ml", 200)
expect("team usage", d["usage"]["memory_bytes"] == 0 and d["from_config"] is False, repr(d))
status("guarantee above max", "PUT", "/v1/teams/ml", 400,
       {"guarantee": {"memory": "32GiB"}, "max": {"memory": "16GiB"}})
status("unknown team key", "PUT", "/v1/teams/ml", 400, {"quota": 1})
status("bad amount", "PUT", "/v1/teams/ml", 400, {"guarantee": {"memory": -1}})
status("name differs", "PUT", "/v1/teams/ml", 400, {"name": "other"})
status("unknown parent", "PUT", "/v1/teams/sub", 404, {"parent": "nosuch"})
status("get missing team", "GET", "/v1/teams/nosuch", 404)
status("create in team", "POST", "/v1/slices", 201, {"name": "ml-1", "memory": "2GiB", "team": "ml"})
d = status("team usage counts", "GET", "/v1/teams/ml", 200)
expect("team usage counted", d["usage"]["memory_bytes"] == 2 << 30, repr(d))
status("delete a team with slices", "DELETE", "/v1/teams/ml", 409, error="BUSY")
status("delete", "DELETE", "/v1/slices/ml-1", 200)
status("delete team", "DELETE", "/v1/teams/ml", 200)
status("delete team again", "DELETE", "/v1/teams/ml", 404)
status("delete the default team", "DELETE", "/v1/teams/default", 403)
status("POST teams", "POST", "/v1/teams", 405)

# ---- usage ----
d = status("usage", "GET", "/v1/usage?since=1h&by=slice", 200)
expect("usage shape", d["by"] == "slice" and "total" in d and d["currency"]
       and "ml-1" in [r["slice"] for r in d["rows"]], repr(d))
status("usage with RFC 3339", "GET", "/v1/usage?since=2024-01-01T00:00:00Z&until=1h", 200)
status("usage by a bad key", "GET", "/v1/usage?by=colour", 400)
status("usage with a bad since", "GET", "/v1/usage?since=yesterday", 400)
status("usage far in the future", "GET", "/v1/usage?since=99999999999", 400)
status("usage with until before since", "GET", "/v1/usage?since=1h&until=2h", 400)

# ---- events ----
d = status("events", "GET", "/v1/events?limit=100", 200)
expect("events shape", "slice.created" in [e["type"] for e in d["events"]] and d["last_id"] > 0, repr(d))
last = d["last_id"]
d = status("events after", "GET", "/v1/events?after=%d" % last, 200)
expect("no events after the last", d["events"] == [] and d["last_id"] == last, repr(d))
d = status("events of a slice", "GET", "/v1/events?slice=ml-1", 200)
expect("slice events", set(e["type"] for e in d["events"]) == {"slice.created", "slice.deleted"}, repr(d))
status("events limit 0", "GET", "/v1/events?limit=0", 400)
status("events bad after", "GET", "/v1/events?after=abc", 400)

# ---- plan ----
d = status("plan", "POST", "/v1/plan", 200, {"gpu": 1, "demand": "1g.10gb=2,3g.40gb=1"})
expect("plan shape", d["model"] == "H100-SXM5-80GB" and len(d["steps"]) == 3 and d["unmet"] == [], repr(d))
d = status("plan on a model", "POST", "/v1/plan", 200,
           {"model": "A100-SXM4-40GB", "current": "4g.20gb@0", "demand": "3g.20gb=2"})
expect("plan unmet", d["unmet"] and d["unmet"][0]["count"] == 1, repr(d))
status("plan an unknown profile", "POST", "/v1/plan", 400, {"gpu": 0, "demand": "9g.1tb=1"})
status("plan without demand", "POST", "/v1/plan", 400, {"gpu": 0})
status("plan on a missing GPU", "POST", "/v1/plan", 404, {"gpu": 7, "demand": "1g.10gb=1"})
status("plan on an unknown model", "POST", "/v1/plan", 400, {"model": "GTX-480", "demand": "1g.10gb=1"})
status("plan with an unknown key", "POST", "/v1/plan", 400, {"gpu": 0, "demand": "1g.10gb=1", "x": 1})
status("GET plan", "GET", "/v1/plan", 405)

print("ok: %d API checks" % checks)
