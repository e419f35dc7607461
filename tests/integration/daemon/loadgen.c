/*
 * loadgen.c - gs-daemon-loadgen: concurrent clients that create and delete
 * slices through gpusliced's socket, for the benchmark and the crash test.
 *
 *   gs-daemon-loadgen bench --socket S --clients N --ops M [--keep K]
 *       N threads, each on one keep-alive connection, M operations in all
 *       (creates and deletes alternating per client); prints one JSON line:
 *       {"ops":..,"seconds":..,"ops_per_s":..,"p50_ms":..,"p99_ms":..,
 *        "max_ms":..,"errors":..}
 *
 *   gs-daemon-loadgen crash --socket S --clients N --ops M --out FILE
 *       Like bench, but survives the daemon dying: an operation whose
 *       answer never came is "in doubt"; the client reconnects (waiting for
 *       the daemon to come back), looks the slice up to learn what
 *       happened, and goes on. At the end it writes FILE: the names that
 *       must exist, one per line (acknowledged creates minus acknowledged
 *       deletes, with in-doubt operations resolved by lookup).
 *
 *   gs-daemon-loadgen region DIR
 *       Prints the names of the slices in the shared region in DIR.
 *
 * Each client owns its names (<prefix><client>-<n>), keeps at most K
 * (default 4) alive, and picks create or delete at random, so every
 * interleaving of several clients is exercised.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gs/client.h"
#include "gs/region.h"

struct opts {
	const char *socket;
	const char *out;
	const char *prefix;
	int clients;
	long ops;
	int keep;
	bool crash;
};

struct worker {
	const struct opts *o;
	int id;
	long ops;
	double *lat; /* ms per acknowledged op */
	long n_lat;
	long errors;
	long in_doubt;
	/* names alive, by number */
	long *alive;
	int n_alive;
	long next;
	unsigned seed;
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void name_of(const struct worker *w, long n, char *buf, size_t len)
{
	snprintf(buf, len, "%s%d-%ld", w->o->prefix, w->id, n);
}

static int connect_retry(struct gs_client_conn *c, const struct opts *o,
                         bool wait)
{
	double give_up = now_ms() + 60000;

	for (;;) {
		struct gs_errbuf eb = {0};

		if (gs_client_connect(c, o->socket, &eb) == GS_OK)
			return 0;
		gs_client_close(c);
		if (!wait || now_ms() > give_up)
			return -1;
		usleep(20000);
	}
}

/*
 * One request; returns the HTTP status, or -1 when no answer came (the
 * connection is then closed and reopened, waiting for the daemon).
 */
static int request(struct worker *w, struct gs_client_conn *c,
                   const char *method, const char *path, const char *body)
{
	struct gs_errbuf eb = {0};
	char *resp = NULL;
	size_t len = 0;
	int status = 0;
	gs_err err;

	err =
	    gs_client_roundtrip(c, method, path, body, body ? strlen(body) : 0,
	                        &status, &resp, &len, &eb);
	free(resp);
	if (err == GS_OK)
		return status;
	gs_client_close(c);
	if (connect_retry(c, w->o, w->o->crash) != 0) {
		fprintf(stderr, "loadgen: client %d: cannot reconnect\n",
		        w->id);
		exit(1);
	}
	return -1;
}

/* After an in-doubt op on `name`: does the slice exist now? */
static int exists(struct worker *w, struct gs_client_conn *c, const char *name)
{
	char path[160];

	for (;;) {
		int st;

		snprintf(path, sizeof(path), "/v1/slices/%s", name);
		st = request(w, c, "GET", path, NULL);
		if (st == 200)
			return 1;
		if (st == 404)
			return 0;
		if (st > 0) {
			fprintf(stderr, "loadgen: GET %s: status %d\n", name,
			        st);
			exit(1);
		}
	}
}

static void remove_alive(struct worker *w, int i)
{
	w->alive[i] = w->alive[--w->n_alive];
}

static void *run(void *arg)
{
	struct worker *w = arg;
	struct gs_client_conn c;
	char name[128], path[192], body[256];

	if (connect_retry(&c, w->o, w->o->crash) != 0) {
		fprintf(stderr, "loadgen: client %d: cannot connect\n", w->id);
		exit(1);
	}
	for (long i = 0; i < w->ops; i++) {
		bool create = w->n_alive == 0 ||
		              (w->n_alive < w->o->keep && rand_r(&w->seed) % 2);
		double t0 = now_ms();
		int st;

		if (create) {
			long n = w->next++;

			name_of(w, n, name, sizeof(name));
			snprintf(body, sizeof(body),
			         "{\"name\":\"%s\",\"memory\":\"64MiB\","
			         "\"compute\":1}",
			         name);
			st = request(w, &c, "POST", "/v1/slices", body);
			if (st == 201 || (st < 0 && exists(w, &c, name))) {
				w->alive[w->n_alive++] = n;
			} else if (st > 0) {
				w->errors++;
				if (w->errors < 5)
					fprintf(stderr,
					        "loadgen: create %s: status "
					        "%d\n",
					        name, st);
			}
		} else {
			int k = rand_r(&w->seed) % w->n_alive;

			name_of(w, w->alive[k], name, sizeof(name));
			snprintf(path, sizeof(path), "/v1/slices/%s", name);
			st = request(w, &c, "DELETE", path, NULL);
			if (st == 200 || (st < 0 && !exists(w, &c, name))) {
				remove_alive(w, k);
			} else if (st > 0) {
				w->errors++;
				if (w->errors < 5)
					fprintf(stderr,
					        "loadgen: delete %s: status "
					        "%d\n",
					        name, st);
			}
		}
		if (st > 0)
			w->lat[w->n_lat++] = now_ms() - t0;
		else
			w->in_doubt++;
	}
	gs_client_close(&c);
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* with_limits: each line also holds compute=PCT mode=strict|share. */
static int region_dump(const char *dir, bool with_limits)
{
	struct gs_region *r;
	struct gs_errbuf eb = {0};
	struct gs_slice_ref it = {.slot = -1};

	if (gs_region_open(dir, GS_REGION_TENANT, &r, &eb) != GS_OK) {
		fprintf(stderr, "loadgen: region %s: %s\n", dir, eb.msg);
		return 1;
	}
	while (gs_region_slice_next(r, &it)) {
		struct gs_slice_limits lim;

		if (gs_region_slice_limits(r, &it, &lim) != GS_OK)
			continue;
		if (with_limits)
			printf("%s compute=%u mode=%s\n", lim.name,
			       lim.compute_pct,
			       lim.mode == GS_REGION_COMPUTE_SHARE ? "share"
			                                           : "strict");
		else
			printf("%s\n", lim.name);
	}
	gs_region_close(r);
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
	        "usage: gs-daemon-loadgen bench|crash --socket S --clients N "
	        "--ops M [--keep K] [--prefix P] [--out FILE]\n"
	        "       gs-daemon-loadgen region|limits DIR\n");
}

