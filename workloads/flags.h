/*
 * flags.h - strict command-line parsing for the workload programs, and the
 * quantity parsers behind it (sizes such as 512MiB or 8G, seconds).
 *
 * A program describes its flags in a table of struct gs_flag and calls
 * gs_flags_parse(). Every flag is long (`--name`); one that takes a value
 * accepts `--name VALUE` and `--name=VALUE`. Anything the table does not
 * name, a missing or malformed value, a value out of range, or a stray
 * positional argument is a usage error: the parser stops at the first one
 * and writes a one-line reason. `--help` is always understood. Nothing here
 * prints or exits; the caller decides (see kit.h for the usual handling).
 *
 * The parser writes through each entry's `dst` only when the flag is given
 * and valid, so defaults set before the call survive; `given` records which
 * flags appeared, for presets that explicit flags override.
 */
#ifndef GS_WORKLOADS_FLAGS_H
#define GS_WORKLOADS_FLAGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum gs_flag_type {
	GS_FLAG_BOOL,    /* no value; dst is bool *, set to true */
	GS_FLAG_INT,     /* decimal integer in [min, max]; dst is long * */
	GS_FLAG_SIZE,    /* gs_flags_parse_size() in [min, max]; uint64_t * */
	GS_FLAG_SECONDS, /* gs_flags_parse_seconds(); dst is double * */
	GS_FLAG_CHOICE,  /* one of `choices`; dst is int * (the index) */
};

struct gs_flag {
	const char *name; /* without the leading "--" */
	enum gs_flag_type type;
	void *dst;
	long long min, max;         /* INT and SIZE bounds (inclusive) */
	const char *const *choices; /* CHOICE: NULL-terminated */
	bool given;                 /* OUT: the flag appeared */
};

enum gs_flags_result {
	GS_FLAGS_OK = 0,
	GS_FLAGS_HELP = 1,  /* --help was given; nothing else is checked */
	GS_FLAGS_USAGE = 2, /* reason in `why` */
};

/*
 * Parses argv[1..argc-1] against `flags`. On GS_FLAGS_USAGE, `why` (OUT,
 * `whylen` bytes) holds a reason such as "unknown flag --foo" and the
 * destinations of flags parsed before the bad one may have been written.
 */
enum gs_flags_result gs_flags_parse(int argc, char **argv,
                                    struct gs_flag *flags, size_t nflags,
                                    char *why, size_t whylen);

/*
 * A memory size: a decimal integer of bytes, optionally followed by a
 * binary unit: KiB/MiB/GiB/TiB, or K/M/G/T meaning the same (DESIGN.md:
 * "8G" is GiB), or B. No sign, fraction, space or overflow past 2^64-1.
 * Returns 0 and sets *out, or -1 leaving *out alone.
 */
int gs_flags_parse_size(const char *s, uint64_t *out);

/*
 * A duration in seconds: a non-negative finite decimal ("5", "0.25"),
 * optionally suffixed "s" or "ms". Returns 0 and sets *out, or -1.
 */
int gs_flags_parse_seconds(const char *s, double *out);

/* A decimal integer (optional leading '-') in [min, max]; 0 or -1. */
int gs_flags_parse_int(const char *s, long long min, long long max,
                       long long *out);

#endif
