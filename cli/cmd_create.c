/*
 * cmd_create.c - `gpuslice create`: asks gpusliced for a slice.
 *
 * The spec is checked here first (spec.h) so that a typo is exit 2 with
 * the parser's message without a round trip; the daemon checks it again
 * and decides mode, GPU and quota.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gs/client.h"
#include "gs/spec.h"

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: gpuslice [--socket S] create [--name NAME] [options]\n"
	        "\n"
	        "Creates a slice on the node daemon and prints where it went.\n"
	        "\n"
	        "  --name NAME         slice name (default: the daemon picks slice-N)\n"
	        "  --memory QTY        memory cap: 512MiB, 8GiB, 8G (GiB), bytes\n"
	        "  --compute PCT       compute share of the GPU, 1..100\n"
	        "  --priority P        high | normal | low (default normal)\n"
	        "  --weight N          share of turns among equals, 1..1000\n"
	        "  --mode M            auto | timeslice | mps | mig | mig+timeslice | mig+mps\n"
	        "  --mig-profile P     e.g. 1g.10gb (MIG modes)\n"
	        "  --isolation I       none | memory | hard | exclusive\n"
	        "  --gpu SEL           index, UUID, model or any\n"
	        "  --swap S            allow (default) | never: may its memory be swapped out\n"
	        "                      to host memory on an oversubscribed node (docs/swap.md)\n"
	        "  --team T            charge it to team T (default: yours)\n"
	        "  --on-exit WHAT      keep (default) | delete: delete once its processes end\n"
	        "  --owner UID         create it for another user (admins)\n"
	        "  --json              print the daemon's JSON for the slice\n"
	        "\n"
	        "exit status: 0 created, 2 bad spec, 4 not allowed, 5 does not fit or over\n"
	        "quota, 6 daemon unreachable\n");
}

int gs_cli_create(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"name", required_argument, NULL, 'n'},
	    {"memory", required_argument, NULL, 'm'},
	    {"compute", required_argument, NULL, 'c'},
	    {"priority", required_argument, NULL, 'p'},
	    {"weight", required_argument, NULL, 'w'},
	    {"mode", required_argument, NULL, 'M'},
	    {"mig-profile", required_argument, NULL, 'P'},
	    {"isolation", required_argument, NULL, 'i'},
	    {"gpu", required_argument, NULL, 'g'},
	    {"swap", required_argument, NULL, 's'},
	    {"team", required_argument, NULL, 't'},
	    {"on-exit", required_argument, NULL, 'e'},
	    {"owner", required_argument, NULL, 'o'},
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	static const char *const spec_key[128] = {
	    ['n'] = "name",        ['m'] = "memory",    ['c'] = "compute",
	    ['p'] = "priority",    ['w'] = "weight",    ['M'] = "mode",
	    ['P'] = "mig-profile", ['i'] = "isolation", ['g'] = "gpu",
	    ['s'] = "swap",
	};
	struct gs_slice_spec spec;
	struct gs_errbuf eb = {0};
	json_t *body = json_object(), *out = NULL;
	bool as_json = false;
	int opt, rc = GS_EXIT_OK;
	gs_err err;

	gs_spec_init(&spec);
	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (opt > 0 && opt < 128 && spec_key[opt]) {
			err = gs_spec_set(&spec, spec_key[opt], optarg, &eb);
			if (err) {
				json_decref(body);
				return gs_cli_fail("create", err, &eb);
			}
			json_object_set_new(body, spec_key[opt],
			                    json_string(optarg));
			continue;
		}
		switch (opt) {
		case 't':
			json_object_set_new(body, "team", json_string(optarg));
			break;
		case 'e':
			if (strcmp(optarg, "keep") &&
			    strcmp(optarg, "delete")) {
				gs_cli_error(
				    "create",
				    "--on-exit must be keep or delete");
				json_decref(body);
				return GS_EXIT_USAGE;
			}
			json_object_set_new(body, "on_exit",
			                    json_string(optarg));
			break;
		case 'o': {
			char *end;
			long long uid = strtoll(optarg, &end, 10);

			if (*end || end == optarg || uid < 0) {
				gs_cli_error("create", "--owner takes a uid");
				json_decref(body);
				return GS_EXIT_USAGE;
			}
			json_object_set_new(body, "owner", json_integer(uid));
			break;
		}
		case 'j':
			as_json = true;
			break;
		case 'h':
			usage(stdout);
			json_decref(body);
			return GS_EXIT_OK;
		default:
			usage(stderr);
			json_decref(body);
			return GS_EXIT_USAGE;
		}
	}
	if (optind != argc) {
		gs_cli_error("create", "unexpected argument '%s'",
		             argv[optind]);
		json_decref(body);
		return GS_EXIT_USAGE;
	}
	err = gs_spec_validate(&spec, &eb);
	if (!err)
		err = gs_client_slice_create(gs_cli_socket, body, &out, &eb);
	json_decref(body);
	if (err)
		return gs_cli_fail("create", err, &eb);
	if (as_json) {
		gs_cli_print_json(out);
	} else {
		char mem[32];
		json_t *gpu = json_object_get(out, "gpu");
		json_t *mig = json_object_get(out, "mig");
		json_t *pre = json_object_get(out, "preempted");
		json_t *parked = json_object_get(out, "parked");

		gs_cli_fmt_bytes(
		    (unsigned long long)gs_client_int(out, "memory_bytes"), mem,
		    sizeof(mem));
		printf(
		    "created slice %s on gpu %lld (%s%s%s, memory %s, compute %lld%%, priority %s, team %s)\n",
		    gs_client_str(out, "name"), gs_client_int(gpu, "index"),
		    gs_client_str(out, "mode"), json_is_object(mig) ? " " : "",
		    json_is_object(mig) ? gs_client_str(mig, "profile") : "",
		    mem, gs_client_int(out, "compute"),
		    gs_client_str(out, "priority"), gs_client_str(out, "team"));
		for (size_t i = 0;
		     json_is_array(pre) && i < json_array_size(pre); i++) {
			const char *v =
			    json_string_value(json_array_get(pre, i));
			bool p = false;

			for (size_t k = 0; v && json_is_array(parked) &&
			                   k < json_array_size(parked);
			     k++) {
				const char *w = json_string_value(
				    json_array_get(parked, k));

				p = p || (w && strcmp(v, w) == 0);
			}
			if (p)
				printf(
				    "parked slice %s to make room (swapped out; it resumes when there is room again)\n",
				    v);
			else
				printf("preempted slice %s to make room\n", v);
		}
	}
	json_decref(out);
	return rc;
}
