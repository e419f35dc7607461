#!/usr/bin/env python3
"""oci-layout.py - writes a root filesystem tarball as an OCI image layout
(https://github.com/opencontainers/image-spec, layout 1.0.0): one gzip
layer, the image config, the manifest and index.json naming the tag.

    oci-layout.py ROOTFS.tar OUT_DIR TAG EPOCH

Deterministic for the same tarball: gzip without a name or time, JSON with
sorted keys, every time stamp EPOCH (seconds). The config sets PATH (so the
DaemonSet's bare command names resolve) and no entrypoint: each container
of deploy/kubernetes/daemonset.yaml names its own command."""
import gzip
import hashlib
import json
import os
import shutil
import sys
import time


def blob(out, data):
    digest = hashlib.sha256(data).hexdigest()
    path = os.path.join(out, "blobs", "sha256", digest)
    with open(path, "wb") as f:
        f.write(data)
    return {"digest": "sha256:" + digest, "size": len(data)}


def dumps(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def main():
    rootfs, out, tag, epoch = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    os.makedirs(os.path.join(out, "blobs", "sha256"), exist_ok=True)
    with open(rootfs, "rb") as f:
        raw = f.read()
    diff_id = "sha256:" + hashlib.sha256(raw).hexdigest()
    layer = gzip.compress(raw, compresslevel=6, mtime=0)
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))
    lay = dict(blob(out, layer), mediaType="application/vnd.oci.image.layer.v1.tar+gzip")
    config = {
        "architecture": "amd64",
        "os": "linux",
        "created": created,
        "config": {
            "Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
            "WorkingDir": "/",
            "Labels": {"org.opencontainers.image.title": "gpuslice",
                       "org.opencontainers.image.version": tag},
        },
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        "history": [{"created": created, "created_by": "deploy/image/build-image.sh (mmdebstrap)"}],
    }
    cfg = dict(blob(out, dumps(config)), mediaType="application/vnd.oci.image.config.v1+json")
    manifest = {"schemaVersion": 2,
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": cfg, "layers": [lay]}
    man = dict(blob(out, dumps(manifest)),
               mediaType="application/vnd.oci.image.manifest.v1+json",
               annotations={"org.opencontainers.image.ref.name": tag})
    with open(os.path.join(out, "index.json"), "wb") as f:
        f.write(dumps({"schemaVersion": 2, "manifests": [man]}))
    with open(os.path.join(out, "oci-layout"), "wb") as f:
        f.write(dumps({"imageLayoutVersion": "1.0.0"}))


if __name__ == "__main__":
    main()
