/*
 * advisor.h - which GPU-sharing mechanism fits a workload: the eight-
 * question decision tree from the seed article on picking a mechanism
 * (seeds/004), cross-checked against the workload matrices of seeds/001
 * and seeds/003 (see advisor.c for where they agree and differ).
 *
 * The walk is pure: the caller fills in the answers it has, and
 * gs_advisor_walk follows the tree until it reaches a leaf or a question
 * without an answer. Questions the path does not reach are never needed.
 *
 *   Q1 hard-isolation    yes | no | single-tenant
 *        single-tenant -> NONE
 *        yes           -> Q2
 *        no            -> Q3
 *   Q2 mig-gpu (is the GPU MIG-capable, A100/A30/H100 or newer)
 *        yes -> MIG       no -> NONE (single tenant: nothing else isolates)
 *   Q3 workload          batch -> Q5    latency -> Q4
 *   Q4 memory-isolation  yes -> Q7      no (soft jitter is fine) -> Q5
 *   Q5 own-driver        yes -> Q6      no (cloud-managed) -> TIMESLICE_PLUGIN
 *   Q6 sm-bound          yes -> Q8      no -> TIMESLICE_OPERATOR
 *   Q7 soft-compute-ok   yes -> FRACTIONS   no -> Q2
 *   Q8 accept-fault-sharing  yes -> MPS  no -> TIMESLICE_OPERATOR
 */
#ifndef GS_ADVISOR_H
#define GS_ADVISOR_H

#include <stdbool.h>
#include <stddef.h>

#include "gs/catalog.h"
#include "gs/err.h"
#include "gs/spec.h"

/* X(NAME, flag name without "--", question text, answers "a|b[|c]") */
#define GS_ADVISOR_QUESTIONS(X)                                                \
	X(HARD_ISOLATION, "hard-isolation",                                    \
	  "Is hard isolation required between tenants (multi-org, "            \
	  "regulatory or compliance mandate), or will one tenant use the "     \
	  "whole GPU?",                                                        \
	  "yes|no|single-tenant")                                              \
	X(MIG_GPU, "gpu",                                                      \
	  "Which GPU model (MIG needs A100, A30, H100 or newer)?", "yes|no")   \
	X(WORKLOAD, "workload",                                                \
	  "Is the workload throughput batch (training, preprocessing) or "     \
	  "latency-sensitive multi-tenant inference?",                         \
	  "batch|latency")                                                     \
	X(MEMORY_ISOLATION, "memory-isolation",                                \
	  "Does each tenant need its own bounded GPU memory?", "yes|no")       \
	X(OWN_DRIVER, "own-driver",                                            \
	  "Does the platform team manage the GPU driver itself (on-prem), "    \
	  "rather than a cloud provider?",                                     \
	  "yes|no")                                                            \
	X(SM_BOUND, "sm-bound",                                                \
	  "Is SM utilisation the bottleneck (many small kernels, batched "     \
	  "inference)?",                                                       \
	  "yes|no")                                                            \
	X(SOFT_COMPUTE_OK, "soft-compute-ok",                                  \
	  "Can tenants live with a soft (rate-limited) compute share?",        \
	  "yes|no")                                                            \
	X(ACCEPT_FAULT_SHARING, "accept-fault-sharing",                        \
	  "Can tenants accept that a fatal GPU error in one may take down "    \
	  "the others?",                                                       \
	  "yes|no")

/* clang-format off */
enum gs_advisor_question {
#define GS__ADVQ_ENUM(name, flag, text, answers) GS_ADVQ_##name,
	GS_ADVISOR_QUESTIONS(GS__ADVQ_ENUM)
#undef GS__ADVQ_ENUM
	GS_ADVQ__COUNT
};
/* clang-format on */

/*
 * Answers. GS_ANS_UNSET means "not given". Q1 takes YES, NO or
 * SINGLE_TENANT; Q3 takes BATCH or LATENCY; every other question YES/NO.
 */
enum gs_advisor_answer {
	GS_ANS_UNSET = 0,
	GS_ANS_YES,
	GS_ANS_NO,
	GS_ANS_SINGLE_TENANT,
	GS_ANS_BATCH,
	GS_ANS_LATENCY,
};

/* X(NAME, json name, slice mode auto picks, whole GPU) */
#define GS_ADVISOR_MECHANISMS(X)                                               \
	X(NONE, "none", GS_MODE_TIMESLICE, true)                               \
	X(MIG, "mig", GS_MODE_MIG, false)                                      \
	X(MPS, "mps", GS_MODE_MPS, false)                                      \
	X(FRACTIONS, "fractions", GS_MODE_TIMESLICE, false)                    \
	X(TIMESLICE_OPERATOR, "timeslice-operator", GS_MODE_TIMESLICE, false)  \
	X(TIMESLICE_PLUGIN, "timeslice-plugin", GS_MODE_TIMESLICE, false)

