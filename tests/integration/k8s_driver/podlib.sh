# podlib.sh - shared by the tests of pods held to their claims by their
# cgroup (pod_cgroup.sh, pod_joins_claim.sh): `. podlib.sh BUILD_DIR`.
# On top of lib.sh: root and a writable cgroup v2 hierarchy (else SKIP),
# pods' cgroups laid out as the kubelet's systemd driver and containerd
# make them, under a prefix of the test's own (the parser takes any
# prefix, as kind's kubelet.slice), so a node's real kubepods hierarchy is
# never touched; and tenants that bypass the shim.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$1"

BYPASS=$B/tests/gs-daemon-bypass
LIBCUDA=$B/sim/libcuda.so.1
[ -x "$BYPASS" ] && [ -e "$LIBCUDA" ] || { echo "SKIP: no sim libcuda or gs-daemon-bypass"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: making a pod's cgroup needs root"; exit 77; }
CGROOT=""
for d in /sys/fs/cgroup /sys/fs/cgroup/unified; do
	[ "$(stat -f -c %T "$d" 2>/dev/null)" = cgroup2fs ] && CGROOT=$d && break
done
[ -n "$CGROOT" ] || { echo "SKIP: no cgroup v2 hierarchy mounted"; exit 77; }

TOP=$CGROOT/gpuslice-test-$$.slice
KP=$TOP/kubepods.slice/kubepods-besteffort.slice
mkdir -p "$KP" || { echo "SKIP: cannot make a cgroup under $CGROOT"; exit 77; }
# Children first; a killed process leaves its cgroup a moment later.
CLEANUP_CMDS+=("for i in \$(seq 30); do find '$TOP' -depth -type d -exec rmdir {} + 2>/dev/null; [ -d '$TOP' ] || break; sleep 0.1; done")

# pod_cgroup UID CONTAINER_DIGIT: makes the container's cgroup in $CG.
pod_cgroup() {
	CG=$KP/kubepods-besteffort-pod${1//-/_}.slice/cri-containerd-$(printf "$2%.0s" $(seq 64)).scope
	mkdir -p "$CG" || fail "cannot make $CG"
}

# tenant NAME CGROUP GPU BYTES: the bypassing tenant (the sim's libcuda in
# its own link-map namespace: what unsetting LD_PRELOAD gets), moved into
# CGROUP before it touches the GPU, with no LD_PRELOAD; waits on a fifo,
# then allocates BYTES. Sets TENANT to its pid.
tenant() {
	mkfifo "$WORK/$1.go"
	env -u LD_PRELOAD CUDA_VISIBLE_DEVICES="$3" sh -c \
		'echo $$ >"$1/cgroup.procs" && exec "$2" "$3" "$4"' sh \
		"$2" "$BYPASS" "$LIBCUDA" "$4" <"$WORK/$1.go" >"$WORK/$1.out" 2>&1 &
	PIDS+=($!)
	disown $!
	exec {GOFD}>"$WORK/$1.go"
	wait_until 10 grep -q '^pid ' "$WORK/$1.out" ||
		fail "$1 did not start: $(cat "$WORK/$1.out")"
	TENANT=$(awk '/^pid /{print $2; exit}' "$WORK/$1.out")
	grep -q "$(basename "$(dirname "$2")")" "/proc/$TENANT/cgroup" ||
		fail "$1 is not in its pod's cgroup: $(cat "/proc/$TENANT/cgroup")"
	echo go >&$GOFD
	wait_until 10 grep -q '^allocated' "$WORK/$1.out" ||
		fail "$1 could not allocate: $(cat "$WORK/$1.out")"
}
