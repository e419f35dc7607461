#!/usr/bin/env python3
"""kubelet.py - a kubelet stand-in for gpuslice-kubelet-plugin's tests.

It behaves the way a kubelet does towards a DRA plugin (facts in
shared/reference/kubernetes/kubelet-grpc.md): it watches the plugin
registry directory for sockets (ignoring dot-files and non-sockets), dials
a new one, calls GetInfo, picks the first DRAPlugin version in the
plugin's order that it supports, answers NotifyRegistrationStatus, then
calls NodePrepareResources / NodeUnprepareResources on the endpoint with
real-looking claim UIDs, retrying while the plugin is unavailable, and
opens the health stream. It is built on python3-grpcio, an independent
gRPC implementation; message classes are generated at run time by
`protoc --python_out` from integrations/kubernetes/proto/ and calls go
through grpcio's generic unary_unary / unary_stream.

The plugin under test is gs-kplugin-fake: the real transport linked with
fake_driver.c, whose behaviour is chosen by the claim name (fail-*, slow-*,
multi-*, share-*) and which logs every call to <state>/calls.log.

    kubelet.py SCENARIO     run one scenario (the ctest names); exit 0 on
                            success, 1 on failure, 77 when grpcio, protobuf
                            or protoc are missing
    kubelet.py rss          print the plugin's peak RSS after a load
                            (scripts/bench.sh)
    kubelet.py client REGISTRY VERSION prepare|unprepare NS NAME UID...
    kubelet.py client REGISTRY VERSION register
                            act as the kubelet towards whatever plugin has
                            a socket in REGISTRY (the real one in e2e*.sh):
                            register with VERSION (v1 or v1beta1), make one
                            call with the claims given (or none), print the
                            answer (or the PluginInfo) as JSON
Environment: GS_SRC (source tree), GS_BUILD (build tree), GS_SANITIZE.
"""
import importlib
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import uuid

SKIP = 77
DRIVER = "gpuslice.io"
NODE = "node-a"
PROTOS = ["dra_v1", "dra_v1beta1", "health_v1", "health_v1alpha1",
          "pluginregistration"]
DRA_PATH = {
    "v1": "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/",
    "v1beta1": "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/",
}
HEALTH_PATH = {
    "v1": "/v1.DRAResourceHealth/NodeWatchResources",
    "v1alpha1": "/v1alpha1.DRAResourceHealth/NodeWatchResources",
}
REG_PATH = "/pluginregistration.Registration/"


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def skip(why):
    print("SKIP: " + why)
    sys.exit(SKIP)


try:
    import grpc
except ImportError:
    # python3 on PATH may not be Debian's (pyenv, venv): python3-grpcio and
    # python3-protobuf live in /usr/bin/python3's dist-packages.
    ALT = "/usr/bin/python3"
    if (not os.environ.get("GS_KUBELET_REEXEC") and os.access(ALT, os.X_OK)
            and os.path.realpath(sys.executable) != os.path.realpath(ALT)):
        os.environ["GS_KUBELET_REEXEC"] = "1"
        os.execv(ALT, [ALT] + sys.argv)
    skip("python3-grpcio is not installed")

SRC = os.environ.get("GS_SRC") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BUILD = os.environ.get("GS_BUILD") or os.path.join(SRC, "build")
SANITIZED = os.environ.get("GS_SANITIZE", "OFF").upper() in ("ON", "1", "TRUE")
PLUGIN_BIN = os.path.join(BUILD, "tests", "gs-kplugin-fake")


def load_messages(out):
    """Generates the Python message classes from our .proto files."""
    protoc = shutil.which("protoc")
    if not protoc:
        skip("protoc is not installed (Debian: protobuf-compiler)")
    try:
        import google.protobuf  # noqa: F401
    except ImportError:
        skip("python3-protobuf is not installed")
    pdir = os.path.join(SRC, "integrations", "kubernetes", "proto")
    subprocess.run([protoc, "--python_out=" + out, "-I" + pdir] +
                   [os.path.join(pdir, p + ".proto") for p in PROTOS],
                   check=True)
    sys.path.insert(0, out)
    return {p: importlib.import_module(p + "_pb2") for p in PROTOS}


def wait_for(cond, what, timeout=10.0, step=0.02):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(step)
    raise Failure("timed out waiting for " + what)


