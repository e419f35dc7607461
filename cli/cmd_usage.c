/*
 * cmd_usage.c - `gpuslice usage`: the ledger by team or slice over a time
 * range, with costs from the daemon's price table, as a table, CSV or JSON.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "gs/client.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: gpuslice [--socket S] usage [--since T] [--until T] [--by team|slice]\n"
	           "                [--team T] [--slice S] [--format table|csv|json] [--json]\n"
	           "\n"
	           "What slices used, from the daemon's ledger: GPU-seconds (measured GPU\n"
	           "time), SM-seconds (GPU time x the share of the SMs the slice may use:\n"
	           "1 for turns and MIG, the MPS active thread percentage / 100), GiB-seconds\n"
	           "(memory held over time), throttled seconds, reserved GPU-seconds (compute\n"
	           "share x wall time) and cost (price table, on GPU-seconds).\n"
	           "\n"
	           "  --since T   24h, 30m, 7d, Unix seconds or 2024-05-01T00:00:00Z (default 24h)\n"
	           "  --until T   as --since (default now)\n"
	           "  --by K      group by team (default) or slice\n");
}

static void print_csv_field(const char *s)
{
	bool quote = strpbrk(s, ",\"\n") != NULL;

	if (!quote) {
		fputs(s, stdout);
		return;
	}
	putchar('"');
	for (; *s; s++) {
		if (*s == '"')
			putchar('"');
		putchar(*s);
	}
	putchar('"');
}

int gs_cli_usage(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"since", required_argument, NULL, 's'},
	    {"until", required_argument, NULL, 'u'},
	    {"by", required_argument, NULL, 'b'},
	    {"team", required_argument, NULL, 't'},
	    {"slice", required_argument, NULL, 'S'},
	    {"format", required_argument, NULL, 'f'},
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct gs_errbuf eb = {0};
	char path[512] = "/v1/usage?by=";
	const char *since = "24h", *until = NULL, *by = "team", *team = NULL,
	           *slice = NULL, *format = "table";
	json_t *out = NULL, *rows, *tot;
	int opt;
	gs_err err;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			since = optarg;
			break;
		case 'u':
			until = optarg;
			break;
		case 'b':
			by = optarg;
			break;
		case 't':
			team = optarg;
			break;
		case 'S':
			slice = optarg;
			break;
		case 'f':
			format = optarg;
			break;
		case 'j':
			format = "json";
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
		gs_cli_error("usage", "unexpected argument '%s'", argv[optind]);
		return GS_EXIT_USAGE;
	}
	if (strcmp(by, "team") && strcmp(by, "slice")) {
		gs_cli_error("usage", "--by must be team or slice");
		return GS_EXIT_USAGE;
	}
	if (strcmp(format, "table") && strcmp(format, "csv") &&
	    strcmp(format, "json")) {
		gs_cli_error("usage", "--format must be table, csv or json");
		return GS_EXIT_USAGE;
	}
	gs_client_urlencode(by, path, sizeof(path));
	strcat(path, "&since=");
	gs_client_urlencode(since, path, sizeof(path));
	if (until) {
		strcat(path, "&until=");
		gs_client_urlencode(until, path, sizeof(path));
	}
	if (team) {
		strcat(path, "&team=");
		gs_client_urlencode(team, path, sizeof(path));
	}
	if (slice) {
		strcat(path, "&slice=");
		gs_client_urlencode(slice, path, sizeof(path));
	}
	err = gs_client_call(gs_cli_socket, "GET", path, NULL, &out, &eb);
	if (err)
		return gs_cli_fail("usage", err, &eb);
	if (strcmp(format, "json") == 0) {
		gs_cli_print_json(out);
		json_decref(out);
		return GS_EXIT_OK;
	}
	rows = json_object_get(out, "rows");
	tot = json_object_get(out, "total");
	if (strcmp(format, "csv") == 0) {
		/* new columns last (sm_seconds, then parked_seconds):
		 * columns that were there keep their places */
		printf("%s,gpu_seconds,gib_seconds,throttled_seconds,reserved_gpu_seconds,cost,currency,sm_seconds,parked_seconds\n",
		       by);
		for (size_t i = 0; i < json_array_size(rows); i++) {
			json_t *r = json_array_get(rows, i);

			print_csv_field(gs_client_str(r, by));
			printf(",%.3f,%.3f,%.3f,%.3f,%.6f,%s,%.3f,%.3f\n",
			       gs_client_num(r, "gpu_seconds"),
			       gs_client_num(r, "gib_seconds"),
			       gs_client_num(r, "throttled_seconds"),
			       gs_client_num(r, "reserved_gpu_seconds"),
			       gs_client_num(r, "cost"),
			       gs_client_str(out, "currency"),
			       gs_client_num(r, "sm_seconds"),
			       gs_client_num(r, "parked_seconds"));
		}
		json_decref(out);
		return GS_EXIT_OK;
	}
	printf("usage from %s to %s, by %s\n", gs_client_str(out, "since"),
	       gs_client_str(out, "until"), by);
	printf("%-20s %12s %12s %12s %12s %12s %12s\n",
	       strcmp(by, "team") ? "SLICE" : "TEAM", "GPU-SECONDS",
	       "SM-SECONDS", "GIB-SECONDS", "THROTTLED-S", "RESERVED-S",
	       "COST");
	for (size_t i = 0; i < json_array_size(rows); i++) {
		json_t *r = json_array_get(rows, i);

		printf("%-20s %12.1f %12.1f %12.1f %12.1f %12.1f %8.4f %s\n",
		       gs_client_str(r, by), gs_client_num(r, "gpu_seconds"),
		       gs_client_num(r, "sm_seconds"),
		       gs_client_num(r, "gib_seconds"),
		       gs_client_num(r, "throttled_seconds"),
		       gs_client_num(r, "reserved_gpu_seconds"),
		       gs_client_num(r, "cost"),
		       gs_client_str(out, "currency"));
	}
	printf("%-20s %12.1f %12.1f %12.1f %12.1f %12.1f %8.4f %s\n", "total",
	       gs_client_num(tot, "gpu_seconds"),
	       gs_client_num(tot, "sm_seconds"),
	       gs_client_num(tot, "gib_seconds"),
	       gs_client_num(tot, "throttled_seconds"),
	       gs_client_num(tot, "reserved_gpu_seconds"),
	       gs_client_num(tot, "cost"), gs_client_str(out, "currency"));
	/* after the table, so that its columns stay as they were */
	for (size_t i = 0; i < json_array_size(rows); i++) {
		json_t *r = json_array_get(rows, i);

		if (gs_client_num(r, "parked_seconds") > 0)
			printf("%s was parked %.1f s (no GPU memory or reserved time billed for it)\n",
			       gs_client_str(r, by),
			       gs_client_num(r, "parked_seconds"));
	}
	if (gs_client_int(out, "sm_unknown_rows") > 0)
		printf("(%lld rows from before schema 5 have no SM-seconds)\n",
		       gs_client_int(out, "sm_unknown_rows"));
	printf("costs are priced on %s\n", gs_client_str(out, "cost_basis"));
	json_decref(out);
	return GS_EXIT_OK;
}
