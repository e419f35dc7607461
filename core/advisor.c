/*
 * advisor.c - the GPU-sharing decision tree (see advisor.h for its shape).
 *
 * The tree is seeds/004's: eight questions, the strongest constraint first,
 * and "no sharing" as a real answer. The leaves' trade-off texts are our
 * own words. How the other seed material lines up with it:
 *
 * - seeds/001 ("when to choose each approach"): MIG for untrusted
 *   multi-tenant serving where one crash must not reach others - agrees
 *   with Q1=yes -> Q2 -> MIG. MPS for trusted code from known teams where
 *   an occasional shared failure is acceptable - agrees with Q8 (accept
 *   fault sharing) -> MPS. Time-slicing for development clusters,
 *   notebooks, many queued jobs - agrees with the time-slicing leaves.
 *   Differs: 001 warns against time-slicing under strict latency SLOs,
 *   while 004 sends latency-sensitive work without memory-isolation needs
 *   (Q4=no) on to Q5 and possibly time-slicing; we keep 004's routing but
 *   the latency trade-off is spelled out in the time-slicing leaves. 001
 *   also warns that MIG wastes capacity when job sizes differ widely; 004
 *   does not ask about sizes. gpuslice's MIG planner (migplan.c) is our
 *   answer to that: it re-plans the layout from demand.
 * - seeds/003 (benchmark study): light inference does well under both
 *   time-slicing and MPS, MPS with lower overhead - consistent with Q6
 *   (SM-bound -> MPS). Heavy inference: MPS with per-client limits gave
 *   the best performance isolation short of MIG; 004 has no "MPS with
 *   limits" leaf and sends memory-isolation needs to software fractions
 *   (Q7) instead. In gpuslice the two meet: mode=mps sets MPS thread and
 *   pinned-memory limits *and* the shim's memory cap. 003 ranks fault
 *   isolation MIG > time-slicing > MPS, which is exactly why Q8 asks
 *   before choosing MPS. 003's MIG finding (fixed sizes, right-sizing
 *   matters) agrees with the MIG leaf's trade-off.
 * - seeds/000 calls time-slicing "not recommended for most scenarios";
 *   004 makes it the default for shared batch work with the platform's
 *   own driver. We follow 004 - gpuslice's shim adds the memory cap and
 *   weighted turns that plain time-slicing lacks.
 */
#include "gs/advisor.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

struct question_info {
	const char *flag;
	const char *text;
	const char *answers;
};

