/*
 * cmd_top.c - `gpuslice top`: a live per-GPU, per-slice view of the node,
 * redrawn every interval (like nvtop): GPU utilisation and memory, then
 * each slice's memory used against its cap, compute achieved against its
 * share, and its SM-time (GPU-busy seconds x the share of the SMs it may
 * use: 1 for turns and MIG, the MPS active thread percentage / 100). --once
 * prints one frame for scripts; --json one snapshot (each slice's
 * "sm_share" and usage "sm_seconds" included).
 *
 * Swap (docs/swap.md): each slice's memory as resident on the GPU,
 * swapped to host memory and promised (its cap), and its swap-outs/ins
 * with the time the daemon's last moves took, all from the slice's
 * "swap" object; a daemon from before swap sends none and shows "-".
 *
 * Compute figures are fitted to the GPU before they are shown (each slice
 * at most 100 %, a GPU's slices at most 100 % together, gs_cli_fit_compute):
 * the daemon measures each slice over its own window, and windows that
 * caught a burst or overlapping processes once showed a GPU at 118 %.
 *
 * The terminal is put in non-canonical mode only while a tty is attached,
 * and restored on every way out (q, Ctrl-C, an error).
 */
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "gs/client.h"

static volatile sig_atomic_t stop;
static struct termios saved;
static bool raw_on;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void raw_mode(bool on)
{
	struct termios t;

	if (on && isatty(0) && tcgetattr(0, &saved) == 0) {
		t = saved;
		t.c_lflag &= (tcflag_t) ~(ICANON | ECHO);
		t.c_cc[VMIN] = 0;
		t.c_cc[VTIME] = 0;
		raw_on = tcsetattr(0, TCSANOW, &t) == 0;
		fputs("\033[?25l", stdout); /* hide the cursor */
	} else if (!on && raw_on) {
		(void)tcsetattr(0, TCSANOW, &saved);
		raw_on = false;
		fputs("\033[?25h", stdout);
	}
}

static void usage(FILE *f)
{
	fprintf(f, "usage: gpuslice [--socket S] top [--once] [--interval S] [--json]\n"
	           "\n"
	           "Live view of the node: per GPU, then per slice (memory used/cap, compute\n"
	           "achieved/share, SM-time and SM share, processes, state). Press q to quit.\n"
	           "SM-time is GPU-busy time x the share of the SMs the slice may use (1 for turns\n"
	           "and MIG, the MPS active thread percentage / 100). Compute is fitted to the\n"
	           "GPU: no slice above 100%%, a GPU's slices at most 100%% together.\n"
	           "RESIDENT/SWAPPED/PROMISED is the slice's memory on the GPU, in host memory\n"
	           "(swapped out) and promised (its cap); OUTS/INS its swap-outs and swap-ins,\n"
	           "with the seconds the daemon's last move each way took.\n"
	           "\n"
	           "  --once         print one frame and exit (for scripts)\n"
	           "  --interval S   seconds between frames (default 1)\n"
	           "  --json         print one snapshot as JSON and exit\n");
}

/* A bar of `w` cells filled to `frac` (0..1). */
static void bar(char *out, int w, double frac)
{
	int fill;

	if (frac < 0)
		frac = 0;
	if (frac > 1)
		frac = 1;
	fill = (int)(frac * w + 0.5);
	out[0] = '[';
	for (int i = 0; i < w; i++)
		out[1 + i] = i < fill ? '#' : '.';
	out[w + 1] = ']';
	out[w + 2] = '\0';
}

/*
 * The swap cells of a slice's row: "RESIDENT SWAPPED PROMISED" bytes and
 * "OUTS/INS (last out s/last in s)", or "-" where the daemon sent no
 * swap object.
 */
static void swap_cells(const json_t *s, char *mem, size_t mlen, char *cnt,
                       size_t clen)
{
	const json_t *sw = json_object_get(s, "swap");
	const json_t *lo, *li;
	char r[16], w[16], p[16], to[16] = "-", ti[16] = "-";

	if (!json_is_object(sw)) {
		snprintf(mem, mlen, "%-8s %-8s %-8s", "-", "-", "-");
		snprintf(cnt, clen, "-");
		return;
	}
	gs_cli_fmt_bytes(
	    (unsigned long long)gs_client_int(sw, "resident_bytes"), r,
	    sizeof(r));
	gs_cli_fmt_bytes((unsigned long long)gs_client_int(sw, "swapped_bytes"),
	                 w, sizeof(w));
	gs_cli_fmt_bytes(
	    (unsigned long long)gs_client_int(sw, "promised_bytes"), p,
	    sizeof(p));
	snprintf(mem, mlen, "%-8s %-8s %-8s", r, w, p);
	lo = json_object_get(sw, "last_swap_out_seconds");
	li = json_object_get(sw, "last_swap_in_seconds");
	if (json_is_number(lo))
		snprintf(to, sizeof(to), "%.2fs", json_number_value(lo));
	if (json_is_number(li))
		snprintf(ti, sizeof(ti), "%.2fs", json_number_value(li));
	if (json_is_number(lo) || json_is_number(li))
		snprintf(cnt, clen, "%lld/%lld (%s/%s)",
		         gs_client_int(sw, "swap_outs"),
		         gs_client_int(sw, "swap_ins"), to, ti);
	else
		snprintf(cnt, clen, "%lld/%lld", gs_client_int(sw, "swap_outs"),
		         gs_client_int(sw, "swap_ins"));
}

