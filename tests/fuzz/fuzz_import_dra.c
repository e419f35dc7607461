/*
 * fuzz_import_dra.c - libFuzzer target: any bytes through the YAML reader
 * and the DRA importer (GpuConfig, MigDeviceConfig, ResourceClaim[Template]),
 * as `gpuslice import dra` reads them. Must never crash, leak or read out
 * of bounds; errors are fine. Seeds: tests/fuzz/corpus/<name>/.
 */
#include "gs/yamldoc.h"
#include "gs/import.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gs_errbuf eb = {0};
	struct gs_dra_import *im;
	struct gs_doc *doc = NULL;

	if (gs_yamldoc_parse((const char *)data, size, "fuzz.yaml", &doc,
	                     &eb) != GS_OK)
		return 0;
	im = malloc(sizeof(*im));
	if (im != NULL) {
		gs_errbuf_init(&eb);
		(void)gs_import_dra(doc, im, &eb);
		free(im);
	}
	gs_doc_destroy(doc);
	return 0;
}
