#!/usr/bin/env bash
# bench trace on bad input: a one-line message naming the file (and line)
# on stderr and exit status 2 (3 for a missing file); never a crash.
set -uo pipefail
B=${1:?build dir}
SRC=${GS_SRC:-$(cd "$(dirname "$0")/../../.." && pwd)}
G=$B/bin/gpuslice
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

nodes=$tmp/nodes.csv
printf 'sn,cpu_milli,memory_mib,gpu,model\nn0,96000,393216,8,G2\nn1,104000,524288,2,T4\n' >"$nodes"
pods_head='name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec'

# expect STATUS MESSAGE-FRAGMENT -- ARGS...
expect() {
	local want=$1 frag=$2
	shift 3
	"$G" bench trace "$@" >"$tmp/out" 2>"$tmp/err"
	local got=$?
	if [ "$got" -ne "$want" ] || ! grep -qF -- "$frag" "$tmp/err" ||
		[ "$(wc -l <"$tmp/err")" -ne 1 ] || [ -s "$tmp/out" ]; then
		echo "FAIL: bench trace $* -> exit $got (want $want), stderr: $(cat "$tmp/err")" >&2
		fails=$((fails + 1))
	fi
}

pods() { # name rows...
	local f=$tmp/$1.csv
	shift
	{ echo "$pods_head"; printf '%s\n' "$@"; } >"$f"
	echo "$f"
}

p=$(pods short 'p0,6000,1024,1,500,' 'p1,6000,1024,1')
expect 2 "short.csv:3: 4 fields, the header has 6" -- --nodes "$nodes" --pods "$p"
p=$(pods model 'p0,6000,1024,1,500,A100')
expect 2 "model.csv:2: gpu_spec names GPU model 'A100', which no node has" -- --nodes "$nodes" --pods "$p"
p=$(pods neg 'p0,-6000,1024,1,500,')
expect 2 "neg.csv:2: cpu_milli '-6000' is negative" -- --nodes "$nodes" --pods "$p"
p=$(pods absurd 'p0,6000,1024,1,500,' 'p1,6000,99999999999999,1,1000,')
expect 2 "absurd.csv:3: memory_mib '99999999999999' is absurd" -- --nodes "$nodes" --pods "$p"
p=$(pods milli 'p0,6000,1024,1,2500,')
expect 2 "milli.csv:2: gpu_milli '2500' is absurd" -- --nodes "$nodes" --pods "$p"
p=$(pods share2 'p0,6000,1024,2,500,')
expect 2 "share2.csv:2: a share of a GPU" -- --nodes "$nodes" --pods "$p"
p=$(pods ok 'p0,6000,1024,1,500,')

printf 'sn,cpu_milli,memory_mib,gpu,model\nn0,96000,393216,8,\n' >"$tmp/nomodel.csv"
expect 2 "nomodel.csv:2: a node with 8 GPUs needs a model" -- --nodes "$tmp/nomodel.csv" --pods "$p"
printf 'sn,cpu_milli,memory_mib,gpu,model\nn0,96000,393216,0,\n' >"$tmp/cpuonly.csv"
expect 2 "cpuonly.csv: no node has a GPU" -- --nodes "$tmp/cpuonly.csv" --pods "$p"
: >"$tmp/empty.csv"
expect 2 "empty.csv: empty file" -- --nodes "$tmp/empty.csv" --pods "$p"
head -c 4096 /dev/urandom >"$tmp/garbage.csv" 2>/dev/null || printf '\x00\x01,"\xff' >"$tmp/garbage.csv"
expect 2 "garbage.csv" -- --nodes "$nodes" --pods "$tmp/garbage.csv"
expect 3 "missing.csv" -- --nodes "$nodes" --pods "$tmp/missing.csv"
expect 2 "--nodes and --pods are required" -- --pods "$p"
expect 2 "unknown policy 'tetris'" -- --nodes "$nodes" --pods "$p" --policy fgd,tetris
expect 2 "--seeds '9-3'" -- --nodes "$nodes" --pods "$p" --seeds 9-3
expect 2 "--tune 'x'" -- --nodes "$nodes" --pods "$p" --tune x
expect 2 "unknown option '--frobnicate'" -- --nodes "$nodes" --pods "$p" --frobnicate
expect 2 "--constrain '120'" -- --nodes "$nodes" --pods "$p" --constrain 120
expect 2 "--gangs 'x'" -- --nodes "$nodes" --pods "$p" --gangs x
expect 2 "--constrain-models '0'" -- --nodes "$nodes" --pods "$p" --constrain-models 0
expect 2 "--ablate 'strand,foo': unknown term 'foo'" -- --nodes "$nodes" --pods "$p" --ablate strand,foo

# A variant of a valid list runs and differs from the list only where it
# should: the same variant seed gives the same figures.
v1=$("$G" bench trace --nodes "$nodes" --pods "$p" --seeds 1 --json \
	--constrain 35 --gangs 20 --variant-seed 5 --policy gpuslice 2>/dev/null)
v2=$("$G" bench trace --nodes "$nodes" --pods "$p" --seeds 1 --json \
	--constrain 35 --gangs 20 --variant-seed 5 --policy gpuslice 2>/dev/null)
if [ -z "$v1" ] || [ "$v1" != "$v2" ]; then
	echo "FAIL: a list variant did not run, or is not deterministic" >&2
	fails=$((fails + 1))
fi

# The good file still runs.
if ! "$G" bench trace --nodes "$nodes" --pods "$p" --seeds 1 --json >/dev/null 2>&1; then
	echo "FAIL: a valid pair of lists did not run" >&2
	fails=$((fails + 1))
fi
[ "$fails" -eq 0 ] && echo "bench trace bad input: ok"
exit $((fails > 0))
