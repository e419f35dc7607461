#!/usr/bin/env bash
# gpu-stage.sh - `make gpu-stage`: a folder that runs `make gpu-check` on a
# GPU machine that has no network, no compiler and none of gpuslice's
# build dependencies (a device lent for minutes, sent a copy of the work
# tree plus a few ignored folders of at most 64 MiB in all).
#
#   scripts/gpu-stage.sh BUILD_DIR STAGE_DIR
#
# STAGE_DIR (git-ignored; the Makefile's is ./gpu-stage) gets:
#   gpu-check.sh        the checks (scripts/gpu-check.sh), run from here
#   STAGED              marks the folder, with what built it
#   bin/                gpuslice and the workload kit (gs-alloc, gs-burn,
#                       gs-infer, gs-matmul, gs-fault, gs-bench-shim)
#   lib/libgpuslice.so  the shim (and any libgpuslice*.so beside it)
#   lib/deps/           every shared library those need that is not the C
#                       library itself (libjansson, libyaml, libcurl, ...),
#                       found with ldd here
#   sim/                the simulator, for `gpu-check.sh --sim` only (the
#                       check's preflight keeps it off every path otherwise)
#   checks/             cudart_check (tests/gpu/cudart_check.cu, built here
#                       with nvcc when there is one) and its source; the
#                       swap check (tests/gpu/swap_*: its script, driver,
#                       PyTorch program and swap_cudart, built likewise)
# Fails when the folder comes to 64 MiB or more, or when ldd cannot find a
# library here. Prints the folder's size.
set -euo pipefail

B=$(cd "${1:?usage: gpu-stage.sh BUILD_DIR STAGE_DIR}" && pwd)
S=${2:?usage: gpu-stage.sh BUILD_DIR STAGE_DIR}
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LIMIT=$((64 << 20))

[ -x "$B/bin/gpuslice" ] && [ -f "$B/lib/libgpuslice.so" ] || {
	echo "gpu-stage: $B has no bin/gpuslice or lib/libgpuslice.so (build first)" >&2
	exit 1
}
rm -rf "$S"
mkdir -p "$S/bin" "$S/lib/deps" "$S/sim" "$S/checks"
S=$(cd "$S" && pwd)

for p in gpuslice gs-alloc gs-burn gs-infer gs-matmul gs-fault gs-bench-shim; do
	[ -x "$B/bin/$p" ] && cp "$B/bin/$p" "$S/bin/"
done
cp "$B"/lib/libgpuslice*.so "$S/lib/"
for f in libcuda.so.1 libnvidia-ml.so.1 nvidia-smi nvidia-cuda-mps-control; do
	cp "$B/sim/$f" "$S/sim/"
done
ln -s libcuda.so.1 "$S/sim/libcuda.so"
ln -s libnvidia-ml.so.1 "$S/sim/libnvidia-ml.so"
cp "$SRC/scripts/gpu-check.sh" "$S/gpu-check.sh"
cp "$SRC/tests/gpu/cudart_check.cu" "$S/checks/"
cp "$SRC"/tests/gpu/swap_check.sh "$SRC"/tests/gpu/swap_drive.py "$SRC"/tests/gpu/swap_torch.py "$SRC"/tests/gpu/swap_cudart.cu "$S/checks/"

# The CUDA runtime check, built where nvcc is (static cudart: it needs
# only the driver's libcuda.so.1 there).
nvcc=$(command -v nvcc || true)
[ -n "$nvcc" ] || [ ! -x "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" ] || nvcc=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
if [ -n "$nvcc" ]; then
	"$nvcc" -O2 -o "$S/checks/cudart_check" "$SRC/tests/gpu/cudart_check.cu" ||
		{ echo "gpu-stage: nvcc failed on tests/gpu/cudart_check.cu" >&2; exit 1; }
	"$nvcc" -O2 -o "$S/checks/swap_cudart" "$SRC/tests/gpu/swap_cudart.cu" ||
		{ echo "gpu-stage: nvcc failed on tests/gpu/swap_cudart.cu" >&2; exit 1; }
else
	echo "gpu-stage: no nvcc here: the cudart check will need one on the GPU machine" >&2
fi

# Shared libraries: everything ldd names that the C library does not
# provide itself (those the GPU machine has, matching its kernel).
is_libc() {
	case $1 in
	libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | \
		ld-linux*.so.* | libresolv.so.* | libutil.so.* | libanl.so.* | \
		linux-vdso.so.* | libcuda.so.* | libnvidia-ml.so.*) return 0 ;;
	esac
	return 1
}
missing=""
for f in "$S"/bin/* "$S"/lib/*.so "$S"/sim/nvidia-* ${nvcc:+"$S/checks/cudart_check" "$S/checks/swap_cudart"}; do
	[ -f "$f" ] || continue
	while read -r name arrow path rest; do
		[ "$arrow" = "=>" ] || continue
		is_libc "$name" && continue
		if [ "$path" = "not" ]; then
			missing="$missing $(basename "$f"):$name"
			continue
		fi
		[ -e "$S/lib/deps/$name" ] || cp -L "$path" "$S/lib/deps/$name"
	done < <(LD_LIBRARY_PATH=$S/sim ldd "$f" 2>/dev/null || true)
done
[ -z "$missing" ] || {
	echo "gpu-stage: ldd finds no library for:$missing" >&2
	exit 1
}

printf 'staged by scripts/gpu-stage.sh from %s on %s (%s), git %s\n' "$B" \
	"$(hostname)" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
	"$(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo '?')" >"$S/STAGED"
size=$(du -sb "$S" | cut -f1)
if [ "$size" -ge "$LIMIT" ]; then
	echo "gpu-stage: $S is $((size >> 20)) MiB, over the 64 MiB a GPU machine is sent" >&2
	exit 1
fi
echo "gpu-stage: $S: $((size >> 20)) MiB ($size bytes), $(ls "$S/lib/deps" | wc -l) shared libraries"