int main(int argc, char **argv)
{
	struct opts o = {.clients = 4, .ops = 1000, .keep = 4, .prefix = "lg"};
	struct worker *w;
	pthread_t *th;
	double t0, t1, *all;
	long n_all = 0, errors = 0, in_doubt = 0;

	if (argc >= 3 && strcmp(argv[1], "region") == 0)
		return region_dump(argv[2], false);
	if (argc >= 3 && strcmp(argv[1], "limits") == 0)
		return region_dump(argv[2], true);
	if (argc < 2 ||
	    (strcmp(argv[1], "bench") && strcmp(argv[1], "crash"))) {
		usage();
		return 2;
	}
	o.crash = strcmp(argv[1], "crash") == 0;
	for (int i = 2; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--socket"))
			o.socket = argv[i + 1];
		else if (!strcmp(argv[i], "--clients"))
			o.clients = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--ops"))
			o.ops = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--keep"))
			o.keep = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--prefix"))
			o.prefix = argv[i + 1];
		else if (!strcmp(argv[i], "--out"))
			o.out = argv[i + 1];
		else {
			usage();
			return 2;
		}
	}
	if (o.socket == NULL || o.clients < 1 || o.clients > 256 || o.ops < 1 ||
	    o.keep < 1 || o.keep > 64 || (o.crash && !o.out)) {
		usage();
		return 2;
	}
	w = calloc((size_t)o.clients, sizeof(*w));
	th = calloc((size_t)o.clients, sizeof(*th));
	all = calloc((size_t)o.ops + 1, sizeof(*all));
	if (w == NULL || th == NULL || all == NULL)
		return 1;
	for (int i = 0; i < o.clients; i++) {
		w[i].o = &o;
		w[i].id = i;
		w[i].ops = o.ops / o.clients + (i < o.ops % o.clients);
		w[i].lat = calloc((size_t)w[i].ops + 1, sizeof(double));
		w[i].alive = calloc((size_t)o.keep + 1, sizeof(long));
		w[i].seed = (unsigned)(time(NULL) ^ (i * 7919) ^ getpid());
		if (w[i].lat == NULL || w[i].alive == NULL)
			return 1;
	}
	t0 = now_ms();
	for (int i = 0; i < o.clients; i++)
		if (pthread_create(&th[i], NULL, run, &w[i]) != 0)
			return 1;
	for (int i = 0; i < o.clients; i++)
		pthread_join(th[i], NULL);
	t1 = now_ms();
	for (int i = 0; i < o.clients; i++) {
		memcpy(all + n_all, w[i].lat,
		       sizeof(double) * (size_t)w[i].n_lat);
		n_all += w[i].n_lat;
		errors += w[i].errors;
		in_doubt += w[i].in_doubt;
	}
	qsort(all, (size_t)n_all, sizeof(*all), cmp_double);
	printf("{\"clients\":%d,\"ops\":%ld,\"seconds\":%.3f,"
	       "\"ops_per_s\":%.0f,\"p50_ms\":%.3f,\"p99_ms\":%.3f,"
	       "\"max_ms\":%.3f,\"errors\":%ld,\"in_doubt\":%ld}\n",
	       o.clients, n_all, (t1 - t0) / 1e3, n_all / ((t1 - t0) / 1e3),
	       n_all ? all[(long)(n_all * 0.5)] : 0,
	       n_all ? all[(long)(n_all * 0.99)] : 0,
	       n_all ? all[n_all - 1] : 0, errors, in_doubt);
	if (o.out) {
		FILE *f = fopen(o.out, "w");

		if (f == NULL) {
			perror(o.out);
			return 1;
		}
		for (int i = 0; i < o.clients; i++)
			for (int k = 0; k < w[i].n_alive; k++) {
				char name[128];

				name_of(&w[i], w[i].alive[k], name,
				        sizeof(name));
				fprintf(f, "%s\n", name);
			}
		fclose(f);
	}
	for (int i = 0; i < o.clients; i++) {
		free(w[i].lat);
		free(w[i].alive);
	}
	free(w);
	free(th);
	free(all);
	return errors ? 1 : 0;
}