/* clang-format off */
enum gs_advisor_mechanism {
#define GS__ADVM_ENUM(name, json, mode, whole) GS_ADVM_##name,
	GS_ADVISOR_MECHANISMS(GS__ADVM_ENUM)
#undef GS__ADVM_ENUM
	GS_ADVM__COUNT
};
/* clang-format on */

struct gs_advisor_answers {
	enum gs_advisor_answer a[GS_ADVQ__COUNT];
};

#define GS_ADVISOR_MAX_PATH GS_ADVQ__COUNT

struct gs_advice {
	bool done;                           /* a leaf was reached */
	enum gs_advisor_question need;       /* when !done: the next question */
	enum gs_advisor_mechanism mechanism; /* when done */
	int n_path;                          /* questions answered, in order */
	enum gs_advisor_question path[GS_ADVISOR_MAX_PATH];
	enum gs_advisor_answer path_answer[GS_ADVISOR_MAX_PATH];
	bool mps_missing; /* auto reached MPS on a node without MPS: turns */
};

/*
 * Walks the tree with the answers given. GS_OK with out->done when a leaf
 * was reached; GS_OK with !out->done and out->need naming the first
 * unanswered question on the path; GS_ERR_INVALID when an answer is not one
 * the question takes (the errbuf names the flag and the value).
 */
gs_err gs_advisor_walk(const struct gs_advisor_answers *ans,
                       struct gs_advice *out, struct gs_errbuf *eb);

/*
 * The path a walk took, as text: "hard-isolation=no, mig-gpu=yes, ...
 * -> mps" (flag=answer per question, then the leaf's mechanism when one
 * was reached). Always NUL-terminated; truncated to fit. Returns the
 * length written. With mps_missing the text ends "-> mps; no MPS control
 * daemon here -> timeslice".
 */
size_t gs_advisor_explain(const struct gs_advice *adv, char *buf, size_t len);

/* Question texts and names; NULL for an out-of-range value. */
const char *gs_advisor_question_flag(enum gs_advisor_question q);
const char *gs_advisor_question_text(enum gs_advisor_question q);
/* "yes|no", "batch|latency", "yes|no|single-tenant". */
const char *gs_advisor_question_answers(enum gs_advisor_question q);
/* Parses an answer for a question ("yes", "single-tenant", "latency"). */
gs_err gs_advisor_parse_answer(enum gs_advisor_question q, const char *text,
                               enum gs_advisor_answer *out,
                               struct gs_errbuf *eb);
const char *gs_advisor_answer_name(enum gs_advisor_answer a);

/* Leaf facts: JSON name, a one-line title, the trade-off (our words). */
const char *gs_advisor_mechanism_name(enum gs_advisor_mechanism m);
const char *gs_advisor_mechanism_title(enum gs_advisor_mechanism m);
const char *gs_advisor_tradeoff(enum gs_advisor_mechanism m);
/* The slice mode `auto` picks for the leaf, and whether it takes the whole
 * GPU (the "no sharing" leaves: all memory, 100% compute, no neighbours). */
enum gs_slice_mode gs_advisor_mode(enum gs_advisor_mechanism m);
bool gs_advisor_whole_gpu(enum gs_advisor_mechanism m);
/* How gpuslice realises the leaf, one sentence. */
const char *gs_advisor_mode_note(enum gs_advisor_mechanism m);

/*
 * Q2 from a GPU model: MIG-capable when the catalog knows it (the catalog
 * holds exactly the MIG-capable models). A NULL model answers NO.
 */
enum gs_advisor_answer gs_advisor_mig_answer(const struct gs_gpu_model *m);

/*
 * What `mode=auto` resolves to for a spec on a GPU (model NULL when the
 * GPU is not MIG-capable). The spec's isolation need answers the tree:
 *   exclusive -> single-tenant;  hard -> hard isolation (MIG or none);
 *   memory    -> latency, memory isolation, soft compute ok (fractions:
 *                gpuslice's turns, a fault domain of its own);
 *   none      -> batch, own driver (gpuslice runs on the node), SM-bound
 *                (a fraction leaves SMs idle for others) and tenants
 *                accept a shared fault domain: MPS-backed fractions.
 * `mps` says whether the node can run MPS (an MPS control daemon binary
 * was found): without it the MPS leaf falls back to time-slicing (turns),
 * and advice->mps_missing says so. A spec with a mode other than auto
 * keeps it. OUT: *mode, and *advice (may be NULL) with the path taken.
 */
gs_err gs_advisor_auto_mode(const struct gs_slice_spec *spec,
                            const struct gs_gpu_model *model, bool mps,
                            enum gs_slice_mode *mode, struct gs_advice *advice,
                            struct gs_errbuf *eb);

#endif
