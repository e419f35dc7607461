#!/usr/bin/env bash
# The container image, built without a container daemon
# (deploy/image/build-image.sh: mmdebstrap + the project's .debs, written
# as an OCI layout; cached per input in ~/.cache/gpuslice/image-<hash>), is
# a valid OCI layout (index -> manifest -> config and one layer, every
# blob matching its digest) and its entrypoints run from the unpacked root
# filesystem (chroot, the host's /proc and /dev) on the simulated node:
# the DaemonSet's init container command (install the shim for the host),
# gpusliced answering the readiness probe's `gpuslice list`, a workload
# capped under `gpuslice run`, the kubelet plugin's --help. Nothing keeps
# running afterwards. Needs root and the Debian archive; else SKIP.
. "$(dirname "$0")/lib.sh" "$1"

[ "$(id -u)" = 0 ] || skip "mmdebstrap's root mode and chroot need root"
command -v mmdebstrap >/dev/null || skip "mmdebstrap is not installed (scripts/deps.sh)"
unshare -m true 2>/dev/null || skip "no private mount namespace here"
rc=0
IMG=$(bash "$SRC/deploy/image/build-image.sh" 2>"$WORK/image.log" | tail -1) || rc=$?
[ "$rc" = 77 ] && skip "cannot build the image here: $(tail -1 "$WORK/image.log")"
[ "$rc" = 0 ] || fail "build-image.sh failed: $(tail -5 "$WORK/image.log")"

ROOT=$WORK/rootfs
mkdir -p "$ROOT"
python3 - "$IMG" "$ROOT" >"$WORK/layout.txt" <<'PY' || fail "not a valid OCI layout: $(cat "$WORK/layout.txt")"
import hashlib, json, os, subprocess, sys
img, root = sys.argv[1:]
def blob(d):
    alg, hexd = d["digest"].split(":")
    data = open(os.path.join(img, "blobs", alg, hexd), "rb").read()
    assert hashlib.sha256(data).hexdigest() == hexd and len(data) == d["size"], d
    return data
assert json.load(open(os.path.join(img, "oci-layout")))["imageLayoutVersion"] == "1.0.0"
idx = json.load(open(os.path.join(img, "index.json")))
[m] = idx["manifests"]
tag = m["annotations"]["org.opencontainers.image.ref.name"]
man = json.loads(blob(m))
cfg = json.loads(blob(man["config"]))
assert cfg["os"] == "linux" and len(man["layers"]) == 1 == len(cfg["rootfs"]["diff_ids"])
layer = blob(man["layers"][0])
open(os.path.join(root, "..", "layer.tar.gz"), "wb").write(layer)
env = [e for e in cfg["config"]["Env"] if e.startswith("PATH=")]
assert env and "/usr/sbin" in env[0], cfg["config"]
print(tag)
print(env[0])
PY
PATHENV=$(sed -n 2p "$WORK/layout.txt")
tar -xzf "$WORK/layer.tar.gz" -C "$ROOT" || fail "cannot unpack the layer"
for f in usr/sbin/gpusliced usr/bin/gpuslice usr/sbin/gpuslice-kubelet-plugin usr/bin/gs-alloc; do
	[ -x "$ROOT/$f" ] || fail "the image has no /$f"
done
[ -f "$ROOT/usr/lib/gpuslice/libgpuslice.so" ] || fail "the image has no /usr/lib/gpuslice/libgpuslice.so"

cat >"$ROOT/root/entrypoints.sh" <<'EOS'
set -eu
fail() { echo "FAIL: $*"; exit 1; }
# the init container
install -D -m 0755 /usr/lib/gpuslice/libgpuslice.so /tmp/host-opt-gpuslice/lib/libgpuslice.so
[ -s /tmp/host-opt-gpuslice/lib/libgpuslice.so ] || fail "the init container's install copied nothing"
# gpusliced (on the sim here; the DaemonSet says --gpus real)
mkdir -p /run/gpuslice /var/lib/gpuslice
gpusliced --state-dir /var/lib/gpuslice --socket /run/gpuslice/api.sock --gpus sim >/tmp/daemon.log 2>&1 &
pid=$!
n=0
until gpuslice --socket /run/gpuslice/api.sock list --json >/dev/null 2>&1; do
	n=$((n + 1))
	[ $n -lt 100 ] || fail "gpusliced did not answer the readiness probe: $(tail -3 /tmp/daemon.log)"
	kill -0 $pid || fail "gpusliced exited: $(tail -3 /tmp/daemon.log)"
	sleep 0.1
done
eval "$(gpuslice sim env --dir /var/lib/gpuslice/sim)"
out=$(gpuslice run --memory 1GiB -- gs-alloc --api plain --chunk 128MiB)
case $out in *'"error":"CUDA_ERROR_OUT_OF_MEMORY"'*) ;; *) fail "not capped: $out" ;; esac
gpuslice-kubelet-plugin --help >/dev/null || fail "gpuslice-kubelet-plugin --help failed"
kill -TERM $pid
wait $pid || fail "gpusliced exited $? on SIGTERM"
echo entrypoints-ok
EOS
out=$(unshare -m bash -c '
	set -e
	R=$1
	mount -t proc proc "$R/proc"
	mount --rbind /dev "$R/dev"
	mount -t tmpfs tmpfs "$R/tmp"
	mount -t tmpfs tmpfs "$R/run"
	exec chroot "$R" /usr/bin/env -i "$2" HOME=/root /bin/sh /root/entrypoints.sh
' bash "$ROOT" "$PATHENV" 2>&1) || fail "the image's entrypoints: $out"
case $out in *entrypoints-ok*) ;; *) fail "the entrypoints did not finish: $out" ;; esac
left=$(work_procs)
[ -z "$left" ] || fail "processes of the image still run: $left"
echo "ok"
