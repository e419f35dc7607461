/*
 * kdev_dump.c - gs-kdev-dump: prints the ResourceSlices the device model
 * builds from a /v1/gpus answer, for the schema tests.
 *   gs-kdev-dump NODE GPUS.json [HEALTH.json]
 * Exit 0 and a JSON array on stdout, or 1 with the error on stderr.
 */
#include <stdio.h>

#include "devmodel.h"

int main(int argc, char **argv)
{
	json_error_t je;
	json_t *gpus, *health = NULL, *out = NULL;
	struct gs_errbuf eb = {0};
	gs_err err;

	if (argc < 3 || argc > 4) {
		fprintf(stderr,
		        "usage: gs-kdev-dump NODE GPUS.json [HEALTH.json]\n");
		return 2;
	}
	gpus = json_load_file(argv[2], 0, &je);
	if (gpus == NULL) {
		fprintf(stderr, "gs-kdev-dump: %s: %s\n", argv[2], je.text);
		return 1;
	}
	if (argc == 4 && (health = json_load_file(argv[3], 0, &je)) == NULL) {
		fprintf(stderr, "gs-kdev-dump: %s: %s\n", argv[3], je.text);
		json_decref(gpus);
		return 1;
	}
	err = gs_kdev_build_slices(gpus, health, argv[1], "gpuslice.io", 1,
	                           &out, &eb);
	json_decref(gpus);
	json_decref(health);
	if (err) {
		fprintf(stderr, "gs-kdev-dump: %s\n", gs_errbuf_msg(&eb, err));
		return 1;
	}
	json_dumpf(out, stdout, JSON_INDENT(1));
	putchar('\n');
	json_decref(out);
	return 0;
}
