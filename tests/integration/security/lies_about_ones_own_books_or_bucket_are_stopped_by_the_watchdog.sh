#!/usr/bin/env bash
# What file permissions cannot stop: Mallory lying about her own usage in
# her own owner file. The shim believes the books; the watchdog (action
# kill, every 300 ms) believes NVML:
#  - zeroing her books before each allocation takes her process past its
#    2 GiB cap (towards 10 GiB); it is killed within ~2 s of going over;
#  - holding her own token bucket full lets her burn run at ~100 % in a
#    20 % slice; it is killed within ~3 s (compute is judged over two
#    windows of at least 0.8 s).
. "$(dirname "$0")/lib.sh" "$1"
[ -x "$BURN" ] || { echo "SKIP: no gs-burn"; exit 77; }

sim_node
node_up kill

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# ---- zeroed books ----
tenant_api $MALLORY POST /v1/slices '{"name": "m2", "mode": "timeslice", "memory": "2GiB"}' >/dev/null
expect_status "create m2" 201
tenant_start $MALLORY m m2
over=0 t0=0 total=0
for i in 1 2 3 4 5 6 7; do
	kill -0 "$TPID" 2>/dev/null || break
	as_uid $MALLORY "$FORGE" zero "$RUNDIR" m2 >/dev/null 2>&1 || break
	n=$(grep -c '^alloc ' "$WORK/m.out" || true)
	(echo "alloc $((1536 << 20))" >&$TIN) 2>/dev/null || break
	wait_until 5 eval '[ "$(grep -c "^alloc " "'"$WORK/m.out"'")" -gt '"$n"' ] ||
		! kill -0 '"$TPID"' 2>/dev/null' || fail "the tenant neither answered nor died"
	rc=$(grep '^alloc ' "$WORK/m.out" | tail -1 | awk '{print $3}')
	[ "$(grep -c '^alloc ' "$WORK/m.out")" -gt "$n" ] && [ "$rc" = 0 ] || break
	total=$((total + 1536))
	if [ "$total" -gt 2048 ] && [ "$over" = 0 ]; then
		over=1
		t0=$(now_ms)
	fi
done
[ "$over" = 1 ] || fail "the shim never let the zeroed books past the cap (total ${total} MiB)"
wait_until 5 eval '! kill -0 '"$TPID"' 2>/dev/null' ||
	fail "the watchdog did not stop a process over its cap by NVML (${total} MiB in 2 GiB)"
zms=$(($(now_ms) - t0))
exec {TIN}>&-
[ "$(events_of m2 watchdog.kill)" -ge 1 ] || fail "no watchdog.kill event on m2"
[ "$zms" -le 2500 ] || fail "the process over its cap lived ${zms} ms"

# ---- a refilled bucket ----
tenant_api $MALLORY POST /v1/slices '{"name": "c20", "mode": "timeslice", "compute": 20}' >/dev/null
expect_status "create c20" 201
as_uid $MALLORY "$G" run --slice c20 -- "$BURN" --seconds 30 --memory 256MiB \
	>/dev/null 2>"$WORK/c20.err" &
PIDS+=($!)
wait_until 5 pgrep -u $MALLORY -x gs-burn >/dev/null || fail "the burn did not start: $(cat "$WORK/c20.err")"
CB=$(pgrep -u $MALLORY -x gs-burn | head -1)
PIDS+=("$CB")
as_uid $MALLORY "$FORGE" refill "$RUNDIR" c20 20 >"$WORK/refill.out" 2>&1 &
PIDS+=($!)
t0=$(now_ms)
wait_until 8 eval '! kill -0 '"$CB"' 2>/dev/null' ||
	fail "a burn with its own bucket held full was not stopped: $(api GET /v1/slices/c20)"
cms=$(($(now_ms) - t0))
grep -q "holding tokens" "$WORK/refill.out" || fail "the refill did not reach Mallory's own bucket: $(cat "$WORK/refill.out")"
[ "$(events_of c20 watchdog.kill)" -ge 1 ] || fail "no watchdog.kill event on c20"
[ "$cms" -le 3500 ] || fail "the burn over its share lived ${cms} ms"
echo "ok: zeroed books: ${total} MiB in a 2 GiB slice, killed ${zms} ms after going over; refilled bucket: killed after ${cms} ms"
