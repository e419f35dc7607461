#!/usr/bin/env python3
"""apiserver_versions.py - what a Kubernetes 1.34, 1.35 or 1.36 API server
does to resource.k8s.io/v1 objects on write, for apiserver_standin.py.
Written from upstream's rules (k8s.io/api resource/v1 types,
pkg/apis/resource/validation, pkg/registry/resource/*/strategy.go,
pkg/features/kube_features.go of each release); our own code, not theirs.

Per version and feature gates:
  gates       default state of the DRA gates in that release (1.34/1.35:
              DRAConsumableCapacity, DRAPartitionableDevices,
              DRADeviceTaints, DRAExtendedResource off; 1.36: on;
              DRAResourceClaimDeviceStatus on since 1.33), overridable
  drop        fields of a disabled gate are dropped on write (as the
              strategies' dropDisabledFields do), silently
  default     taints[].timeAdded is set by the server when left out (kept
              from the stored taint of the same key/value/effect)
  canonical   quantities are rewritten in canonical form ("1024Ki" ->
              "1Mi", "1000" -> "1k", "0.5" -> "500m")
  validate    1.34: a device consumes counter sets of its own slice only;
              at most 32 counters in a slice's sharedCounters, 32 counters
              per device, 1024 device counters per slice. 1.35+: a slice
              has devices or sharedCounters, never both; at most 8 counter
              sets of at most 32 counters; a device consumes at most 2
              counter sets of at most 32 counters. All: at most 128
              devices, 64 when any has taints or consumes counters.
"""
import time
from fractions import Fraction

GATES = ("DRAConsumableCapacity", "DRAPartitionableDevices", "DRADeviceTaints",
         "DRAExtendedResource", "DRAResourceClaimDeviceStatus")
DEFAULTS = {
    "1.34": {"DRAConsumableCapacity": False, "DRAPartitionableDevices": False, "DRADeviceTaints": False,
             "DRAExtendedResource": False, "DRAResourceClaimDeviceStatus": True},
    "1.35": {"DRAConsumableCapacity": False, "DRAPartitionableDevices": False, "DRADeviceTaints": False,
             "DRAExtendedResource": False, "DRAResourceClaimDeviceStatus": True},
    "1.36": {"DRAConsumableCapacity": True, "DRAPartitionableDevices": True, "DRADeviceTaints": True,
             "DRAExtendedResource": True, "DRAResourceClaimDeviceStatus": True},
}


