/*
 * cmd_bench_trace.c - `gpuslice bench trace`: replays a cluster trace's
 * task list on its node list with placement policies and reports, per
 * policy, the unallocated GPU % and the fragmentation % at arrival levels
 * 90..130 (mean and sd over seeds), as the FGD paper measured them
 * (docs/placement.md).
 *
 * Output: a table on stdout, or JSON with --json; with --out DIR also
 * DIR/results.csv (every level 0..130) and DIR/unallocated.svg (the
 * curves). Progress goes to stderr: a live line on a terminal, otherwise
 * a line every ten seconds; never on stdout.
 *
 * Runs (policy x seed) are independent; --jobs N spreads them over N
 * threads. Each run is deterministic for its seed.
 *
 * This file parses the flags and opens the output files; the runner, the
 * statistics and every output are bench/trace_bench.h's.
 */
#include "cli.h"
#include "trace_bench.h"
#include "trace_family.h"

#include "gs/safepath.h"
#include "gs/trace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CMD "bench trace"

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: gpuslice bench trace --nodes FILE --pods FILE [options]\n"
	    "\n"
	    "Replays a cluster trace's task list on its node list, one task at a time\n"
	    "with no departures, and compares placement policies by the GPU capacity\n"
	    "they leave unallocated (the FGD paper's method; Alibaba cluster-trace-\n"
	    "gpu-v2023 CSV columns).\n"
	    "\n"
	    "options:\n"
	    "  --nodes FILE          node list (sn,cpu_milli,memory_mib,gpu,model)\n"
	    "  --pods FILE           task list (cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec])\n"
	    "  --policy NAME[,NAME]  random, dotprod, clustering, packing, bestfit, fgd,\n"
	    "                        gpuslice, or all (default: all)\n"
	    "  --seeds A-B|A,B,...   seeds to average over (default: 42-51)\n"
	    "  --tune X              inflate GPU demand to X times capacity (default 1.3;\n"
	    "                        0 replays the list as it is)\n"
	    "  --jobs N              runs in parallel threads (default 1)\n"
	    "  --constrain PCT       variant: restrict PCT %% of the GPU tasks to 1-2 GPU\n"
	    "                        models, drawn by the node list's model mix\n"
	    "  --constrain-models K  a constrained task accepts 1 to K models (default 2)\n"
	    "  --gangs PCT           variant: turn PCT %% of the one-GPU tasks into 2/4/8\n"
	    "                        whole-GPU tasks (the list's own multi-GPU mix)\n"
	    "  --ablate T[,T]        switch off terms of the gpuslice policy: strand,\n"
	    "                        model, gang, demand, reserve, guard, fit\n"
	    "                        (docs/placement.md)\n"
	    "  --eps E               gpuslice's guard: only move from FGD's choice to one\n"
	    "                        FGD's measure finds within E milli-GPU of it\n"
	    "                        (default: the scorer's)\n"
	    "  --variant-seed N      seed of the variant (default 1); the variant is\n"
	    "                        the same for every replay seed\n"
	    "  --family PART         replay the variant family instead (docs/placement.md):\n"
	    "                        tune (variants 0-15, seeds 1001-1005), report\n"
	    "                        (16-39, seeds 42-51) or all; prints per variant\n"
	    "                        gpuslice - FGD at 90..130 and the family's worst\n"
	    "                        case (policies default to fgd,gpuslice)\n"
	    "  --family-variants A-B only variants A..B of the family\n"
	    "  --out DIR             also write DIR/results.csv and DIR/unallocated.svg\n"
	    "  --json                print JSON: {\"results\":[{\"policy\",\"arrived_pct\",\n"
	    "                        \"unallocated_pct_mean\",\"unallocated_pct_sd\",\n"
	    "                        \"frag_pct_mean\",...}]} for arrival levels 90..130\n"
	    "  --help                this text\n"
	    "\n"
	    "Exit status: 0 ok, 1 failure, 2 usage or bad input, 3 file not found.\n");
}

/* ---- Options ---------------------------------------------------------- */

