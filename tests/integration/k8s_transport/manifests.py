#!/usr/bin/env python3
"""manifests.py - checks deploy/kubernetes/ without a cluster.

Every YAML file parses (python3-yaml); every object has apiVersion, kind
and a name; the pieces agree with each other and with the plugin:
  - kustomization.yaml lists every manifest of the driver and they exist;
  - the DaemonSet's ServiceAccount exists and is the subject bound to the
    ClusterRole, and is the user the admission policy restricts;
  - RBAC grants only named verbs on named resources (no wildcards) and
    covers what the plugin does (get claims; list/watch/create/update/
    delete slices);
  - the DaemonSet mounts the kubelet's plugins_registry and the plugin dir
    the plugin uses by default, and passes NODE_NAME from spec.nodeName;
  - DeviceClasses gpu.gpuslice.io and mig.gpuslice.io select driver
    gpuslice.io, one of them maps nvidia.com/gpu;
  - in the examples, every claim names an existing DeviceClass, config
    `requests` name existing (sub)requests, capacity requests are memory /
    compute quantities, SliceConfig parameters use only the documented
    fields and values, every pod's container claims exist.
If tests/integration/k8s_api/resource_v1_schema.json (the k8s API
client's resource.k8s.io/v1 schema) exists and python3-jsonschema is
installed, the DeviceClasses, claims and templates (their claim spec) are
validated against it as well.
Exit 0 ok, 1 failure, 77 when python3-yaml is missing.
"""
import glob
import json
import os
import re
import sys

try:
    import yaml
except ImportError:
    ALT = "/usr/bin/python3"
    if (not os.environ.get("GS_MANIFESTS_REEXEC") and os.access(ALT, os.X_OK)
            and os.path.realpath(sys.executable) != os.path.realpath(ALT)):
        os.environ["GS_MANIFESTS_REEXEC"] = "1"
        os.execv(ALT, [ALT] + sys.argv)
    print("SKIP: python3-yaml is not installed")
    sys.exit(77)

DRIVER = "gpuslice.io"
SA = ("gpuslice-system", "gpuslice-kubelet-plugin")
SLICECONFIG = {
    "apiVersion": {"gpuslice.io/v1alpha1"},
    "kind": {"SliceConfig"},
    "priority": {"high", "normal", "low"},
    "weight": None,  # 1..1000
    "computeMode": {"strict", "share"},
    "isolation": {"none", "memory", "hard", "exclusive"},
    "mode": {"timeslice", "mps"},
}
QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|k|M|G|T|m)?$")
errors = []


def fail(where, what):
    errors.append("%s: %s" % (where, what))


def load(root):
    objs = []
    for path in sorted(glob.glob(os.path.join(root, "**", "*.yaml"),
                                 recursive=True)):
        rel = os.path.relpath(path, root)
        # scheduler/: kube-scheduler's own --config files, not cluster
        # objects (checked against kube-scheduler's types by the
        # extender's scheduler_config test).
        if rel.startswith("scheduler/"):
            continue
        try:
            with open(path) as f:
                docs = [d for d in yaml.safe_load_all(f) if d is not None]
        except yaml.YAMLError as e:
            fail(rel, "does not parse: %s" % e)
            continue
        for i, d in enumerate(docs):
            where = "%s[%d]" % (rel, i)
            if not isinstance(d, dict):
                fail(where, "not a mapping")
                continue
            for k in ("apiVersion", "kind"):
                if not d.get(k):
                    fail(where, "no " + k)
            if d.get("kind") != "Kustomization" and \
                    not (d.get("metadata") or {}).get("name"):
                fail(where, "no metadata.name")
            objs.append((rel, where, d))
    return objs


def by_kind(objs, kind):
    return [(w, d) for _, w, d in objs if d.get("kind") == kind]


def check_kustomization(root, objs):
    k = [d for _, _, d in objs if d.get("kind") == "Kustomization"]
    if len(k) != 1:
        fail("kustomization.yaml", "expected one Kustomization")
        return
    listed = set(k[0].get("resources", []))
    driver_files = {rel for rel, _, d in objs
                    if not rel.startswith("examples/") and
                    d.get("kind") != "Kustomization"}
    for f in sorted(driver_files - listed):
        fail("kustomization.yaml", "does not list " + f)
    for f in sorted(listed):
        if not os.path.exists(os.path.join(root, f)):
            fail("kustomization.yaml", "lists missing " + f)


