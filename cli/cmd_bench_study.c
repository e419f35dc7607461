/*
 * cmd_bench_study.c - `gpuslice bench study`: the seed study (NVIDIA's
 * KubeCon benchmark of time-slicing, MPS and MIG, seeds/003) in one
 * command, on a private simulated node (--sim) or on one real GPU taken
 * as it is. The work is in study.c (cells), study_node.c (sim or GPU, MPS,
 * measuring), study_run.c (processes) and study_report.c (outputs).
 *
 * Output: DIR/study.json, DIR/study.md and DIR/<chart>.svg; on stdout the
 * grid in Markdown, or with --json the cells. Progress on stderr.
 */
#include "cli.h"
#include "study.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CMD         "bench study"
#define DEFAULT_OUT "gpuslice-study"

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: gpuslice bench study [--sim | --gpu INDEX] [--quick] [--out DIR]\n"
	    "                            [--workloads LIST] [--strategies LIST] [--json]\n"
	    "\n"
	    "Runs NVIDIA's GPU sharing study (KubeCon: \"Which GPU sharing strategy is\n"
	    "right for you?\") with gpuslice's workloads: two inference servers (light,\n"
	    "heavy load), a small matmul batch job (1 alone vs 4 at once) and a\n"
	    "GPU-intensive burn (1 alone vs 2 at once, a neighbour of a job that takes\n"
	    "the memory, a neighbour of a faulting job), under exclusive GPUs,\n"
	    "time-slicing, MPS without and with limits, MIG and gpuslice slices.\n"
	    "\n"
	    "options:\n"
	    "  --sim               run on a private simulated node (6 x H100, created in\n"
	    "                      a temporary directory and removed afterwards)\n"
	    "  --gpu INDEX         the real GPU to use (default 0). Nothing on it is\n"
	    "                      changed: MIG only if already on, MPS only through a\n"
	    "                      private control daemon where that needs no setting\n"
	    "  --quick             runs of a few seconds each (about 2 minutes on the sim)\n"
	    "  --out DIR           where the outputs go (default ./" DEFAULT_OUT
	    ")\n"
	    "  --workloads LIST    inference-light,inference-heavy,small-batch,\n"
	    "                      gpu-intensive or all (default all)\n"
	    "  --strategies LIST   exclusive,time-slicing,mps,mps-limits,mig,gpuslice\n"
	    "                      or all (default all)\n"
	    "  --json              print the cells (study.json) on stdout\n"
	    "  -h, --help          this text\n"
	    "\n"
	    "Writes DIR/study.json (one object per workload x strategy: latency_p50_ms,\n"
	    "latency_p99_ms, throughput, completion_s, gpu_util_pct, memory_per_job_bytes,\n"
	    "neighbour_on_oom, neighbour_on_fault, source, ...), DIR/study.md (the\n"
	    "study's summary grid with the measured figures) and charts DIR/latency.svg,\n"
	    "throughput.svg, completion.svg, utilization.svg. Every figure names its\n"
	    "source: the sim (which measures gpuslice's logic, not a GPU) or the GPU and\n"
	    "driver.\n"
	    "\n"
	    "Exit status: 0 the study ran and its outputs are written (cells that\n"
	    "could not run say why); 1 no GPU, the sim missing, or outputs not\n"
	    "written; 2 usage; 130 interrupted (outputs hold the cells done).\n");
}

struct opts {
	bool sim;
	bool gpu_given;
	unsigned int gpu;
	bool quick;
	bool json;
	const char *out;
	struct gs_study_opts study;
};

