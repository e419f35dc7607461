#!/usr/bin/env bash
# Programs using the libraries ordinary CUDA code uses run on the sim's
# PTX interpreter and check their results on the host
# (exec/exec_lib.cu): Thrust transform, reduce and sort, a CUB block
# reduce, a cooperative-groups grid sync through
# cudaLaunchCooperativeKernel, calls to non-inlined __device__ functions.
. "$(dirname "$0")/lib.sh" "$1"
. "$(dirname "$0")/exec_check.sh"
run_checks exec_lib "thrust_transform thrust_reduce thrust_sort cub_block_reduce grid_sync device_function_call"
echo ok
