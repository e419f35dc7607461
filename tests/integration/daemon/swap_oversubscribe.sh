#!/usr/bin/env bash
# Declared oversubscription (docs/swap.md): with swap.oversubscribe 2 the
# memory promised on the sim's one H100 (81559 MiB) may reach twice its
# memory; past that a create is refused (exit 5) saying so. Slices with
# swap: never are not oversubscribable: they and the largest swappable
# slice must fit the physical memory. The per-slice swap mode comes from
# `gpuslice create --swap` or the API's "swap" field, is shown by `show`
# (text and --json, with promised/resident/swapped bytes) and in metrics,
# and survives a restart. Bad swap settings are refused at start.
. "$(dirname "$0")/lib.sh" "$1"

cat >"$WORK/cfg.yaml" <<'YAML'
node:
  sim_count: 1
  default_mode: timeslice
swap:
  oversubscribe: 2
  idle_after: 30s
  host_memory: 256GiB
YAML
daemon_up --config "$WORK/cfg.yaml"

# Up to 2 x 81559 MiB (159.3 GiB) of promises.
for n in a1 a2 a3; do
	"$G" create --name "$n" --memory 40GiB --swap allow >/dev/null ||
		fail "create $n (120 GiB promised on 79.6 GiB)"
done
"$G" create --name a4 --memory 39GiB >/dev/null ||
	fail "create a4 (159 GiB promised, under the ratio)"
rc=0
"$G" create --name a5 --memory 1GiB >"$WORK/out" 2>&1 || rc=$?
expect_eq "create past the ratio exits 5" "$rc" 5
grep -q "swap.oversubscribe 2.00" "$WORK/out" ||
	fail "the refusal does not name swap.oversubscribe: $(cat "$WORK/out")"

# What show and the API say of a slice.
jcheck "$("$G" show a1 --json)" 'd["spec"]["swap"] == "allow" and d["swap"]["mode"] == "allow" and d["swap"]["promised_bytes"] == 40 << 30 and d["swap"]["resident_bytes"] == 40 << 30 and d["swap"]["swapped_bytes"] == 0 and d["swap"]["swap_outs"] == 0 and d["swap"]["swap_ins"] == 0'
"$G" show a1 >"$WORK/show"
grep -q "^swap: *allow; 40GiB resident of 40GiB promised, 0B swapped; swap-outs 0, swap-ins 0" "$WORK/show" ||
	fail "show: $(cat "$WORK/show")"
grep -q "swap mechanism daemon: " "$WORK/show" ||
	fail "show does not say the daemon moves memory: $(cat "$WORK/show")"
curl -s --unix-socket "$SOCK" http://localhost/metrics >"$WORK/metrics"
grep -q '^gpuslice_slice_memory_promised_bytes{gpu="0",slice="a1",team="[^"]*"} 42949672960$' "$WORK/metrics" ||
	fail "metrics: no promised bytes for a1"
grep -q '^gpuslice_slice_memory_resident_bytes{gpu="0",slice="a1",team="[^"]*"} 42949672960$' "$WORK/metrics" ||
	fail "metrics: no resident bytes for a1"
grep -q '^gpuslice_slice_swap_outs_total{gpu="0",slice="a1",team="[^"]*"} 0$' "$WORK/metrics" ||
	fail "metrics: no swap-out count for a1"

# swap: never slices are not oversubscribable.
for n in a1 a2 a3 a4; do
	"$G" delete "$n" >/dev/null || fail "delete $n"
done
api POST /v1/slices '{"name": "n1", "memory": "40GiB", "swap": "never"}' >/dev/null
expect_status "n1 (never, 40 GiB)" 201
"$G" create --name n2 --memory 30GiB --swap never >/dev/null || fail "create n2"
rc=0
"$G" create --name n3 --memory 10GiB --swap never >"$WORK/out" 2>&1 || rc=$?
expect_eq "a never slice past physical memory exits 5" "$rc" 5
grep -q "only swap: allow memory is oversubscribed" "$WORK/out" ||
	fail "the refusal does not say why: $(cat "$WORK/out")"
rc=0
"$G" create --name a6 --memory 10GiB >"$WORK/out" 2>&1 || rc=$?
expect_eq "a swappable slice that could not run beside the never ones exits 5" "$rc" 5
"$G" create --name a7 --memory 9GiB >/dev/null ||
	fail "a 9 GiB swappable slice fits beside 70 GiB that never swaps"
jcheck "$("$G" show n1 --json)" 'd["spec"]["swap"] == "never" and d["swap"]["mode"] == "never"'

# A bad mode is refused naming the field.
api POST /v1/slices '{"name": "bad", "memory": "1GiB", "swap": "sometimes"}' >"$WORK/bad"
expect_status "an unknown swap mode" 400
grep -q "unknown swap 'sometimes' (expected allow|never)" "$WORK/bad" ||
	fail "bad swap mode: $(cat "$WORK/bad")"
rc=0
"$G" create --name bad --memory 1GiB --swap maybe >"$WORK/out" 2>&1 || rc=$?
expect_eq "gpuslice create --swap maybe exits 2" "$rc" 2

# The mode is kept across a restart (it is part of the stored spec).
daemon_kill9
daemon_up --config "$WORK/cfg.yaml"
jcheck "$("$G" show n2 --json)" 'd["spec"]["swap"] == "never"'
jcheck "$("$G" show a7 --json)" 'd["spec"]["swap"] == "allow"'
daemon_stop

# Bad settings are refused at start, with one clear line.
bad() { # bad YAML_SWAP_BODY EXPECTED_TEXT
	printf 'swap:\n%s\n' "$1" >"$WORK/bad.yaml"
	"$D" --config "$WORK/bad.yaml" --check-config >"$WORK/bad.out" 2>&1 &&
		fail "accepted: $1"
	grep -qF "$2" "$WORK/bad.out" || fail "for '$1': $(cat "$WORK/bad.out")"
}
bad '  oversubscribe: 0.5' "bad.yaml:2: swap.oversubscribe must be 1..100 (1 = off), got '0.5'"
bad '  oversubscribe: -2' "swap.oversubscribe must be 1..100 (1 = off), got '-2'"
bad '  oversubscribe: nan' "swap.oversubscribe must be 1..100 (1 = off), got 'nan'"
bad '  oversubscribe: inf' "swap.oversubscribe must be 1..100 (1 = off), got 'inf'"
bad '  oversubscribe: lots' "swap.oversubscribe: 'lots' is not a number"
bad '  oversubscribe: 2' "swap.oversubscribe 2 needs swap.host_memory"
bad '  idle_after: -5s' "swap.idle_after must be 0..604800 seconds, got '-5s'"
bad '  idle_after: soon' "swap.idle_after: 'soon' is not a duration"
bad '  host_memory: lots' "host_memory"
bad '  swapiness: 3' "unknown key 'swapiness' in swap"
echo "ok: promises reach swap.oversubscribe x memory, never slices are not oversubscribable, bad settings refused"