static const struct question_info questions[GS_ADVQ__COUNT] = {
#define GS__ADVQ_INFO(name, flag, text, answers)                               \
	[GS_ADVQ_##name] = {flag, text, answers},
    GS_ADVISOR_QUESTIONS(GS__ADVQ_INFO)
#undef GS__ADVQ_INFO
};

struct mech_info {
	const char *name;
	enum gs_slice_mode mode;
	bool whole_gpu;
};

static const struct mech_info mechs[GS_ADVM__COUNT] = {
#define GS__ADVM_INFO(name, json, mode, whole)                                 \
	[GS_ADVM_##name] = {json, mode, whole},
    GS_ADVISOR_MECHANISMS(GS__ADVM_INFO)
#undef GS__ADVM_INFO
};

/*
 * Titles, trade-offs and notes are kept in a switch rather than in the
 * X-macro so the compiler flags a mechanism added without its text.
 */
const char *gs_advisor_mechanism_title(enum gs_advisor_mechanism m)
{
	switch (m) {
	case GS_ADVM_NONE:
		return "No sharing: one tenant per GPU";
	case GS_ADVM_MIG:
		return "MIG: hardware partitions";
	case GS_ADVM_MPS:
		return "MPS: concurrent kernels through one server per GPU";
	case GS_ADVM_FRACTIONS:
		return "Enforced fractions: hard memory cap, soft compute share";
	case GS_ADVM_TIMESLICE_OPERATOR:
		return "Time-slicing, run with the platform's own driver stack";
	case GS_ADVM_TIMESLICE_PLUGIN:
		return "Time-slicing through the device plugin alone (cloud-managed driver)";
	case GS_ADVM__COUNT:
		break;
	}
	return NULL;
}

const char *gs_advisor_tradeoff(enum gs_advisor_mechanism m)
{
	switch (m) {
	case GS_ADVM_NONE:
		return "The GPU is reserved for one tenant whether or not it is busy: you pay in idle capacity, and in return no neighbour can slow, starve or crash the workload. Where hard isolation is required but the GPU cannot do MIG, this is the only safe answer.";
	case GS_ADVM_MIG:
		return "Memory, compute, cache and faults are isolated in hardware, but only in the fixed profile sizes the GPU offers; changing the layout means emptying the instances being replaced, so sizes have to be planned.";
	case GS_ADVM_MPS:
		return "Kernels from several processes run side by side, which lifts SM use for small-kernel work, but a fatal error in one client can take down the others on the same server, and a control daemon per GPU has to be run and upgraded with the driver.";
	case GS_ADVM_FRACTIONS:
		return "Each tenant gets a hard memory cap enforced at the CUDA API, but compute is a rate limit: a burst of kernels can overshoot its share until the limiter catches up, and there is no fault isolation between tenants.";
	case GS_ADVM_TIMESLICE_OPERATOR:
		return "Simple and fair turns for many tenants, but nothing is isolated by the hardware: one tenant's crash or memory hog reaches the others, context switches add latency, and the driver stack is coupled to the cluster tooling, so upgrades need coordinated drains.";
	case GS_ADVM_TIMESLICE_PLUGIN:
		return "Works on a driver the platform does not own, but gives no isolation of any kind, adds context-switch latency, and GPU telemetry is not bundled: it has to be deployed and wired to monitoring separately.";
	case GS_ADVM__COUNT:
		break;
	}
	return NULL;
}

const char *gs_advisor_mode_note(enum gs_advisor_mechanism m)
{
	switch (m) {
	case GS_ADVM_NONE:
		return "auto gives the slice the whole GPU (all memory, 100% compute) and admits no other slice on it.";
	case GS_ADVM_MIG:
		return "auto asks the MIG planner for the smallest profile that holds the slice's memory and compute.";
	case GS_ADVM_MPS:
		return "auto runs the slice as an MPS client with an active-thread limit from its compute share and a pinned-memory limit plus the shim's cap from its memory.";
	case GS_ADVM_FRACTIONS:
		return "auto runs the slice time-sliced with the shim's hard memory cap and its GPU-time compute limiter.";
	case GS_ADVM_TIMESLICE_OPERATOR:
	case GS_ADVM_TIMESLICE_PLUGIN:
		return "auto runs the slice time-sliced; gpuslice's shim still caps memory and weights turns by priority.";
	case GS_ADVM__COUNT:
		break;
	}
	return NULL;
}

const char *gs_advisor_mechanism_name(enum gs_advisor_mechanism m)
{
	if ((unsigned)m >= GS_ADVM__COUNT)
		return NULL;
	return mechs[m].name;
}

enum gs_slice_mode gs_advisor_mode(enum gs_advisor_mechanism m)
{
	if ((unsigned)m >= GS_ADVM__COUNT)
		return GS_MODE_AUTO;
	return mechs[m].mode;
}

bool gs_advisor_whole_gpu(enum gs_advisor_mechanism m)
{
	return (unsigned)m < GS_ADVM__COUNT && mechs[m].whole_gpu;
}

const char *gs_advisor_question_flag(enum gs_advisor_question q)
{
	return (unsigned)q < GS_ADVQ__COUNT ? questions[q].flag : NULL;
}

const char *gs_advisor_question_text(enum gs_advisor_question q)
{
	return (unsigned)q < GS_ADVQ__COUNT ? questions[q].text : NULL;
}

const char *gs_advisor_question_answers(enum gs_advisor_question q)
{
	return (unsigned)q < GS_ADVQ__COUNT ? questions[q].answers : NULL;
}

const char *gs_advisor_answer_name(enum gs_advisor_answer a)
{
	switch (a) {
	case GS_ANS_YES:
		return "yes";
	case GS_ANS_NO:
		return "no";
	case GS_ANS_SINGLE_TENANT:
		return "single-tenant";
	case GS_ANS_BATCH:
		return "batch";
	case GS_ANS_LATENCY:
		return "latency";
	case GS_ANS_UNSET:
		break;
	}
	return "unset";
}

/* Whether `a` is one of the answers question `q` takes. */
static bool answer_fits(enum gs_advisor_question q, enum gs_advisor_answer a)
{
	switch (q) {
	case GS_ADVQ_HARD_ISOLATION:
		return a == GS_ANS_YES || a == GS_ANS_NO ||
		       a == GS_ANS_SINGLE_TENANT;
	case GS_ADVQ_WORKLOAD:
		return a == GS_ANS_BATCH || a == GS_ANS_LATENCY;
	default:
		return a == GS_ANS_YES || a == GS_ANS_NO;
	}
}

gs_err gs_advisor_parse_answer(enum gs_advisor_question q, const char *text,
                               enum gs_advisor_answer *out,
                               struct gs_errbuf *eb)
{
	static const enum gs_advisor_answer all[] = {
	    GS_ANS_YES,   GS_ANS_NO,      GS_ANS_SINGLE_TENANT,
	    GS_ANS_BATCH, GS_ANS_LATENCY,
	};

	if ((unsigned)q >= GS_ADVQ__COUNT)
		return gs_fail(eb, GS_ERR_INVALID, "unknown question");
	for (size_t i = 0; text && i < sizeof(all) / sizeof(all[0]); i++) {
		if (strcasecmp(text, gs_advisor_answer_name(all[i])) == 0 &&
		    answer_fits(q, all[i])) {
			*out = all[i];
			return GS_OK;
		}
	}
	return gs_fail(eb, GS_ERR_INVALID, "--%s takes %s, got '%s'",
	               questions[q].flag, questions[q].answers,
	               text ? text : "");
}

/*
 * The tree as a transition table: for each question, where each answer
 * leads. A target is either another question or a leaf.
 */
struct edge {
	bool leaf;
	int to; /* enum gs_advisor_question or enum gs_advisor_mechanism */
};

#define Q(x)                                                                   \
	{                                                                      \
		false, GS_ADVQ_##x                                             \
	}
#define L(x)                                                                   \
	{                                                                      \
		true, GS_ADVM_##x                                              \
	}

/* Indexed [question][answer]; unset/unfitting answers are never looked up. */
static const struct edge tree[GS_ADVQ__COUNT][GS_ANS_LATENCY + 1] = {
    [GS_ADVQ_HARD_ISOLATION] = {[GS_ANS_SINGLE_TENANT] = L(NONE),
                                [GS_ANS_YES] = Q(MIG_GPU),
                                [GS_ANS_NO] = Q(WORKLOAD)},
    [GS_ADVQ_MIG_GPU] = {[GS_ANS_YES] = L(MIG), [GS_ANS_NO] = L(NONE)},
    [GS_ADVQ_WORKLOAD] = {[GS_ANS_BATCH] = Q(OWN_DRIVER),
                          [GS_ANS_LATENCY] = Q(MEMORY_ISOLATION)},
    [GS_ADVQ_MEMORY_ISOLATION] =
        {[GS_ANS_YES] = Q(SOFT_COMPUTE_OK), [GS_ANS_NO] = Q(OWN_DRIVER)},
    [GS_ADVQ_OWN_DRIVER] =
        {[GS_ANS_YES] = Q(SM_BOUND), [GS_ANS_NO] = L(TIMESLICE_PLUGIN)},
    [GS_ADVQ_SM_BOUND] = {[GS_ANS_YES] = Q(ACCEPT_FAULT_SHARING),
                          [GS_ANS_NO] = L(TIMESLICE_OPERATOR)},
    [GS_ADVQ_SOFT_COMPUTE_OK] =
        {[GS_ANS_YES] = L(FRACTIONS), [GS_ANS_NO] = Q(MIG_GPU)},
    [GS_ADVQ_ACCEPT_FAULT_SHARING] =
        {[GS_ANS_YES] = L(MPS), [GS_ANS_NO] = L(TIMESLICE_OPERATOR)},
};

#undef Q
#undef L

gs_err gs_advisor_walk(const struct gs_advisor_answers *ans,
                       struct gs_advice *out, struct gs_errbuf *eb)
{
	enum gs_advisor_question q = GS_ADVQ_HARD_ISOLATION;

	memset(out, 0, sizeof(*out));
	/* The tree has no cycles; the bound is a guard for the table. */
	for (int step = 0; step < GS_ADVISOR_MAX_PATH; step++) {
		enum gs_advisor_answer a = ans->a[q];
		struct edge e;

		if (a == GS_ANS_UNSET) {
			out->need = q;
			return GS_OK;
		}
		if (!answer_fits(q, a))
			return gs_fail(eb, GS_ERR_INVALID,
			               "--%s takes %s, got '%s'",
			               questions[q].flag, questions[q].answers,
			               gs_advisor_answer_name(a));
		out->path[out->n_path] = q;
		out->path_answer[out->n_path] = a;
		out->n_path++;
		e = tree[q][a];
		if (e.leaf) {
			out->done = true;
			out->mechanism = (enum gs_advisor_mechanism)e.to;
			return GS_OK;
		}
		q = (enum gs_advisor_question)e.to;
	}
	return gs_fail(eb, GS_ERR_INTERNAL, "advisor tree has a cycle");
}

size_t gs_advisor_explain(const struct gs_advice *adv, char *buf, size_t len)
{
	size_t n = 0;

	if (len == 0)
		return 0;
	buf[0] = '\0';
	for (int i = 0; i < adv->n_path && n < len; i++) {
		int w = snprintf(buf + n, len - n, "%s%s=%s", i ? ", " : "",
		                 gs_advisor_question_flag(adv->path[i]),
		                 gs_advisor_answer_name(adv->path_answer[i]));

		if (w < 0)
			break;
		n += (size_t)w;
	}
	if (adv->done && n < len) {
		int w = snprintf(buf + n, len - n, " -> %s",
		                 gs_advisor_mechanism_name(adv->mechanism));

		if (w > 0)
			n += (size_t)w;
	}
	if (adv->done && adv->mps_missing && n < len) {
		int w = snprintf(buf + n, len - n,
		                 "; no MPS control daemon here -> %s",
		                 gs_mode_name(GS_MODE_TIMESLICE));

		if (w > 0)
			n += (size_t)w;
	}
	return n < len ? n : len - 1;
}

enum gs_advisor_answer gs_advisor_mig_answer(const struct gs_gpu_model *m)
{
	return m != NULL && m->n_profiles > 0 ? GS_ANS_YES : GS_ANS_NO;
}

gs_err gs_advisor_auto_mode(const struct gs_slice_spec *spec,
                            const struct gs_gpu_model *model, bool mps,
                            enum gs_slice_mode *mode, struct gs_advice *advice,
                            struct gs_errbuf *eb)
{
	struct gs_advisor_answers a = {{GS_ANS_UNSET}};
	struct gs_advice local;
	struct gs_advice *adv = advice ? advice : &local;
	gs_err err;

	if (spec->mode != GS_MODE_AUTO) {
		memset(adv, 0, sizeof(*adv));
		*mode = spec->mode;
		return GS_OK;
	}
	a.a[GS_ADVQ_MIG_GPU] = gs_advisor_mig_answer(model);
	switch (spec->isolation) {
	case GS_ISOLATION_EXCLUSIVE:
		a.a[GS_ADVQ_HARD_ISOLATION] = GS_ANS_SINGLE_TENANT;
		break;
	case GS_ISOLATION_HARD:
		a.a[GS_ADVQ_HARD_ISOLATION] = GS_ANS_YES;
		break;
	case GS_ISOLATION_MEMORY:
		a.a[GS_ADVQ_HARD_ISOLATION] = GS_ANS_NO;
		a.a[GS_ADVQ_WORKLOAD] = GS_ANS_LATENCY;
		a.a[GS_ADVQ_MEMORY_ISOLATION] = GS_ANS_YES;
		a.a[GS_ADVQ_SOFT_COMPUTE_OK] = GS_ANS_YES;
		break;
	case GS_ISOLATION_NONE:
	default:
		a.a[GS_ADVQ_HARD_ISOLATION] = GS_ANS_NO;
		a.a[GS_ADVQ_WORKLOAD] = GS_ANS_BATCH;
		a.a[GS_ADVQ_OWN_DRIVER] = GS_ANS_YES;
		a.a[GS_ADVQ_SM_BOUND] = GS_ANS_YES;
		a.a[GS_ADVQ_ACCEPT_FAULT_SHARING] = GS_ANS_YES;
		break;
	}
	/* A MIG profile named with mode=auto is a request for MIG. */
	if (spec->mig_profile[0]) {
		if (model == NULL)
			return gs_fail(eb, GS_ERR_UNSUPPORTED,
			               "mig-profile %s needs a MIG-capable GPU",
			               spec->mig_profile);
		*mode = GS_MODE_MIG;
		memset(adv, 0, sizeof(*adv));
		adv->done = true;
		adv->mechanism = GS_ADVM_MIG;
		return GS_OK;
	}
	err = gs_advisor_walk(&a, adv, eb);
	if (err != GS_OK)
		return err;
	if (!adv->done)
		return gs_fail(eb, GS_ERR_INTERNAL,
		               "advisor needs --%s for mode auto",
		               questions[adv->need].flag);
	*mode = gs_advisor_mode(adv->mechanism);
	if (*mode == GS_MODE_MPS && !mps) {
		adv->mps_missing = true;
		*mode = GS_MODE_TIMESLICE;
	}
	return GS_OK;
}