def check_rbac(objs):
    sas = {(d["metadata"].get("namespace"), d["metadata"]["name"])
           for _, d in by_kind(objs, "ServiceAccount")}
    if SA not in sas:
        fail("rbac", "no ServiceAccount %s/%s" % SA)
    roles = {d["metadata"]["name"]: d for _, d in by_kind(objs, "ClusterRole")}
    for w, b in by_kind(objs, "ClusterRoleBinding"):
        ref = b.get("roleRef", {}).get("name")
        if ref not in roles:
            fail(w, "binds missing ClusterRole %s" % ref)
        subj = {(s.get("namespace"), s.get("name"))
                for s in b.get("subjects", [])}
        if SA not in subj:
            fail(w, "does not bind the plugin's ServiceAccount")
    granted = set()
    for name, r in roles.items():
        for rule in r.get("rules", []):
            for field in ("apiGroups", "resources", "verbs"):
                if "*" in rule.get(field, []):
                    fail("ClusterRole " + name, "wildcard in " + field)
            for g in rule.get("apiGroups", []):
                for res in rule.get("resources", []):
                    for v in rule.get("verbs", []):
                        granted.add((g, res, v))
    need = [("resource.k8s.io", "resourceclaims", "get")] + [
        ("resource.k8s.io", "resourceslices", v)
        for v in ("list", "watch", "create", "update", "delete")]
    for n in need:
        if n not in granted:
            fail("rbac", "the plugin needs %s" % (n,))
    for n in granted:
        if n[1] in ("secrets", "pods", "configmaps"):
            fail("rbac", "grants %s, which the plugin does not use" % (n,))


def check_policy(objs):
    pols = {d["metadata"]["name"]: d
            for _, d in by_kind(objs, "ValidatingAdmissionPolicy")}
    if not pols:
        fail("admission", "no ValidatingAdmissionPolicy")
    for w, b in by_kind(objs, "ValidatingAdmissionPolicyBinding"):
        if b["spec"].get("policyName") not in pols:
            fail(w, "binds a missing policy")
        if "Deny" not in b["spec"].get("validationActions", []):
            fail(w, "does not deny")
    for name, p in pols.items():
        text = json.dumps(p["spec"])
        user = "system:serviceaccount:%s:%s" % SA
        if user not in text:
            fail(name, "does not name the plugin's user " + user)
        for needle in ("authentication.kubernetes.io/node-name", "nodeName",
                       "resourceslices", DRIVER):
            if needle not in text:
                fail(name, "does not mention " + needle)


def check_daemonset(objs):
    ds = by_kind(objs, "DaemonSet")
    if len(ds) != 1:
        fail("daemonset", "expected one DaemonSet")
        return
    w, d = ds[0]
    spec = d["spec"]["template"]["spec"]
    if (d["metadata"].get("namespace"), spec.get("serviceAccountName")) != SA:
        fail(w, "does not run as %s/%s" % SA)
    names = {c["name"]: c for c in spec.get("containers", [])}
    for n in ("gpusliced", "kubelet-plugin"):
        if n not in names:
            fail(w, "no container " + n)
    if "kubelet-plugin" not in names:
        return
    plugin = names["kubelet-plugin"]
    mounts = {m["mountPath"] for m in plugin.get("volumeMounts", [])}
    for path in ("/var/lib/kubelet/plugins_registry",
                 "/var/lib/kubelet/plugins/" + DRIVER, "/var/run/cdi",
                 "/run/gpuslice"):
        if path not in mounts:
            fail(w, "kubelet-plugin does not mount " + path)
    env = {e["name"]: e for e in plugin.get("env", [])}
    if env.get("NODE_NAME", {}).get("valueFrom", {}).get(
            "fieldRef", {}).get("fieldPath") != "spec.nodeName":
        fail(w, "NODE_NAME must come from spec.nodeName")
    # Pods are different tenants: the watchdog kills (issue #25 item 8),
    # and every claim's CDI spec names the libc-check hook at the host
    # path the init container installs it to (issue #28 item 5).
    daemon_cmd = names.get("gpusliced", {}).get("command", [])
    if "--watchdog-action" not in daemon_cmd or daemon_cmd[
            daemon_cmd.index("--watchdog-action") + 1] != "kill":
        fail(w, "gpusliced must run with --watchdog-action kill")
    plugin_cmd = plugin.get("command", [])
    if "--cdi-hook" not in plugin_cmd:
        fail(w, "kubelet-plugin has no --cdi-hook")
    else:
        hook = plugin_cmd[plugin_cmd.index("--cdi-hook") + 1]
        installs = " ".join(" ".join(c.get("command", []))
                            for c in spec.get("initContainers", []))
        if "/host-opt-gpuslice/" + hook[len("/opt/gpuslice/"):] not in installs \
                or not hook.startswith("/opt/gpuslice/"):
            fail(w, "--cdi-hook %s is not where an init container installs it" % hook)
    vols = {v["name"] for v in spec.get("volumes", [])}
    for c in list(names.values()) + spec.get("initContainers", []):
        for m in c.get("volumeMounts", []):
            if m["name"] not in vols:
                fail(w, "%s mounts missing volume %s" % (c["name"], m["name"]))


