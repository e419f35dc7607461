/*
 * plugin.h - gpuslice-kubelet-plugin: the kubelet-facing side of the
 * gpuslice DRA driver. It serves plugin registration on
 * <registry_dir>/<driver>-reg.sock and the DRA node service (v1, v1beta1)
 * plus the resource health stream (v1, v1alpha1) on <plugin_dir>/dra.sock,
 * and hands every claim to the driver behind driver.h on worker threads.
 * Keeps the registration socket present (re-creates it when the kubelet
 * wipes it) and removes it on SIGTERM/SIGINT, which is how a plugin tells
 * the kubelet it is gone.
 */
#ifndef GS_KUBE_PLUGIN_H
#define GS_KUBE_PLUGIN_H

#include "driver.h"
#include "gs/err.h"

#define GS_KPLUGIN_REGISTRY_DIR "/var/lib/kubelet/plugins_registry"
#define GS_KPLUGIN_PLUGIN_DIR "/var/lib/kubelet/plugins/" GS_KDRA_DRIVER_NAME

struct gs_kplugin_config {
	struct gs_kdra_config driver; /* node_name required */
	const char *registry_dir;     /* NULL: GS_KPLUGIN_REGISTRY_DIR */
	const char *plugin_dir;       /* NULL: GS_KPLUGIN_PLUGIN_DIR */
	int workers;                  /* driver calls in parallel; 0: 16 */
	int check_ms;                 /* socket presence check; 0: 1000 */
	int max_connections;          /* 0: 64 */
};

/*
 * Creates the driver, serves until SIGTERM or SIGINT, then removes the
 * registration socket and the DRA socket and frees everything. Returns
 * GS_OK after a clean stop; an error (with eb) if it could not start.
 */
gs_err gs_kplugin_run(const struct gs_kplugin_config *cfg,
                      struct gs_errbuf *eb);

#endif
