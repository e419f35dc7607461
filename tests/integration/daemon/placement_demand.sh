#!/usr/bin/env bash
# Placement follows the demand gpusliced has seen. On a simulated node of
# two 80 GB GPUs, after many requests for 40 GiB slices, with GPU 0 holding
# 35 GiB and GPU 1 20 GiB, a new 10 GiB slice goes:
#   frag     to GPU 1 (45 + 50 GiB left: two more 40 GiB slices fit)
#   binpack  to GPU 0, the fuller (35 + 60 left: only one fits)
#   spread   to GPU 1, the emptier
# and then two 40 GiB slices are asked for: both fit after frag and
# spread, the second is refused after binpack. GET /v1/demand shows the
# classes with their weights, and the history survives a restart (the
# store's demand table). With no `node.placement` the policy is frag.
. "$(dirname "$0")/lib.sh" "$1"

"$G" sim init --gpus 2xH100-SXM5-80GB --dir "$GPUSLICE_SIM_DIR" >/dev/null

# scenario POLICY WANT_GPU WANT_SECOND_LARGE_STATUS
scenario() {
	local policy=$1 want_gpu=$2 want_second=$3 out i
	rm -rf "$STATE"
	if [ "$policy" = default ]; then
		: >"$WORK/cfg.yaml"
	else
		printf 'node:\n  placement: %s\n' "$policy" >"$WORK/cfg.yaml"
	fi
	daemon_up --config "$WORK/cfg.yaml"
	# The demand: eight 40 GiB slices asked for (and given back).
	for i in 1 2 3 4 5 6 7 8; do
		api POST /v1/slices "{\"name\": \"big-$i\", \"memory\": \"40GiB\"}" >/dev/null
		expect_status "$policy: big-$i" 201
		api DELETE "/v1/slices/big-$i" >/dev/null
		expect_status "$policy: delete big-$i" 200
	done
	api POST /v1/slices '{"name": "a", "memory": "35GiB", "gpu": 0}' >/dev/null
	expect_status "$policy: a" 201
	api POST /v1/slices '{"name": "b", "memory": "20GiB", "gpu": 1}' >/dev/null
	expect_status "$policy: b" 201
	out=$(api POST /v1/slices '{"name": "small", "memory": "10GiB"}')
	expect_status "$policy: small" 201
	expect_eq "$policy: GPU of the small slice" \
		"$(jq_py "$out" 'd["gpu"]["index"]')" "$want_gpu"
	api POST /v1/slices '{"name": "large-1", "memory": "40GiB"}' >/dev/null
	expect_status "$policy: first large slice" 201
	api POST /v1/slices '{"name": "large-2", "memory": "40GiB"}' >/dev/null
	expect_status "$policy: second large slice" "$want_second"
	daemon_stop
}

scenario frag 1 201
scenario binpack 0 409
scenario spread 1 201
scenario default 1 201

# ---- GET /v1/demand, and the history across a restart ----
daemon_up --config "$WORK/cfg.yaml"
out=$(api GET /v1/demand)
expect_status "demand" 200
jcheck "$out" 'd["placement"] == "frag" and d["half_life_seconds"] == 86400'
# 8 + 2 (large-1, large-2) requests of 40 GiB, one each of 35, 20, 10
jcheck "$out" 'd["classes"][0]["kind"] == "fraction" and d["classes"][0]["memory_bytes"] == 40 * 2**30'
jcheck "$out" 'abs(d["classes"][0]["weight"] - 10) < 0.01'
jcheck "$out" 'len(d["classes"]) == 4 and abs(d["total_weight"] - 13) < 0.01'
jcheck "$out" 'd["classes"][0]["gpu_milli"] == 40 * 2**30 * 1000 // d["gpu_memory_bytes"]'
jcheck "$out" 'all(c["num_gpu"] == 1 and c["last_seen"].endswith("Z") for c in d["classes"])'
# whole GPUs and MIG profiles are classes of their own
api POST /v1/slices '{"name": "w", "isolation": "exclusive"}' >/dev/null
api DELETE /v1/slices/w >/dev/null
api POST /v1/slices '{"name": "m", "mode": "mig", "mig-profile": "1g.10gb"}' >/dev/null
out=$(api GET /v1/demand)
jcheck "$out" '{"kind": "whole", "gpu_milli": 1000} .items() <= [c for c in d["classes"] if c["kind"] == "whole"][0].items()'
jcheck "$out" '[c for c in d["classes"] if c["kind"] == "mig"][0]["mig_profile"] == "1g.10gb"'
jcheck "$out" '[c for c in d["classes"] if c["kind"] == "mig"][0]["gpu_milli"] is None'
api POST /v1/demand '{}' >/dev/null
expect_status "POST demand" 405
echo "ok: placement follows the demand seen"
