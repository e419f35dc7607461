#!/usr/bin/env bash
# Regenerates workloads/kernels.ptx from workloads/kernels.cu. Run it after
# editing kernels.cu and check the new kernels.ptx in: the build embeds the
# checked-in PTX and never needs nvcc (CI machines may not have it).
#
# The PTX is compiled for the virtual architecture compute_80, so the
# driver JIT-compiles it for A100, H100 and anything newer. nvcc 13 stamps
# it `.version 9.0`, which only drivers from CUDA 13 on accept; nothing in
# these kernels needs more than PTX ISA 7.0 (the first with sm_80), so the
# stamp is lowered to 7.0 to let older drivers load it too. ptxas then
# checks that the result still assembles for sm_80 and sm_90.
#
# Usage: workloads/regen-ptx.sh     (CUDA_HOME defaults to /usr/local/cuda)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cuda=${CUDA_HOME:-/usr/local/cuda}
nvcc=$cuda/bin/nvcc
ptxas=$cuda/bin/ptxas
[ -x "$nvcc" ] || { echo "regen-ptx: $nvcc not found (set CUDA_HOME)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$nvcc" -ptx -arch=compute_80 -o "$tmp/raw.ptx" "$here/kernels.cu"
sed -e 's/^\.version [0-9.]*$/.version 7.0/' "$tmp/raw.ptx" >"$tmp/kernels.ptx"

grep -q '^\.version 7\.0$' "$tmp/kernels.ptx" ||
	{ echo "regen-ptx: no .version line to lower" >&2; exit 1; }
for k in gs_spin gs_matmul gs_burn gs_infer_layer gs_fill gs_fault; do
	grep -q "^\.visible \.entry $k(" "$tmp/kernels.ptx" ||
		{ echo "regen-ptx: entry $k missing from the PTX" >&2; exit 1; }
done
for arch in sm_80 sm_90; do
	"$ptxas" -arch="$arch" -o "$tmp/$arch.cubin" "$tmp/kernels.ptx" ||
		{ echo "regen-ptx: ptxas rejects the PTX for $arch" >&2; exit 1; }
done

cp "$tmp/kernels.ptx" "$here/kernels.ptx"
echo "regen-ptx: wrote $here/kernels.ptx"
