/*
 * cmd_quota.c - `gpuslice quota set|show|delete`: team quotas on the node
 * daemon. `set` changes only the amounts named on the command line; the
 * others keep their current values (a new team starts with no guarantee
 * and no maximum).
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "gs/client.h"
#include "gs/spec.h"

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: gpuslice [--socket S] quota set TEAM [options] [--json]\n"
	    "       gpuslice [--socket S] quota show [TEAM] [--json]\n"
	    "       gpuslice [--socket S] quota delete TEAM\n"
	    "\n"
	    "Team quotas: a guarantee the team can always reclaim, and a maximum it\n"
	    "never exceeds (borrowing idle capacity in between). Teams nest.\n"
	    "\n"
	    "set options (administrators):\n"
	    "  --parent P          parent team (\"\" for top level)\n"
	    "  --memory QTY        guaranteed memory (8GiB, ...)\n"
	    "  --compute N         guaranteed compute, %% of one GPU (250 = 2.5 GPUs)\n"
	    "  --mig N             guaranteed MIG compute slices\n"
	    "  --max-memory QTY    maximum memory, or unlimited\n"
	    "  --max-compute N     maximum compute, or unlimited\n"
	    "  --max-mig N         maximum MIG slices, or unlimited\n");
}

static void amount(const json_t *q, const char *key, char *buf, size_t len)
{
	json_t *v = json_object_get(q, key);

	if (v == NULL || json_is_null(v))
		snprintf(buf, len, "-");
	else if (strcmp(key, "memory_bytes") == 0)
		gs_cli_fmt_bytes((unsigned long long)json_integer_value(v), buf,
		                 len);
	else if (strcmp(key, "compute") == 0)
		snprintf(buf, len, "%lld%%", (long long)json_integer_value(v));
	else
		snprintf(buf, len, "%lld", (long long)json_integer_value(v));
}

static void print_team(const json_t *t)
{
	const json_t *g = json_object_get(t, "guarantee");
	const json_t *m = json_object_get(t, "max");
	const json_t *u = json_object_get(t, "usage");
	static const char *const keys[3] = {"memory_bytes", "compute", "mig"};
	char c[3][3][32];

	for (int k = 0; k < 3; k++) {
		amount(u, keys[k], c[0][k], sizeof(c[0][k]));
		amount(g, keys[k], c[1][k], sizeof(c[1][k]));
		amount(m, keys[k], c[2][k], sizeof(c[2][k]));
	}
	printf("%-16s %-12s %9s/%-9s/%-9s %6s/%-6s/%-9s %3s/%-3s/%s\n",
	       gs_client_str(t, "name"),
	       json_is_string(json_object_get(t, "parent"))
	           ? gs_client_str(t, "parent")
	           : "-",
	       c[0][0], c[1][0], c[2][0], c[0][1], c[1][1], c[2][1], c[0][2],
	       c[1][2], c[2][2]);
}

static int show(int argc, char **argv, bool as_json)
{
	struct gs_errbuf eb = {0};
	char path[200] = "/v1/teams";
	json_t *out = NULL;
	gs_err err;

	if (argc > 1) {
		strcat(path, "/");
		gs_client_urlencode(argv[1], path, sizeof(path));
	}
	err = gs_client_call(gs_cli_socket, "GET", path, NULL, &out, &eb);
	if (err)
		return gs_cli_fail("quota", err, &eb);
	if (as_json) {
		gs_cli_print_json(out);
	} else {
		json_t *a = json_object_get(out, "teams");

		printf("%-16s %-12s %-29s %-23s %s\n", "TEAM", "PARENT",
		       "MEMORY used/guar/max", "COMPUTE used/guar/max",
		       "MIG used/guar/max");
		if (a)
			for (size_t i = 0; i < json_array_size(a); i++)
				print_team(json_array_get(a, i));
		else
			print_team(out);
	}
	json_decref(out);
	return GS_EXIT_OK;
}

/* Copies the amounts of a team's current quota into a PUT body. */
static json_t *current_amounts(const json_t *q)
{
	json_t *o = json_object();
	json_t *v;

	if ((v = json_object_get(q, "memory_bytes")))
		json_object_set(o, "memory", v);
	if ((v = json_object_get(q, "compute")))
		json_object_set(o, "compute", v);
	if ((v = json_object_get(q, "mig")))
		json_object_set(o, "mig", v);
	return o;
}

