/*
 * fuzz_region_usage.c - libFuzzer target for the region file a tenant can
 * write: the shared usage file of a region `gpuslice run` made, which
 * every tenant of it writes. Its bytes go through what the daemon
 * and the shim do with it (tests/fuzz/region_fuzz.h); a crash or a
 * sanitizer report is a finding.
 */
#include "region_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return region_fuzz_run(REGION_FUZZ_USAGE, data, size);
}
