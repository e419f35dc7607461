#!/usr/bin/env python3
"""scheduler_config.py FILE - checks a KubeSchedulerConfiguration for the
extender against kube-scheduler's own config types and validation:

  - every key is a field of kubescheduler.config.k8s.io/v1 (the json names
    of k8s.io/kube-scheduler/config/v1 KubeSchedulerConfiguration,
    KubeSchedulerProfile, Extender, ExtenderManagedResource,
    ExtenderTLSConfig and component-base's LeaderElectionConfiguration,
    ClientConnectionConfiguration, DebuggingConfiguration, as read at
    kubernetes/kube-scheduler e87dbddd, July 2026), with its type;
  - the rules of pkg/scheduler/apis/config/validation for extenders: a
    prioritizeVerb needs a positive weight, at most one bindVerb, managed
    resources are extended-resource names, listed once;
  - and what gpuslice needs: an extender whose verbs are the ones
    gs-k8s-extender answers, managing gpuslice.io/gpu-milli with
    ignoredByScheduler (else the scheduler's fit check rejects the pods).
Exit 1 with one line per problem.
"""
import re
import sys

import yaml

DURATION = re.compile(r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$")

# field -> type: str, int, bool, "duration", a dict (an object), or
# ("list", dict) for a list of objects; ("list", str) for a list of strings.
TLS = {"insecure": bool, "serverName": str, "certFile": str, "keyFile": str,
       "caFile": str, "certData": str, "keyData": str, "caData": str}
MANAGED = {"name": str, "ignoredByScheduler": bool}
EXTENDER = {"urlPrefix": str, "filterVerb": str, "preemptVerb": str,
            "prioritizeVerb": str, "weight": int, "bindVerb": str,
            "enableHTTPS": bool, "tlsConfig": TLS, "httpTimeout": "duration",
            "nodeCacheCapable": bool, "managedResources": ("list", MANAGED),
            "ignorable": bool}
PLUGIN = {"name": str, "weight": int}
PLUGINSET = {"enabled": ("list", PLUGIN), "disabled": ("list", PLUGIN)}
PLUGINS = {k: PLUGINSET for k in (
    "preEnqueue", "queueSort", "preFilter", "filter", "postFilter",
    "preScore", "score", "reserve", "permit", "preBind", "bind", "postBind",
    "multiPoint", "placementGenerate", "placementScore",
    "podGroupPostFilter")}
PROFILE = {"schedulerName": str, "percentageOfNodesToScore": int,
           "plugins": PLUGINS, "pluginConfig": ("list", {"name": str, "args": "any"})}
LEADER = {"leaderElect": bool, "leaseDuration": "duration",
          "renewDeadline": "duration", "retryPeriod": "duration",
          "resourceLock": str, "resourceName": str, "resourceNamespace": str}
CLIENT = {"kubeconfig": str, "acceptContentTypes": str, "contentType": str,
          "qps": "number", "burst": int}
CONFIG = {"apiVersion": str, "kind": str, "parallelism": int,
          "leaderElection": LEADER, "clientConnection": CLIENT,
          "enableProfiling": bool, "enableContentionProfiling": bool,
          "percentageOfNodesToScore": int, "podInitialBackoffSeconds": int,
          "podMaxBackoffSeconds": int, "profiles": ("list", PROFILE),
          "extenders": ("list", EXTENDER), "delayCacheUntilActive": bool}

# The verbs gs-k8s-extender answers (extender.c).
VERBS = {"filter", "prioritize"}
SHARE = "gpuslice.io/gpu-milli"

problems = []


def check(v, t, path):
    if t == "any":
        return
    if isinstance(t, tuple):
        if not isinstance(v, list):
            problems.append("%s: want a list" % path)
            return
        for i, e in enumerate(v):
            check(e, t[1], "%s[%d]" % (path, i))
        return
    if isinstance(t, dict):
        if not isinstance(v, dict):
            problems.append("%s: want an object" % path)
            return
        for k, e in v.items():
            if k not in t:
                problems.append("%s: unknown field %r (not in kubescheduler.config.k8s.io/v1)"
                                % (path, k))
            else:
                check(e, t[k], "%s.%s" % (path, k) if path else k)
        return
    if t == "duration":
        if not isinstance(v, str) or not DURATION.match(v):
            problems.append("%s: %r is not a duration (5s, 1m30s)" % (path, v))
    elif t == "number":
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            problems.append("%s: %r is not a number" % (path, v))
    elif t is int:
        if not isinstance(v, int) or isinstance(v, bool):
            problems.append("%s: %r is not an integer" % (path, v))
    elif not isinstance(v, t):
        problems.append("%s: %r is not a %s" % (path, v, t.__name__))


def extended_resource_name(n):
    # validation's IsExtendedResourceName: a qualified name with a
    # domain prefix outside kubernetes.io, not requests.*
    if "/" not in n or n.startswith("requests."):
        return False
    prefix, name = n.split("/", 1)
    if prefix == "kubernetes.io" or prefix.endswith(".kubernetes.io"):
        return False
    return bool(re.match(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", prefix)) and \
        bool(re.match(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$", name)) and len(name) <= 63


docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d is not None]
if len(docs) != 1:
    problems.append("want one document, got %d" % len(docs))
