# swap_check.sh - gpu-check's swap check (#27), sourced by
# scripts/gpu-check.sh (which provides result, jf, G, TMP, BIN, SIM,
# DEPS_PATH and CHECKS_DIR, the folder of this file): a swap round trip of
# a PyTorch process's tensors (1 GiB and a few small ones) under
# `gpuslice run --swap`: checksums before and after must match, and the
# swap-in rate (the shim's own time) is reported with the swap-out's.
# Where `import torch` fails, a CUDA runtime program does the same
# (swap_cudart.cu: prebuilt by make gpu-stage, else built with nvcc), and
# the result says so; with neither, SKIP.
check_swap() {
	local lp=${LD_LIBRARY_PATH:-} prog=() what f=$TMP/swap.json nvcc mib=1024
	[ -z "${DEPS_PATH:-}" ] || lp=$(tr ':' '\n' <<<"$lp" | grep -vx "$DEPS_PATH" | paste -sd: -)
	[ "$SIM" = 1 ] && mib=64 # the sim backs its memory with this host's
	if [ "$SIM" != 1 ] && timeout -k 5 60 env LD_LIBRARY_PATH="$lp" \
		python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
		prog=(env -u PYTORCH_CUDA_ALLOC_CONF LD_LIBRARY_PATH="$lp" python3 "$CHECKS_DIR/swap_torch.py" $mib)
		what="a PyTorch process's tensors"
	else
		if [ -x "$CHECKS_DIR/swap_cudart" ]; then
			cp "$CHECKS_DIR/swap_cudart" "$TMP/swap_cudart"
		else
			nvcc=$(command -v nvcc || true)
			[ -n "$nvcc" ] || [ ! -x /usr/local/cuda/bin/nvcc ] || nvcc=/usr/local/cuda/bin/nvcc
			if [ -z "$nvcc" ]; then
				result skip "python3 cannot import torch with CUDA, and neither a prebuilt swap_cudart nor nvcc is here"
				return
			fi
			if ! timeout -k 5 300 "$nvcc" -O2 -o "$TMP/swap_cudart" "$CHECKS_DIR/swap_cudart.cu" >"$TMP/swap-nvcc.log" 2>&1; then
				result fail "nvcc could not build swap_cudart.cu: $(tail -c 300 "$TMP/swap-nvcc.log" | tr '\n' ' ')"
				return
			fi
		fi
		prog=("$TMP/swap_cudart" $mib)
		what="a CUDA runtime program's buffers (python3 cannot import torch with CUDA$([ "$SIM" = 1 ] && echo ', and the sim cannot run PyTorch'), so swap_cudart stands in)"
	fi
	timeout -k 5 900 python3 "$CHECKS_DIR/swap_drive.py" "$BIN/gpuslice" "$TMP/run" gc-swap \
		"$TMP/swap-shim.log" "$((mib / 1024 + 2))GiB" -- "${prog[@]}" >"$f" 2>"$f.err"
	if [ "$(jf "$f" ok)" = true ]; then
		result pass "swap round trip of $what: $(jf "$f" bytes) bytes, checksums equal after; swap-in $(jf "$f" swap_in_gbps) GB/s ($(jf "$f" swap_in_ms) ms), swap-out $(jf "$f" swap_out_gbps) GB/s ($(jf "$f" swap_out_ms) ms)" "$(tail -n 1 "$f")"
	else
		result fail "swap round trip of $what: $(jf "$f" error)$(tail -c 200 "$f.err" | tr '\n' ' ')" "$(tail -n 1 "$f" | grep '^{' || echo '{}')"
	fi
}
