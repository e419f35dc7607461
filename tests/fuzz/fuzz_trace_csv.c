/*
 * fuzz_trace_csv.c - libFuzzer target for the trace CSV reader
 * (bench/trace_csv.c) and, on what it accepts, a short replay.
 *
 * Input: two control bytes (seed/tune, policy), then either a node list,
 * "\n---\n" and a task list, or a task list alone (replayed on a fixed
 * two-node list). Whatever parses and is small is replayed with the
 * chosen policy, so odd but valid values (16-GPU nodes, zero CPU, model
 * restrictions, lists without GPU demand) reach the replay too.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../bench/trace_csv.h"
#include "gs/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char fixed_nodes[] = "sn,cpu_milli,memory_mib,gpu,model\n"
                                  "a,96000,393216,8,G2\n"
                                  "b,104000,524288,2,T4\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gs_trace_models models = {0};
	struct gs_trace_node *nodes = NULL;
	struct gs_trace_pod *pods = NULL;
	struct gs_errbuf eb = {0};
	const char *text, *sep;
	size_t len, nn = 0, np = 0;
	uint8_t mode, pol;

	if (size < 2)
		return 0;
	mode = data[0];
	pol = data[1];
	text = (const char *)data + 2;
	len = size - 2;
	sep = memmem(text, len, "\n---\n", 5);
	if (sep != NULL) {
		if (gs_trace_csv_parse_nodes(text, (size_t)(sep - text),
		                             "nodes", &models, &nodes, &nn,
		                             &eb) != GS_OK)
			return 0;
		len -= (size_t)(sep + 5 - text);
		text = sep + 5;
	} else if (gs_trace_csv_parse_nodes(
	               fixed_nodes, sizeof(fixed_nodes) - 1, "nodes", &models,
	               &nodes, &nn, &eb) != GS_OK) {
		abort(); /* the fixed list must parse */
	}
	if (gs_trace_csv_parse_pods(text, len, "pods", &models, &pods, &np,
	                            &eb) == GS_OK &&
	    nn <= 64 && np <= 64) {
		struct gs_trace_replay_cfg cfg;
		struct gs_trace_result *r = malloc(sizeof(*r));

		gs_trace_replay_cfg_default(&cfg);
		cfg.seed = mode;
		cfg.tune = (mode & 1) ? 1.3 : 0;
		cfg.shuffle = (mode & 2) != 0;
		if (r != NULL)
			(void)gs_trace_replay(nodes, nn, pods, np,
			                      (enum gs_trace_policy)(
			                          pol % GS_TRACE_POLICY__COUNT),
			                      &cfg, r, &eb);
		free(r);
	}
	free(nodes);
	free(pods);
	return 0;
}
