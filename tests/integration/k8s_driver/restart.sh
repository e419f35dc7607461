#!/usr/bin/env bash
# The plugin restarts in the middle of prepare: whatever it had done is
# found again, nothing is lost and nothing is made twice.
#  - a crash after the slice was made but before the CDI spec and the
#    "prepared" record: the retried prepare adopts the slice (one slice);
#    an unprepare instead deletes it;
#  - a prepared claim survives a restart (the checkpoint answers, even
#    with the API server failing), and a reboot that wiped /var/run/cdi
#    gets its spec written again for the same slice; a slice gpusliced
#    lost is made again;
#  - kill -9 at random moments of prepare, then a retry: exactly one slice,
#    one CDI spec, one record; unprepare leaves none.
. "$(dirname "$0")/lib.sh" "$1"
node_up
U=c3a1e5f0-0000-4000-8000-0000000000
mkdir -p "$KSTATE"

# A crash between POST /v1/slices and the CDI spec: the record says
# "preparing" and the slice exists.
claim r1 "${U}01" gpu-1 '{"memory": "8Gi", "compute": "25"}'
cat >"$KSTATE/checkpoint.json" <<CK
{"version": 1, "claims": {"${U}01": {"namespace": "ns", "name": "r1", "slice": "k8s-${U}01", "state": "preparing"}}}
CK
api POST /v1/slices '{"name": "k8s-'"${U}01"'", "memory": 8589934592, "compute": 25, "gpu": 1, "mode": "timeslice", "priority": "normal", "weight": 1, "isolation": "none", "on_exit": "keep"}' >/dev/null
expect_status "the slice a crashed prepare made" 201
out=$(kdra prepare ns r1 "${U}01")
jcheck "$out" 'd["error"] is None and d["devices"][0]["cdi"] == ["gpuslice.io/slice=k8s-'"${U}01"'"]'
expect_eq "slices after the adopting prepare" "$(slices | tr '\n' ' ')" "k8s-${U}01 "
[ -f "$CDI/gpuslice.io-slice_k8s-${U}01.json" ] || fail "no CDI spec after the adopting prepare"
jcheck "$(cat "$KSTATE/checkpoint.json")" 'd["claims"]["'"${U}01"'"]["state"] == "prepared"'
grep -q "adopted" "$WORK/probe.log" || fail "the driver did not say it adopted the slice"

# A prepared claim survives a restart: the checkpoint answers on its own.
echo 500 >"$CLAIMS/fault"
out=$(kdra prepare ns r1 "${U}01")
jcheck "$out" 'd["error"] is None and d["devices"][0]["device"] == "gpu-1"'
: >"$CLAIMS/fault"
expect_eq "slices after a restart" "$(slices | tr '\n' ' ')" "k8s-${U}01 "
# A node reboot wipes /var/run/cdi but not the checkpoint or the slice:
# the kubelet's prepare writes the spec again, for the same slice.
rm -f "$CDI"/*
jcheck "$(kdra prepare ns r1 "${U}01")" 'd["error"] is None'
[ -f "$CDI/gpuslice.io-slice_k8s-${U}01.json" ] || fail "the CDI spec was not written again"
expect_eq "slices after the reboot" "$(slices | tr '\n' ' ')" "k8s-${U}01 "
# gpusliced lost the slice (an admin deleted it): the next prepare makes it
# again with the claim's limits.
api DELETE "/v1/slices/k8s-${U}01" >/dev/null
expect_status "delete behind the driver's back" 200
jcheck "$(kdra prepare ns r1 "${U}01")" 'd["error"] is None'
jcheck "$(api GET "/v1/slices/k8s-${U}01")" 'd["memory_bytes"] == 8 * 2**30 and d["compute"] == 25'
jcheck "$(kdra unprepare ns r1 "${U}01")" 'd["error"] is None'

# The same crash, then the kubelet gives up and unprepares.
cat >"$KSTATE/checkpoint.json" <<CK
{"version": 1, "claims": {"${U}01": {"namespace": "ns", "name": "r1", "slice": "k8s-${U}01", "state": "preparing"}}}
CK
api POST /v1/slices '{"name": "k8s-'"${U}01"'", "memory": 8589934592, "compute": 25, "gpu": 1}' >/dev/null
expect_status "the slice a crashed prepare made" 201
jcheck "$(kdra unprepare ns r1 "${U}01")" 'd["error"] is None'
expect_eq "slices after unprepare of a preparing claim" "$(slices | tr '\n' ' ')" ""
jcheck "$(cat "$KSTATE/checkpoint.json")" 'd["claims"] == {}'

# kill -9 at random points of prepare, then a retry.
claim r2 "${U}02" gpu-0 '{"memory": "4Gi", "compute": "30"}'
kills=0
for i in $(seq 12); do
	"$PROBE" --node "$NODE" --state "$KSTATE" --cdi "$CDI" --socket "$SOCK" \
		--kubeconfig "$WORK/kubeconfig" --shim "$SHIM" \
		prepare ns r2 "${U}02" >/dev/null 2>>"$WORK/probe.log" &
	p=$!
	sleep "0.00$((RANDOM % 10))"
	kill -9 "$p" 2>/dev/null && kills=$((kills + 1))
	wait "$p" 2>/dev/null || true
	n=$(slices | wc -l)
	[ "$n" -le 1 ] || fail "round $i: $n slices for one claim: $(slices)"
	# A kill that landed after the slice was made: undo it like the
	# kubelet would when the pod goes away, half the time.
	if [ $((i % 2)) -eq 0 ]; then
		jcheck "$(kdra unprepare ns r2 "${U}02")" 'd["error"] is None'
		expect_eq "round $i: slices after unprepare" "$(slices | tr '\n' ' ')" ""
	fi
done
echo "killed $kills prepares in flight"
out=$(kdra prepare ns r2 "${U}02")
jcheck "$out" 'd["error"] is None'
expect_eq "slices after the retry" "$(slices | tr '\n' ' ')" "k8s-${U}02 "
jcheck "$(api GET "/v1/slices/k8s-${U}02")" 'd["memory_bytes"] == 4 * 2**30 and d["compute"] == 30'
expect_eq "CDI specs" "$(ls "$CDI" | tr '\n' ' ')" "gpuslice.io-slice_k8s-${U}02.json "
jcheck "$(cat "$KSTATE/checkpoint.json")" 'list(d["claims"]) == ["'"${U}02"'"] and d["claims"]["'"${U}02"'"]["state"] == "prepared"'
ls -a "$KSTATE" "$CDI" | grep -q '^\.\(checkpoint\|gpuslice\).*\.json\.' && fail "temp files left: $(ls -a "$KSTATE" "$CDI")"
jcheck "$(kdra unprepare ns r2 "${U}02")" 'd["error"] is None'
expect_eq "slices at the end" "$(slices | tr '\n' ' ')" ""
echo ok
