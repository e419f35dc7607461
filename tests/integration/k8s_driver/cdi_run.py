#!/usr/bin/env python3
"""cdi_run.py - starts a command in a container built from a CDI spec's
edits alone, as a runtime with CDI and no NVIDIA runtime would: a fresh
mount namespace (run it under `unshare -m --propagation private`), a new
root on a tmpfs holding only the image (ld.so and libc from /lib, /lib64
and /usr/lib, read-only; an empty /usr/bin; the workload's own binary,
IMAGE_PATHS) and what the spec's containerEdits say: its mounts (at their
containerPath, with their options) and its environment. The host's driver
is not there unless the spec brings it.

Hooks: the spec's createContainer hooks run as an OCI runtime runs them
(runtime-spec config.md): after the mounts, in this (the runtime's) mount
namespace, with the container state on stdin naming a bundle whose
config.json has root.path = ROOT. A hook that exits non-zero fails the
container: its stderr is printed and the exit status is 4.

Device nodes: the spec's deviceNodes are created in the container's /dev
(a tmpfs) from the host's nodes; ones the host does not have (the sim has
no /dev/nvidia*) are listed on stderr and skipped.

usage: cdi_run.py SPEC ROOT [--keep-env NAME=VALUE]... [--image PATH]...
                  [--rw PATH]... [--drop-mount SUBSTR]...
                  [--no-host-libc] [--put SRC=DST]... -- CMD...
  --keep-env    environment the test adds (the sim's GPU state dir: the
                sim's stand-in for the device nodes)
  --image       extra host paths (files or dirs) the image holds,
                read-only, at the same path
  --rw          host paths shared writable at the same path (the sim's
                GPU state: what the device nodes are to a real GPU)
  --drop-mount  leave out the spec's mounts whose hostPath contains SUBSTR
                (a negative control)
  --no-host-libc  the image gets no /lib, /lib64, /usr/lib* from the host
  --put         copies host file SRC to DST in the image (e.g. another
                libc.so.6, or musl's loader)
Exit: the command's status; 3 when the container cannot be built; 4 when
a createContainer hook refused it.
"""
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile


def sh(*args):
    subprocess.run(list(args), check=True)


def bind(host, target, ro, rec=False):
    if os.path.isdir(host):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if not os.path.exists(target):
            open(target, "w").close()
    sh("mount", "--rbind" if rec else "--bind", host, target)
    if ro:
        sh("mount", "-o", "remount,bind,ro", target)


def run_hooks(edits, root, cmd, env):
    """Runs the createContainer hooks; 0, or 1 after printing why."""
    hooks = [h for h in edits.get("hooks", []) if h.get("hookName") == "createContainer"]
    if not hooks:
        return 0
    bundle = tempfile.mkdtemp(prefix="cdi-bundle.")
    try:
        with open(os.path.join(bundle, "config.json"), "w") as f:
            json.dump({"ociVersion": "1.2.0",
                       "root": {"path": root, "readonly": False},
                       "process": {"args": cmd, "cwd": "/",
                                   "env": ["%s=%s" % kv for kv in env.items()]}}, f)
        state = json.dumps({"ociVersion": "1.2.0", "id": "cdi-run",
                            "status": "creating", "bundle": bundle,
                            "annotations": {}})
        for h in hooks:
            args = h.get("args") or [h["path"]]
            r = subprocess.run(args, executable=h["path"], input=state.encode(),
                               env=dict(e.split("=", 1) for e in h.get("env", [])),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               timeout=h.get("timeout", 30))
            if r.returncode != 0:
                print("cdi_run: createContainer hook %s failed (exit %d): %s"
                      % (h["path"], r.returncode, r.stderr.decode().strip()),
                      file=sys.stderr)
                return 1
    finally:
        shutil.rmtree(bundle, ignore_errors=True)
    return 0


def main():
    argv = sys.argv[1:]
    if "--" not in argv or len(argv) < 4:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    cmd = argv[argv.index("--") + 1:]
    opts = argv[:argv.index("--")]
    spec_path, root = opts[0], opts[1]
    keep, image, drop, rw, put = [], [], [], [], []
    host_libc = True
    i = 2
    while i < len(opts):
        if opts[i] == "--no-host-libc":
            host_libc = False
            i += 1
            continue
        k, v = opts[i], opts[i + 1]
        {"--keep-env": keep, "--image": image, "--drop-mount": drop, "--rw": rw,
         "--put": put}[k].append(v)
        i += 2
    spec = json.load(open(spec_path))
    edits = spec["devices"][0]["containerEdits"]
    os.makedirs(root, exist_ok=True)
    sh("mount", "-t", "tmpfs", "tmpfs", root)
    # The image: a loader and libc, nothing of the driver.
    for d in ("/lib", "/lib64", "/usr/lib", "/usr/lib64", "/etc"):
        if not host_libc and d != "/etc":
            continue
        if os.path.isdir(d) and not os.path.islink(d):
            bind(d, root + d, True, rec=True)
        elif os.path.islink(d):
            os.makedirs(os.path.dirname(root + d), exist_ok=True)
            os.symlink(os.readlink(d), root + d)
    os.makedirs(root + "/usr/bin", exist_ok=True)
    os.makedirs(root + "/tmp", exist_ok=True)
    os.makedirs(root + "/proc", exist_ok=True)
    sh("mount", "-t", "tmpfs", "tmpfs", root + "/tmp")
    sh("mount", "--rbind", "/proc", root + "/proc")
    os.makedirs(root + "/dev", exist_ok=True)
    sh("mount", "-t", "tmpfs", "tmpfs", root + "/dev")
    for n in ("null", "zero", "urandom", "random"):
        bind("/dev/" + n, root + "/dev/" + n, False)
    os.makedirs(root + "/dev/shm", exist_ok=True)
    sh("mount", "-t", "tmpfs", "tmpfs", root + "/dev/shm")
    for p in image:
        bind(p, root + p, True, rec=os.path.isdir(p))
    for sd in put:
        src, dst = sd.split("=", 1)
        os.makedirs(os.path.dirname(root + dst), exist_ok=True)
        shutil.copyfile(src, root + dst)
    for p in rw:
        bind(p, root + p, False, rec=os.path.isdir(p))
    # The spec's edits.
    for dn in edits.get("deviceNodes", []):
        p = dn["path"]
        host = dn.get("hostPath", p)
        try:
            st = os.stat(host)
        except OSError:
            print("cdi_run: no host node %s: skipped" % host, file=sys.stderr)
            continue
        if stat.S_ISCHR(st.st_mode):
            os.makedirs(os.path.dirname(root + p), exist_ok=True)
            os.mknod(root + p, stat.S_IFCHR | 0o666, st.st_rdev)
    for m in edits.get("mounts", []):
        if any(s in m["hostPath"] for s in drop):
            continue
        bind(m["hostPath"], root + m["containerPath"], "ro" in m.get("options", []))
    env = dict(e.split("=", 1) for e in edits.get("env", []))
    env.setdefault("PATH", "/usr/bin:/bin")
    if run_hooks(edits, root, cmd, env) != 0:
        return 4
    for kv in keep:
        k, v = kv.split("=", 1)
        env[k] = v
    sys.stdout.flush()
    chroot = shutil.which("chroot") or "/usr/sbin/chroot"
    return subprocess.run([chroot, root] + cmd, env=env).returncode


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (subprocess.CalledProcessError, OSError) as e:
        print("cdi_run: cannot build the container: %s" % e, file=sys.stderr)
        sys.exit(3)
