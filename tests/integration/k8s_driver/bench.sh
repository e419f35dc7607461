#!/usr/bin/env bash
# bench.sh BUILD_DIR [ROUNDS]: the DRA driver's NodePrepareResources
# latency on the simulated node - gs_kdra_prepare from the claim GET (a
# loopback stand-in API server) through slice creation in gpusliced, the
# CDI spec and the checkpoint (two fsyncs each) - and unprepare, over
# ROUNDS (default 200) prepare + unprepare rounds of an 8Gi / 25 % claim.
# Target: p99 <= 50 ms. Then the ResourceSlice writes one GPU fault costs
# (publisher_converges.sh). For scripts/bench.sh; prints figures, asserts
# nothing but that every round succeeded.
. "$(dirname "$0")/lib.sh" "$1"
node_up
U=b0b0b0b0-0000-4000-8000-000000000001
claim bench "$U" gpu-0 '{"memory": "8Gi", "compute": "25"}'
b=$(kdra bench "${2:-200}" ns bench "$U")
jcheck "$b" 'd["errors"] == 0'
echo "   NodePrepareResources (driver side, incl. slice creation; sim, $(jq_py "$b" 'd["n"]') rounds):" \
	"p50 $(jq_py "$b" 'round(d["prepare_p50_ms"], 2)') ms, p99 $(jq_py "$b" 'round(d["prepare_p99_ms"], 2)') ms (target <= 50 ms);" \
	"NodeUnprepareResources p99 $(jq_py "$b" 'round(d["unprepare_p99_ms"], 2)') ms"
# ResourceSlice writes per GPU fault against a stand-in that behaves as a
# 1.36 API server (timeAdded set by the server, canonical quantities):
# target one write per slice of the pool.
w=$(GS_SRC=$SRC bash "$SRC/tests/integration/k8s_api/publisher_converges.sh" "$B" 2>&1 |
	grep -E '^GPU fault:|^SKIP') || true
echo "   ResourceSlice writes per GPU fault (stand-in as 1.36, sim): ${w#GPU fault: }"