static int parse(int argc, char **argv, struct opts *o)
{
	enum { O_SIM = 1, O_GPU, O_QUICK, O_OUT, O_JSON, O_WL, O_ST, O_HELP };
	static const struct option lo[] = {
	    {"sim", no_argument, NULL, O_SIM},
	    {"gpu", required_argument, NULL, O_GPU},
	    {"quick", no_argument, NULL, O_QUICK},
	    {"out", required_argument, NULL, O_OUT},
	    {"json", no_argument, NULL, O_JSON},
	    {"workloads", required_argument, NULL, O_WL},
	    {"strategies", required_argument, NULL, O_ST},
	    {"help", no_argument, NULL, O_HELP},
	    {NULL, 0, NULL, 0},
	};
	struct gs_errbuf eb = {0};
	char *end;
	long v;
	int c;

	memset(o, 0, sizeof(*o));
	o->out = DEFAULT_OUT;
	o->study.workloads = (1u << GS_STUDY_W__COUNT) - 1;
	o->study.strategies = (1u << GS_STUDY_S__COUNT) - 1;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case O_SIM:
			o->sim = true;
			break;
		case O_GPU:
			v = strtol(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0' || v < 0 ||
			    v > 63) {
				gs_cli_error(
				    CMD, "--gpu takes a GPU index, got '%s'",
				    optarg);
				return GS_EXIT_USAGE;
			}
			o->gpu = (unsigned int)v;
			o->gpu_given = true;
			break;
		case O_QUICK:
			o->quick = true;
			break;
		case O_OUT:
			if (*optarg == '\0') {
				gs_cli_error(CMD, "--out needs a directory");
				return GS_EXIT_USAGE;
			}
			o->out = optarg;
			break;
		case O_JSON:
			o->json = true;
			break;
		case O_WL:
			if (gs_study_parse_workloads(
			        optarg, &o->study.workloads, &eb) != GS_OK) {
				gs_cli_error(CMD, "%s",
				             gs_errbuf_msg(&eb, GS_ERR_PARSE));
				return GS_EXIT_USAGE;
			}
			break;
		case O_ST:
			if (gs_study_parse_strategies(
			        optarg, &o->study.strategies, &eb) != GS_OK) {
				gs_cli_error(CMD, "%s",
				             gs_errbuf_msg(&eb, GS_ERR_PARSE));
				return GS_EXIT_USAGE;
			}
			break;
		case 'h':
		case O_HELP:
			usage(stdout);
			return -1;
		default:
			gs_cli_error(CMD,
			             "unknown or incomplete option '%s' (see `gpuslice bench study --help`)",
			             argv[optind - 1]);
			return GS_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		gs_cli_error(CMD, "unexpected argument '%s'", argv[optind]);
		return GS_EXIT_USAGE;
	}
	if (o->sim && o->gpu_given) {
		gs_cli_error(CMD, "--gpu selects a real GPU; it cannot be combined with --sim");
		return GS_EXIT_USAGE;
	}
	o->study.quick = o->quick;
	o->study.progress = true;
	return 0;
}

static void on_signal(int sig)
{
	(void)sig;
	gs_study_run_interrupt();
}

static void list_outputs(const char *dir)
{
	fprintf(stderr,
	        "gpuslice bench study: wrote %s/study.json, %s/study.md, %s/latency.svg, %s/throughput.svg, %s/completion.svg, %s/utilization.svg\n",
	        dir, dir, dir, dir, dir, dir);
}

/* Declared weak in cmd_bench.c, which dispatches to it. */
int gs_cli_bench_study(int argc, char **argv);

int gs_cli_bench_study(int argc, char **argv)
{
	struct gs_study_node node;
	struct gs_errbuf eb = {0};
	struct sigaction sa;
	json_t *cells = NULL;
	struct opts o;
	gs_err err, run_err;
	size_t i, failed = 0;
	json_t *c;
	int rc = parse(argc, argv, &o);

	if (rc != 0)
		return rc < 0 ? GS_EXIT_OK : rc;
	if (o.sim)
		err = gs_study_node_open_sim(&node, &eb);
	else
		err = gs_study_node_open_real(&node, o.gpu, &eb);
	if (err != GS_OK) {
		if (!o.sim && err == GS_ERR_UNAVAILABLE)
			gs_cli_error(
			    CMD, "%s; run with --sim to use a simulated node",
			    gs_errbuf_msg(&eb, err));
		else
			gs_cli_error(CMD, "%s", gs_errbuf_msg(&eb, err));
		return GS_EXIT_FAILURE;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	(void)sigaction(SIGINT, &sa, NULL);
	(void)sigaction(SIGTERM, &sa, NULL);
	(void)sigaction(SIGHUP, &sa, NULL);
	fprintf(stderr, "gpuslice bench study: %s%s\n", node.label,
	        o.quick ? " (quick)" : "");

	run_err = gs_study_run(&node, &o.study, &cells, &eb);
	if (cells == NULL) {
		gs_study_node_close(&node);
		return gs_cli_fail(CMD, run_err, &eb);
	}
	err = gs_study_write(o.out, cells, node.label, o.quick, &eb);
	gs_study_node_close(&node);
	if (err != GS_OK) {
		json_decref(cells);
		return gs_cli_fail(CMD, err, &eb);
	}
	if (o.json) {
		if (json_dumpf(cells, stdout,
		               JSON_INDENT(2) | JSON_PRESERVE_ORDER) != 0)
			rc = GS_EXIT_FAILURE;
		putchar('\n');
	} else {
		printf("Which GPU sharing strategy is right? (%s)\n\n",
		       node.label);
		gs_study_grid_md(stdout, cells);
	}
	list_outputs(o.out);
	json_array_foreach(cells, i, c)
	{
		const char *st =
		    json_string_value(json_object_get(c, "status"));

		failed += st != NULL && strcmp(st, "failed") == 0;
	}
	if (failed > 0)
		fprintf(stderr,
		        "gpuslice bench study: %zu cell%s failed; study.md and study.json say why\n",
		        failed, failed == 1 ? "" : "s");
	json_decref(cells);
	if (run_err == GS_ERR_BUSY) {
		gs_cli_error(CMD, "%s", gs_errbuf_msg(&eb, run_err));
		return 130;
	}
	return rc;
}
