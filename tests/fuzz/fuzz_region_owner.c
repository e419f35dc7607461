/*
 * fuzz_region_owner.c - libFuzzer target for the region file a tenant can
 * write: an owner file (usage.<uid> of a daemon's region), which its
 * owner's processes write. Its bytes go through what the daemon
 * and the shim do with it (tests/fuzz/region_fuzz.h); a crash or a
 * sanitizer report is a finding.
 */
#include "region_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return region_fuzz_run(REGION_FUZZ_OWNER, data, size);
}
