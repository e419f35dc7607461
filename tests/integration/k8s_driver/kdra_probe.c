/*
 * kdra_probe.c - drives the DRA driver (driver.h) the way the kubelet
 * plugin does, for the end-to-end tests and the benchmark:
 *
 *   gs-kdra-probe --node N --state DIR --cdi DIR --socket S
 *                 --kubeconfig K --shim P [--driver-dirs D] [--driver-root R]
 *                 [--cdi-hook H|none] CMD [CMD...]
 *   CMD: prepare NS NAME UID     one JSON line: {"error": null|msg,
 *                                "devices": [{request, pool, device,
 *                                "cdi": [...], "share_id"}], "ms": T}
 *        unprepare NS NAME UID   {"error": null|msg, "ms": T}
 *        twice NS NAME UID       two prepares from two threads at once
 *                                (two pods on one claim), both lines
 *        bench N NS NAME UID     N rounds of prepare + unprepare:
 *                                {"n", "prepare_p50_ms", "prepare_p99_ms",
 *                                 "unprepare_p99_ms", "errors"}
 *        health                  {"devices": [...], "version": V}
 *        start                   gs_kdra_start (health poller; publishes
 *                                ResourceSlices only with --publish 1)
 *        wait-change S           waits up to S s for the health listener:
 *                                {"changed": bool}
 * Exits 0 when every command ran (errors are in the JSON), 2 on usage.
 */
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "driver.h"

static pthread_mutex_t change_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t change_cv = PTHREAD_COND_INITIALIZER;
static int changes;

static void on_change(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&change_mu);
	changes++;
	pthread_cond_broadcast(&change_cv);
	pthread_mutex_unlock(&change_mu);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static json_t *prepared_json(const struct gs_kdra_prepared *p, double ms)
{
	json_t *o = json_object(), *devs = json_array();

	json_object_set_new(o, "error",
	                    p->error ? json_string(p->error) : json_null());
	for (size_t i = 0; i < p->n_devices; i++) {
		const struct gs_kdra_device *d = &p->devices[i];
		json_t *x = json_object(), *ids = json_array(),
		       *reqs = json_array();

		for (size_t k = 0; k < d->n_cdi_device_ids; k++)
			json_array_append_new(
			    ids, json_string(d->cdi_device_ids[k]));
		for (size_t k = 0; k < d->n_request_names; k++)
			json_array_append_new(reqs,
			                      json_string(d->request_names[k]));
		json_object_set_new(x, "requests", reqs);
		json_object_set_new(x, "pool", json_string(d->pool_name));
		json_object_set_new(x, "device", json_string(d->device_name));
		json_object_set_new(x, "cdi", ids);
		json_object_set_new(x, "share_id",
		                    d->share_id ? json_string(d->share_id)
		                                : json_null());
		json_array_append_new(devs, x);
	}
	json_object_set_new(o, "devices", devs);
	json_object_set_new(o, "ms", json_real(ms));
	return o;
}

static void print_json(json_t *o)
{
	char *s = json_dumps(o, JSON_COMPACT);

	puts(s ? s : "{}");
	fflush(stdout);
	free(s);
	json_decref(o);
}

struct twice_arg {
	struct gs_kdra *d;
	struct gs_kdra_claim_ref ref;
	struct gs_kdra_prepared out;
	double ms;
};

static void *twice_thread(void *p)
{
	struct twice_arg *a = p;
	double t0 = now_ms();

	gs_kdra_prepare(a->d, &a->ref, &a->out);
	a->ms = now_ms() - t0;
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p)
{
	int i = (int)(p * (n - 1) + 0.5);

	return n ? v[i] : 0;
}