static int set(int argc, char **argv, bool as_json, json_t *guar, json_t *max,
               const char *parent)
{
	struct gs_errbuf eb = {0};
	char path[200] = "/v1/teams/";
	json_t *cur = NULL, *body, *out = NULL, *g, *m;
	const char *key;
	json_t *val;
	gs_err err;

	if (argc != 2) {
		usage(stderr);
		return GS_EXIT_USAGE;
	}
	gs_client_urlencode(argv[1], path, sizeof(path));
	err = gs_client_call(gs_cli_socket, "GET", path, NULL, &cur, &eb);
	if (err && err != GS_ERR_NOT_FOUND)
		return gs_cli_fail("quota", err, &eb);
	eb.set = false;
	body = json_object();
	g = cur ? current_amounts(json_object_get(cur, "guarantee"))
	        : json_object();
	m = cur ? current_amounts(json_object_get(cur, "max")) : json_object();
	json_object_foreach(guar, key, val) json_object_set(g, key, val);
	json_object_foreach(max, key, val) json_object_set(m, key, val);
	json_object_set_new(body, "guarantee", g);
	json_object_set_new(body, "max", m);
	if (parent)
		json_object_set_new(body, "parent", json_string(parent));
	else if (cur && json_is_string(json_object_get(cur, "parent")))
		json_object_set(body, "parent", json_object_get(cur, "parent"));
	json_decref(cur);
	err = gs_client_call(gs_cli_socket, "PUT", path, body, &out, &eb);
	json_decref(body);
	if (err)
		return gs_cli_fail("quota", err, &eb);
	if (as_json) {
		gs_cli_print_json(out);
	} else {
		printf("%-16s %-12s %-29s %-23s %s\n", "TEAM", "PARENT",
		       "MEMORY used/guar/max", "COMPUTE used/guar/max",
		       "MIG used/guar/max");
		print_team(out);
	}
	json_decref(out);
	return GS_EXIT_OK;
}

/* Reads an amount option into obj[key]; exit status or -1 when fine. */
static int put_amount(json_t *obj, const char *key, const char *text)
{
	struct gs_errbuf eb = {0};

	if (strcmp(text, "unlimited") == 0) {
		json_object_set_new(obj, key, json_string("unlimited"));
		return -1;
	}
	if (strcmp(key, "memory") == 0) {
		uint64_t b;
		gs_err err = gs_parse_memory(text, &b, &eb);

		if (err)
			return gs_cli_fail("quota", err, &eb);
		json_object_set_new(obj, key, json_integer((json_int_t)b));
	} else {
		char *end;
		size_t n = strlen(text);
		long long v = strtoll(text, &end, 10);

		if (end == text ||
		    (*end && !(*end == '%' && end == text + n - 1)) || v < 0) {
			gs_cli_error("quota",
			             "--%s takes a whole number, got '%s'", key,
			             text);
			return GS_EXIT_USAGE;
		}
		json_object_set_new(obj, key, json_integer(v));
	}
	return -1;
}

int gs_cli_quota(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"parent", required_argument, NULL, 'p'},
	    {"memory", required_argument, NULL, 'm'},
	    {"compute", required_argument, NULL, 'c'},
	    {"mig", required_argument, NULL, 'g'},
	    {"max-memory", required_argument, NULL, 'M'},
	    {"max-compute", required_argument, NULL, 'C'},
	    {"max-mig", required_argument, NULL, 'G'},
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	json_t *guar = json_object(), *max = json_object();
	const char *parent = NULL, *sub;
	bool as_json = false;
	int opt, rc = -1;

	if (argc >= 2 &&
	    (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		rc = GS_EXIT_OK;
		goto out;
	}
	if (argc < 2) {
		usage(stderr);
		rc = GS_EXIT_USAGE;
		goto out;
	}
	sub = argv[1];
	argc--;
	argv++;
	optind = 1;
	while (rc < 0 &&
	       (opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			parent = optarg;
			break;
		case 'm':
			rc = put_amount(guar, "memory", optarg);
			break;
		case 'c':
			rc = put_amount(guar, "compute", optarg);
			break;
		case 'g':
			rc = put_amount(guar, "mig", optarg);
			break;
		case 'M':
			rc = put_amount(max, "memory", optarg);
			break;
		case 'C':
			rc = put_amount(max, "compute", optarg);
			break;
		case 'G':
			rc = put_amount(max, "mig", optarg);
			break;
		case 'j':
			as_json = true;
			break;
		case 'h':
			usage(stdout);
			rc = GS_EXIT_OK;
			break;
		default:
			usage(stderr);
			rc = GS_EXIT_USAGE;
		}
	}
	if (rc >= 0)
		goto out;
	/* Leave argv[0] = the subcommand, then the operands. */
	argv[optind - 1] = (char *)sub;
	argc -= optind - 1;
	argv += optind - 1;
	if (strcmp(sub, "show") == 0) {
		rc = argc <= 2 ? show(argc, argv, as_json) : GS_EXIT_USAGE;
	} else if (strcmp(sub, "set") == 0) {
		rc = set(argc, argv, as_json, guar, max, parent);
	} else if (strcmp(sub, "delete") == 0 && argc == 2) {
		struct gs_errbuf eb = {0};
		char path[200] = "/v1/teams/";
		gs_err err;

		gs_client_urlencode(argv[1], path, sizeof(path));
		err = gs_client_call(gs_cli_socket, "DELETE", path, NULL, NULL,
		                     &eb);
		rc = err ? gs_cli_fail("quota", err, &eb) : GS_EXIT_OK;
		if (!err)
			printf("deleted team %s\n", argv[1]);
	} else {
		usage(stderr);
		rc = GS_EXIT_USAGE;
	}
	if (rc == GS_EXIT_USAGE && strcmp(sub, "show") == 0)
		usage(stderr);
out:
	json_decref(guar);
	json_decref(max);
	return rc;
}
