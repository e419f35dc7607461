#!/usr/bin/env bash
# Slice labels: a slice created with a `labels` object keeps them across a
# daemon restart (stored in SQLite), `gpuslice show --json` and
# `list --json` show them, and /metrics carries them on the slice's
# gpuslice_slice_info series with values escaped. Bad labels are refused
# naming the field.
. "$(dirname "$0")/lib.sh" "$1"

daemon_up
api POST /v1/slices '{"name": "lab-1", "memory": "1GiB", "labels": {"k8s_namespace": "team-a", "k8s_claim": "c\"q\\x\ny", "k8s_pod": "p1,p2"}}' >/dev/null
expect_status "lab-1" 201
api POST /v1/slices '{"name": "lab-2", "memory": "1GiB", "labels": {"Bad": "x"}}' >"$WORK/bad"
expect_status "an upper-case key is refused" 400
grep -q "labels: key 'Bad'" "$WORK/bad" || fail "the error does not name the key: $(cat "$WORK/bad")"
api POST /v1/slices '{"name": "lab-2", "memory": "1GiB", "labels": {"slice": "x"}}' >/dev/null
expect_status "a key gpuslice_slice_info already has is refused" 400
api POST /v1/slices '{"name": "lab-2", "memory": "1GiB", "labels": {"a": "1", "b": "1", "c": "1", "d": "1", "e": "1", "f": "1", "g": "1", "h": "1", "i": "1"}}' >/dev/null
expect_status "nine labels are refused" 400
long=$(printf 'v%.0s' $(seq 254))
api POST /v1/slices '{"name": "lab-2", "memory": "1GiB", "labels": {"k": "'"$long"'"}}' >/dev/null
expect_status "a 254-byte value is refused" 400

daemon_kill9
daemon_up
want='{"k8s_claim": "c\"q\\x\ny", "k8s_namespace": "team-a", "k8s_pod": "p1,p2"}'
jcheck "$("$G" show lab-1 --json)" 'd["labels"] == '"$want"
jcheck "$("$G" list --json)" '[s["labels"] for s in d["slices"] if s["name"] == "lab-1"] == ['"$want"']'
api GET /metrics >"$WORK/metrics"
grep -F 'gpuslice_slice_info{gpu="0",slice="lab-1",team="' "$WORK/metrics" >"$WORK/info" ||
	fail "no info series for lab-1"
grep -qF ',k8s_claim="c\"q\\x\ny",k8s_namespace="team-a",k8s_pod="p1,p2"} 1' "$WORK/info" ||
	fail "labels missing or not escaped: $(cat "$WORK/info")"
echo ok
