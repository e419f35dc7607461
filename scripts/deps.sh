#!/usr/bin/env bash
# Installs the Debian packages gpuslice's build, tests and demo need
# (systemd for `systemd-analyze verify`; debhelper, dpkg-dev, fakeroot and
# lintian for scripts/build-deb.sh and its test; mmdebstrap for the
# container image, deploy/image/build-image.sh; strace for a shim test
# that counts system calls).
# Idempotent: asks dpkg first and calls apt-get only for what is missing,
# as root or through sudo. Exits non-zero with one line naming what failed.
set -euo pipefail

pkgs=(build-essential cmake pkg-config python3 clang libclang-rt-14-dev
      libcmocka-dev libjansson-dev libmicrohttpd-dev libsqlite3-dev
      libyaml-dev sqlite3 curl procps gnuplot-nox
      slurmctld slurmd slurm-client munge libslurm-dev
      libzstd-dev liblz4-dev
      libnghttp2-dev libprotobuf-c-dev protobuf-c-compiler protobuf-compiler
      libcurl4-openssl-dev
      python3-grpcio python3-protobuf python3-jsonschema python3-yaml
      musl-tools mmdebstrap
      systemd binutils debhelper dpkg-dev fakeroot lintian strace)

missing=()
for p in "${pkgs[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed'; then
		missing+=("$p")
	fi
done

if [ ${#missing[@]} -gt 0 ]; then
	echo "deps: installing ${missing[*]}" >&2
	if [ "$(id -u)" -eq 0 ]; then sudo=(); elif command -v sudo >/dev/null; then sudo=(sudo); else
		echo "deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; fi
	# Services must not start from package scripts (no systemd here; the
	# Slurm tests start their own daemons).
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee /usr/sbin/policy-rc.d >/dev/null
		"${sudo[@]}" chmod +x /usr/sbin/policy-rc.d
		trap '"${sudo[@]}" rm -f /usr/sbin/policy-rc.d' EXIT
	fi
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 ||
		{ echo "deps: apt-get update failed" >&2; exit 1; }
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends "${missing[@]}" >&2 ||
		{ echo "deps: apt-get install failed for: ${missing[*]}" >&2; exit 1; }
fi

cuda=${CUDA_HOME:-/usr/local/cuda}
if [ ! -f "$cuda/include/cuda.h" ]; then
	echo "deps: CUDA headers not found at $cuda/include/cuda.h (install the CUDA 13 toolkit or set CUDA_HOME)" >&2
	exit 1
fi

# Kubernetes tests: node and npm check what the DRA plugin writes against
# validators generated from the upstream OpenAPI (the npm package
# kubernetes-models, which tests/integration/k8s_api/km_check.sh installs
# into ~/.cache/gpuslice on first use; without network that check alone
# is skipped, with its reason).
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	if [ "$(id -u)" -eq 0 ]; then ksudo=(); else ksudo=(sudo); fi
	"${ksudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends nodejs npm >&2 ||
		echo "deps: could not install nodejs and npm: the upstream OpenAPI check of the Kubernetes tests will be skipped" >&2
fi
