/*
 * cmd_events.c - `gpuslice events`: the daemon's event log (slices created
 * and deleted, watchdog actions, faults, reclaims), oldest first;
 * --follow keeps printing new ones.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "gs/client.h"

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: gpuslice [--socket S] events [--since T] [--slice S] [--limit N]\n"
	        "                [--follow] [--json]\n"
	        "\n"
	        "  --since T   24h, 30m, Unix seconds or RFC 3339 time\n"
	        "  --slice S   only events about slice S\n"
	        "  --limit N   at most N events (default 100, at most 10000)\n"
	        "  --follow    keep printing new events (Ctrl-C to stop)\n"
	        "  --json      {\"events\": [...], \"last_id\": N}; with --follow one event per line\n");
}

static void print_event(const json_t *e, bool as_json)
{
	if (as_json) {
		char *s = json_dumps(e, JSON_COMPACT);

		if (s) {
			puts(s);
			free(s);
		}
		return;
	}
	printf("%s %-16s %-20s %s\n", gs_client_str(e, "time"),
	       gs_client_str(e, "type"),
	       gs_client_str(e, "slice")[0] ? gs_client_str(e, "slice") : "-",
	       gs_client_str(e, "message"));
}

int gs_cli_events(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"since", required_argument, NULL, 's'},
	    {"slice", required_argument, NULL, 'S'},
	    {"limit", required_argument, NULL, 'n'},
	    {"follow", no_argument, NULL, 'f'},
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *since = NULL, *slice = NULL, *limit = "100";
	bool follow = false, as_json = false;
	long long after = 0;
	int opt;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			since = optarg;
			break;
		case 'S':
			slice = optarg;
			break;
		case 'n':
			limit = optarg;
			break;
		case 'f':
			follow = true;
			break;
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
		gs_cli_error("events", "unexpected argument '%s'",
		             argv[optind]);
		return GS_EXIT_USAGE;
	}
	for (;;) {
		struct gs_errbuf eb = {0};
		char path[512] = "/v1/events?limit=";
		json_t *out = NULL, *a;
		gs_err err;

		gs_client_urlencode(limit, path, sizeof(path));
		if (since && after == 0) {
			strcat(path, "&since=");
			gs_client_urlencode(since, path, sizeof(path));
		}
		if (slice) {
			strcat(path, "&slice=");
			gs_client_urlencode(slice, path, sizeof(path));
		}
		if (after)
			snprintf(path + strlen(path),
			         sizeof(path) - strlen(path), "&after=%lld",
			         after);
		err =
		    gs_client_call(gs_cli_socket, "GET", path, NULL, &out, &eb);
		if (err)
			return gs_cli_fail("events", err, &eb);
		a = json_object_get(out, "events");
		if (as_json && !follow) {
			gs_cli_print_json(out);
		} else {
			for (size_t i = 0; i < json_array_size(a); i++)
				print_event(json_array_get(a, i), as_json);
		}
		after = gs_client_int(out, "last_id");
		json_decref(out);
		if (!follow)
			return GS_EXIT_OK;
		fflush(stdout);
		usleep(500000);
	}
}