def is_socket(path):
    try:
        return stat.S_ISSOCK(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False


class Plugin:
    """One gs-kplugin-fake process with its directories under `root`."""
    running = []  # every instance, killed at the end if still running

    def __init__(self, root, driver=DRIVER, extra=()):
        self.root = root
        self.driver = driver
        self.registry = os.path.join(root, "plugins_registry")
        self.plugin_dir = os.path.join(root, "plugins", driver)
        self.state = os.path.join(root, "state")
        self.log = os.path.join(root, "plugin.log")
        self.extra = list(extra)
        self.proc = None
        os.makedirs(self.state, exist_ok=True)
        Plugin.running.append(self)

    @property
    def reg_sock(self):
        return os.path.join(self.registry, self.driver + "-reg.sock")

    @property
    def dra_sock(self):
        return os.path.join(self.plugin_dir, "dra.sock")

    def start(self, wait=True):
        args = [PLUGIN_BIN, "--node-name", NODE, "--registry-dir",
                self.registry, "--plugin-dir", self.plugin_dir,
                "--state-dir", self.state, "--no-publish",
                "--check-interval-ms", "100", "--log-level", "debug",
                "--log-file", self.log]
        if self.driver != DRIVER:
            args += ["--driver-name", self.driver]
        self.stderr = open(os.path.join(self.root, "plugin.stderr"), "ab")
        self.proc = subprocess.Popen(args + self.extra, stdout=self.stderr,
                                     stderr=self.stderr)
        if wait:
            wait_for(lambda: is_socket(self.reg_sock) or self.proc.poll()
                     is not None, "the registration socket")
            check(self.proc.poll() is None,
                  "plugin exited at start: %s" % self.proc.returncode)
        return self

    def stop(self, sig=signal.SIGTERM, expect=0):
        if not self.proc:
            return
        self.proc.send_signal(sig)
        rc = self.proc.wait(timeout=30)
        self.proc = None
        self.stderr.close()
        if expect is not None:
            check(rc == expect, "plugin exited with %s, expected %s (see %s)"
                  % (rc, expect, self.log))

    def calls(self):
        try:
            with open(os.path.join(self.state, "calls.log")) as f:
                return f.read().splitlines()
        except FileNotFoundError:
            return []

    def rss_kib(self, key="VmHWM"):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
        raise Failure("no %s in /proc/%d/status" % (key, self.proc.pid))


class Kubelet:
    """The kubelet's side: registration, DRA calls, health streams."""

    def __init__(self, pb, versions=("v1", "v1beta1"), authority=None):
        self.pb = pb
        self.versions = versions  # what this kubelet knows
        self.authority = authority
        self.channels = []

    def channel(self, path, authority=None):
        opts = [("grpc.initial_reconnect_backoff_ms", 50),
                ("grpc.max_reconnect_backoff_ms", 200),
                ("grpc.enable_retries", 0)]
        auth = authority if authority is not None else self.authority
        if auth is not None:
            opts.append(("grpc.default_authority", auth))
        ch = grpc.insecure_channel("unix:" + path, options=opts)
        self.channels.append(ch)
        return ch

    def close(self):
        for ch in self.channels:
            ch.close()
        self.channels = []

    @staticmethod
    def sockets(registry):
        """What the plugin watcher would pick up: sockets, no dot-files."""
        try:
            names = sorted(os.listdir(registry))
        except FileNotFoundError:
            return []
        return [os.path.join(registry, n) for n in names
                if not n.startswith(".") and
                is_socket(os.path.join(registry, n))]

    def get_info(self, reg_sock, authority=None):
        reg = self.pb["pluginregistration"]
        ch = self.channel(reg_sock, authority if authority is not None
                          else (self.authority or reg_sock))
        call = ch.unary_unary(REG_PATH + "GetInfo",
                              request_serializer=reg.InfoRequest.SerializeToString,
                              response_deserializer=reg.PluginInfo.FromString)
        return call(reg.InfoRequest(), timeout=10), ch

    def register(self, reg_sock):
        """GetInfo, version choice, NotifyRegistrationStatus. Returns
        (info, version) where version is "v1" or "v1beta1"."""
        reg = self.pb["pluginregistration"]
        info, ch = self.get_info(reg_sock)
        version, error = None, ""
        if info.type != "DRAPlugin":
            error = "unknown plugin type " + info.type
        else:
            for label in info.supported_versions:
                v = label.split(".")[0]
                if label.endswith(".DRAPlugin") and v in self.versions:
                    version = v
                    break
            if not version:
                error = "no supported DRAPlugin version in %s" % list(
                    info.supported_versions)
        notify = ch.unary_unary(
            REG_PATH + "NotifyRegistrationStatus",
            request_serializer=reg.RegistrationStatus.SerializeToString,
            response_deserializer=reg.RegistrationStatusResponse.FromString)
        notify(reg.RegistrationStatus(plugin_registered=version is not None,
                                      error=error), timeout=10)
        check(version, error)
        return info, version

    def dra(self, endpoint, version):
        return DRAClient(self, endpoint, version)


class DRAClient:
    def __init__(self, kubelet, endpoint, version):
        self.k = kubelet
        self.endpoint = endpoint
        self.ch = kubelet.channel(endpoint)
        self.version = version
        self.m = kubelet.pb["dra_" + version]

    def _call(self, method, req_type, resp_type, req, timeout, retry_for):
        end = time.monotonic() + retry_for
        while True:
            call = self.ch.unary_unary(
                DRA_PATH[self.version] + method,
                request_serializer=req_type.SerializeToString,
                response_deserializer=resp_type.FromString)
            try:
                return call(req, timeout=timeout)
            except grpc.RpcError as e:
                # The kubelet retries while the plugin is away, and
                # re-dials. (A grpcio 1.51 channel that reconnects by
                # itself after the server came back can leave the new
                # connection unread for seconds: a fresh channel does not.)
                if (e.code() not in (grpc.StatusCode.UNAVAILABLE,
                                     grpc.StatusCode.DEADLINE_EXCEEDED) or
                        time.monotonic() > end):
                    raise
                time.sleep(0.05)
                self.ch = self.k.channel(self.endpoint)

    def claims(self, specs):
        return [self.m.Claim(namespace=ns, name=name, uid=uid)
                for ns, name, uid in specs]

    def prepare(self, specs, timeout=20, retry_for=0):
        m = self.m
        return self._call("NodePrepareResources",
                          m.NodePrepareResourcesRequest,
                          m.NodePrepareResourcesResponse,
                          m.NodePrepareResourcesRequest(claims=self.claims(specs)),
                          timeout, retry_for)

    def unprepare(self, specs, timeout=20, retry_for=0):
        m = self.m
        return self._call("NodeUnprepareResources",
                          m.NodeUnprepareResourcesRequest,
                          m.NodeUnprepareResourcesResponse,
                          m.NodeUnprepareResourcesRequest(claims=self.claims(specs)),
                          timeout, retry_for)

    def raw(self, path, data, timeout=10, **kw):
        return self.ch.unary_unary(path)(data, timeout=timeout, **kw)

    def watch(self, hversion):
        h = self.k.pb["health_" + hversion]
        call = self.ch.unary_stream(
            HEALTH_PATH[hversion],
            request_serializer=h.NodeWatchResourcesRequest.SerializeToString,
            response_deserializer=h.NodeWatchResourcesResponse.FromString)
        return call(h.NodeWatchResourcesRequest(), timeout=60)


def claim(name, ns="default"):
    return (ns, name, str(uuid.uuid4()))


def rpc_error(fn, *a, **kw):
    try:
        fn(*a, **kw)
    except grpc.RpcError as e:
        return e
    raise Failure("call succeeded where an error was expected")


def expect_prepared(resp, specs, node=NODE):
    check(sorted(resp.claims.keys()) == sorted(u for _, _, u in specs),
          "response keys %s are not the claim UIDs" % sorted(resp.claims))
    for ns, name, uid in specs:
        r = resp.claims[uid]
        check(r.error == "", "claim %s: unexpected error %r" % (name, r.error))
        check(len(r.devices) >= 1, "claim %s: no devices" % name)
        d = r.devices[0]
        check(d.pool_name == node and d.device_name == "gpu-0",
              "claim %s: device %s/%s" % (name, d.pool_name, d.device_name))
        check(list(d.cdi_device_ids) ==
              ["gpuslice.io/slice=%s-gpu-0" % uid],
              "claim %s: CDI ids %s" % (name, list(d.cdi_device_ids)))


# ---- scenarios ----

def t_registration_answers_driver_endpoint_and_v1_first(pb, root):
    p = Plugin(root).start()
    names = os.listdir(p.registry)
    check(names == [DRIVER + "-reg.sock"],
          "registry holds %s, expected only the socket" % names)
    k = Kubelet(pb)
    check(k.sockets(p.registry) == [p.reg_sock], "watcher sees the socket")
    info, _ = k.get_info(p.reg_sock)
    check(info.type == "DRAPlugin", "type %r" % info.type)
    check(info.name == DRIVER, "name %r" % info.name)
    check(info.endpoint == p.dra_sock, "endpoint %r" % info.endpoint)
    check(is_socket(info.endpoint), "the endpoint is a socket")
    v = list(info.supported_versions)
    check(v[:2] == ["v1.DRAPlugin", "v1beta1.DRAPlugin"],
          "supported_versions %s: v1 must come before v1beta1" % v)
    # A current kubelet takes v1; one that only knows v1beta1 takes that.
    check(k.register(p.reg_sock)[1] == "v1", "new kubelet picks v1")
    check(Kubelet(pb, versions=("v1beta1",)).register(p.reg_sock)[1] ==
          "v1beta1", "old kubelet picks v1beta1")
    wait_for(lambda: p.calls().count("republish") == 2,
             "a republish per accepted registration")
    # A refusal is answered (empty response) and logged, nothing else.
    reg = pb["pluginregistration"]
    _, ch = k.get_info(p.reg_sock)
    ch.unary_unary(REG_PATH + "NotifyRegistrationStatus",
                   request_serializer=reg.RegistrationStatus.SerializeToString,
                   response_deserializer=reg.RegistrationStatusResponse.FromString)(
        reg.RegistrationStatus(plugin_registered=False,
                               error="driver name taken"), timeout=10)
    wait_for(lambda: "driver name taken" in open(p.log).read(),
             "the refusal in the plugin log")
    k.close()
    p.stop()
    # Another driver name: socket name, GetInfo name and endpoint follow.
    q = Plugin(os.path.join(root, "other"), driver="gpu.example.com").start()
    info, _ = Kubelet(pb).get_info(q.reg_sock)
    check(info.name == "gpu.example.com" and info.endpoint == q.dra_sock,
          "renamed driver: %s %s" % (info.name, info.endpoint))
    q.stop()


def t_prepare_and_unprepare_reach_the_driver_in_v1_and_v1beta1(pb, root):
    p = Plugin(root).start()
    for version, kv in (("v1", ("v1", "v1beta1")), ("v1beta1", ("v1beta1",))):
        k = Kubelet(pb, versions=kv)
        info, got = k.register(p.reg_sock)
        check(got == version, "registered %s, wanted %s" % (got, version))
        dra = k.dra(info.endpoint, version)
        plain = [claim("web-%s-%d" % (version, i), ns="team-%d" % i)
                 for i in range(3)]
        resp = dra.prepare(plain)
        expect_prepared(resp, plain)
        for ns, name, uid in plain:
            check("prepare %s/%s %s" % (ns, name, uid) in p.calls(),
                  "prepare of %s reached the driver" % name)
            check(list(resp.claims[uid].devices[0].request_names) == [],
                  "request_names empty (all requests)")
        # Several devices with their request names.
        multi = [claim("multi-" + version)]
        r = dra.prepare(multi).claims[multi[0][2]]
        check([(list(d.request_names), d.device_name) for d in r.devices] ==
              [(["a"], "gpu-0"), (["b"], "gpu-1")],
              "multi-device claim: %s" % r)
        # share_id: sent in v1 only; v1beta1 has no field 5 on the wire.
        share = [claim("share-" + version)]
        raw = dra.raw(DRA_PATH[version] + "NodePrepareResources",
                      dra.m.NodePrepareResourcesRequest(
                          claims=dra.claims(share)).SerializeToString())
        as_v1 = pb["dra_v1"].NodePrepareResourcesResponse.FromString(raw)
        d = as_v1.claims[share[0][2]].devices[0]
        if version == "v1":
            check(d.HasField("share_id") and
                  d.share_id == "share-" + share[0][2],
                  "v1 share_id %r" % d.share_id)
        else:
            check(not d.HasField("share_id"),
                  "v1beta1 response carries a share_id")
        # Plain v1 devices have no share_id at all (presence, not "").
        check(not pb["dra_v1"].NodePrepareResourcesResponse.FromString(
            dra.raw(DRA_PATH[version] + "NodePrepareResources",
                    dra.m.NodePrepareResourcesRequest(
                        claims=dra.claims(plain[:1])).SerializeToString())
        ).claims[plain[0][2]].devices[0].HasField("share_id"),
            "a claim without share carries share_id")
        # Unprepare: every claim has an entry, empty error.
        everything = plain + multi + share
        u = dra.unprepare(everything)
        check(sorted(u.claims.keys()) == sorted(c[2] for c in everything),
              "unprepare keys")
        check(all(v.error == "" for v in u.claims.values()),
              "unprepare errors: %s" % u)
        for ns, name, uid in everything:
            check("unprepare %s/%s %s" % (ns, name, uid) in p.calls(),
                  "unprepare of %s reached the driver" % name)
        # An empty request gets an empty answer.
        check(len(dra.prepare([]).claims) == 0, "empty prepare")
        check(len(dra.unprepare([]).claims) == 0, "empty unprepare")
        k.close()
    p.stop()


def t_per_claim_errors_come_back_to_the_kubelet(pb, root):
    p = Plugin(root).start()
    for version in ("v1", "v1beta1"):
        k = Kubelet(pb, versions=(version,))
        info, _ = k.register(p.reg_sock)
        dra = k.dra(info.endpoint, version)
        good = [claim("ok-1"), claim("ok-2")]
        bad = [claim("fail-1", ns="ns-x")]
        resp = dra.prepare(good + bad)
        expect_prepared(type(resp)(claims={u: resp.claims[u]
                                           for _, _, u in good}), good)
        r = resp.claims[bad[0][2]]
        check("ns-x/fail-1" in r.error and "refused" in r.error,
              "error names the claim: %r" % r.error)
        check(len(r.devices) == 0, "failed claim has devices")
        u = dra.unprepare(good + bad)
        check(u.claims[good[0][2]].error == "", "good unprepare")
        check("ns-x/fail-1" in u.claims[bad[0][2]].error,
              "unprepare error %r" % u.claims[bad[0][2]].error)
        k.close()
    p.stop()


def t_bad_requests_get_a_clear_grpc_error(pb, root):
    p = Plugin(root).start()
    k = Kubelet(pb)
    info, version = k.register(p.reg_sock)
    for v in ("v1", "v1beta1"):
        dra = k.dra(info.endpoint, v)
        # Not a protobuf message at all.
        e = rpc_error(dra.raw, DRA_PATH[v] + "NodePrepareResources",
                      b"\xff\xff\xff\xff")
        check(e.code() == grpc.StatusCode.INVALID_ARGUMENT and
              "NodePrepareResourcesRequest" in e.details(),
              "garbage prepare: %s %r" % (e.code(), e.details()))
        e = rpc_error(dra.raw, DRA_PATH[v] + "NodeUnprepareResources",
                      b"\x0a\x05\x0a")
        check(e.code() == grpc.StatusCode.INVALID_ARGUMENT and
              "NodeUnprepareResourcesRequest" in e.details(),
              "garbage unprepare: %s %r" % (e.code(), e.details()))
        # A claim without its UID or name: a per-claim error, no driver call.
        before = len(p.calls())
        resp = dra.prepare([("default", "no-uid", ""), ("", "no-ns", "u-1")])
        check(set(resp.claims.keys()) == {"", "u-1"}, "keys %s" %
              list(resp.claims.keys()))
        for r in resp.claims.values():
            check("required" in r.error, "missing field error %r" % r.error)
        check(len(p.calls()) == before, "incomplete claims reached the driver")
        # Larger than the 4 MiB message cap.
        big = [("default", "x" * 1000, str(i)) for i in range(5000)]
        e = rpc_error(dra.prepare, big)
        check(e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED,
              "oversized request: %s %r" % (e.code(), e.details()))
    # Several large requests at once on one connection: each gets its full
    # answer or RESOURCE_EXHAUSTED (the connection's buffer cap), never a
    # crash or a hang.
    dra = k.dra(info.endpoint, "v1")
    outcomes = []

    def large(i):
        specs = [("default", "l%d-%d-" % (i, j) + "x" * 900, "u%d-%d" % (i, j))
                 for j in range(3000)]
        try:
            r = dra.prepare(specs, timeout=60)
            outcomes.append(len(r.claims) == len(specs) or
                            "answer with %d claims" % len(r.claims))
        except grpc.RpcError as e:
            outcomes.append(e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED or
                            "%s %s" % (e.code(), e.details()))
    threads = [threading.Thread(target=large, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
    check(outcomes == [True] * 4, "large concurrent requests: %s" % outcomes)
    # Not HTTP/2 at all, and a preface followed by junk: the plugin closes
    # the connection (recv sees the end, no timeout) and goes on.
    import socket
    for junk in (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
                 b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\xff" * 64):
        sk = socket.socket(socket.AF_UNIX)
        sk.settimeout(10)
        sk.connect(info.endpoint)
        sk.sendall(junk)
        try:
            while sk.recv(4096):
                pass
        except socket.timeout:
            raise Failure("junk %r: the connection stayed open" % junk[:16])
        sk.close()
    # Garbage to the registration service.
    _, ch = k.get_info(p.reg_sock)
    e = rpc_error(ch.unary_unary(REG_PATH + "NotifyRegistrationStatus"),
                  b"\x08\x01\x12", timeout=10)
    check(e.code() == grpc.StatusCode.INVALID_ARGUMENT,
          "garbage RegistrationStatus: %s" % e.code())
    # The plugin keeps serving after all that.
    c = [claim("after")]
    expect_prepared(k.dra(info.endpoint, "v1").prepare(c), c)
    k.close()
    p.stop()


def t_unknown_method_is_unimplemented(pb, root):
    p = Plugin(root).start()
    k = Kubelet(pb)
    info, version = k.register(p.reg_sock)
    dra = k.dra(info.endpoint, version)
    for path in (DRA_PATH["v1"] + "NodeFrobnicate",
                 "/v1beta1.DevicePlugin/Allocate",
                 "/k8s.io.kubelet.pkg.apis.dra.v2.DRAPlugin/NodePrepareResources",
                 "/grpc.health.v1.Health/Check"):
        e = rpc_error(dra.raw, path, b"")
        check(e.code() == grpc.StatusCode.UNIMPLEMENTED and path in e.details(),
              "%s: %s %r" % (path, e.code(), e.details()))
    # Same on the registration socket, and both still serve afterwards.
    _, ch = k.get_info(p.reg_sock)
    e = rpc_error(ch.unary_unary(REG_PATH + "Deregister"), b"", timeout=10)
    check(e.code() == grpc.StatusCode.UNIMPLEMENTED, "registration %s" %
          e.code())
    c = [claim("still-there")]
    expect_prepared(dra.prepare(c), c)
    k.get_info(p.reg_sock)
    k.close()
    p.stop()


def t_any_authority_is_accepted(pb, root):
    p = Plugin(root).start()
    for auth in (p.reg_sock, "localhost", "gpuslice.io:1234",
                 "unix:" + p.reg_sock, "x"):
        k = Kubelet(pb, authority=auth)
        info, version = k.register(p.reg_sock)
        c = [claim("auth")]
        expect_prepared(k.dra(info.endpoint, version).prepare(c), c)
        k.close()
    p.stop()


def t_kubelet_restart_redials_and_reregisters(pb, root):
    p = Plugin(root).start()
    c = [claim("kept")]
    k = Kubelet(pb)
    info, version = k.register(p.reg_sock)
    expect_prepared(k.dra(info.endpoint, version).prepare(c), c)
    # 1. The kubelet dies (connections drop) and comes back: it walks the
    #    registry again and re-registers; the plugin answers as before.
    k.close()
    k = Kubelet(pb)
    socks = k.sockets(p.registry)
    check(socks == [p.reg_sock], "registry after restart: %s" % socks)
    info, version = k.register(socks[0])
    r = k.dra(info.endpoint, version).prepare(c)
    expect_prepared(r, c)
    check(p.calls().count("republish") == 2, "republish after re-register")
    k.close()
    # 2. A kubelet restart that wipes the registry: the plugin re-creates
    #    its socket (inotify or the periodic check) and is registered again.
    for wipe in ("socket", "directory"):
        if wipe == "socket":
            os.unlink(p.reg_sock)
        else:
            # Moved away in one step, then removed: the plugin re-creates
            # its socket as soon as it sees it gone, which would race a
            # file-by-file rmtree.
            gone = p.registry + ".wiped"
            os.rename(p.registry, gone)
            shutil.rmtree(gone)
        k = Kubelet(pb)
        socks = wait_for(lambda: k.sockets(p.registry),
                         "the socket back after a %s wipe" % wipe)
        check(socks == [p.reg_sock], "re-created %s" % socks)
        info, version = k.register(socks[0])
        expect_prepared(k.dra(info.endpoint, version).prepare(c), c)
        k.close()
    check(p.calls().count("republish") == 4, "republish per registration")
    # 3. The endpoint socket removed under the plugin: re-created too.
    os.unlink(p.dra_sock)
    wait_for(lambda: is_socket(p.dra_sock), "dra.sock re-created")
    k = Kubelet(pb)
    info, version = k.register(p.reg_sock)
    expect_prepared(k.dra(info.endpoint, version).prepare(c, retry_for=5), c)
    # Connections the kubelet dropped are gone on the plugin side.
    k.close()
    p.stop()


def t_plugin_restart_while_the_kubelet_retries(pb, root):
    p = Plugin(root).start()
    k = Kubelet(pb)
    info, version = k.register(p.reg_sock)
    dra = k.dra(info.endpoint, version)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        c = [claim("retry-%d" % sig)]
        p.stop(sig=sig, expect=None)
        if sig == signal.SIGTERM:
            check(not os.path.exists(p.reg_sock),
                  "SIGTERM left the registration socket")
        results = {}

        def call():
            try:
                results["r"] = dra.prepare(c, timeout=1, retry_for=20)
            except Exception as e:  # reported below
                results["e"] = e
        t = threading.Thread(target=call)
        t.start()
        time.sleep(0.5)  # the kubelet retries against a missing plugin
        check(t.is_alive(), "call returned while the plugin was down: %s"
              % results)
        p.start()  # a stale socket (SIGKILL) is replaced
        t.join(30)
        check(not t.is_alive(), "the retried call never finished")
        check("r" in results, "retried call failed: %s" % results.get("e"))
        expect_prepared(results["r"], c)
        # The new instance registers again.
        info, version = Kubelet(pb).register(p.reg_sock)
        check(info.endpoint == p.dra_sock, "endpoint after restart")
    k.close()
    p.stop()


def t_a_second_instance_takes_over_without_a_fight(pb, root):
    a = Plugin(root).start()
    a_ino = os.stat(a.reg_sock).st_ino
    # B on the same directories (its own state and log) takes the sockets.
    b = Plugin(root)
    b.state = os.path.join(root, "state-b")
    b.log = os.path.join(root, "plugin-b.log")
    os.makedirs(b.state)
    b.start(wait=False)
    wait_for(lambda: is_socket(a.reg_sock) and
             os.stat(a.reg_sock).st_ino != a_ino, "B's registration socket")
    b_ino = os.stat(a.reg_sock).st_ino
    # A steps back instead of re-creating the path every check.
    wait_for(lambda: "stepping back" in open(a.log).read(), "A to step back")
    time.sleep(0.5)  # five of A's checks
    check(os.stat(a.reg_sock).st_ino == b_ino, "A and B fight over the path")
    k = Kubelet(pb)
    info, version = k.register(a.reg_sock)
    c = [claim("to-b")]
    expect_prepared(k.dra(info.endpoint, version).prepare(c), c)
    check(any("to-b" in x for x in Plugin.calls(b)) and
          not any("to-b" in x for x in a.calls()), "the newest serves")
    k.close()
    # B stops: it removes its own sockets; A takes the paths again.
    b.stop()
    # (Not by inode: the file system may give A's new socket B's number.)
    wait_for(lambda: is_socket(a.reg_sock) and open(a.log).read().count(
        "registration socket path=") == 2, "A's socket back")
    k = Kubelet(pb)
    info, version = k.register(a.reg_sock)
    c = [claim("to-a")]
    expect_prepared(k.dra(info.endpoint, version).prepare(c, retry_for=5), c)
    check(any("to-a" in x for x in a.calls()), "A serves again")
    k.close()
    a.stop()
    check(Kubelet.sockets(a.registry) == [], "sockets left")


def t_health_stream_sends_the_full_list_on_every_change(pb, root):
    p = Plugin(root).start()
    k = Kubelet(pb)
    info, version = k.register(p.reg_sock)
    unhealthy = os.path.join(p.state, "unhealthy")
    streams = {hv: k.dra(info.endpoint, version).watch(hv)
               for hv in ("v1", "v1alpha1")}
    for hv, s in streams.items():
        h = pb["health_" + hv]
        first = next(s)
        check([(d.device.pool_name, d.device.device_name, d.health)
               for d in first.devices] ==
              [(NODE, "gpu-0", h.HEALTHY), (NODE, "gpu-1", h.HEALTHY)],
              "%s first list: %s" % (hv, first))
        check(all(d.last_updated_time > 1600000000 for d in first.devices),
              "last_updated_time in Unix seconds")
    with open(unhealthy, "w") as f:
        f.write("Xid 79: fell off the bus\n")
    for hv, s in streams.items():
        h = pb["health_" + hv]
        nxt = next(s)
        check(len(nxt.devices) == 2, "%s: the complete list" % hv)
        d = {x.device.device_name: x for x in nxt.devices}
        check(d["gpu-0"].health == h.HEALTHY and
              d["gpu-1"].health == h.UNHEALTHY and
              d["gpu-1"].message == "Xid 79: fell off the bus",
              "%s after the fault: %s" % (hv, nxt))
    os.unlink(unhealthy)
    for hv, s in streams.items():
        h = pb["health_" + hv]
        nxt = next(s)
        check(all(x.health == h.HEALTHY for x in nxt.devices),
              "%s recovered: %s" % (hv, nxt))
    # The kubelet cancels one stream; the other keeps getting updates.
    streams["v1alpha1"].cancel()
    wait_for(lambda: "health stream closed by the client" in open(p.log).read(),
             "the plugin to see the cancel")
    with open(unhealthy, "w") as f:
        f.write("again\n")
    nxt = next(streams["v1"])
    check(any(x.message == "again" for x in nxt.devices), "v1 after cancel")
    # A new stream gets the current list straight away.
    s = k.dra(info.endpoint, version).watch("v1")
    cur = next(s)
    check(any(x.message == "again" for x in cur.devices), "new stream list")
    # A snapshot that blocks (the driver waiting for gpusliced) stalls
    # neither claim calls nor registration: they are answered while the
    # new stream still waits for its first list.
    hold = os.path.join(p.state, "health_hold")
    open(hold, "w").close()
    slow = k.dra(info.endpoint, version).watch("v1")
    first = {}
    t = threading.Thread(target=lambda: first.update(m=next(slow)))
    t.start()
    wait_for(lambda: "health-hold" in p.calls(), "the snapshot to block")
    c = [claim("while-health-blocks")]
    expect_prepared(k.dra(info.endpoint, version).prepare(c, timeout=10), c)
    k.get_info(p.reg_sock)
    check(t.is_alive() and not first, "the blocked stream got a list early")
    os.unlink(hold)
    t.join(10)
    check(first.get("m") and len(first["m"].devices) == 2,
          "the stream's first list after the snapshot: %s" % first)
    slow.cancel()
    # Stopping the plugin ends open streams with a status.
    p.stop()
    try:
        for _ in s:
            pass
        raise Failure("stream ended without a status")
    except grpc.RpcError as e:
        check(e.code() == grpc.StatusCode.UNAVAILABLE and
              "plugin stopping" in e.details(),
              "stream end status %s %r" % (e.code(), e.details()))
    k.close()


def t_concurrent_calls_from_many_kubelet_threads(pb, root):
    p = Plugin(root).start()
    k = Kubelet(pb)
    info, version = k.register(p.reg_sock)
    errors = []

    def worker(i):
        try:
            own = Kubelet(pb)  # a connection per thread, and a shared one
            for j in range(15):
                v = ("v1", "v1beta1")[(i + j) % 2]
                dra = (own if j % 3 else k).dra(info.endpoint, v)
                c = [claim("c-%d-%d" % (i, j)), claim("d-%d-%d" % (i, j))]
                expect_prepared(dra.prepare(c), c)
                u = dra.unprepare(c)
                check(sorted(u.claims) == sorted(x[2] for x in c),
                      "unprepare keys")
            own.close()
        except Exception as e:
            errors.append("thread %d: %r" % (i, e))
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(100)
    check(not errors, "; ".join(errors[:3]))
    check(len([c for c in p.calls() if c.startswith("prepare ")]) == 240,
          "every claim prepared once")
    # Claims of one request run in parallel: 16 slow claims (300 ms each)
    # take well under the 4.8 s they would one after another.
    slow = [claim("slow-%d" % i) for i in range(16)]
    dra = k.dra(info.endpoint, version)
    t0 = time.monotonic()
    expect_prepared(dra.prepare(slow), slow)
    took = time.monotonic() - t0
    check(took < 2.4, "16 slow claims took %.2f s" % took)
    hwm = p.rss_kib()
    print("plugin peak RSS after the load: %.1f MiB (VmHWM)" % (hwm / 1024))
    if not SANITIZED:
        check(hwm <= 16 * 1024, "plugin RSS %d KiB over 16 MiB" % hwm)
    k.close()
    p.stop()


def t_sigterm_removes_the_registration_socket(pb, root):
    for sig in (signal.SIGTERM, signal.SIGINT):
        p = Plugin(os.path.join(root, str(int(sig)))).start()
        k = Kubelet(pb)
        info, version = k.register(p.reg_sock)
        # A call in flight when the signal comes still gets its answer,
        # and an open health stream ends with a status.
        stream = k.dra(info.endpoint, version).watch("v1")
        next(stream)
        res = {}

        def call():
            try:
                res["r"] = k.dra(info.endpoint, version).prepare(
                    [claim("slow-inflight")])
            except Exception as e:
                res["e"] = e
        t = threading.Thread(target=call)
        t.start()
        wait_for(lambda: any("slow-inflight" in c for c in p.calls()),
                 "the call to reach the driver")
        p.stop(sig=sig)
        t.join(10)
        check(not os.path.exists(p.reg_sock), "registration socket left")
        check(not os.path.exists(p.dra_sock), "dra.sock left")
        check(Kubelet.sockets(p.registry) == [], "the watcher sees nothing")
        check("r" in res, "the call in flight got no answer: %r" %
              res.get("e"))
        r = list(res["r"].claims.values())
        check(len(r) == 1 and r[0].error == "" and len(r[0].devices) == 1,
              "in-flight answer %s" % res["r"])
        try:
            next(stream)
            raise Failure("health stream went on after the stop")
        except grpc.RpcError as e:
            check(e.code() == grpc.StatusCode.UNAVAILABLE,
                  "health stream ended with %s" % e.code())
        k.close()


def t_bad_flags_exit_2(pb, root):
    base = [PLUGIN_BIN, "--registry-dir", os.path.join(root, "r"),
            "--plugin-dir", os.path.join(root, "p"), "--no-publish"]
    env = dict(os.environ)
    env.pop("NODE_NAME", None)
    for args, want, text in (
            (["--frobnicate"], 2, "unknown flag --frobnicate"),
            (["--node-name", "n", "--workers", "many"], 2, "not a count"),
            (["--node-name", "n", "--workers"], 2, "needs a value"),
            (["--node-name", "n", "--log-level", "loud"], 2, "loud"),
            ([], 2, "no node name"),
            (["--node-name", "fail-create"], None, "asked to fail")):
        r = subprocess.run(base + args, env=env, capture_output=True,
                           text=True, timeout=30)
        check((r.returncode == want) if want is not None
              else r.returncode not in (0, 2),
              "%s: exit %d, stderr %r" % (args, r.returncode, r.stderr))
        check(text in r.stderr, "%s: stderr %r lacks %r" %
              (args, r.stderr, text))
    r = subprocess.run([PLUGIN_BIN, "--help"], capture_output=True, text=True)
    check(r.returncode == 0 and "--node-name" in r.stdout, "--help")
    # No sockets were left by the failed starts.
    check(Kubelet.sockets(os.path.join(root, "r")) == [], "stray sockets")


def bench_rss(pb, root):
    """Peak RSS of the plugin (fake driver) after 2,000 claims."""
    p = Plugin(root, extra=["--log-level", "warn"]).start()
    k = Kubelet(pb)
    info, version = k.register(p.reg_sock)
    idle = p.rss_kib("VmRSS")
    dra = k.dra(info.endpoint, version)
    t0 = time.monotonic()
    n = 0
    for i in range(100):
        c = [claim("b-%d-%d" % (i, j)) for j in range(10)]
        dra.prepare(c)
        dra.unprepare(c)
        n += 20
    took = time.monotonic() - t0
    print("plugin RSS idle: %.1f MiB; peak (VmHWM) after %d claim calls: "
          "%.1f MiB (budget 16 MiB)" % (idle / 1024, n,
                                        p.rss_kib() / 1024))
    print("prepare+unprepare of 10 claims: %.2f ms per round trip pair "
          "(fake driver, grpcio client)" % (took * 1000 / 100))
    k.close()
    p.stop()


def client(argv):
    """The `client` command (see the top of the file)."""
    import json
    from google.protobuf.json_format import MessageToDict
    register_only = len(argv) == 3 and argv[2] == "register"
    if not register_only and (
            len(argv) < 6 or (len(argv) - 3) % 3 or argv[2] not in (
                "prepare", "unprepare") or argv[1] not in ("v1", "v1beta1")):
        print("usage: kubelet.py client REGISTRY v1|v1beta1 register | "
              "prepare|unprepare NS NAME UID [NS NAME UID...]",
              file=sys.stderr)
        return 2
    registry, version, op = argv[:3]
    specs = [tuple(argv[i:i + 3]) for i in range(3, len(argv), 3)]
    tmp = tempfile.mkdtemp(prefix="gsk8s.", dir="/tmp")
    try:
        pb = load_messages(tmp)
        k = Kubelet(pb, versions=(version,))
        socks = wait_for(lambda: k.sockets(registry),
                         "a plugin socket in " + registry, timeout=20)
        info, got = k.register(socks[0])
        if register_only:
            resp = info
        else:
            dra = k.dra(info.endpoint, got)
            call = dra.prepare if op == "prepare" else dra.unprepare
            resp = call(specs, timeout=40, retry_for=10)
        print(json.dumps(MessageToDict(
            resp, preserving_proto_field_name=True,
            including_default_value_fields=True), sort_keys=True))
        k.close()
    except (Failure, grpc.RpcError) as e:
        print("kubelet.py client: %s" % (e if isinstance(e, Failure) else
                                          "%s %s" % (e.code(), e.details())),
              file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "client":
        return client(sys.argv[2:])
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    name = sys.argv[1]
    fn = bench_rss if name == "rss" else globals().get("t_" + name)
    if not fn:
        print("unknown scenario " + name)
        return 2
    if not os.access(PLUGIN_BIN, os.X_OK):
        skip(PLUGIN_BIN + " is not built")
    # Short paths: sun_path holds 107 bytes.
    root = tempfile.mkdtemp(prefix="gsk8s.", dir="/tmp")
    try:
        pb = load_messages(tempfile.mkdtemp(dir=root))
        fn(pb, root)
    except Exception as e:  # Failure, or an unexpected grpc error
        if isinstance(e, Failure):
            print("FAIL: %s" % e)
        else:
            import traceback
            traceback.print_exc()
        for log in ("plugin.log", "plugin.stderr"):
            path = os.path.join(root, log)
            if os.path.exists(path):
                print("--- last lines of %s:" % log)
                print("".join(open(path, errors="replace").readlines()[-40:]))
        return 1
    finally:
        for p in Plugin.running:
            if p.proc:
                p.proc.kill()
                p.proc.wait()
    shutil.rmtree(root, ignore_errors=True)
    print("ok: " + name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
