/*
 * fuzz_spec.c - libFuzzer target for slice specs: the input is tried as a
 * key=value list, as a single quantity and as JSON. Whatever parses must
 * validate without crashing, print canonically, and parse back to the same
 * spec (a mismatch aborts, so the fuzzer reports it).
 */
#include "gs/spec.h"
#include "gs/spec_json.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_round_trip(const struct gs_slice_spec *s)
{
	struct gs_slice_spec again;
	char text[GS_SPEC_FORMAT_MAX];
	json_t *j;

	(void)gs_spec_validate(s, NULL);
	if (gs_spec_format(s, text, sizeof(text)) >= (int)sizeof(text))
		abort();
	gs_spec_init(&again);
	if (gs_spec_parse_kvlist(&again, text, NULL) != GS_OK ||
	    !gs_spec_equal(s, &again))
		abort();
	j = gs_spec_to_json(s);
	if (j == NULL)
		return;
	gs_spec_init(&again);
	if (gs_spec_from_json(&again, j, NULL) != GS_OK ||
	    !gs_spec_equal(s, &again))
		abort();
	json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gs_slice_spec s;
	char *text;
	uint64_t bytes;
	int pct;

	if (size > 4096)
		return 0;
	text = malloc(size + 1);
	if (text == NULL)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';

	gs_spec_init(&s);
	if (gs_spec_parse_kvlist(&s, text, NULL) == GS_OK)
		check_round_trip(&s);
	if (gs_parse_memory(text, &bytes, NULL) == GS_OK) {
		char buf[32];

		(void)gs_format_memory(bytes, buf, sizeof(buf));
		if (gs_parse_memory(buf, &bytes, NULL) != GS_OK)
			abort();
	}
	(void)gs_parse_compute(text, &pct, NULL);
	gs_spec_init(&s);
	if (gs_spec_from_json_text(&s, (const char *)data, size, NULL) == GS_OK)
		check_round_trip(&s);
	free(text);
	return 0;
}
