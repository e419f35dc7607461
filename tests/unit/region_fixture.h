/*
 * region_fixture.h - a fresh run directory per test for the region's unit
 * tests: region_fx_setup makes /tmp/gs-test-<name>-XXXXXX and hands the
 * test a struct region_fx (the region, when the test opens one, is
 * closed by region_fx_teardown, which removes the directory too);
 * region_fx_make_slice adds a slice with a memory cap. Include after
 * cmocka.h and gs/region.h.
 */
#ifndef GS_TEST_REGION_FIXTURE_H
#define GS_TEST_REGION_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>

struct region_fx {
	char dir[64];
	struct gs_region *r;
};

static inline int region_fx_setup(void **state, const char *name)
{
	struct region_fx *f = calloc(1, sizeof(*f));

	if (f == NULL)
		return -1;
	(void)snprintf(f->dir, sizeof(f->dir), "/tmp/gs-test-%s-XXXXXX", name);
	if (mkdtemp(f->dir) == NULL) {
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static inline int region_fx_teardown(void **state)
{
	struct region_fx *f = *state;
	char cmd[128];

	gs_region_close(f->r);
	(void)snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	(void)!system(cmd);
	free(f);
	return 0;
}

static inline struct gs_slice_ref
region_fx_make_slice(struct gs_region *r, const char *name, uint64_t mem)
{
	struct gs_slice_limits lim;
	struct gs_slice_ref ref;

	gs_slice_limits_init(&lim, name);
	lim.mem_limit = mem;
	assert_int_equal(gs_region_slice_create(r, &lim, &ref, NULL), GS_OK);
	return ref;
}

#endif
