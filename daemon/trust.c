/*
 * trust.c - process confirmation: which of the processes a slice's region
 * entries name the kernel confirms (ground truth: /proc), and signals
 * sent only to those. The region's process table is writable by tenants,
 * so nothing acts on an entry this file has not confirmed. Owns no
 * state; the watchdog caches its answers per slot.
 */
#include "trust.h"

#include <errno.h>
#include <string.h>

#include "gs/log.h"
#include "gs/proc.h"
#include "node_int.h"

/*
 * Whether region entry `pi` of slice `s` stands for a process that asked
 * for this slice (trust.h). Reads /proc.
 */
bool gs__trust_entry_genuine(const struct gs_proc_info *pi,
                             const struct gs_slice *s, const char **why)
{
	uint64_t start = 0;
	int64_t uid;
	char exe[64];
	const char *dummy;

	if (why == NULL)
		why = &dummy;
	*why = "";
	if (!gs_proc_stat(pi->pid, NULL, NULL, &start) ||
	    start != pi->start_time) {
		*why = "no such process (pid and start time)";
		return false;
	}
	uid = gs_proc_uid(pi->pid);
	if (uid < 0 ||
	    (s->owner_uid != 0 && uid != 0 && uid != (int64_t)s->owner_uid)) {
		*why = "the process runs as another uid than the slice's owner";
		return false;
	}
	if (pi->flags & GS_PROC_RUNNER) {
		if (gs_proc_exe_base(pi->pid, exe, sizeof(exe)) &&
		    strcmp(exe, "gpuslice") == 0)
			return true;
		*why = "a runner entry for a process that is not gpuslice";
		return false;
	}
	if (gs_proc_env_is(pi->pid, "GPUSLICE_SLICE", s->name))
		return true;
	*why = "the process did not ask for this slice (GPUSLICE_SLICE)";
	return false;
}

/*
 * Sends `sig` to the processes of a slice: region entries the kernel
 * confirms (gs__trust_entry_genuine: a forged entry naming someone
 * else's process is skipped) and API-attached pids, each only while it
 * runs as the slice's owner (any uid when root owns the slice), through a
 * pidfd checked at the moment of the signal.
 */
void gs__trust_signal(struct gs_node *node, struct gs__nslice *ns, int sig)
{
	int64_t uid = ns->s.owner_uid != 0 ? (int64_t)ns->s.owner_uid : -1;

	if (node->region && ns->has_ref) {
		struct gs_proc_ref it = {.slot = -1};
		struct gs_proc_info pi;

		while (gs_region_proc_next(node->region, &it, &pi)) {
			if (pi.slice.slot != ns->ref.slot ||
			    pi.slice.generation != ns->ref.generation ||
			    !pi.local ||
			    !gs__trust_entry_genuine(&pi, &ns->s, NULL))
				continue;
			if (gs_proc_signal(pi.pid, pi.start_time, uid, sig) !=
			    0)
				gs_info(
				    "node", "slice=%s pid=%d not signalled: %s",
				    ns->s.name, (int)pi.pid, strerror(errno));
		}
	}
	for (int i = 0; i < ns->s.n_pids; i++)
		if (gs_proc_signal(ns->s.pids[i], 0, uid, sig) != 0)
			gs_info("node", "slice=%s pid=%d not signalled: %s",
			        ns->s.name, (int)ns->s.pids[i],
			        strerror(errno));
}