static int parse_policies(struct gs_trace_bench *b, const char *s)
{
	char buf[256];
	char *save = NULL, *tok;

	if (strlen(s) >= sizeof(buf)) {
		gs_cli_error(CMD, "--policy list is too long");
		return GS_EXIT_USAGE;
	}
	strcpy(buf, s);
	b->n_policies = 0;
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		int p;
		if (strcmp(tok, "all") == 0) {
			b->n_policies = 0;
			for (int k = 0; k < GS_TRACE_POLICY__COUNT; k++)
				b->policies[b->n_policies++] = k;
			return 0;
		}
		p = gs_trace_policy_parse(tok);
		if (p < 0) {
			gs_cli_error(
			    CMD,
			    "unknown policy '%s' (random, dotprod, clustering, packing, bestfit, fgd, gpuslice, all)",
			    tok);
			return GS_EXIT_USAGE;
		}
		for (size_t k = 0; k < b->n_policies; k++) {
			if (b->policies[k] == p) {
				p = -1;
				break;
			}
		}
		if (p >= 0)
			b->policies[b->n_policies++] = p;
	}
	if (b->n_policies == 0) {
		gs_cli_error(CMD, "--policy names no policy");
		return GS_EXIT_USAGE;
	}
	return 0;
}

static bool parse_u64(const char *s, uint64_t *v)
{
	char *end;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return errno == 0 && *end == '\0';
}

static int parse_seeds(struct gs_trace_bench *b, const char *s)
{
	char buf[1024];
	char *save = NULL, *tok;

	if (strlen(s) >= sizeof(buf)) {
		gs_cli_error(CMD, "--seeds list is too long");
		return GS_EXIT_USAGE;
	}
	strcpy(buf, s);
	b->n_seeds = 0;
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		char *dash = strchr(tok, '-');
		uint64_t lo, hi;
		if (dash) {
			*dash = '\0';
			if (!parse_u64(tok, &lo) || !parse_u64(dash + 1, &hi) ||
			    hi < lo)
				goto bad;
		} else {
			if (!parse_u64(tok, &lo))
				goto bad;
			hi = lo;
		}
		if (hi - lo >= GS_TRACE_BENCH_MAX_SEEDS ||
		    b->n_seeds + (hi - lo + 1) > GS_TRACE_BENCH_MAX_SEEDS) {
			gs_cli_error(CMD, "--seeds: at most %d seeds",
			             GS_TRACE_BENCH_MAX_SEEDS);
			return GS_EXIT_USAGE;
		}
		for (uint64_t v = lo; v <= hi; v++)
			b->seeds[b->n_seeds++] = v;
	}
	if (b->n_seeds == 0)
		goto bad;
	return 0;
bad:
	gs_cli_error(
	    CMD,
	    "--seeds '%s': expected A-B or A,B,... (non-negative integers)", s);
	return GS_EXIT_USAGE;
}

static FILE *open_out(const char *out_dir, const char *name, char *path,
                      size_t cap)
{
	FILE *f;
	int fd;

	if ((size_t)snprintf(path, cap, "%s/%s", out_dir, name) >= cap) {
		gs_cli_error(CMD, "--out path is too long");
		return NULL;
	}
	/* Never through a link someone planted in a shared --out. */
	fd = gs_safe_open(path, O_WRONLY | O_CREAT | O_TRUNC, 0666);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (f == NULL) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		gs_cli_error(CMD, "%s: %s", path, gs_safe_why(path, e));
	}
	return f;
}

static int close_out(FILE *f, const char *path)
{
	int bad = ferror(f);

	if (fclose(f) != 0 || bad) {
		gs_cli_error(CMD, "%s: write failed", path);
		return GS_EXIT_FAILURE;
	}
	return 0;
}
/* Writes DIR/results.csv and DIR/unallocated.svg. */
static int write_files(const struct gs_trace_bench *b, const char *out_dir)
{
	struct gs_errbuf eb;
	char path[4096];
	gs_err err;
	FILE *f;
	int rc;

	f = open_out(out_dir, "results.csv", path, sizeof(path));
	if (f == NULL)
		return GS_EXIT_FAILURE;
	gs_trace_bench_write_csv(b, f);
	rc = close_out(f, path);
	if (rc != 0)
		return rc;
	f = open_out(out_dir, "unallocated.svg", path, sizeof(path));
	if (f == NULL)
		return GS_EXIT_FAILURE;
	gs_errbuf_init(&eb);
	err = gs_trace_bench_write_svg(b, f, &eb);
	rc = close_out(f, path);
	if (rc == 0 && err != GS_OK)
		rc = gs_cli_fail(CMD, err, &eb);
	return rc;
}

