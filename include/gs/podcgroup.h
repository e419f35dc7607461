/*
 * gs/podcgroup.h - which Kubernetes pod and container a process belongs
 * to, read from its /proc/PID/cgroup text.
 *
 * The kubelet puts every pod in a cgroup named for its UID and every
 * container in one named for its runtime's container ID, so the cgroup
 * path says whose a GPU process is whether or not the shim loaded in it
 * (issue #28 item 5: "a pod cannot slip out of its claim"). The forms
 * understood (a path may sit under any prefix, e.g. kind's
 * /kubelet.slice/ or a nested /system.slice/containerd.service/):
 *
 *   systemd driver  .../kubepods[-QOS]-pod<UID with _>.slice/
 *                   cri-containerd-<ID>.scope | crio-<ID>.scope |
 *                   docker-<ID>.scope
 *   cgroupfs driver .../kubepods/[QOS/]pod<UID>/<ID> | crio-<ID>
 *
 * with cgroup v2 ("0::/path", one line) or v1 ("N:controllers:/path",
 * one line per hierarchy; every line naming a pod must name the same
 * one). UIDs are 36-character UUIDs (systemd writes '-' as '_') or the
 * 32 hex digits of a static pod's hash; container IDs are 64 hex digits.
 * A process of the pod's own cgroup (no container: crio-conmon, the pod
 * sandbox's cgroup itself) has a pod and no container.
 *
 * Pure: text in, values out (core/podcgroup.c), so every form is checked
 * by tests/unit/test_podcgroup.c without a cluster.
 */
#ifndef GS_PODCGROUP_H
#define GS_PODCGROUP_H

#include <stdbool.h>
#include <stddef.h>

#include "gs/err.h"

#define GS_POD_UID_MAX      37 /* 36 + NUL */
#define GS_CONTAINER_ID_MAX 65 /* 64 + NUL */

enum gs_pod_runtime {
	GS_POD_RUNTIME_UNKNOWN = 0, /* cgroupfs driver: a bare ID */
	GS_POD_RUNTIME_CONTAINERD,
	GS_POD_RUNTIME_CRIO,
	GS_POD_RUNTIME_DOCKER,
};

enum gs_pod_qos {
	GS_POD_QOS_GUARANTEED = 0, /* kubepods directly */
	GS_POD_QOS_BURSTABLE,
	GS_POD_QOS_BESTEFFORT,
};

struct gs_podcgroup {
	/* As the API server spells it: lower-case, with '-' (systemd's '_'
	 * turned back), or a static pod's 32 hex digits. */
	char pod_uid[GS_POD_UID_MAX];
	char container_id[GS_CONTAINER_ID_MAX]; /* "" = the pod's own */
	enum gs_pod_runtime runtime;
	enum gs_pod_qos qos;
	int cgroup_version; /* 1 or 2: the form of the line it came from */
};

/*
 * Reads one cgroup path (the part after the second ':').
 * GS_ERR_NOT_FOUND when it is no pod's (a host process, a system
 * service); GS_ERR_PARSE, with the errbuf saying what, when it is under
 * kubepods but its pod or container part is malformed.
 */
gs_err gs_podcgroup_parse_path(const char *path, struct gs_podcgroup *out,
                               struct gs_errbuf *eb);

/*
 * Reads the whole /proc/PID/cgroup text (`len` bytes, need not end in
 * NUL). GS_ERR_NOT_FOUND when no line names a pod; GS_ERR_PARSE for a
 * malformed line or for v1 lines naming different pods or containers.
 * v2's line wins over v1's where both are present (hybrid mode): it is
 * the hierarchy the kubelet manages there.
 */
gs_err gs_podcgroup_parse(const char *text, size_t len,
                          struct gs_podcgroup *out, struct gs_errbuf *eb);

/*
 * A claim's consumers file: the UIDs of every pod a shared claim is
 * reserved for (status.reservedFor), which the DRA plugin writes on each
 * prepare of the claim, so that a pod that joins later is known too, and
 * the watchdog reads to place processes by their pod
 * (daemon/watchdog_pod.c). <run dir>/GS_K8S_PODS_DIR/<slice name>, the
 * directory and file owned by root and writable by nobody else:
 *
 *   GS_K8S_PODS_MAGIC "\n", then one pod UID a line, at most
 *   GS_K8S_PODS_MAX lines (Kubernetes allows 256 in reservedFor).
 *
 * A UID is 1 to 63 of [0-9A-Za-z_-]; compared without case.
 */
#define GS_K8S_PODS_DIR   "k8s-pods"
#define GS_K8S_PODS_MAGIC "gpuslice-k8s-pods 1"
#define GS_K8S_PODS_MAX   1024

/* Whether `uid` is a UID a consumers file may hold. */
bool gs_podset_uid_is_valid(const char *uid);

/*
 * Checks a consumers file's text (`len` bytes). OUT: *n, its UIDs.
 * GS_ERR_PARSE (the errbuf names the line) when it is not one.
 */
gs_err gs_podset_check(const char *text, size_t len, int *n,
                       struct gs_errbuf *eb);

/* Whether a consumers file's text (checked) lists `uid`. */
bool gs_podset_has(const char *text, size_t len, const char *uid);

const char *gs_pod_runtime_name(enum gs_pod_runtime rt);
const char *gs_pod_qos_name(enum gs_pod_qos qos);

#endif