int main(int argc, char **argv)
{
	struct gs_kdra_config cfg = {0};
	struct gs_kdra *d;
	struct gs_errbuf eb = {0};
	int i;

	for (i = 1; i + 1 < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
		const char *k = argv[i] + 2, *v = argv[i + 1];

		if (strcmp(k, "node") == 0)
			cfg.node_name = v;
		else if (strcmp(k, "state") == 0)
			cfg.state_dir = v;
		else if (strcmp(k, "cdi") == 0)
			cfg.cdi_dir = v;
		else if (strcmp(k, "socket") == 0)
			cfg.daemon_socket = v;
		else if (strcmp(k, "kubeconfig") == 0)
			cfg.kubeconfig = v;
		else if (strcmp(k, "shim") == 0)
			cfg.shim_path = v;
		else if (strcmp(k, "publish") == 0)
			cfg.publish = atoi(v);
		else if (strcmp(k, "interval-ms") == 0)
			cfg.publish_interval_ms = atoi(v);
		else if (strcmp(k, "driver-dirs") == 0)
			cfg.driver_dirs = v;
		else if (strcmp(k, "driver-root") == 0)
			cfg.driver_root = v;
		else if (strcmp(k, "cdi-hook") == 0)
			cfg.cdi_hook = v;
		else {
			fprintf(stderr, "unknown option --%s\n", k);
			return 2;
		}
	}
	if (gs_kdra_create(&cfg, &d, &eb) != GS_OK) {
		fprintf(stderr, "gs_kdra_create: %s\n", eb.msg);
		print_json(json_pack("{s:s}", "create_error", eb.msg));
		return 1;
	}
	while (i < argc) {
		const char *cmd = argv[i];

		if (strcmp(cmd, "prepare") == 0 && i + 3 < argc) {
			struct gs_kdra_claim_ref r = {argv[i + 1], argv[i + 3],
			                              argv[i + 2]};
			struct gs_kdra_prepared out;
			double t0 = now_ms();

			gs_kdra_prepare(d, &r, &out);
			print_json(prepared_json(&out, now_ms() - t0));
			gs_kdra_prepared_fini(&out);
			i += 4;
		} else if (strcmp(cmd, "unprepare") == 0 && i + 3 < argc) {
			struct gs_kdra_claim_ref r = {argv[i + 1], argv[i + 3],
			                              argv[i + 2]};
			double t0 = now_ms();
			char *err = gs_kdra_unprepare(d, &r);

			print_json(
			    json_pack("{s:o, s:f}", "error",
			              err ? json_string(err) : json_null(),
			              "ms", now_ms() - t0));
			free(err);
			i += 4;
		} else if (strcmp(cmd, "twice") == 0 && i + 3 < argc) {
			struct twice_arg a[2];
			pthread_t t[2];

			for (int k = 0; k < 2; k++) {
				memset(&a[k], 0, sizeof(a[k]));
				a[k].d = d;
				a[k].ref.ns = argv[i + 1];
				a[k].ref.name = argv[i + 2];
				a[k].ref.uid = argv[i + 3];
				pthread_create(&t[k], NULL, twice_thread,
				               &a[k]);
			}
			for (int k = 0; k < 2; k++) {
				pthread_join(t[k], NULL);
				print_json(prepared_json(&a[k].out, a[k].ms));
				gs_kdra_prepared_fini(&a[k].out);
			}
			i += 4;
		} else if (strcmp(cmd, "bench") == 0 && i + 4 < argc) {
			int n = atoi(argv[i + 1]), errors = 0;
			struct gs_kdra_claim_ref r = {argv[i + 2], argv[i + 4],
			                              argv[i + 3]};
			double *pp = calloc((size_t)n + 1, sizeof(double));
			double *up = calloc((size_t)n + 1, sizeof(double));

			for (int k = 0; k < n; k++) {
				struct gs_kdra_prepared out;
				double t0 = now_ms();
				char *err;

				gs_kdra_prepare(d, &r, &out);
				pp[k] = now_ms() - t0;
				errors += out.error != NULL;
				if (out.error)
					fprintf(stderr, "prepare: %s\n",
					        out.error);
				gs_kdra_prepared_fini(&out);
				t0 = now_ms();
				err = gs_kdra_unprepare(d, &r);
				up[k] = now_ms() - t0;
				errors += err != NULL;
				free(err);
			}
			qsort(pp, (size_t)n, sizeof(double), cmp_double);
			qsort(up, (size_t)n, sizeof(double), cmp_double);
			print_json(json_pack(
			    "{s:i, s:f, s:f, s:f, s:i}", "n", n,
			    "prepare_p50_ms", pct(pp, n, 0.5), "prepare_p99_ms",
			    pct(pp, n, 0.99), "unprepare_p99_ms",
			    pct(up, n, 0.99), "errors", errors));
			free(pp);
			free(up);
			i += 5;
		} else if (strcmp(cmd, "start") == 0) {
			gs_kdra_set_health_listener(d, on_change, NULL);
			if (gs_kdra_start(d, &eb) != GS_OK)
				fprintf(stderr, "gs_kdra_start: %s\n", eb.msg);
			i += 1;
		} else if (strcmp(cmd, "wait-change") == 0 && i + 1 < argc) {
			struct timespec ts;
			int seen, got;

			pthread_mutex_lock(&change_mu);
			seen = changes;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += atoi(argv[i + 1]);
			while (changes == seen &&
			       pthread_cond_timedwait(&change_cv, &change_mu,
			                              &ts) == 0)
				;
			got = changes != seen;
			pthread_mutex_unlock(&change_mu);
			print_json(json_pack("{s:b}", "changed", got));
			i += 2;
		} else if (strcmp(cmd, "health") == 0) {
			struct gs_kdra_health *h = NULL;
			size_t n = 0;
			uint64_t ver = 0;
			json_t *a = json_array();

			if (gs_kdra_health_snapshot(d, &h, &n, &ver, &eb) ==
			    GS_OK) {
				for (size_t k = 0; k < n; k++)
					json_array_append_new(
					    a, json_pack(
					           "{s:s, s:s, s:i}", "pool",
					           h[k].pool_name, "device",
					           h[k].device_name, "status",
					           (int)h[k].status));
			}
			gs_kdra_health_free(h, n);
			print_json(json_pack("{s:o, s:I}", "devices", a,
			                     "version",
			                     (json_int_t)(ver & 0x7fffffff)));
			i += 1;
		} else {
			fprintf(stderr, "bad command at '%s'\n", cmd);
			gs_kdra_destroy(d);
			return 2;
		}
	}
	gs_kdra_destroy(d);
	return 0;
}