cfg = docs[0] if docs else {}
check(cfg, CONFIG, "")
if cfg.get("apiVersion") != "kubescheduler.config.k8s.io/v1" or \
        cfg.get("kind") != "KubeSchedulerConfiguration":
    problems.append("not a kubescheduler.config.k8s.io/v1 KubeSchedulerConfiguration")
exts = cfg.get("extenders") or []
binders = 0
ours = []
for i, e in enumerate(exts):
    p = "extenders[%d]" % i
    if not e.get("urlPrefix"):
        problems.append("%s.urlPrefix is required" % p)
    if e.get("prioritizeVerb") and e.get("weight", 1) <= 0:
        problems.append("%s.weight must be positive with a prioritizeVerb" % p)
    binders += 1 if e.get("bindVerb") else 0
    seen = set()
    for j, m in enumerate(e.get("managedResources") or []):
        n = m.get("name", "")
        if not extended_resource_name(n):
            problems.append("%s.managedResources[%d].name %r is not an extended resource name" % (p, j, n))
        if n in seen:
            problems.append("%s.managedResources[%d].name %r is listed twice" % (p, j, n))
        seen.add(n)
    if any(m.get("name") == SHARE for m in e.get("managedResources") or []):
        ours.append((p, e))
if binders > 1:
    problems.append("only one extender can implement bind, found %d" % binders)
if len(ours) != 1:
    problems.append("want one extender managing %s, found %d" % (SHARE, len(ours)))
for p, e in ours:
    m = [m for m in e["managedResources"] if m["name"] == SHARE][0]
    if m.get("ignoredByScheduler") is not True:
        problems.append("%s: %s needs ignoredByScheduler: true (no node advertises it)" % (p, SHARE))
    for verb in ("filterVerb", "prioritizeVerb"):
        if e.get(verb) and e[verb] not in VERBS:
            problems.append("%s.%s %r: gs-k8s-extender answers %s" % (p, verb, e[verb], sorted(VERBS)))
    if not e.get("filterVerb"):
        problems.append("%s: no filterVerb: nodes without room would not be filtered" % p)
    if e.get("bindVerb") or e.get("preemptVerb"):
        problems.append("%s: gs-k8s-extender answers no bind or preempt verb" % p)
    if not re.match(r"^https?://[^/]+(/.*)?$", e.get("urlPrefix", "")):
        problems.append("%s.urlPrefix %r is not an http(s) URL" % (p, e.get("urlPrefix")))

for m in problems:
    print("FAIL:", m)
sys.exit(1 if problems else 0)
