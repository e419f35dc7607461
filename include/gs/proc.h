/*
 * proc.h - what the kernel says about a process, from /proc: its parent,
 * start time, uid, command name, environment, and this process's own
 * executable (gs_proc_self_exe). The one reader for the
 * daemon, the CLI, the shim's region code and the sim (gs_proc_stat
 * allocates nothing and writes nothing, so it is safe inside the shim).
 * Also: where a program named on PATH would be run from (gs_find_program).
 *
 * Every function returns "unknown" (-1, 0 or false) for a process that is
 * gone or cannot be read; none of them writes to stdout/stderr.
 */
#ifndef GS_PROC_H
#define GS_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* /proc/<pid>/stat: state (field 3), parent (4), start time (22, clock
 * ticks since boot). False when the process is gone. OUT: any non-NULL. */
bool gs_proc_stat(int32_t pid, char *state, int32_t *ppid, uint64_t *start);

/* The real uid (first field of "Uid:" in /proc/<pid>/status), or -1. */
int64_t gs_proc_uid(int32_t pid);

/* The command name (/proc/<pid>/comm, at most 15 characters) into out;
 * false when unknown. */
bool gs_proc_comm(int32_t pid, char *out, size_t n);

/* Whether the environment the process was started with
 * (/proc/<pid>/environ) holds exactly `name=value`. */
bool gs_proc_env_is(int32_t pid, const char *name, const char *value);

/* The base name of the process's executable (/proc/<pid>/exe) into out;
 * false when unknown (gone, or not ours to read). */
bool gs_proc_exe_base(int32_t pid, char *out, size_t n);

/*
 * Sends `sig` to `pid` only if it is still the process that started at
 * `start` (clock ticks; 0 = do not check) and runs as `uid` (-1 = any),
 * through a pidfd so that a pid reused between the check and the signal
 * cannot be hit. Returns 0, or -1 with errno (ESRCH: gone or not the same
 * process, EPERM: another uid).
 */
int gs_proc_signal(int32_t pid, uint64_t start, int64_t uid, int sig);

/* The path of this process's executable (readlink of /proc/self/exe)
 * into out; false when unknown or it does not fit in n bytes. */
bool gs_proc_self_exe(char *out, size_t n);

/*
 * Where `cmd` would be run from, as posix_spawnp/execvp find it: `cmd`
 * itself when it holds a '/', else the first executable regular file
 * "<dir>/cmd" along PATH (/usr/bin:/bin when PATH is unset). Written to
 * out (may be NULL); false when there is none or it does not fit.
 */
bool gs_find_program(const char *cmd, char *out, size_t n);

#endif