static gs_err fetch(json_t **gpus, json_t **slices, struct gs_errbuf *eb)
{
	gs_err err =
	    gs_client_call(gs_cli_socket, "GET", "/v1/gpus", NULL, gpus, eb);

	if (err)
		return err;
	err = gs_client_call(gs_cli_socket, "GET", "/v1/slices?usage=1", NULL,
	                     slices, eb);
	if (err) {
		json_decref(*gpus);
		*gpus = NULL;
	}
	return err;
}

/*
 * Rewrites usage.compute_achieved of the slices on each GPU with
 * gs_cli_fit_compute's figures (slices borrow: `slices` is changed in
 * place). Slices on no GPU are left as they are.
 */
static void fit_compute(const json_t *gpus, json_t *slices)
{
	const json_t *ga = json_object_get(gpus, "gpus");
	json_t *sa = json_object_get(slices, "slices");
	size_t ns = json_array_size(sa);
	double *pct;
	json_t **use;

	if (ns == 0)
		return;
	pct = calloc(ns, sizeof(*pct));
	use = calloc(ns, sizeof(*use));
	if (pct == NULL || use == NULL)
		goto out_free; /* shown as measured; nothing to fit with */
	for (size_t i = 0; i < json_array_size(ga); i++) {
		size_t n = 0;

		for (size_t k = 0; k < ns; k++) {
			json_t *s = json_array_get(sa, k);
			json_t *u = json_object_get(s, "usage");

			if (!json_is_object(u) ||
			    gs_client_int(json_object_get(s, "gpu"), "index") !=
			        (long long)i)
				continue;
			use[n] = u;
			pct[n++] = gs_client_num(u, "compute_achieved");
		}
		(void)gs_cli_fit_compute(pct, n);
		for (size_t k = 0; k < n; k++)
			json_object_set_new(use[k], "compute_achieved",
			                    json_real(pct[k]));
	}
out_free:
	free(pct);
	free(use);
}

