/*
 * cmd_advise.c - `gpuslice advise`: which sharing mechanism fits a
 * workload, from the decision tree in core/advisor.c.
 *
 * Answers come from flags; a question the path needs and no flag answered
 * is asked on the terminal when stdin is one (prompts go to stderr so that
 * --json output stays clean), and is otherwise a usage error (exit 2) that
 * names the flag to pass.
 */
#include "cli.h"

#include "gs/advisor.h"
#include "gs/catalog.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CMD         "advise"
#define MAX_PROMPTS 5

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: gpuslice advise [options] [--json]\n"
	    "\n"
	    "Walks the GPU-sharing decision tree and names the mechanism that fits,\n"
	    "the trade-off it carries and the slice mode `auto` would pick.\n"
	    "Questions the answers do not reach are never asked. Missing answers are\n"
	    "asked interactively when stdin is a terminal; otherwise they are an error.\n"
	    "\n"
	    "options:\n"
	    "  --hard-isolation yes|no|single-tenant\n"
	    "                         hard isolation required (multi-org, compliance),\n"
	    "                         sharing fine, or one tenant per GPU\n"
	    "  --gpu MODEL            GPU model (H100, A100-40GB, T4, ...); MIG-capable\n"
	    "                         when it is in gpuslice's catalog\n"
	    "  --workload batch|latency\n"
	    "  --memory-isolation yes|no   each tenant needs bounded memory\n"
	    "  --own-driver yes|no    the platform manages the GPU driver (not a cloud)\n"
	    "  --sm-bound yes|no      SM use is the bottleneck (many small kernels)\n"
	    "  --soft-compute-ok yes|no    a rate-limited compute share is acceptable\n"
	    "  --accept-fault-sharing yes|no\n"
	    "                         a fatal error in one tenant may reach others\n"
	    "  --json                 print {\"mechanism\",\"tradeoff\",\"mode\",\"path\",...}\n"
	    "  -h, --help             this text\n"
	    "\n"
	    "mechanisms: none, mig, mps, fractions, timeslice-operator, timeslice-plugin\n"
	    "exit status: 0 advice given, 2 bad or missing answer\n");
}

struct advise_state {
	struct gs_advisor_answers ans;
	char gpu_text[128];               /* as given ("" if none) */
	const struct gs_gpu_model *model; /* catalog match, or NULL */
};

static gs_err set_gpu(struct advise_state *st, const char *text)
{
	(void)snprintf(st->gpu_text, sizeof(st->gpu_text), "%s", text);
	st->model = gs_catalog_find(text);
	st->ans.a[GS_ADVQ_MIG_GPU] = gs_advisor_mig_answer(st->model);
	return GS_OK;
}

static int find_question(const char *flag)
{
	for (int q = 0; q < GS_ADVQ__COUNT; q++)
		if (strcmp(flag, gs_advisor_question_flag(q)) == 0)
			return q;
	return -1;
}

/* Reads one line from stdin without its newline; false at EOF. */
static bool read_line(char *buf, size_t size)
{
	size_t n;

	if (fgets(buf, (int)size, stdin) == NULL)
		return false;
	n = strcspn(buf, "\r\n");
	buf[n] = '\0';
	while (n > 0 && buf[n - 1] == ' ')
		buf[--n] = '\0';
	return true;
}

/* Asks question q on the terminal until it gets a valid answer. */
static int ask(struct advise_state *st, enum gs_advisor_question q)
{
	char line[128];

	for (int tries = 0; tries < MAX_PROMPTS; tries++) {
		struct gs_errbuf eb = {0};
		enum gs_advisor_answer a;

		if (q == GS_ADVQ_MIG_GPU)
			fprintf(stderr,
			        "%s\n"
			        "  GPU model (e.g. H100, A100-40GB, T4): ",
			        gs_advisor_question_text(q));
		else
			fprintf(stderr,
			        "%s\n  [%s]: ", gs_advisor_question_text(q),
			        gs_advisor_question_answers(q));
		fflush(stderr);
		if (!read_line(line, sizeof(line))) {
			gs_cli_error(CMD, "no answer for --%s",
			             gs_advisor_question_flag(q));
			return GS_EXIT_USAGE;
		}
		if (line[0] == '\0')
			continue;
		if (q == GS_ADVQ_MIG_GPU) {
			(void)set_gpu(st, line);
			if (st->model == NULL)
				fprintf(stderr,
				        "  '%s' is not a MIG-capable model in the catalog: treated as no MIG\n",
				        line);
			return GS_EXIT_OK;
		}
		if (gs_advisor_parse_answer(q, line, &a, &eb) == GS_OK) {
			st->ans.a[q] = a;
			return GS_EXIT_OK;
		}
		fprintf(stderr, "  please answer %s\n",
		        gs_advisor_question_answers(q));
	}
	gs_cli_error(CMD, "no valid answer for --%s",
	             gs_advisor_question_flag(q));
	return GS_EXIT_USAGE;
}