/* ---- Entry ------------------------------------------------------------ */

/* Parses "strand,model" into GS_TRACE_ABLATE_* bits; -1 on a bad name. */
static int parse_ablate(const char *v, unsigned *out)
{
	static const struct {
		const char *name;
		unsigned bit;
	} terms[] = {
	    {"strand", GS_TRACE_ABLATE_STRAND},
	    {"model", GS_TRACE_ABLATE_MODEL},
	    {"gang", GS_TRACE_ABLATE_GANG},
	    {"demand", GS_TRACE_ABLATE_DEMAND},
	    {"reserve", GS_TRACE_ABLATE_RESERVE},
	    {"guard", GS_TRACE_ABLATE_GUARD},
	    {"fit", GS_TRACE_ABLATE_FIT},
	};
	const char *p = v;

	*out = 0;
	while (*p) {
		size_t len = strcspn(p, ",");
		bool found = false;
		for (size_t t = 0; t < sizeof(terms) / sizeof(terms[0]); t++) {
			if (strlen(terms[t].name) == len &&
			    strncmp(terms[t].name, p, len) == 0) {
				*out |= terms[t].bit;
				found = true;
			}
		}
		if (!found) {
			gs_cli_error(CMD,
			             "--ablate '%s': unknown term '%.*s' (strand, model, gang, demand, reserve, guard, fit)",
			             v, (int)len, p);
			return -1;
		}
		p += len;
		if (*p == ',')
			p++;
	}
	return 0;
}

/* The value of option `name` at argv[*i] ("--x v" or "--x=v"), or NULL. */
static const char *opt_value(int argc, char **argv, int *i, const char *name,
                             bool *matched)
{
	size_t n = strlen(name);
	const char *a = argv[*i];

	*matched = false;
	if (strncmp(a, name, n) != 0)
		return NULL;
	if (a[n] == '=') {
		*matched = true;
		return a + n + 1;
	}
	if (a[n] != '\0')
		return NULL;
	*matched = true;
	if (*i + 1 >= argc) {
		gs_cli_error(CMD, "%s needs a value", name);
		return NULL;
	}
	return argv[++*i];
}

/*
 * --family: loads the base lists, replays the family's variants of the
 * part (or the range asked) and prints the table and the worst case.
 */
static int run_family(struct gs_trace_bench *b, const char *nodes_path,
                      const char *pods_path, int part, bool range,
                      unsigned lo, unsigned hi, bool seeds_set,
                      bool policies_set, bool json)
{
	struct gs_trace_family f;
	struct gs_errbuf eb;
	gs_err err;
	int rc;

	if (b->variant.constrain_pct > 0 || b->variant.gang_pct > 0) {
		gs_cli_error(CMD,
		             "--family replaces --constrain and --gangs; give one or the other");
		return GS_EXIT_USAGE;
	}
	if (!seeds_set) {
		uint64_t s0, s1;
		gs_trace_family_part_seeds((enum gs_trace_family_part)part,
		                           &s0, &s1);
		b->n_seeds = 0;
		for (uint64_t s = s0; s <= s1; s++)
			b->seeds[b->n_seeds++] = s;
	}
	if (!policies_set) {
		b->n_policies = 0;
		b->policies[b->n_policies++] = GS_TRACE_POLICY_FGD;
		b->policies[b->n_policies++] = GS_TRACE_POLICY_GPUSLICE;
	}
	memset(&f, 0, sizeof(f));
	f.base = b;
	if (range) {
		f.lo = lo;
		f.hi = hi;
	} else {
		gs_trace_family_part_range((enum gs_trace_family_part)part,
		                           &f.lo, &f.hi);
	}
	gs_errbuf_init(&eb);
	err = gs_trace_bench_load(b, nodes_path, pods_path, &eb);
	if (err == GS_OK)
		err = gs_trace_family_run(&f, &eb);
	if (err == GS_OK && json)
		err = gs_trace_family_print_json(&f, &eb);
	else if (err == GS_OK)
		gs_trace_family_print_text(&f);
	rc = err == GS_OK ? 0 : gs_cli_fail(CMD, err, &eb);
	gs_trace_family_fini(&f);
	gs_trace_bench_fini(b);
	return rc;
}

/* Called by cmd_bench.c, which declares it weak. */
int gs_cli_bench_trace(int argc, char **argv);

