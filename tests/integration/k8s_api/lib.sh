# lib.sh - shared by the k8s_api tests: `. lib.sh BUILD_DIR`. A scratch
# $WORK, helpers to start apiserver_standin.py (standin_up NAME ARGS...:
# sets PORT_<NAME>, records the pid), cleanup of everything started.
set -euo pipefail

B=$(cd "${1:?usage: $0 BUILD_DIR}" && pwd)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gs-k8s-api.XXXXXX")
PIDS=()

python3 -c 'import jsonschema' 2>/dev/null || { echo "SKIP: python3-jsonschema missing"; exit 77; }

cleanup() {
	local rc=$? p
	for p in "${PIDS[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
		for p in "$WORK"/*.log; do
			[ -f "$p" ] || continue
			echo "--- $p (last 30 lines) ---" >&2
			tail -30 "$p" >&2
		done
	fi
	[ -n "${GS_KEEP_WORK:-}" ] && echo "kept $WORK" >&2 || rm -rf "$WORK"
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# standin_up NAME [ARGS...]: starts a stand-in; PORT_NAME holds its port.
standin_up() {
	local name=$1 i
	shift
	rm -f "$WORK/$name.port"
	python3 "$HERE/apiserver_standin.py" --port-file "$WORK/$name.port" "$@" \
		>>"$WORK/$name.log" 2>&1 &
	PIDS+=($!)
	eval "PID_$name=$!"
	for i in $(seq 100); do
		[ -s "$WORK/$name.port" ] && break
		sleep 0.05
	done
	[ -s "$WORK/$name.port" ] || fail "stand-in $name did not start"
	eval "PORT_$name=$(cat "$WORK/$name.port")"
}
