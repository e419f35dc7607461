/*
 * check.h - the assertion macros of the sim's runtime test programs
 * (progs/*.cu): CHECK(call) wants cudaSuccess, WANT(call, err) a given
 * error, EXPECT(cond) a condition; each failure prints one "FAIL" line
 * and counts; finish() prints "all ok" or the count and gives the exit
 * status.
 */
#ifndef GS_SIMPROG_CHECK_H
#define GS_SIMPROG_CHECK_H

#include <cuda_runtime.h>
#include <stdio.h>

static int failures;

#define EXPECT(c)                                                             \
	do {                                                                  \
		if (!(c)) {                                                   \
			printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #c);   \
			failures++;                                           \
		}                                                             \
	} while (0)

#define WANT(x, want)                                                         \
	do {                                                                  \
		cudaError_t e_ = (x);                                         \
		if (e_ != (want)) {                                           \
			printf("FAIL %s:%d: %s: %s, want %s\n", __FILE__,     \
			       __LINE__, #x, cudaGetErrorName(e_),            \
			       cudaGetErrorName(want));                       \
			failures++;                                           \
		}                                                             \
	} while (0)

#define CHECK(x) WANT(x, cudaSuccess)

static int finish(void)
{
	if (failures == 0)
		printf("all ok\n");
	else
		printf("%d failure(s)\n", failures);
	return failures ? 1 : 0;
}

#endif
