# swap_torch.py - the PyTorch process of gpu-check's swap check
# (swap_check.sh): tensors of several sizes (one of MIB MiB, small ones
# packed together by the shim) filled from a seeded generator; prints
# {"ready": true, "checksums": [...], "bytes": N}, then for each line
# "check" on stdin recomputes the checksums on the GPU and prints
# {"checksums": [...]}. Run under `gpuslice run --swap`.
import json, sys
import torch

mib = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
g = torch.Generator(device="cuda").manual_seed(27)
sizes = [1, 1000, 4097, 3 << 18, mib << 18]  # int32 elements
ts = [torch.randint(-2**31, 2**31 - 1, (n,), dtype=torch.int32,
                    device="cuda", generator=g) for n in sizes]
torch.cuda.synchronize()


def checksum(t):
    """Position-weighted sum of the values, on the GPU, mod 2^61."""
    s = 0
    for c in t.split(1 << 24):
        c = c.to(torch.int64)
        w = torch.arange(c.numel(), device=c.device, dtype=torch.int64) % 65521 + 1
        s = (s * 1000003 + int((c * w).sum())) % (1 << 61)
    return s


print(json.dumps({"ready": True, "checksums": [checksum(t) for t in ts],
                  "bytes": sum(t.numel() * 4 for t in ts),
                  "torch": torch.__version__}), flush=True)
for line in sys.stdin:
    if line.strip() == "check":
        print(json.dumps({"checksums": [checksum(t) for t in ts]}), flush=True)