int gs_cli_bench_trace(int argc, char **argv)
{
	struct gs_trace_bench b;
	const char *nodes_path = NULL, *pods_path = NULL, *out_dir = NULL;
	struct gs_errbuf eb;
	bool json = false, seeds_set = false, policies_set = false;
	int family = -1; /* enum gs_trace_family_part, -1: a plain replay */
	unsigned fam_lo = 0, fam_hi = 0;
	bool fam_range = false;
	gs_err err;
	int rc;

	memset(&b, 0, sizeof(b));
	b.tune = 1.3;
	b.eps = -1;
	b.jobs_n = 1;
	b.variant.seed = 1;
	for (int k = 0; k < GS_TRACE_POLICY__COUNT; k++)
		b.policies[b.n_policies++] = k;
	for (uint64_t s = 42; s <= 51; s++)
		b.seeds[b.n_seeds++] = s;

	for (int i = 1; i < argc; i++) {
		const char *v, *opt = argv[i];
		bool m;

		if (strcmp(argv[i], "--help") == 0 ||
		    strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			return GS_EXIT_OK;
		}
		if (strcmp(argv[i], "--json") == 0) {
			json = true;
			continue;
		}
		if ((v = opt_value(argc, argv, &i, "--nodes", &m)) || m) {
			if (!v)
				return GS_EXIT_USAGE;
			nodes_path = v;
		} else if ((v = opt_value(argc, argv, &i, "--pods", &m)) || m) {
			if (!v)
				return GS_EXIT_USAGE;
			pods_path = v;
		} else if ((v = opt_value(argc, argv, &i, "--policy", &m)) ||
		           m) {
			if (!v || (rc = parse_policies(&b, v)) != 0)
				return GS_EXIT_USAGE;
			policies_set = true;
		} else if ((v = opt_value(argc, argv, &i, "--seeds", &m)) ||
		           m) {
			if (!v || (rc = parse_seeds(&b, v)) != 0)
				return GS_EXIT_USAGE;
			seeds_set = true;
		} else if ((v = opt_value(argc, argv, &i, "--tune", &m)) || m) {
			char *end;
			if (!v)
				return GS_EXIT_USAGE;
			errno = 0;
			b.tune = strtod(v, &end);
			if (errno || *end || end == v || !(b.tune >= 0) ||
			    b.tune > 100) {
				gs_cli_error(
				    CMD,
				    "--tune '%s': expected a number from 0 to 100",
				    v);
				return GS_EXIT_USAGE;
			}
		} else if ((v = opt_value(argc, argv, &i, "--jobs", &m)) || m) {
			uint64_t n;
			if (!v)
				return GS_EXIT_USAGE;
			if (!parse_u64(v, &n) || n < 1 ||
			    n > GS_TRACE_BENCH_MAX_JOBS) {
				gs_cli_error(CMD,
				             "--jobs '%s': expected 1 to %d", v,
				             GS_TRACE_BENCH_MAX_JOBS);
				return GS_EXIT_USAGE;
			}
			b.jobs_n = (unsigned)n;
		} else if ((v = opt_value(argc, argv, &i, "--constrain", &m)) ||
		           m ||
		           (v = opt_value(argc, argv, &i, "--gangs", &m)) ||
		           m) {
			bool gangs = strncmp(opt, "--gangs", 7) == 0;
			char *end;
			double x;
			if (!v)
				return GS_EXIT_USAGE;
			errno = 0;
			x = strtod(v, &end);
			if (errno || *end || end == v || !(x >= 0) || x > 100) {
				gs_cli_error(CMD,
				             "%s '%s': expected a percentage from 0 to 100",
				             gangs ? "--gangs" : "--constrain",
				             v);
				return GS_EXIT_USAGE;
			}
			if (gangs)
				b.variant.gang_pct = x;
			else
				b.variant.constrain_pct = x;
		} else if ((v = opt_value(argc, argv, &i, "--ablate", &m)) ||
		           m) {
			if (!v || parse_ablate(v, &b.ablate) != 0)
				return GS_EXIT_USAGE;
		} else if ((v = opt_value(argc, argv, &i, "--constrain-models",
		                          &m)) ||
		           m) {
			uint64_t n;
			if (!v)
				return GS_EXIT_USAGE;
			if (!parse_u64(v, &n) || n < 1 || n > 8) {
				gs_cli_error(
				    CMD,
				    "--constrain-models '%s': expected 1 to 8",
				    v);
				return GS_EXIT_USAGE;
			}
			b.variant.max_models = (unsigned)n;
		} else if ((v = opt_value(argc, argv, &i, "--variant-seed",
		                          &m)) ||
		           m) {
			uint64_t n;
			if (!v)
				return GS_EXIT_USAGE;
			if (!parse_u64(v, &n)) {
				gs_cli_error(CMD,
				             "--variant-seed '%s': expected a non-negative integer",
				             v);
				return GS_EXIT_USAGE;
			}
			b.variant.seed = n;
		} else if ((v = opt_value(argc, argv, &i, "--eps", &m)) || m) {
			char *end;
			if (!v)
				return GS_EXIT_USAGE;
			errno = 0;
			b.eps = strtod(v, &end);
			if (errno || *end || end == v || !(b.eps >= 0) ||
			    b.eps > 1000) {
				gs_cli_error(CMD,
				             "--eps '%s': expected milli-GPU from 0 to 1000",
				             v);
				return GS_EXIT_USAGE;
			}
		} else if ((v = opt_value(argc, argv, &i, "--family-variants",
		                          &m)) ||
		           m) {
			uint64_t lo, hi;
			char buf[64], *dash;
			if (!v)
				return GS_EXIT_USAGE;
			snprintf(buf, sizeof(buf), "%s", v);
			dash = strchr(buf, '-');
			if (dash)
				*dash = '\0';
			if (!parse_u64(buf, &lo) ||
			    !parse_u64(dash ? dash + 1 : buf, &hi) || hi < lo ||
			    hi >= GS_TRACE_FAMILY_SIZE) {
				gs_cli_error(CMD,
				             "--family-variants '%s': expected A-B within 0-%d",
				             v, GS_TRACE_FAMILY_SIZE - 1);
				return GS_EXIT_USAGE;
			}
			fam_lo = (unsigned)lo;
			fam_hi = (unsigned)hi;
			fam_range = true;
		} else if ((v = opt_value(argc, argv, &i, "--family", &m)) ||
		           m) {
			if (!v)
				return GS_EXIT_USAGE;
			if (strcmp(v, "tune") == 0)
				family = GS_TRACE_FAMILY_TUNING;
			else if (strcmp(v, "report") == 0)
				family = GS_TRACE_FAMILY_REPORTING;
			else if (strcmp(v, "all") == 0)
				family = GS_TRACE_FAMILY_ALL;
			else {
				gs_cli_error(CMD,
				             "--family '%s': expected tune, report or all",
				             v);
				return GS_EXIT_USAGE;
			}
		} else if ((v = opt_value(argc, argv, &i, "--out", &m)) || m) {
			if (!v)
				return GS_EXIT_USAGE;
			out_dir = v;
		} else {
			gs_cli_error(CMD, "unknown option '%s' (see --help)",
			             argv[i]);
			return GS_EXIT_USAGE;
		}
	}
	if (nodes_path == NULL || pods_path == NULL) {
		gs_cli_error(CMD,
		             "--nodes and --pods are required (see --help)");
		return GS_EXIT_USAGE;
	}
	if (family >= 0)
		return run_family(&b, nodes_path, pods_path, family, fam_range,
		                  fam_lo, fam_hi, seeds_set, policies_set, json);
	if (fam_range) {
		gs_cli_error(CMD, "--family-variants needs --family");
		return GS_EXIT_USAGE;
	}
	if (out_dir && mkdir(out_dir, 0777) != 0 && errno != EEXIST) {
		gs_cli_error(CMD, "--out %s: %s", out_dir, strerror(errno));
		return GS_EXIT_FAILURE;
	}
	gs_errbuf_init(&eb);
	err = gs_trace_bench_load(&b, nodes_path, pods_path, &eb);
	if (err == GS_OK)
		err = gs_trace_bench_run(&b, &eb);
	if (err == GS_OK && json)
		err = gs_trace_bench_print_json(&b, &eb);
	else if (err == GS_OK)
		gs_trace_bench_print_text(&b);
	rc = err == GS_OK ? 0 : gs_cli_fail(CMD, err, &eb);
	if (rc == 0 && out_dir)
		rc = write_files(&b, out_dir);
	gs_trace_bench_fini(&b);
	return rc;
}
