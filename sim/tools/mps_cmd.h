/*
 * mps_cmd.h - the command language of the simulated MPS control daemon:
 * one command per line, as `echo "<command>" | nvidia-cuda-mps-control`
 * sends it (the legacy "v2" protocol of shared/reference/mps.md). This
 * module only parses; mps_control.c executes. The command list is one
 * X-macro so that the parser, the usage text and the executor agree.
 *
 * Argument kinds: PID and UID are decimal unsigned integers; a percentage
 * is a decimal number in [0, 100] (fractions allowed, like "33.3"); DEV is
 * a device ordinal or a UUID ("GPU-..." or "MIG-..."), kept as text for the
 * executor to resolve; a memory limit is an integer with an M or G suffix
 * ("4096M", "10G"), stored in MiB.
 */
#ifndef GS_SIM_MPS_CMD_H
#define GS_SIM_MPS_CMD_H

#include <stddef.h>
#include <stdint.h>

/* X(op, name, argument synopsis) */
#define GS_MPS_COMMANDS(X)                                                     \
	X(QUIT, "quit", "[-t <seconds>]")                                      \
	X(GET_SERVER_LIST, "get_server_list", "")                              \
	X(GET_SERVER_STATUS, "get_server_status", "<PID>")                     \
	X(START_SERVER, "start_server", "-uid <UID>")                          \
	X(GET_CLIENT_LIST, "get_client_list", "<PID>")                         \
	X(GET_DEVICE_CLIENT_LIST, "get_device_client_list", "[<PID>]")         \
	X(PS, "ps", "[-p <PID>]")                                              \
	X(SET_DEFAULT_ATP, "set_default_active_thread_percentage",             \
	  "<percentage>")                                                      \
	X(GET_DEFAULT_ATP, "get_default_active_thread_percentage", "")         \
	X(SET_ATP, "set_active_thread_percentage", "<PID> <percentage>")       \
	X(GET_ATP, "get_active_thread_percentage", "<PID>")                    \
	X(SET_DEFAULT_MEM, "set_default_device_pinned_mem_limit",              \
	  "<dev> <value>")                                                     \
	X(GET_DEFAULT_MEM, "get_default_device_pinned_mem_limit", "<dev>")     \
	X(SET_MEM, "set_device_pinned_mem_limit", "<PID> <dev> <value>")       \
	X(GET_MEM, "get_device_pinned_mem_limit", "<PID> <dev>")               \
	X(TERMINATE_CLIENT, "terminate_client", "<server PID> <client PID>")   \
	X(SET_DEFAULT_PRIO, "set_default_client_priority", "<0|1>")            \
	X(GET_DEFAULT_PRIO, "get_default_client_priority", "")

enum gs__mps_op {
#define GS__MPS_OP_ENUM(op, name, args) GS_MPS_##op,
	GS_MPS_COMMANDS(GS__MPS_OP_ENUM)
#undef GS__MPS_OP_ENUM
	GS_MPS__COUNT
};

#define GS_MPS_DEV_MAX 96

struct gs__mps_cmd {
	enum gs__mps_op op;
	int has_pid;  /* optional PID given (get_device_client_list, ps) */
	uint32_t pid; /* server PID */
	uint32_t client_pid; /* terminate_client */
	uint32_t uid;        /* start_server */
	double percentage;   /* *_active_thread_percentage */
	uint64_t limit_mib;  /* *_pinned_mem_limit */
	int priority;        /* set_default_client_priority */
	char dev[GS_MPS_DEV_MAX];
};

/*
 * Parses one line (trailing newline and surrounding blanks ignored).
 * Returns 0 and fills *out, or -1 with a one-line reason in err (the line
 * was not a valid command; *out is then unspecified). An empty line is an
 * error too; callers skip blank lines before calling.
 */
int gs__mps_cmd_parse(const char *line, struct gs__mps_cmd *out, char *err,
                      size_t errlen);

/* The command's name ("get_server_list"); "?" for an unknown op. */
const char *gs__mps_cmd_name(enum gs__mps_op op);

/* Parses "<N>M" / "<N>G" into MiB; returns 0, or -1 when malformed/zero. */
int gs__mps_parse_limit(const char *s, uint64_t *out_mib);

#endif
