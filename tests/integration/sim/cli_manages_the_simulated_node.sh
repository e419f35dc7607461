#!/usr/bin/env bash
# `gpuslice sim init|env|status|reset`: the node it creates, the exports
# it prints, status as JSON and text, reset, and one-line errors with the
# documented exit statuses for bad input and bad state files.
. "$(dirname "$0")/lib.sh"

run_rc "$GS" sim --help
expect_eq "help status" "$RC" 0
expect_in "help text" "$OUT" "init --gpus"

"$GS" sim init --gpus 2xH100-SXM5-80GB,1xA100-SXM4-40GB >/dev/null
S=$("$GS" sim status --json)
# one python run checks the JSON (each start costs a second on a busy host)
python3 - "$S" <<'PY' || fail "status --json: $S"
import json, re, sys
j = json.loads(sys.argv[1])
g = j["gpus"]
assert len(g) == 3, g
assert j["source"] == "sim"
assert list(g[0].keys())[:6] == ["index", "uuid", "model", "memory_total_bytes",
                                  "memory_used_bytes", "processes"], g[0].keys()
assert g[2]["model"] == "A100-SXM4-40GB"
assert re.fullmatch(r"GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
                    g[1]["uuid"]), g[1]["uuid"]
assert g[0]["memory_total_bytes"] == 81559 << 20
assert g[0]["memory_used_bytes"] == 0 and g[0]["processes"] == []
PY
T=$("$GS" sim status)
expect_in "text status says sim" "$T" "from the gpuslice sim"
expect_in "text status lists GPUs" "$T" "A100-SXM4-40GB"

# env points at this directory and at the build's sim libraries
E=$("$GS" sim env)
expect_in "env dir" "$E" "^export GPUSLICE_SIM_DIR='$WORK/sim'"
expect_in "env libs" "$E" "^export LD_LIBRARY_PATH='$B/sim'"
expect_in "env path" "$E" "^export PATH='$B/sim'"
(
	unset GPUSLICE_SIM_DIR
	eval "$("$GS" sim env --dir "$WORK/sim")"
	[ "$GPUSLICE_SIM_DIR" = "$WORK/sim" ] || exit 1
) || fail "eval of sim env"

# reset keeps the GPUs and bumps the epoch
"$GS" sim reset >/dev/null
S2=$("$GS" sim status --json)
expect_eq "epoch and uuid after reset" \
	"$(python3 -c 'import json,sys; a,b=(json.loads(x) for x in sys.argv[1:]); print(b["epoch"], a["gpus"][0]["uuid"] == b["gpus"][0]["uuid"])' "$S" "$S2")" \
	"2 True"

# bad input: one line on stderr, exit 2
run_rc "$GS" sim init --gpus 2xNOPE-9000 --dir "$WORK/x"
expect_eq "unknown model status" "$RC" 2
expect_in "unknown model message" "$ERR" "^gpuslice sim: unknown GPU model 'NOPE-9000'$"
run_rc "$GS" sim init --gpus "2x" --dir "$WORK/x"
expect_eq "malformed --gpus status" "$RC" 2
expect_eq "one line" "$(printf '%s\n' "$ERR" | wc -l)" 1
run_rc "$GS" sim init --dir "$WORK/x"
expect_eq "missing --gpus status" "$RC" 2
run_rc "$GS" sim status --bogus
expect_eq "unknown option status" "$RC" 2
run_rc "$GS" sim frobnicate
expect_eq "unknown subcommand status" "$RC" 2
run_rc "$GS" sim init --gpus 1xH100-SXM5-80GB
expect_eq "existing state without --force" "$RC" 1
expect_in "existing state message" "$ERR" "force"

# bad state files: exit 1 (3 when there is none), never a crash
run_rc "$GS" sim status --dir "$WORK/none"
expect_eq "missing state status" "$RC" 3
expect_in "missing state message" "$ERR" "sim init"
F=$WORK/sim/node.state
printf '\x63' | dd of="$F" bs=1 seek=8 conv=notrunc status=none
run_rc "$GS" sim status
expect_eq "other version status" "$RC" 1
expect_in "other version message" "$ERR" "version 99"
"$GS" sim init --gpus 1xH100-SXM5-80GB --force >/dev/null
head -c 4096 /dev/urandom | dd of="$F" bs=4096 seek=200000 oflag=seek_bytes conv=notrunc status=none
printf 'garbage!' | dd of="$F" bs=1 seek=0 conv=notrunc status=none
run_rc "$GS" sim status
expect_eq "corrupted status" "$RC" 1
expect_in "corrupted message" "$ERR" "^gpuslice sim: .*(magic|corrupt|damaged|checksum)"
truncate -s 100 "$F"
run_rc "$GS" sim status --json
expect_eq "truncated status" "$RC" 1
run_rc "$GS" sim reset
expect_eq "reset of a truncated file" "$RC" 1
"$GS" sim init --gpus 1xH100-SXM5-80GB --force >/dev/null
"$GS" sim status --json >/dev/null
echo PASS