static void frame(const json_t *gpus, const json_t *slices, bool live)
{
	const json_t *ga = json_object_get(gpus, "gpus");
	const json_t *sa = json_object_get(slices, "slices");
	char now[32], b1[24], b2[24], m1[16], m2[16], m3[16];
	time_t t = time(NULL);
	struct tm tm;

	localtime_r(&t, &tm);
	strftime(now, sizeof(now), "%H:%M:%S", &tm);
	if (live)
		fputs("\033[H\033[2J", stdout);
	printf("gpuslice top  %s  %zu GPU%s (%s)  %zu slice%s%s\n\n", now,
	       json_array_size(ga), json_array_size(ga) == 1 ? "" : "s",
	       strcmp(gs_client_str(gpus, "source"), "nvml")
	           ? "SIMULATED: figures measure gpuslice, not a GPU"
	           : gs_client_str(gpus, "driver"),
	       json_array_size(sa), json_array_size(sa) == 1 ? "" : "s",
	       live ? "  [q quits]" : "");
	for (size_t i = 0; i < json_array_size(ga); i++) {
		const json_t *g = json_array_get(ga, i);
		const json_t *al = json_object_get(g, "allocated");
		const json_t *mig = json_object_get(g, "mig");
		const json_t *mps =
		    json_object_get(json_object_get(g, "mps"), "daemons");
		double total = (double)gs_client_int(g, "memory_bytes");
		unsigned long long used = 0;
		double util = 0;
		int n = 0;

		/* Memory and compute of this GPU's slices, as they run. */
		for (size_t k = 0; k < json_array_size(sa); k++) {
			const json_t *s = json_array_get(sa, k);
			const json_t *u = json_object_get(s, "usage");

			if (gs_client_int(json_object_get(s, "gpu"), "index") !=
			    (long long)i)
				continue;
			used += (unsigned long long)gs_client_int(
			    u, "memory_used_bytes");
			util += gs_client_num(u, "compute_achieved");
			n++;
		}
		gs_cli_fmt_bytes(used, m1, sizeof(m1));
		gs_cli_fmt_bytes((unsigned long long)total, m2, sizeof(m2));
		gs_cli_fmt_bytes(
		    (unsigned long long)gs_client_int(al, "memory_bytes"), m3,
		    sizeof(m3));
		bar(b1, 20, util / 100.0);
		bar(b2, 20, total > 0 ? (double)used / total : 0);
		printf("GPU %zu  %-16s compute %s %5.1f%%  memory %s %s/%s\n",
		       i, gs_client_str(g, "model"), b1, util, b2, m1, m2);
		{
			char mpsbuf[48] = "";

			if (json_array_size(mps))
				snprintf(mpsbuf, sizeof(mpsbuf),
				         ", MPS daemon pid %lld",
				         gs_client_int(json_array_get(mps, 0),
				                       "pid"));
			printf("       promised: %s, %lld%% compute, %d slice%s%s%s\n",
			       m3, gs_client_int(al, "compute"), n,
			       n == 1 ? "" : "s",
			       json_is_true(json_object_get(mig, "enabled"))
			           ? ", MIG on"
			           : "",
			       mpsbuf);
		}
		printf("  %-18s %-10s %-13s %-6s %-31s %-26s %-15s %5s %-8s %-8s %-8s %-22s %s\n",
		       "SLICE", "TEAM", "MODE", "PRIO", "MEMORY used/cap",
		       "COMPUTE got/share", "SM-TIME x SHARE", "PROCS",
		       "RESIDENT", "SWAPPED", "PROMISED", "OUTS/INS",
		       "STATE");
		for (size_t k = 0; k < json_array_size(sa); k++) {
			const json_t *s = json_array_get(sa, k);
			const json_t *u = json_object_get(s, "usage");
			long long cap = gs_client_int(s, "memory_bytes");
			long long share = gs_client_int(s, "compute");
			double got = gs_client_num(u, "compute_achieved");
			char mem[96], comp[96], smt[48], swm[48], swc[48];

			if (gs_client_int(json_object_get(s, "gpu"), "index") !=
			    (long long)i)
				continue;
			gs_cli_fmt_bytes((unsigned long long)gs_client_int(
			                     u, "memory_used_bytes"),
			                 m1, sizeof(m1));
			gs_cli_fmt_bytes((unsigned long long)cap, m2,
			                 sizeof(m2));
			bar(b1, 8,
			    cap ? (double)gs_client_int(u,
			                                "memory_used_bytes") /
			              (double)cap
			        : 0);
			snprintf(mem, sizeof(mem), "%s %s/%s", b1, m1,
			         cap ? m2 : "-");
			bar(b2, 8, got / (share ? share : 100));
			if (share)
				snprintf(comp, sizeof(comp), "%s %5.1f/%lld%%",
				         b2, got, share);
			else
				snprintf(comp, sizeof(comp), "%s %5.1f/-", b2,
				         got);
			snprintf(smt, sizeof(smt), "%8.1fs x%.2f",
			         gs_client_num(u, "sm_seconds"),
			         gs_client_num(s, "sm_share"));
			swap_cells(s, swm, sizeof(swm), swc, sizeof(swc));
			printf("  %-18.18s %-10.10s %-13.13s %-6s %-31s %-26s %-15s %5lld %s %-22s %s\n",
			       gs_client_str(s, "name"),
			       gs_client_str(s, "team"),
			       gs_client_str(s, "mode"),
			       gs_client_str(s, "priority"), mem, comp, smt,
			       gs_client_int(u, "processes"), swm, swc,
			       gs_client_str(s, "state"));
		}
		printf("\n");
	}
	fflush(stdout);
}

int gs_cli_top(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"once", no_argument, NULL, 'o'},
	    {"interval", required_argument, NULL, 'i'},
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	bool once = false, as_json = false;
	double interval = 1.0;
	int opt, rc = GS_EXIT_OK;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 'o':
			once = true;
			break;
		case 'i': {
			char *end;

			interval = strtod(optarg, &end);
			if (*end || interval < 0.1 || interval > 3600) {
				gs_cli_error(
				    "top",
				    "--interval takes 0.1..3600 seconds");
				return GS_EXIT_USAGE;
			}
			break;
		}
		case 'j':
			as_json = true;
			break;
		case 'h':
			usage(stdout);
			return GS_EXIT_OK;
		default:
			usage(stderr);
			return GS_EXIT_USAGE;
		}
	}
	if (optind != argc) {
		gs_cli_error("top", "unexpected argument '%s'", argv[optind]);
		return GS_EXIT_USAGE;
	}
	if (!isatty(1) && !as_json)
		once = true;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (!once && !as_json)
		raw_mode(true);
	while (!stop) {
		struct gs_errbuf eb = {0};
		json_t *gpus = NULL, *slices = NULL;
		gs_err err = fetch(&gpus, &slices, &eb);
		struct pollfd pfd = {.fd = 0, .events = POLLIN};

		if (err) {
			raw_mode(false);
			return gs_cli_fail("top", err, &eb);
		}
		fit_compute(gpus, slices);
		if (as_json) {
			json_t *o = json_object();

			json_object_set(o, "gpus",
			                json_object_get(gpus, "gpus"));
			json_object_set(o, "source",
			                json_object_get(gpus, "source"));
			json_object_set(o, "slices",
			                json_object_get(slices, "slices"));
			gs_cli_print_json(o);
			json_decref(o);
		} else {
			frame(gpus, slices, !once);
		}
		json_decref(gpus);
		json_decref(slices);
		if (once || as_json)
			break;
		if (poll(&pfd, raw_on ? 1 : 0, (int)(interval * 1000)) > 0) {
			char ch;

			if (read(0, &ch, 1) == 1 && (ch == 'q' || ch == 'Q'))
				break;
		}
	}
	raw_mode(false);
	return rc;
}
