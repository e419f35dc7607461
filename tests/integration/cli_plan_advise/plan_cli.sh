#!/usr/bin/env bash
# `gpuslice plan` from the shell: planner output (text and JSON), mig-parted
# configs (valid, each kind of wrong), and the exit status of each case.
set -euo pipefail
build=$1
gs="$build/bin/gpuslice"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# expect STATUS CMD...: runs CMD, checks its exit status, keeps its output.
expect() {
	local want=$1 got=0
	shift
	"$@" >"$tmp/out" 2>"$tmp/err" || got=$?
	[ "$got" -eq "$want" ] || fail "$* exited $got, wanted $want: $(cat "$tmp/err")"
}
json_is() { # EXPR VALUE: python expression over `j` must print VALUE
	local got
	got=$(python3 -c "import json,sys; j=json.load(open('$tmp/out')); print($1)")
	[ "$got" = "$2" ] || fail "json $1 = '$got', wanted '$2'"
}

expect 0 "$gs" plan --help
grep -q "usage: gpuslice plan" "$tmp/out" || fail "help not on stdout"

# The worked example: 3g.40gb in use, four 1g and one 2g wanted.
expect 0 "$gs" plan --gpu H100-SXM5-80GB --in-use 3g.40gb@0 \
	--demand 1g.10gb=4,2g.20gb=1 --json
json_is "[(x['profile'],x['start'],x['in_use']) for x in j['layout']]" \
	"[('3g.40gb', 0, True), ('2g.20gb', 4, False), ('1g.10gb', 6, False)]"
json_is "[(s['op'],s['profile'],s['start']) for s in j['steps']]" \
	"[('create', '2g.20gb', 4), ('create', '1g.10gb', 6)]"
json_is "j['unmet']" "{'1g.10gb': 3}"

# An idle instance in the way is destroyed before anything is created.
expect 0 "$gs" plan --gpu A100 --existing 1g.5gb@0,1g.5gb@3 --demand 7g.40gb=1 --json
json_is "[s['op'] for s in j['steps']]" "['destroy', 'destroy', 'create']"
json_is "j['unmet']" "{}"

expect 0 "$gs" plan --gpu h100 --in-use 3g.40gb@0 --demand 1g.10gb=2
grep -q "in use" "$tmp/out" || fail "text layout lacks the in-use instance"
grep -q "unmet demand: none" "$tmp/out" || fail "text output lacks unmet line"

# Bad input: one line on stderr, exit 2.
expect 2 "$gs" plan --gpu H100 --demand 2g.99gb=1
grep -q "unknown MIG profile '2g.99gb' on H100-SXM5-80GB" "$tmp/err" || fail "$(cat "$tmp/err")"
[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "error is not one line"
expect 2 "$gs" plan --gpu H100 --demand 1g.10gb=8
grep -q "can never fit" "$tmp/err" || fail "$(cat "$tmp/err")"
expect 2 "$gs" plan --gpu H100 --in-use 3g.40gb@2
expect 2 "$gs" plan --gpu H100 --demand 1g.10gb
expect 2 "$gs" plan --gpu V100 --demand 1g.10gb=1
expect 2 "$gs" plan --demand 1g.10gb=1
expect 2 "$gs" plan --gpu H100 --bogus

# mig-parted configs.
cat >"$tmp/good.yaml" <<'YAML'
version: v1
mig-configs:
  balanced:
    - device-filter: ["0x233010DE", "0x20B210DE"]
      devices: all
      mig-enabled: true
      mig-devices: {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}
    - device-filter: "0x20B710DE"
      devices: [0, 1]
      mig-enabled: true
      mig-devices: {"1g.6gb": 2, "2g.12gb": 1}
  off:
    - devices: all
      mig-enabled: false
  too-big:
    - devices: all
      mig-enabled: true
      mig-devices: {"3g.40gb": 2, "4g.40gb": 1}
YAML
expect 0 "$gs" plan --mig-parted "$tmp/good.yaml" --config balanced --gpu H100 --json
json_is "j['valid']" "True"
json_is "[(x['profile'],x['start']) for x in j['entries'][0]['layout']]" \
	"[('1g.10gb', 0), ('1g.10gb', 1), ('2g.20gb', 2), ('3g.40gb', 4)]"
expect 0 "$gs" plan --mig-parted "$tmp/good.yaml" --config balanced --gpu A30
grep -q "devices \[0,1\]" "$tmp/out" || fail "$(cat "$tmp/out")"
expect 0 "$gs" plan --mig-parted "$tmp/good.yaml" --config off --gpu A30
grep -q "MIG disabled" "$tmp/out" || fail "$(cat "$tmp/out")"
expect 5 "$gs" plan --mig-parted "$tmp/good.yaml" --config too-big --gpu H100
grep -q "no valid placement for 3g.40gb x2 + 4g.40gb x1" "$tmp/err" || fail "$(cat "$tmp/err")"
expect 3 "$gs" plan --mig-parted "$tmp/good.yaml" --config balanced --gpu B200
grep -q "has no entry for B200-180GB" "$tmp/err" || fail "$(cat "$tmp/err")"
expect 3 "$gs" plan --mig-parted "$tmp/good.yaml" --config nope --gpu H100
expect 2 "$gs" plan --mig-parted "$tmp/good.yaml" --gpu H100
grep -q "has: balanced, off, too-big" "$tmp/err" || fail "$(cat "$tmp/err")"
expect 3 "$gs" plan --mig-parted "$tmp/missing.yaml" --config a --gpu H100

printf 'version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: false\n      colour: red\n' >"$tmp/bad.yaml"
expect 2 "$gs" plan --mig-parted "$tmp/bad.yaml" --config a --gpu H100
grep -q "line 6: unexpected field 'colour'" "$tmp/err" || fail "$(cat "$tmp/err")"
printf 'version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n      mig-devices: {"1g.5gb": 1}\n' >"$tmp/wrong.yaml"
expect 2 "$gs" plan --mig-parted "$tmp/wrong.yaml" --config a --gpu H100
grep -q "profile '1g.5gb' is not on H100-SXM5-80GB" "$tmp/err" || fail "$(cat "$tmp/err")"
echo "plan_cli: ok"
