/*
 * krs_run.c - gs-krs-run: runs the ResourceSlice publisher (rslices.h)
 * against an API server and gpusliced until SIGTERM/SIGINT, then prints
 * its counters as JSON. For the publisher's end-to-end tests.
 *   gs-krs-run --server URL --node NAME --socket SOCK [--token-file F]
 *              [--interval MS] [--partitions K] [--write-budget N]
 *              [--resync-ms MS] [--metrics-file F]
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "gs/log.h"
#include "kube.h"
#include "rslices.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"server", required_argument, NULL, 's'},
	    {"node", required_argument, NULL, 'n'},
	    {"socket", required_argument, NULL, 'S'},
	    {"token-file", required_argument, NULL, 't'},
	    {"interval", required_argument, NULL, 'i'},
	    {"partitions", required_argument, NULL, 'k'},
	    {"write-budget", required_argument, NULL, 'b'},
	    {"resync-ms", required_argument, NULL, 'r'},
	    {"metrics-file", required_argument, NULL, 'm'},
	    {NULL, 0, NULL, 0}};
	struct gs_kube_config kc = {.timeout_ms = 3000};
	struct gs_krs_config rc = {0};
	struct gs_kube *kube;
	struct gs_krs *krs;
	struct gs_errbuf eb = {0};
	struct gs_krs_stats s;
	gs_err err;
	int c;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			kc.server = optarg;
			break;
		case 'n':
			rc.node_name = optarg;
			break;
		case 'S':
			rc.daemon_socket = optarg;
			break;
		case 't':
			kc.token_file = optarg;
			break;
		case 'i':
			rc.interval_ms = atoi(optarg);
			break;
		case 'k':
			rc.partitions = atoi(optarg);
			break;
		case 'b':
			rc.write_budget = atoi(optarg);
			break;
		case 'r':
			rc.resync_ms = atoi(optarg);
			break;
		case 'm':
			rc.metrics_file = optarg;
			break;
		default:
			fprintf(
			    stderr,
			    "usage: gs-krs-run --server URL --node N --socket "
			    "S [--token-file F] [--interval MS]\n");
			return 2;
		}
	}
	gs_log_set_level(getenv("GS_KRS_DEBUG") ? GS_LOG_DEBUG : GS_LOG_INFO);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	err = gs_kube_create(&kc, &kube, &eb);
	if (err == GS_OK) {
		err = gs_krs_create(kube, &rc, &krs, &eb);
		if (err)
			gs_kube_destroy(kube);
	}
	if (err) {
		fprintf(stderr, "gs-krs-run: %s\n", gs_errbuf_msg(&eb, err));
		return 1;
	}
	while (!stop)
		usleep(50000);
	gs_krs_get_stats(krs, &s);
	gs_krs_destroy(krs);
	gs_kube_destroy(kube);
	printf("{\"publishes\": %llu, \"writes\": %llu, \"failures\": %llu, "
	       "\"generation\": %lld, \"deferred\": %llu, \"probes\": %llu, "
	       "\"server_minor\": %d, \"layout\": \"%s\"}\n",
	       (unsigned long long)s.publishes, (unsigned long long)s.writes,
	       (unsigned long long)s.failures, (long long)s.generation,
	       (unsigned long long)s.deferred, (unsigned long long)s.probes,
	       s.server_minor, s.layout);
	return 0;
}
