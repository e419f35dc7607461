#!/usr/bin/env bash
# The shim fails closed: once its own process entry no longer answers
# (Mallory bumped its generation in the 0666 usage file, hoping the shim
# treats "not found" as "no cap"), or its slice was deleted while it runs,
# the next allocation answers CUDA_ERROR_OUT_OF_MEMORY (2) instead of
# succeeding without a cap. Zeroing her own books does let the shim
# allocate past the cap - the shim trusts the books - but the watchdog
# sees the truth in NVML and kills the process (action kill).
. "$(dirname "$0")/lib.sh" "$1"

sim_node
node_up kill

# start_tenant NAME SLICE: Mallory's interactive tenant (tenant_start).
start_tenant() { tenant_start $MALLORY "$1" "$2"; }

# alloc NAME BYTES: the tenant's answer (the CUresult).
alloc() {
	local n
	n=$(grep -c '^alloc ' "$WORK/$1.out" || true)
	echo "alloc $2" >&$TIN
	wait_until 10 eval '[ "$(grep -c "^alloc " "'"$WORK/$1.out"'")" -gt '"$n"' ]' ||
		fail "tenant $1 did not answer: $(cat "$WORK/$1.err")"
	grep '^alloc ' "$WORK/$1.out" | tail -1 | awk '{print $3}'
}

M256=$((256 << 20))
# ---- a stale entry ----
tenant_api $MALLORY POST /v1/slices '{"name": "m1", "memory": "1GiB"}' >/dev/null
expect_status "create m1" 201
start_tenant t1 m1
expect_eq "first 256 MiB in m1" "$(alloc t1 $M256)" 0
as_uid $MALLORY "$FORGE" bump "$RUNDIR" "$TPID" >/dev/null || fail "bump failed"
expect_eq "256 MiB after the entry was tampered with" "$(alloc t1 $M256)" 2
exec {TIN}>&-

# ---- the slice deleted under a running process ----
tenant_api $MALLORY POST /v1/slices '{"name": "m2", "memory": "1GiB"}' >/dev/null
expect_status "create m2" 201
start_tenant t2 m2
expect_eq "first 256 MiB in m2" "$(alloc t2 $M256)" 0
tenant_api $MALLORY DELETE /v1/slices/m2 >/dev/null
expect_status "delete m2" 200
# The process is now in no slice: its next allocation gets no memory, or
# the watchdog (action kill) stops it first - either way it gets none.
n=$(grep -c '^alloc ' "$WORK/t2.out" || true)
(echo "alloc $M256" >&$TIN) 2>/dev/null || true # SIGPIPE: already stopped
wait_until 10 eval '[ "$(grep -c "^alloc " "'"$WORK/t2.out"'")" -gt '"$n"' ] ||
	! kill -0 '"$TPID"' 2>/dev/null' ||
	fail "tenant t2 neither answered nor was stopped: $(cat "$WORK/t2.err")"
if [ "$(grep -c '^alloc ' "$WORK/t2.out")" -gt "$n" ]; then
	expect_eq "256 MiB after its slice was deleted" \
		"$(grep '^alloc ' "$WORK/t2.out" | tail -1 | awk '{print $3}')" 2
else
	grep -q "pid=$TPID .*in no slice: killed" "$WORK/daemon.log" ||
		fail "t2 died after its slice was deleted, not by the watchdog"
	echo "t2 was stopped by the watchdog (in no slice) before it allocated"
fi
exec {TIN}>&-

# ---- zeroed books: past the shim, not past the watchdog ----
tenant_api $MALLORY POST /v1/slices '{"name": "m3", "memory": "2GiB"}' >/dev/null
expect_status "create m3" 201
start_tenant t3 m3
expect_eq "1 GiB in m3" "$(alloc t3 $((1 << 30)))" 0
as_uid $MALLORY "$FORGE" zero "$RUNDIR" m3 >/dev/null || fail "zero failed"
expect_eq "1.5 GiB more after zeroing the books (the shim trusts them)" \
	"$(alloc t3 $((1536 << 20)))" 0
wait_until 5 eval '! kill -0 '"$TPID"' 2>/dev/null' ||
	fail "the watchdog did not stop a process over its cap by NVML"
[ "$(events_of m3 watchdog.kill)" -ge 1 ] || fail "no watchdog.kill event on m3"
echo "ok: stale entry and deleted slice get no memory; zeroed books caught by NVML"