static void print_text(const struct advise_state *st,
                       const struct gs_advice *adv)
{
	enum gs_advisor_mechanism m = adv->mechanism;

	printf("mechanism: %s\n  %s\n", gs_advisor_mechanism_name(m),
	       gs_advisor_mechanism_title(m));
	printf("trade-off: %s\n", gs_advisor_tradeoff(m));
	printf("slice mode: %s%s\n  %s\n", gs_mode_name(gs_advisor_mode(m)),
	       gs_advisor_whole_gpu(m) ? " (whole GPU)" : "",
	       gs_advisor_mode_note(m));
	printf("path:\n");
	for (int i = 0; i < adv->n_path; i++) {
		enum gs_advisor_question q = adv->path[i];

		if (q == GS_ADVQ_MIG_GPU && st->gpu_text[0])
			printf("  --gpu %s (%s)\n", st->gpu_text,
			       st->model ? "MIG-capable" : "no MIG");
		else
			printf("  --%s %s\n", gs_advisor_question_flag(q),
			       gs_advisor_answer_name(adv->path_answer[i]));
	}
}

static int print_json(const struct advise_state *st,
                      const struct gs_advice *adv)
{
	enum gs_advisor_mechanism m = adv->mechanism;
	json_t *path = json_array();
	json_t *o;
	char *s;

	if (path == NULL)
		return gs_cli_fail(CMD, GS_ERR_NOMEM, NULL);
	for (int i = 0; i < adv->n_path; i++) {
		enum gs_advisor_question q = adv->path[i];
		json_t *step = json_pack(
		    "{s:s, s:s, s:s}", "question", gs_advisor_question_flag(q),
		    "text", gs_advisor_question_text(q), "answer",
		    gs_advisor_answer_name(adv->path_answer[i]));

		if (step && q == GS_ADVQ_MIG_GPU && st->gpu_text[0]) {
			(void)json_object_set_new(step, "gpu",
			                          json_string(st->gpu_text));
			(void)json_object_set_new(
			    step, "model",
			    st->model ? json_string(st->model->name)
			              : json_null());
		}
		if (step == NULL || json_array_append_new(path, step) != 0) {
			json_decref(path);
			return gs_cli_fail(CMD, GS_ERR_NOMEM, NULL);
		}
	}
	o = json_pack("{s:s, s:s, s:s, s:s, s:b, s:s, s:o}", "mechanism",
	              gs_advisor_mechanism_name(m), "title",
	              gs_advisor_mechanism_title(m), "tradeoff",
	              gs_advisor_tradeoff(m), "mode",
	              gs_mode_name(gs_advisor_mode(m)), "whole_gpu",
	              gs_advisor_whole_gpu(m), "mode_note",
	              gs_advisor_mode_note(m), "path", path);
	if (o == NULL)
		return gs_cli_fail(CMD, GS_ERR_NOMEM, NULL);
	s = json_dumps(o, JSON_INDENT(2));
	json_decref(o);
	if (s == NULL)
		return gs_cli_fail(CMD, GS_ERR_NOMEM, NULL);
	printf("%s\n", s);
	free(s);
	return GS_EXIT_OK;
}

int gs_cli_advise(int argc, char **argv)
{
	struct advise_state st;
	struct gs_advice adv;
	bool json = false;
	bool tty = isatty(STDIN_FILENO) != 0;

	memset(&st, 0, sizeof(st));
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		char flag[64];
		const char *val;
		const char *eq;
		int q;

		if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
			usage(stdout);
			return GS_EXIT_OK;
		}
		if (strcmp(arg, "--json") == 0) {
			json = true;
			continue;
		}
		if (strncmp(arg, "--", 2) != 0) {
			gs_cli_error(CMD,
			             "unexpected argument '%s' (see `gpuslice advise --help`)",
			             arg);
			return GS_EXIT_USAGE;
		}
		eq = strchr(arg, '=');
		(void)snprintf(
		    flag, sizeof(flag), "%.*s",
		    (int)(eq ? (size_t)(eq - arg - 2) : strlen(arg + 2)),
		    arg + 2);
		q = find_question(flag);
		if (q < 0) {
			gs_cli_error(CMD,
			             "unknown option '--%s' (see `gpuslice advise --help`)",
			             flag);
			return GS_EXIT_USAGE;
		}
		if (eq) {
			val = eq + 1;
		} else if (i + 1 < argc) {
			val = argv[++i];
		} else {
			gs_cli_error(CMD, "--%s needs a value (%s)", flag,
			             q == GS_ADVQ_MIG_GPU
			                 ? "a GPU model"
			                 : gs_advisor_question_answers(q));
			return GS_EXIT_USAGE;
		}
		if (q == GS_ADVQ_MIG_GPU) {
			(void)set_gpu(&st, val);
		} else {
			struct gs_errbuf eb = {0};
			gs_err err =
			    gs_advisor_parse_answer(q, val, &st.ans.a[q], &eb);

			if (err != GS_OK)
				return gs_cli_fail(CMD, err, &eb);
		}
	}
	for (;;) {
		struct gs_errbuf eb = {0};
		gs_err err = gs_advisor_walk(&st.ans, &adv, &eb);
		int rc;

		if (err != GS_OK)
			return gs_cli_fail(CMD, err, &eb);
		if (adv.done)
			break;
		if (!tty) {
			gs_cli_error(
			    CMD,
			    "needs --%s %s (stdin is not a terminal to ask)",
			    gs_advisor_question_flag(adv.need),
			    adv.need == GS_ADVQ_MIG_GPU
			        ? "MODEL"
			        : gs_advisor_question_answers(adv.need));
			return GS_EXIT_USAGE;
		}
		rc = ask(&st, adv.need);
		if (rc != GS_EXIT_OK)
			return rc;
	}
	if (json)
		return print_json(&st, &adv);
	print_text(&st, &adv);
	return GS_EXIT_OK;
}
