/*
 * plugin_main.c - gpuslice-kubelet-plugin's command line: reads the flags
 * (and $NODE_NAME) into a struct gs_kplugin_config, once, and runs the
 * plugin (plugin.c). Exit status: 0 after SIGTERM/SIGINT, 2 for bad
 * flags, otherwise gs_err_exit_code of the startup failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs/log.h"
#include "plugin.h"

static const char usage[] =
	"Usage: gpuslice-kubelet-plugin [flags]\n"
	"\n"
	"The gpuslice Kubernetes DRA driver's kubelet plugin: registers with\n"
	"the kubelet, prepares and unprepares ResourceClaims as gpuslice slices\n"
	"(through gpusliced), streams device health and publishes the node's\n"
	"ResourceSlices. Stops on SIGTERM/SIGINT, removing its registration\n"
	"socket.\n"
	"\n"
	"Flags:\n"
	"  --node-name NAME      this node (default: $NODE_NAME; required)\n"
	"  --driver-name NAME    DRA driver name (default: " GS_KDRA_DRIVER_NAME ")\n"
	"  --registry-dir DIR    kubelet plugin registry\n"
	"                        (default: " GS_KPLUGIN_REGISTRY_DIR ")\n"
	"  --plugin-dir DIR      where dra.sock goes\n"
	"                        (default: " GS_KPLUGIN_PLUGIN_DIR ")\n"
	"  --cdi-dir DIR         CDI spec directory (default: /var/run/cdi)\n"
	"  --state-dir DIR       checkpoint directory (default: the plugin dir)\n"
	"  --daemon-socket PATH  gpusliced API socket (default: the client's)\n"
	"  --shim PATH           libgpuslice.so to preload (default: installed)\n"
	"  --cdi-hook PATH       gpuslice-cdi-hook as a host path, a CDI\n"
	"                        createContainer hook refusing containers whose\n"
	"                        libc cannot load the shim (default: next to this\n"
	"                        program; none: no hook)\n"
	"  --kubeconfig PATH     out-of-cluster access (default: in-cluster)\n"
	"  --api-server URL      API server URL (default: from the kubeconfig\n"
	"                        or the in-cluster environment)\n"
	"  --no-publish          do not publish ResourceSlices\n"
	"  --publish-interval-ms N  gpusliced poll period (default: 1000)\n"
	"  --partitions K        devices per GPU where the API server has no\n"
	"                        consumable capacity (1..32, default: 4)\n"
	"  --metrics-file PATH   publisher metrics, Prometheus text (default:\n"
	"                        <state dir>/metrics.prom)\n"
	"  --driver-dirs D1:D2   where the NVIDIA driver's libraries and\n"
	"                        binaries are (default: the ldconfig cache)\n"
	"  --driver-root DIR     the host's / as mounted in the plugin's\n"
	"                        container (default: /)\n"
	"  --workers N           driver calls run in parallel (default: 16)\n"
	"  --max-connections N   open gRPC connections at most (default: 64)\n"
	"  --check-interval-ms N socket presence check (default: 1000)\n"
	"  --log-level LEVEL     debug, info, warn, error or off (default: info)\n"
	"  --log-file PATH       log to PATH instead of stderr\n"
	"  -h, --help            this text\n";

static int int_flag(const char *name, const char *v, int *out)
{
	char *end;
	long n = strtol(v, &end, 10);
	if (*v == '\0' || *end != '\0' || n < 0 || n > 1000000) {
		fprintf(stderr, "gpuslice-kubelet-plugin: %s: not a count: %s\n",
		        name, v);
		return -1;
	}
	*out = (int)n;
	return 0;
}

int main(int argc, char **argv)
{
	struct gs_kplugin_config cfg = {0};
	cfg.driver.publish = 1;
	cfg.driver.node_name = getenv("NODE_NAME");
	const char *log_file = NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			fputs(usage, stdout);
			return 0;
		}
		if (strcmp(a, "--no-publish") == 0) {
			cfg.driver.publish = 0;
			continue;
		}
		/* Every other flag takes a value: --flag VALUE or --flag=VALUE. */
		const char *eq = strchr(a, '=');
		size_t nlen = eq ? (size_t)(eq - a) : strlen(a);
		const char *v = eq ? eq + 1 : (i + 1 < argc ? argv[i + 1] : NULL);
