/*
 * store_fixture.h - a fresh directory per test for the daemon store's unit
 * tests: store_fixture_setup makes /tmp/gs-<name>-XXXXXX and sets the
 * test's state.db path in it; store_fixture_teardown removes it all. The
 * including test owns the two buffers (dir, path) this header defines.
 * Include after cmocka.h.
 */
#ifndef GS_TEST_STORE_FIXTURE_H
#define GS_TEST_STORE_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>

static char dir[256];
static char path[300];

static inline int store_fixture_setup(const char *name)
{
	snprintf(dir, sizeof(dir), "/tmp/gs-%s-XXXXXX", name);
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/state.db", dir);
	return 0;
}

static inline int store_fixture_teardown(void)
{
	char cmd[400];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

#endif
