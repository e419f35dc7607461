# lib.sh - shared by the swap tests that need the daemon's quota reclaim
# (`. lib.sh BUILD_DIR`): the daemon's lib.sh (../daemon/lib.sh: dirs,
# daemon_up, api, cleanup), plus park_node, a simulated 24 GiB GPU with
# swap on and two teams:
#   research  guarantee 20 % compute: above it, it borrows
#   prod      guarantee 80 % compute: it may reclaim research's borrowing
#   infra     guarantee 23 GiB, no compute: a swap: never ballast that
#             fills the GPU's memory, so that a reclaimer needs the memory
#             its victim held (untouched, it costs the sim no host memory)
# so that a research slice of 60 % compute borrows, and a prod slice of
# 50 % takes it back (the GPU holds 100 %). Slices are small (1 GiB), so
# the sim costs little host memory.
. "$(dirname "${BASH_SOURCE[0]}")/../daemon/lib.sh" "$1"
[ -e "$B/sim/libcuda.so.1" ] || { echo "SKIP: no sim libcuda"; exit 77; }
[ -x "$B/tests/gs-swap-hold" ] || { echo "SKIP: no gs-swap-hold in this build"; exit 77; }

# park_node: writes the config (plus swap.need_wait $PARK_NEED_WAIT and
# $PARK_CFG, when set) and starts the daemon on it.
park_node() {
	cat >"$WORK/cfg.yaml" <<'YAML'
node:
  sim_count: 1
  sim_model: A30-24GB
  default_mode: timeslice
  placement: binpack
teams:
  research:
    guarantee: {memory: 4GiB, compute: 20}
  prod:
    guarantee: {memory: 16GiB, compute: 80}
  infra:
    guarantee: {memory: 23GiB, compute: 0}
swap:
  oversubscribe: 2
  idle_after: 60s
  min_residency: 1s
  host_memory: 8GiB
YAML
	# PARK_NEED_WAIT: swap.need_wait (a test that waits past it)
	[ -z "${PARK_NEED_WAIT:-}" ] ||
		printf '  need_wait: %s\n' "$PARK_NEED_WAIT" >>"$WORK/cfg.yaml"
	# PARK_CFG: more configuration for a test (e.g. a faster ledger)
	[ -z "${PARK_CFG:-}" ] || printf '%s\n' "$PARK_CFG" >>"$WORK/cfg.yaml"
	daemon_up --config "$WORK/cfg.yaml"
	eval "$("$G" sim env --dir "$GPUSLICE_SIM_DIR")"
	export B WORK SOCK GS_SRC=$SRC SIMDIR=$GPUSLICE_SIM_DIR
}

# hold_bg NAME: runs gs-swap-hold in slice NAME in the background, its
# stdin a FIFO this shell keeps open (fd 3) so that it outlives the
# python phases of a test (and a daemon restart), its answers in
# $WORK/NAME.out (hold.py's FileHold talks to it). hold_bg_end ends it.
# A process started meanwhile that outlives the test's use of it (a
# daemon started again) must not inherit fd 3: start it with 3>&-.
hold_bg() {
	mkfifo "$WORK/$1.in"
	GPUSLICE_LOG="debug:$WORK/$1.shim.log" "$G" run --slice "$1" -- \
		"$B/tests/gs-swap-hold" <"$WORK/$1.in" >"$WORK/$1.out" \
		2>"$WORK/$1.err" &
	HOLD_BG_PID=$!
	PIDS+=("$HOLD_BG_PID")
	exec 3>"$WORK/$1.in"
}

# hold_bg_end: closes its input; it exits at the end of it.
hold_bg_end() {
	exec 3>&-
	wait "$HOLD_BG_PID" || fail "gs-swap-hold of hold_bg ended with $?"
}
