# lib.sh - shared by the workload integration tests: a fresh simulated
# node per test, and small JSON helpers. Source it with the build dir in $1:
#   . "$(dirname "$0")/lib.sh" "$1"
# It sets B (build dir), SIMDIR (scratch node, removed on exit) and exports
# the sim's environment, so the gs-* programs find the sim's libcuda.so.1.
set -euo pipefail

B=$(cd "${1:?usage: $0 BUILD_DIR}" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gs-wl-test.XXXXXX")
SIMDIR=$WORK/sim
PIDS=()

cleanup() {
	local p
	for p in "${PIDS[@]}"; do
		kill -9 "$p" 2>/dev/null || true
	done
	rm -rf "$WORK"
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# sim_up [GPUS]: a fresh simulated node (default one H100) in $SIMDIR.
sim_up() {
	local gpus=${1:-1xH100-SXM5-80GB}
	if [ ! -e "$B/sim/libcuda.so.1" ] || [ ! -x "$B/bin/gpuslice" ]; then
		echo "SKIP: this build has no simulated GPU ($B/sim/libcuda.so.1)"
		exit 77
	fi
	"$B/bin/gpuslice" sim init --gpus "$gpus" --dir "$SIMDIR" >/dev/null ||
		fail "gpuslice sim init --gpus $gpus failed"
	eval "$("$B/bin/gpuslice" sim env --dir "$SIMDIR")"
}

# A plain interpreter: version-manager shims (pyenv) can cost a second a
# call on a loaded machine, and the tests call it often.
if [ -x /usr/bin/python3 ]; then PY=/usr/bin/python3; else PY=$(command -v python3); fi

# jget JSON KEY: the member's value (null as "null", booleans as
# true/false, numbers as Python prints them); fails if KEY is absent.
jget() {
	"$PY" -c '
import json, sys
d = json.loads(sys.argv[1])
v = d[sys.argv[2]]
print("null" if v is None else str(v).lower() if isinstance(v, bool) else v)
' "$1" "$2" || fail "no key $2 in: $1"
}

# jcheck OUT EXPR...: OUT is exactly one line holding a JSON object d, and
# every Python EXPR over d holds (e.g. 'd["p50_ms"] <= d["p90_ms"]'); on
# failure prints the first one that does not, with the line.
jcheck() {
	"$PY" -c '
import json, sys
line = sys.argv[1]
if "\n" in line.strip():
    sys.exit("not one line: " + line)
d = json.loads(line)
if not isinstance(d, dict):
    sys.exit("not an object: " + line)
for e in sys.argv[2:]:
    try:
        ok = eval(e)
    except Exception as x:
        ok = False
        e += " (%s)" % x
    if not ok:
        sys.exit("expected %s in: %s" % (e, line))
' "$@" || fail "check failed (see above)"
}

# one_line OUT: OUT is exactly one line of JSON.
one_line() {
	jcheck "$1"
}
