/*
 * config.h - gpusliced's configuration: read once, at start, from one YAML
 * file into one struct (docs/config.md lists every key). Nothing else in
 * the daemon reads the environment or the file.
 *
 * Unknown keys, wrong types and bad values are errors naming file:line, so
 * a typo never silently falls back to a default. Command-line options
 * (--state-dir, --socket) override the file after it is read.
 */
#ifndef GS_DAEMON_CONFIG_H
#define GS_DAEMON_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "gs/err.h"
#include "gs/placement.h"
#include "gs/price.h"
#include "gs/spec.h"
#include "slice.h"

#define GS_CONFIG_PATH_MAX    256
#define GS_CONFIG_MAX_TEAMS   64
#define GS_CONFIG_MAX_MEMBERS 256

enum gs_gpu_source {
	GS_GPUS_AUTO = 0, /* the real GPUs; none usable: refuse to start */
	GS_GPUS_REAL = 1, /* the real GPUs or fail */
	GS_GPUS_SIM = 2,  /* always the sim; the only way onto it */
};

enum gs_watchdog_action {
	GS_WATCHDOG_FLAG = 0, /* mark the slice flagged, log an event */
	GS_WATCHDOG_KILL = 1, /* and SIGKILL the offending processes */
	/* kill where the node's slices belong to more than one owner (each
	 * uid-0 slice - a pod's, a job's - its own), flag otherwise */
	GS_WATCHDOG_AUTO = 2,
};

struct gs_config_member {
	char user[32];
	char team[GS_NAME_MAX];
};

/* teams.<name>.max_priority / max_weight: what a non-admin member of the
 * team may ask for (-1: quota.default_user's). */
struct gs_config_team_policy {
	char team[GS_NAME_MAX];
	int max_priority; /* enum gs_priority */
	int max_weight;
};

struct gs_config {
	char path[GS_CONFIG_PATH_MAX]; /* "" when built in */

	/* node */
	enum gs_slice_mode default_mode;
	int timeslice_level; /* 0 default, 1 short, 2 medium, 3 long */
	bool timeslice_set;  /* apply it (else leave the GPU alone) */
	enum gs_place_policy placement;
	int64_t demand_half_life_s; /* the demand seen halves; 0: never */
	enum gs_gpu_source gpus;
	char sim_model[48]; /* the sim's GPUs when it is used */
	int sim_count;
	char sim_dir[GS_CONFIG_PATH_MAX]; /* "" = <state-dir>/sim */
	bool mig_on_real_gpu;             /* may reconfigure MIG on real GPUs */
	char nvml_library[GS_CONFIG_PATH_MAX];

	/* api */
	char socket[108]; /* sun_path */
	char tcp[64];     /* "host:port", "" = off */
	char token_file[GS_CONFIG_PATH_MAX];
	char admin_group[32];
	uint32_t max_body_bytes;
	int max_connections;
	int max_connections_per_user; /* non-admin uid, Unix socket; 0: any */
	int idle_timeout_s;           /* idle connections are closed */

	/* store */
	char state_dir[GS_CONFIG_PATH_MAX];
	int synchronous; /* enum gs_store_sync */
	int events_keep;

	/* watchdog */
	int watchdog_interval_ms;
	enum gs_watchdog_action watchdog_action;
	uint64_t watchdog_grace_bytes;
	/* A strict slice is over its compute when NVML shows its processes
	 * above its share by more than this many points over a sample. */
	int watchdog_compute_grace_pct;
	/* where Xid lines are read ("" = /dev/kmsg, or the sim's log) */
	char watchdog_kernel_log[256];
	uint64_t
	    watchdog_context_bytes; /* allowed per process for its context */

	/* ledger */
	int ledger_interval_ms;

	/* mps */
	char mps_control[GS_CONFIG_PATH_MAX];

	/* slices */
	char default_team[GS_NAME_MAX];
	int max_slices;

	/* prices (core's price table: per GPU-second, per GiB-second) */
	char currency[8];
	struct gs_price_table prices;

	/* quota.default_user: what one non-admin user may hold at once */
	int user_max_slices;
	int user_max_memory_percent; /* of the node's GPU memory */
	/* the highest priority and weight a non-admin user may give a
	 * slice (teams may say otherwise for their members) */
	int user_max_priority; /* enum gs_priority */
	int user_max_weight;

	/* teams */
	int n_teams;
	struct gs_team teams[GS_CONFIG_MAX_TEAMS];
	int n_members;
	struct gs_config_member members[GS_CONFIG_MAX_MEMBERS];
	int n_team_policy;
	struct gs_config_team_policy team_policy[GS_CONFIG_MAX_TEAMS];

	/* log */
	int log_level;
	char log_file[GS_CONFIG_PATH_MAX];

	/* swap (docs/swap.md, gs/swap.h) */
	double swap_oversubscribe;   /* promised / physical per GPU; 1: off */
	int64_t swap_idle_after_s;   /* no GPU call this long: idle */
	int64_t swap_min_residency_s; /* kept in at least this long */
	uint64_t swap_host_memory;   /* bound on swapped contents; 0: none */
	/* how long an allocation waits for room before out-of-memory */
	int64_t swap_need_wait_s;
};

/*
 * Fills `cfg` with the built-in defaults (docs/config.md). `root` selects
 * the socket and state locations for root (/run, /var/lib) or a user
 * ($XDG_RUNTIME_DIR, ~/.local/state), which the caller looks up.
 */
void gs_config_defaults(struct gs_config *cfg, bool root,
                        const char *runtime_dir, const char *home);

/*
 * Reads `path` over the values in `cfg` (keys absent keep theirs). On error
 * the errbuf says "FILE:LINE: ..." and `cfg` may be partly updated: the
 * caller stops.
 */
gs_err gs_config_load(struct gs_config *cfg, const char *path,
                      struct gs_errbuf *eb);

/* Reads YAML text (for tests and the fuzzer); `name` stands for the file. */
gs_err gs_config_load_text(struct gs_config *cfg, const char *name,
                           const char *text, size_t len, struct gs_errbuf *eb);

/*
 * Whether the teams form a valid quota tree (parents exist, no cycles,
 * guarantees within maxima and within the parent's). The errbuf names the
 * team.
 */
gs_err gs_config_check_teams(const struct gs_config *cfg,
			     struct gs_errbuf *eb);

/* The team a user belongs to by the config's members lists, else NULL. */
/*
 * The highest priority and weight a non-admin member of `team` may ask
 * for, and where that limit is set (a config key, for messages). OUT:
 * *max_priority, *max_weight, *where_prio, *where_weight (static text).
 */
void gs_config_team_limits(const struct gs_config *cfg, const char *team,
                           int *max_priority, int *max_weight,
                           const char **where_prio, const char **where_weight);
const char *gs_config_user_team(const struct gs_config *cfg, const char *user);

#endif
