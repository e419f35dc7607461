/*
 * fuzz_region_books.c - libFuzzer target for the region file a tenant can
 * write: the private books of a uid-0 slice (books/usage.0.<slot>),
 * which the pod it is mounted into writes. Its bytes go through what the
 * daemon and the shim do with it (tests/fuzz/region_fuzz.h); a crash or a
 * sanitizer report is a finding.
 */
#include "region_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return region_fuzz_run(REGION_FUZZ_BOOKS, data, size);
}
