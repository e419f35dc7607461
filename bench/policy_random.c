/*
 * policy_random.c - Random: a feasible node drawn uniformly, then a
 * fitting device drawn uniformly, as in the simulator. The replay makes
 * both draws (GS__TP_RANDOM_NODE, GS__DEV_RANDOM) from the run's one
 * random stream; there is nothing to score.
 */
#include "trace_int.h"

const struct gs__trace_policy_ops gs__trace_policy_random = {
    .flags = GS__TP_RANDOM_NODE,
    .devsel = GS__DEV_RANDOM,
};