def check_classes(objs):
    classes = {d["metadata"]["name"]: d for _, d in by_kind(objs, "DeviceClass")}
    for n in ("gpu.gpuslice.io", "mig.gpuslice.io"):
        if n not in classes:
            fail("deviceclasses", "no DeviceClass " + n)
    mapped = [n for n, c in classes.items()
              if c["spec"].get("extendedResourceName") == "nvidia.com/gpu"]
    if len(mapped) != 1:
        fail("deviceclasses", "nvidia.com/gpu must map to exactly one class")
    for n, c in classes.items():
        exprs = [s["cel"]["expression"] for s in c["spec"].get("selectors", [])]
        if not any('device.driver == "%s"' % DRIVER in e for e in exprs):
            fail(n, "no selector on driver " + DRIVER)
    return classes


def check_sliceconfig(where, params):
    for k, v in params.items():
        if k not in SLICECONFIG:
            fail(where, "SliceConfig has no field %s" % k)
        elif SLICECONFIG[k] is None:
            if not isinstance(v, int) or not 1 <= v <= 1000:
                fail(where, "%s=%r out of 1..1000" % (k, v))
        elif v not in SLICECONFIG[k]:
            fail(where, "%s=%r not one of %s" % (k, v, sorted(SLICECONFIG[k])))
    for k in ("apiVersion", "kind"):
        if k not in params:
            fail(where, "SliceConfig without " + k)


def check_claim_spec(where, spec, classes):
    devs = spec.get("devices", {})
    names = set()
    for r in devs.get("requests", []):
        alts = []
        if "exactly" in r:
            alts.append((r["name"], r["exactly"]))
        for sub in r.get("firstAvailable", []):
            alts.append((r["name"] + "/" + sub["name"], sub))
            names.add(r["name"] + "/" + sub["name"])
        if not alts:
            fail(where, "request %s has neither exactly nor firstAvailable"
                 % r.get("name"))
        names.add(r["name"])
        for n, a in alts:
            if a.get("deviceClassName") not in classes:
                fail(where, "%s: unknown DeviceClass %s" %
                     (n, a.get("deviceClassName")))
            for key, q in a.get("capacity", {}).get("requests", {}).items():
                if key not in ("memory", "compute"):
                    fail(where, "%s: capacity %s is not published" % (n, key))
                if not QUANTITY.match(str(q)):
                    fail(where, "%s: %s=%r is not a quantity" % (n, key, q))
            if "compute" in a.get("capacity", {}).get("requests", {}):
                if not 0 < float(a["capacity"]["requests"]["compute"]) <= 100:
                    fail(where, "%s: compute is a percentage" % n)
    classes_of = {}
    for r in devs.get("requests", []):
        if "exactly" in r:
            classes_of[r["name"]] = {r["exactly"].get("deviceClassName")}
        subs = {r["name"] + "/" + s["name"]: {s.get("deviceClassName")}
                for s in r.get("firstAvailable", [])}
        classes_of.update(subs)
        if subs:
            classes_of[r["name"]] = set().union(*subs.values())
    for i, c in enumerate(devs.get("config", [])):
        for r in c.get("requests", []):
            if r not in names:
                fail(where, "config[%d] names unknown request %s" % (i, r))
        op = c.get("opaque", {})
        if op.get("driver") != DRIVER:
            continue
        w = "%s config[%d]" % (where, i)
        params = op.get("parameters", {})
        check_sliceconfig(w, params)
        # What the driver (prepare.c) refuses although the schema has it.
        if params.get("computeMode") == "share":
            fail(w, "computeMode: share is refused by the driver (not "
                 "supported through gpusliced yet)")
        targets = set().union(*[classes_of.get(r, set()) for r in
                                c.get("requests") or classes_of])
        if params.get("isolation") == "hard" and "gpu.gpuslice.io" in targets:
            fail(w, "isolation: hard is MIG-only; it applies to a "
                 "gpu.gpuslice.io request here")