#define IS(flag) (nlen == strlen(flag) && strncmp(a, flag, nlen) == 0)
		const char **sp = NULL;
		int *ip = NULL;
		if (IS("--node-name"))
			sp = &cfg.driver.node_name;
		else if (IS("--driver-name"))
			sp = &cfg.driver.driver_name;
		else if (IS("--registry-dir"))
			sp = &cfg.registry_dir;
		else if (IS("--plugin-dir"))
			sp = &cfg.plugin_dir;
		else if (IS("--cdi-dir"))
			sp = &cfg.driver.cdi_dir;
		else if (IS("--state-dir"))
			sp = &cfg.driver.state_dir;
		else if (IS("--daemon-socket"))
			sp = &cfg.driver.daemon_socket;
		else if (IS("--shim"))
			sp = &cfg.driver.shim_path;
		else if (IS("--cdi-hook"))
			sp = &cfg.driver.cdi_hook;
		else if (IS("--kubeconfig"))
			sp = &cfg.driver.kubeconfig;
		else if (IS("--api-server"))
			sp = &cfg.driver.api_server;
		else if (IS("--log-file"))
			sp = &log_file;
		else if (IS("--log-level"))
			sp = NULL;
		else if (IS("--publish-interval-ms"))
			ip = &cfg.driver.publish_interval_ms;
		else if (IS("--partitions"))
			ip = &cfg.driver.partitions;
		else if (IS("--metrics-file"))
			sp = &cfg.driver.metrics_file;
		else if (IS("--driver-dirs"))
			sp = &cfg.driver.driver_dirs;
		else if (IS("--driver-root"))
			sp = &cfg.driver.driver_root;
		else if (IS("--workers"))
			ip = &cfg.workers;
		else if (IS("--max-connections"))
			ip = &cfg.max_connections;
		else if (IS("--check-interval-ms"))
			ip = &cfg.check_ms;
		else {
			fprintf(stderr, "gpuslice-kubelet-plugin: unknown flag %s (see --help)\n",
			        a);
			return 2;
		}
		if (!v || (!eq && v[0] == '-' && v[1] == '-')) {
			fprintf(stderr, "gpuslice-kubelet-plugin: %.*s needs a value\n",
			        (int)nlen, a);
			return 2;
		}
		if (!eq)
			i++;
		if (IS("--log-level")) {
			int lvl = gs_log_level_parse(v);
			if (lvl < 0) {
				fprintf(stderr, "gpuslice-kubelet-plugin: --log-level: %s is not debug, info, warn, error or off\n",
				        v);
				return 2;
			}
			gs_log_set_level((enum gs_log_level)lvl);
		} else if (sp) {
			*sp = v;
		} else if (int_flag(a, v, ip) != 0) {
			return 2;
		}
#undef IS
	}
	if (!cfg.driver.node_name || !*cfg.driver.node_name) {
		fprintf(stderr, "gpuslice-kubelet-plugin: no node name: set --node-name or $NODE_NAME\n");
		return 2;
	}
	if (log_file && gs_log_open(log_file) != 0) {
		fprintf(stderr, "gpuslice-kubelet-plugin: cannot open log file %s\n",
		        log_file);
		return 2;
	}
	struct gs_errbuf eb = {0};
	gs_err err = gs_kplugin_run(&cfg, &eb);
	if (err != GS_OK) {
		gs_error("kplugin", "stopped: %s", gs_errbuf_msg(&eb, err));
		fprintf(stderr, "gpuslice-kubelet-plugin: %s\n",
		        gs_errbuf_msg(&eb, err));
		return gs_err_exit_code(err);
	}
	return 0;
}
