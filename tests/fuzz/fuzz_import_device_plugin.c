/*
 * fuzz_import_device_plugin.c - libFuzzer target: any bytes through the
 * YAML reader and the device-plugin importer, as `gpuslice import
 * device-plugin --gpu H100 --gpus 8` reads them. Must never crash, leak or
 * read out of bounds; errors are fine. Seeds: tests/fuzz/corpus/<name>/.
 */
#include "gs/yamldoc.h"
#include "gs/import.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gs_import_opts opts = {.gpu = gs_catalog_find("H100"),
	                              .gpus = 8};
	struct gs_errbuf eb = {0};
	struct gs_dp_import *im;
	struct gs_doc *doc = NULL;

	if (gs_yamldoc_parse((const char *)data, size, "fuzz.yaml", &doc,
	                     &eb) != GS_OK)
		return 0;
	im = malloc(sizeof(*im));
	if (im != NULL) {
		gs_errbuf_init(&eb);
		(void)gs_import_device_plugin(doc, &opts, im, &eb);
		free(im);
	}
	gs_doc_destroy(doc);
	return 0;
}