class Version:
    def __init__(self, version="1.36", gates=""):
        if version not in DEFAULTS:
            raise ValueError("version %s is not one of %s" % (version, ", ".join(DEFAULTS)))
        self.version = version
        self.minor = int(version.split(".")[1])
        self.gates = dict(DEFAULTS[version])
        for term in filter(None, (gates or "").split(",")):
            k, _, v = term.partition("=")
            if k not in GATES or v.lower() not in ("true", "false"):
                raise ValueError("feature gate %r: want one of %s =true|false" % (term, ", ".join(GATES)))
            self.gates[k] = v.lower() == "true"

    def on(self, gate):
        return self.gates[gate]

    def version_info(self):
        return {"major": "1", "minor": str(self.minor), "gitVersion": "v%s.0-standin" % self.version,
                "platform": "linux/amd64"}

    # ---- on write ----
    def prepare(self, res, obj, old):
        """Drops disabled fields, defaults and canonicalises, in place."""
        if res == "resourceslices":
            self._slice(obj.get("spec") or {}, (old or {}).get("spec") or {})
        elif res == "resourceclaims":
            self._claim(obj)
        elif res == "deviceclasses" and not self.on("DRAExtendedResource"):
            (obj.get("spec") or {}).pop("extendedResourceName", None)

    def _slice(self, spec, old_spec):
        part = self.on("DRAPartitionableDevices")
        if not part:
            for k in ("sharedCounters", "perDeviceNodeSelection"):
                spec.pop(k, None)
        for cs in spec.get("sharedCounters", []) or []:
            for c in (cs.get("counters") or {}).values():
                canon_in(c, "value")
        olds = {d.get("name"): d for d in old_spec.get("devices", []) or []}
        for d in spec.get("devices", []) or []:
            if not part:
                for k in ("consumesCounters", "nodeName", "nodeSelector", "allNodes"):
                    d.pop(k, None)
            if not self.on("DRAConsumableCapacity"):
                d.pop("allowMultipleAllocations", None)
                for c in (d.get("capacity") or {}).values():
                    c.pop("requestPolicy", None)
            if not self.on("DRADeviceTaints"):
                d.pop("taints", None)
            for c in (d.get("capacity") or {}).values():
                canon_in(c, "value")
                rp = c.get("requestPolicy") or {}
                canon_in(rp, "default")
                vr = rp.get("validRange") or {}
                for k in ("min", "max", "step"):
                    canon_in(vr, k)
                rp["validValues"] = [canonical(v) for v in rp["validValues"]] if "validValues" in rp else None
                if rp.get("validValues") is None:
                    rp.pop("validValues", None)
            for cc in d.get("consumesCounters", []) or []:
                for c in (cc.get("counters") or {}).values():
                    canon_in(c, "value")
            old_taints = (olds.get(d.get("name")) or {}).get("taints", []) or []
            for t in d.get("taints", []) or []:
                if t.get("timeAdded"):
                    continue
                same = [o for o in old_taints if all(o.get(k) == t.get(k) for k in ("key", "value", "effect"))]
                t["timeAdded"] = same[0]["timeAdded"] if same and same[0].get("timeAdded") else \
                    time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())

    def _claim(self, obj):
        if self.on("DRAConsumableCapacity"):
            return
        for r in ((obj.get("spec") or {}).get("devices") or {}).get("requests", []) or []:
            (r.get("exactly") or {}).pop("capacity", None)
            for sub in r.get("firstAvailable", []) or []:
                sub.pop("capacity", None)
        alloc = ((obj.get("status") or {}).get("allocation") or {}).get("devices") or {}
        for r in alloc.get("results", []) or []:
            r.pop("consumedCapacity", None)
            r.pop("shareID", None)

    # ---- validation ----
    def problems(self, res, obj):
        if res != "resourceslices":
            return []
        spec = obj.get("spec") or {}
        devs = spec.get("devices", []) or []
        sets = spec.get("sharedCounters", []) or []
        out = []
        special = any(d.get("taints") or d.get("consumesCounters") for d in devs)
        if len(devs) > (64 if special else 128):
            out.append("spec.devices: Too many: %d: must have at most %d items" % (len(devs), 64 if special else 128))
        if self.minor <= 34:
            total = sum(len(cs.get("counters") or {}) for cs in sets)
            if total > 32:
                out.append("spec.sharedCounters: Invalid value: %d: the total number of shared counters must not exceed 32" % total)
            names = {cs.get("name"): cs.get("counters") or {} for cs in sets}
            dev_total = 0
            for i, d in enumerate(devs):
                n = 0
                for j, cc in enumerate(d.get("consumesCounters", []) or []):
                    n += len(cc.get("counters") or {})
                    if cc.get("counterSet") not in names:
                        out.append("spec.devices[%d].consumesCounters[%d].counterSet: Required value: must reference a counterSet defined in the ResourceSlice sharedCounters" % (i, j))
                        continue
                    for k in cc.get("counters") or {}:
                        if k not in names[cc["counterSet"]]:
                            out.append("spec.devices[%d].consumesCounters[%d].counters: Required value: must reference a counter defined in the ResourceSlice sharedCounters" % (i, j))
                if n > 32:
                    out.append("spec.devices[%d].consumesCounters: Invalid value: %d: the total number of counters must not exceed 32" % (i, n))
                dev_total += n
            if dev_total > 1024:
                out.append("spec.devices: Invalid value: %d: the total number of counters in devices must not exceed 1024" % dev_total)
        else:
            if devs and sets:
                out.append("spec: Invalid value: exactly one of `devices` or `sharedCounters` is required")
            if len(sets) > 8:
                out.append("spec.sharedCounters: Too many: %d: must have at most 8 items" % len(sets))
            for i, cs in enumerate(sets):
                if len(cs.get("counters") or {}) > 32:
                    out.append("spec.sharedCounters[%d].counters: Too many: must have at most 32 items" % i)
            for i, d in enumerate(devs):
                ccs = d.get("consumesCounters", []) or []
                if len(ccs) > 2:
                    out.append("spec.devices[%d].consumesCounters: Too many: %d: must have at most 2 items" % (i, len(ccs)))
                for j, cc in enumerate(ccs):
                    if len(cc.get("counters") or {}) > 32:
                        out.append("spec.devices[%d].consumesCounters[%d].counters: Too many: must have at most 32 items" % (i, j))
        return out


# ---- quantities ----
BIN = [("Ei", 2 ** 60), ("Pi", 2 ** 50), ("Ti", 2 ** 40), ("Gi", 2 ** 30), ("Mi", 2 ** 20), ("Ki", 2 ** 10)]
DEC = {"n": Fraction(1, 10 ** 9), "u": Fraction(1, 10 ** 6), "m": Fraction(1, 1000), "": 1, "k": 10 ** 3,
       "M": 10 ** 6, "G": 10 ** 9, "T": 10 ** 12, "P": 10 ** 15, "E": 10 ** 18}


def parse(text):
    """(value as Fraction, binary?) or None."""
    t = str(text).strip()
    for suf, mul in BIN:
        if t.endswith(suf):
            try:
                return Fraction(t[:-2]) * mul, True
            except ValueError:
                return None
    for e in ("e", "E"):
        if e in t:
            m, _, x = t.partition(e)
            try:
                return Fraction(m) * Fraction(10) ** int(x), False
            except ValueError:
                return None
    suf = t[-1:] if t[-1:] in DEC and t[-1:] != "" and not t[-1:].isdigit() else ""
    try:
        return Fraction(t[:len(t) - len(suf)]) * DEC[suf], False
    except (ValueError, ZeroDivisionError):
        return None


def canonical(text):
    """The form the API server writes a quantity back in."""
    p = parse(text)
    if p is None:
        return text
    v, binary = p
    if binary and v.denominator == 1 and v >= 1024:
        for suf, mul in BIN:
            if v % mul == 0:
                return "%d%s" % (v // mul, suf)
    if v.denominator == 1:
        n = int(v)
        for suf, e in (("E", 18), ("P", 15), ("T", 12), ("G", 9), ("M", 6), ("k", 3)):
            if n != 0 and n % 10 ** e == 0:
                return "%d%s" % (n // 10 ** e, suf)
        return str(n)
    for suf, den in (("m", 1000), ("u", 10 ** 6), ("n", 10 ** 9)):
        if (v * den).denominator == 1:
            return "%d%s" % (v * den, suf)
    return text


def canon_in(obj, key):
    if isinstance(obj, dict) and isinstance(obj.get(key), str):
        obj[key] = canonical(obj[key])
