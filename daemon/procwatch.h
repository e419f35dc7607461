/*
 * procwatch.h - who ran each process the node started (procwatch.c):
 * pid -> uid and start time, recorded as the process starts, kept after
 * it ended, so that a process NVML accounting lists once it is gone can
 * still be named with its owner.
 */
#ifndef GS_DAEMON_PROCWATCH_H
#define GS_DAEMON_PROCWATCH_H

#include <stdbool.h>
#include <stdint.h>

struct gs__procwatch;

/*
 * Starts watching: the kernel's proc connector (netlink; needs root) on a
 * thread of its own, else nothing until gs__procwatch_scan is called
 * (the fallback, said once in the log). NULL: out of memory.
 * destroy(NULL) is a no-op; destroy stops the thread.
 */
struct gs__procwatch *gs__procwatch_create(void);
void gs__procwatch_destroy(struct gs__procwatch *pw);

/* Whether the proc connector feeds it (false: /proc scans only). */
bool gs__procwatch_live(const struct gs__procwatch *pw);

/*
 * The fallback: records every process /proc lists now. Does nothing
 * while the proc connector works (the caller may call it every tick).
 */
void gs__procwatch_scan(struct gs__procwatch *pw);

/*
 * The real uid of the process `pid` that ran at `start_us` (CPU time,
 * CLOCK_REALTIME us, as NVML reports a process's start; 0: the newest
 * record of pid), or -1 when it was never seen.
 */
int64_t gs__procwatch_uid(struct gs__procwatch *pw, int32_t pid,
                          uint64_t start_us);

/* Records the process as seen now (the /proc reading, for tests and for
 * callers that met it alive). No-op when it is gone. */
void gs__procwatch_note(struct gs__procwatch *pw, int32_t pid);

#endif