def check_examples(objs, classes):
    claims, templates = {}, {}
    for rel, w, d in objs:
        if not rel.startswith("examples/"):
            continue
        k = d.get("kind")
        ns = d["metadata"].get("namespace")
        if k == "ResourceClaim":
            claims[(ns, d["metadata"]["name"])] = d
            check_claim_spec(w, d["spec"], classes)
        elif k == "ResourceClaimTemplate":
            templates[(ns, d["metadata"]["name"])] = d
            check_claim_spec(w, d["spec"]["spec"], classes)
    if not claims and not templates:
        fail("examples", "no claims")
    for rel, w, d in objs:
        if not rel.startswith("examples/"):
            continue
        pod = None
        if d.get("kind") == "Pod":
            pod = d["spec"]
        elif d.get("kind") in ("Deployment", "Job", "StatefulSet"):
            pod = d["spec"]["template"]["spec"]
        if pod is None:
            continue
        ns = d["metadata"].get("namespace")
        declared = set()
        for rc in pod.get("resourceClaims", []):
            declared.add(rc["name"])
            if "resourceClaimName" in rc and \
                    (ns, rc["resourceClaimName"]) not in claims:
                fail(w, "unknown ResourceClaim " + rc["resourceClaimName"])
            if "resourceClaimTemplateName" in rc and \
                    (ns, rc["resourceClaimTemplateName"]) not in templates:
                fail(w, "unknown template " + rc["resourceClaimTemplateName"])
        for c in pod.get("containers", []):
            for cl in c.get("resources", {}).get("claims", []):
                if cl["name"] not in declared:
                    fail(w, "container %s uses undeclared claim %s" %
                         (c["name"], cl["name"]))


def check_schema(objs, src):
    path = os.path.join(src, "tests", "integration", "k8s_api",
                        "resource_v1_schema.json")
    if not os.path.exists(path):
        print("note: no resource.k8s.io/v1 schema at %s yet; schema "
              "validation skipped" % os.path.relpath(path, src))
        return
    try:
        import jsonschema
    except ImportError:
        print("note: python3-jsonschema missing; schema validation skipped")
        return
    with open(path) as f:
        schema = json.load(f)
    defs = schema.get("definitions", {})
    n = 0
    for _, w, d in objs:
        if d.get("apiVersion") != "resource.k8s.io/v1":
            continue
        kind, obj = d.get("kind"), d
        if kind == "ResourceClaimTemplate" and "ResourceClaimTemplate" \
                not in defs:
            # Its spec.spec is a claim's spec: check it as a claim.
            kind = "ResourceClaim"
            obj = {"apiVersion": d["apiVersion"], "kind": kind,
                   "metadata": {"name": d["metadata"]["name"],
                                "namespace": d["metadata"].get("namespace")},
                   "spec": d["spec"]["spec"]}
        if kind not in defs:
            fail(w, "the schema has no definition of " + kind)
            continue
        v = jsonschema.Draft7Validator({"$ref": "#/definitions/" + kind,
                                        "definitions": defs})
        for e in v.iter_errors(obj):
            fail(w, "schema: %s at %s" % (e.message,
                                          "/".join(map(str, e.absolute_path))))
        n += 1
    print("checked %d resource.k8s.io/v1 objects against %s" %
          (n, os.path.basename(path)))


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "deploy/kubernetes"
    if not os.path.isdir(root):
        print("FAIL: no directory " + root)
        return 1
    objs = load(root)
    check_kustomization(root, objs)
    check_rbac(objs)
    check_policy(objs)
    check_daemonset(objs)
    classes = check_classes(objs)
    check_examples(objs, classes)
    check_schema(objs, os.path.abspath(os.path.join(root, "..", "..")))
    if errors:
        for e in errors:
            print("FAIL: " + e)
        return 1
    print("ok: %d objects in %s" % (len(objs), root))
    return 0


if __name__ == "__main__":
    sys.exit(main())
