/*
 * smi.c - build/sim/nvidia-smi: the nvidia-smi stand-in for the simulated
 * node. Everything NVML can do goes through the simulated
 * libnvidia-ml.so.1 (so this tool also exercises it); the two settings
 * NVML has no call for are written into the node state directly:
 *
 *   compute-policy [-i ID] --set-timeslice N   gpu.timeslice_level (0..3:
 *                                              DEFAULT, SHORT, MEDIUM, LONG)
 *   -i ID -r | --gpu-reset                     applies a pending MIG mode
 *                                              (Ampere) when the GPU is idle
 *
 * Also: -L; --query-gpu=FIELDS and --query-compute-apps=FIELDS with
 * --format=csv[,noheader][,nounits]; -i ID -c MODE; -i ID -mig 0|1;
 * mig -lgip, -lgipp, -lgi, -lci, -cgi LIST [-C], -cci, -dci, -dgi.
 * ID is an index, a UUID or a PCI bus id, or a comma-separated list.
 * Banner lines (the default view, the MIG tables) say "(simulated)";
 * machine-readable output (-L, csv) keeps the real format.
 *
 * Exit statuses: 0 ok, 2 invalid arguments, 3 not supported, 6 not found,
 * 9 NVML could not start (the real tool's values for these cases), 1 any
 * other failure.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gs/nvml.h"
#include "gs_sim/state.h"

#define EXIT_INVALID       2
#define EXIT_NOT_SUPPORTED 3
#define EXIT_NOT_FOUND     6
#define EXIT_NO_NVML       9
#define MAX_IDS            64
#define MAX_FIELDS         32

static const char *const timeslice_names[GS_SIM_TIMESLICE_LEVELS] = {
    "DEFAULT", "SHORT", "MEDIUM", "LONG"};

static int invalid(const char *what)
{
	fprintf(stderr, "%s\nPlease run 'nvidia-smi -h' for help.\n", what);
	return EXIT_INVALID;
}

static int exit_for(nvmlReturn_t r)
{
	switch (r) {
	case NVML_SUCCESS:
		return 0;
	case NVML_ERROR_INVALID_ARGUMENT:
		return EXIT_INVALID;
	case NVML_ERROR_NOT_SUPPORTED:
		return EXIT_NOT_SUPPORTED;
	case NVML_ERROR_NOT_FOUND:
		return EXIT_NOT_FOUND;
	default:
		return 1;
	}
}

/* ---- device selection ---------------------------------------------------- */

struct target {
	nvmlDevice_t dev; /* GPU or MIG device */
	unsigned int gpu; /* index of the GPU (parent) */
	bool mig;
};

/* One "-i" token: index, UUID (GPU- or MIG-) or PCI bus id. */
static nvmlReturn_t resolve(const char *tok, struct target *t)
{
	nvmlReturn_t r;
	nvmlDevice_t parent;
	char *end;
	unsigned long idx;
	unsigned int is_mig = 0;

	memset(t, 0, sizeof(*t));
	idx = strtoul(tok, &end, 10);
	if (tok[0] >= '0' && tok[0] <= '9' && *end == '\0')
		r = nvmlDeviceGetHandleByIndex_v2((unsigned int)idx, &t->dev);
	else if (strncmp(tok, "GPU-", 4) == 0 || strncmp(tok, "MIG-", 4) == 0)
		r = nvmlDeviceGetHandleByUUID(tok, &t->dev);
	else
		r = nvmlDeviceGetHandleByPciBusId_v2(tok, &t->dev);
	if (r == NVML_ERROR_INVALID_ARGUMENT)
		r = NVML_ERROR_NOT_FOUND;
	if (r != NVML_SUCCESS)
		return r;
	(void)nvmlDeviceIsMigDeviceHandle(t->dev, &is_mig);
	t->mig = is_mig != 0;
	parent = t->dev;
	if (t->mig)
		(void)nvmlDeviceGetDeviceHandleFromMigDeviceHandle(t->dev,
		                                                   &parent);
	return nvmlDeviceGetIndex(parent, &t->gpu);
}

/* Every GPU when `ids` is NULL, else the listed ones. OUT: *n. */
static int targets(const char *ids, struct target *out, int *n)
{
	unsigned int count = 0;

	*n = 0;
	if (ids == NULL) {
		(void)nvmlDeviceGetCount_v2(&count);
		for (unsigned int i = 0; i < count && i < MAX_IDS; i++) {
			out[i].gpu = i;
			out[i].mig = false;
			if (nvmlDeviceGetHandleByIndex_v2(i, &out[i].dev) !=
			    NVML_SUCCESS)
				return 1;
			(*n)++;
		}
		return 0;
	}
	{
		char buf[1024], *save = NULL, *tok;

		(void)snprintf(buf, sizeof(buf), "%s", ids);
		for (tok = strtok_r(buf, ",", &save);
		     tok != NULL && *n < MAX_IDS;
		     tok = strtok_r(NULL, ",", &save)) {
			if (resolve(tok, &out[*n]) != NVML_SUCCESS) {
				fprintf(stderr,
				        "No devices were found matching '%s'\n",
				        tok);
				return EXIT_NOT_FOUND;
			}
			(*n)++;
		}
	}
	return 0;
}

static void bus_id(nvmlDevice_t dev, char *out, size_t len)
{
	nvmlPciInfo_t pci;

	if (nvmlDeviceGetPciInfo_v3(dev, &pci) == NVML_SUCCESS)
		(void)snprintf(out, len, "%s", pci.busId);
	else
		(void)snprintf(out, len, "N/A");
}

/* ---- the node state, for what NVML cannot set -----------------------------
 */

static struct gs_sim_state *state_open(struct gs_sim_map **map)
{
	struct gs_errbuf eb = {0};
	char dir[GS_SIM_PATH_LEN];
	gs_err err = gs_sim_dir_resolve(NULL, dir, sizeof(dir), &eb);

	if (err == GS_OK)
		err = gs_sim_state_open(dir, map, &eb);
	if (err != GS_OK) {
		fprintf(stderr, "nvidia-smi (simulated): %s\n",
		        gs_errbuf_msg(&eb, err));
		return NULL;
	}
	return gs_sim_state_get(*map);
}

/* ---- -L --------------------------------------------------------------------
 */

static int list_gpus(void)
{
	unsigned int count = 0;

	(void)nvmlDeviceGetCount_v2(&count);
	for (unsigned int i = 0; i < count; i++) {
		char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE], uuid[96];
		unsigned int max = 0, k = 0;
		nvmlDevice_t dev;

		if (nvmlDeviceGetHandleByIndex_v2(i, &dev) != NVML_SUCCESS ||
		    nvmlDeviceGetName(dev, name, sizeof(name)) !=
		        NVML_SUCCESS ||
		    nvmlDeviceGetUUID(dev, uuid, sizeof(uuid)) != NVML_SUCCESS)
			return 1;
		printf("GPU %u: %s (UUID: %s)\n", i, name, uuid);
		(void)nvmlDeviceGetMaxMigDeviceCount(dev, &max);
		for (unsigned int s = 0; s < max; s++) {
			nvmlDevice_t mig;
			char mname[160], *p;

			if (nvmlDeviceGetMigDeviceHandleByIndex(dev, s, &mig) !=
			        NVML_SUCCESS ||
			    nvmlDeviceGetName(mig, mname, sizeof(mname)) !=
			        NVML_SUCCESS ||
			    nvmlDeviceGetUUID(mig, uuid, sizeof(uuid)) !=
			        NVML_SUCCESS)
				continue;
			p = strstr(mname, "MIG ");
			printf("  %-16s Device %2u: (UUID: %s)\n",
			       p != NULL ? p : mname, k++, uuid);
		}
	}
	return 0;
}

/* ---- queries
 * ------------------------------------------------------------------ */

struct csv {
	bool header, units;
};

static int parse_format(const char *fmt, struct csv *c)
{
	char buf[128], *save = NULL, *tok;
	bool csv = false;

	c->header = true;
	c->units = true;
	(void)snprintf(buf, sizeof(buf), "%s", fmt);
	for (tok = strtok_r(buf, ",", &save); tok != NULL;
	     tok = strtok_r(NULL, ",", &save)) {
		if (strcmp(tok, "csv") == 0)
			csv = true;
		else if (strcmp(tok, "noheader") == 0)
			c->header = false;
		else if (strcmp(tok, "nounits") == 0)
			c->units = false;
		else
			return -1;
	}
	return csv ? 0 : -1;
}

static const char *mode_name(nvmlComputeMode_t m)
{
	switch (m) {
	case NVML_COMPUTEMODE_DEFAULT:
		return "Default";
	case NVML_COMPUTEMODE_EXCLUSIVE_THREAD:
		return "Exclusive_Thread";
	case NVML_COMPUTEMODE_PROHIBITED:
		return "Prohibited";
	case NVML_COMPUTEMODE_EXCLUSIVE_PROCESS:
		return "Exclusive_Process";
	default:
		break;
	}
	return "[N/A]";
}

/* X(name, header-with-unit, header-without-unit) */
#define GPU_FIELDS(X)                                                          \
	X("index", "index", "index")                                           \
	X("count", "count", "count")                                           \
	X("uuid", "uuid", "uuid")                                              \
	X("name", "name", "name")                                              \
	X("pci.bus_id", "pci.bus_id", "pci.bus_id")                            \
	X("driver_version", "driver_version", "driver_version")                \
	X("memory.total", "memory.total [MiB]", "memory.total")                \
	X("memory.used", "memory.used [MiB]", "memory.used")                   \
	X("memory.free", "memory.free [MiB]", "memory.free")                   \
	X("utilization.gpu", "utilization.gpu [%]", "utilization.gpu")         \
	X("compute_mode", "compute_mode", "compute_mode")                      \
	X("mig.mode.current", "mig.mode.current", "mig.mode.current")          \
	X("mig.mode.pending", "mig.mode.pending", "mig.mode.pending")

static const struct field {
	const char *name, *head_units, *head;
} gpu_fields[] = {
#define GPU_FIELD_ENTRY(n, hu, h) {n, hu, h},
    GPU_FIELDS(GPU_FIELD_ENTRY)
#undef GPU_FIELD_ENTRY
};

static const struct field app_fields[] = {
    {"pid", "pid", "pid"},
    {"process_name", "process_name", "process_name"},
    {"used_memory", "used_gpu_memory [MiB]", "used_gpu_memory"},
    {"used_gpu_memory", "used_gpu_memory [MiB]", "used_gpu_memory"},
    {"gpu_uuid", "gpu_uuid", "gpu_uuid"},
    {"gpu_bus_id", "gpu_bus_id", "gpu_bus_id"},
};

/* Splits "a,b,c" into known fields; -1 names the bad one on stderr. */
static int parse_fields(const char *list, const struct field *table, int n,
                        int *out, int *count)
{
	char buf[512], *save = NULL, *tok;

	*count = 0;
	(void)snprintf(buf, sizeof(buf), "%s", list);
	for (tok = strtok_r(buf, ",", &save); tok != NULL;
	     tok = strtok_r(NULL, ",", &save)) {
		int k;

		while (*tok == ' ')
			tok++;
		for (k = 0; k < n; k++)
			if (strcmp(tok, table[k].name) == 0)
				break;
		if (k == n || *count == MAX_FIELDS) {
			fprintf(stderr,
			        "Field \"%s\" is not a valid field to query.\n",
			        tok);
			return -1;
		}
		out[(*count)++] = k;
	}
	return *count > 0 ? 0 : -1;
}

static void print_header(const struct field *table, const int *f, int nf,
                         const struct csv *c)
{
	for (int i = 0; i < nf; i++)
		printf("%s%s", i ? ", " : "",
		       c->units ? table[f[i]].head_units : table[f[i]].head);
	printf("\n");
}

static void gpu_value(const struct target *t, unsigned int count,
                      const char *field, const struct csv *c)
{
	char buf[160];
	const char *mib = c->units ? " MiB" : "";
	nvmlMemory_t mem;

	if (strcmp(field, "index") == 0) {
		printf("%u", t->gpu);
	} else if (strcmp(field, "count") == 0) {
		printf("%u", count);
	} else if (strcmp(field, "uuid") == 0) {
		if (nvmlDeviceGetUUID(t->dev, buf, sizeof(buf)) != NVML_SUCCESS)
			(void)snprintf(buf, sizeof(buf), "[N/A]");
		printf("%s", buf);
	} else if (strcmp(field, "name") == 0) {
		if (nvmlDeviceGetName(t->dev, buf, sizeof(buf)) != NVML_SUCCESS)
			(void)snprintf(buf, sizeof(buf), "[N/A]");
		printf("%s", buf);
	} else if (strcmp(field, "pci.bus_id") == 0) {
		bus_id(t->dev, buf, sizeof(buf));
		printf("%s", buf);
	} else if (strcmp(field, "driver_version") == 0) {
		if (nvmlSystemGetDriverVersion(buf, sizeof(buf)) !=
		    NVML_SUCCESS)
			(void)snprintf(buf, sizeof(buf), "[N/A]");
		printf("%s", buf);
	} else if (strncmp(field, "memory.", 7) == 0) {
		if (nvmlDeviceGetMemoryInfo(t->dev, &mem) != NVML_SUCCESS) {
			printf("[N/A]");
			return;
		}
		printf("%llu%s",
		       (strcmp(field, "memory.total") == 0  ? mem.total
		        : strcmp(field, "memory.used") == 0 ? mem.used
		                                            : mem.free) >>
		           20,
		       mib);
	} else if (strcmp(field, "utilization.gpu") == 0) {
		nvmlUtilization_t u;

		if (nvmlDeviceGetUtilizationRates(t->dev, &u) == NVML_SUCCESS)
			printf("%u%s", u.gpu, c->units ? " %" : "");
		else
			printf("[N/A]");
	} else if (strcmp(field, "compute_mode") == 0) {
		nvmlComputeMode_t m;

		printf("%s",
		       nvmlDeviceGetComputeMode(t->dev, &m) == NVML_SUCCESS
		           ? mode_name(m)
		           : "[N/A]");
	} else {
		unsigned int cur, pend;

		if (nvmlDeviceGetMigMode(t->dev, &cur, &pend) != NVML_SUCCESS)
			printf("[N/A]");
		else
			printf("%s",
			       (strcmp(field, "mig.mode.current") == 0 ? cur
			                                               : pend)
			           ? "Enabled"
			           : "Disabled");
	}
}

static int query_gpu(const char *fields, const char *ids, const struct csv *c)
{
	struct target t[MAX_IDS];
	int f[MAX_FIELDS], nf, n, rc;

	if (parse_fields(fields, gpu_fields,
	                 (int)(sizeof(gpu_fields) / sizeof(gpu_fields[0])), f,
	                 &nf) != 0)
		return EXIT_INVALID;
	rc = targets(ids, t, &n);
	if (rc != 0)
		return rc;
	if (c->header)
		print_header(gpu_fields, f, nf, c);
	for (int i = 0; i < n; i++) {
		for (int k = 0; k < nf; k++) {
			if (k > 0)
				printf(", ");
			gpu_value(&t[i], (unsigned int)n, gpu_fields[f[k]].name,
			          c);
		}
		printf("\n");
	}
	return 0;
}

static int query_apps(const char *fields, const char *ids, const struct csv *c)
{
	struct target t[MAX_IDS];
	int f[MAX_FIELDS], nf, n, rc;

	if (parse_fields(fields, app_fields,
	                 (int)(sizeof(app_fields) / sizeof(app_fields[0])), f,
	                 &nf) != 0)
		return EXIT_INVALID;
	rc = targets(ids, t, &n);
	if (rc != 0)
		return rc;
	if (c->header)
		print_header(app_fields, f, nf, c);
	for (int i = 0; i < n; i++) {
		nvmlProcessInfo_t infos[256];
		unsigned int cnt = 256;
		char uuid[96], bus[64];

		if (nvmlDeviceGetComputeRunningProcesses_v3(
		        t[i].dev, &cnt, infos) != NVML_SUCCESS)
			continue;
		(void)nvmlDeviceGetUUID(t[i].dev, uuid, sizeof(uuid));
		bus_id(t[i].dev, bus, sizeof(bus));
		for (unsigned int p = 0; p < cnt; p++) {
			for (int k = 0; k < nf; k++) {
				const char *name = app_fields[f[k]].name;
				char pname[256];

				if (k > 0)
					printf(", ");
				if (strcmp(name, "pid") == 0)
					printf("%u", infos[p].pid);
				else if (strcmp(name, "process_name") == 0)
					printf("%s", nvmlSystemGetProcessName(
					                 infos[p].pid, pname,
					                 sizeof(pname)) ==
					                     NVML_SUCCESS
					                 ? pname
					                 : "[N/A]");
				else if (strcmp(name, "gpu_uuid") == 0)
					printf("%s", uuid);
				else if (strcmp(name, "gpu_bus_id") == 0)
					printf("%s", bus);
				else
					printf("%llu%s",
					       infos[p].usedGpuMemory >> 20,
					       c->units ? " MiB" : "");
			}
			printf("\n");
		}
	}
	return 0;
}

/* ---- default view
 * ------------------------------------------------------------- */

static int summary(void)
{
	char ver[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = "";
	unsigned int count = 0;

	(void)nvmlSystemGetDriverVersion(ver, sizeof(ver));
	(void)nvmlDeviceGetCount_v2(&count);
	printf("+-----------------------------------------------------------------------------+\n");
	printf("| NVIDIA-SMI (simulated by gpuslice)   Driver Version: %-10s             |\n",
	       ver);
	printf("+-------------------------------+----------------------+----------------------+\n");
	for (unsigned int i = 0; i < count; i++) {
		char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE], bus[64];
		struct target t = {.gpu = i};
		nvmlMemory_t mem = {0};
		unsigned int cur = 0, pend = 0;

		if (nvmlDeviceGetHandleByIndex_v2(i, &t.dev) != NVML_SUCCESS)
			return 1;
		(void)nvmlDeviceGetName(t.dev, name, sizeof(name));
		(void)nvmlDeviceGetMemoryInfo(t.dev, &mem);
		(void)nvmlDeviceGetMigMode(t.dev, &cur, &pend);
		bus_id(t.dev, bus, sizeof(bus));
		printf("| %3u  %-25.25s| %-20s | MIG %-8s %5s   |\n", i, name,
		       bus, cur ? "Enabled" : "Disabled",
		       cur != pend ? "(pend)" : "");
		printf("|                               | %5lluMiB / %6lluMiB |                      |\n",
		       mem.used >> 20, mem.total >> 20);
		printf(
		    "+-------------------------------+----------------------+----------------------+\n");
	}
	printf("(simulated) numbers come from gpuslice's GPU simulator, not from a GPU.\n");
	return 0;
}

/* ---- compute mode, MIG mode, reset, time slice
 * ----------------------------------- */

static int set_compute_mode(const char *ids, const char *arg)
{
	static const struct {
		const char *name;
		nvmlComputeMode_t mode;
	} modes[] = {
	    {"DEFAULT", NVML_COMPUTEMODE_DEFAULT},
	    {"0", NVML_COMPUTEMODE_DEFAULT},
	    {"PROHIBITED", NVML_COMPUTEMODE_PROHIBITED},
	    {"2", NVML_COMPUTEMODE_PROHIBITED},
	    {"EXCLUSIVE_PROCESS", NVML_COMPUTEMODE_EXCLUSIVE_PROCESS},
	    {"3", NVML_COMPUTEMODE_EXCLUSIVE_PROCESS},
	};
	struct target t[MAX_IDS];
	int n, rc;
	size_t k;

	for (k = 0; k < sizeof(modes) / sizeof(modes[0]); k++)
		if (strcasecmp(arg, modes[k].name) == 0)
			break;
	if (k == sizeof(modes) / sizeof(modes[0]))
		return invalid("Invalid compute mode.");
	rc = targets(ids, t, &n);
	if (rc != 0)
		return rc;
	for (int i = 0; i < n; i++) {
		nvmlReturn_t r =
		    nvmlDeviceSetComputeMode(t[i].dev, modes[k].mode);
		char bus[64];

		bus_id(t[i].dev, bus, sizeof(bus));
		if (r != NVML_SUCCESS) {
			fprintf(stderr,
			        "Unable to set the compute mode for GPU %s: %s\n",
			        bus, nvmlErrorString(r));
			return exit_for(r);
		}
		printf("Set compute mode to %s for GPU %s.\n",
		       strcmp(modes[k].name, "0") == 0 ? "DEFAULT"
		       : modes[k].mode == NVML_COMPUTEMODE_PROHIBITED
		           ? "PROHIBITED"
		       : modes[k].mode == NVML_COMPUTEMODE_EXCLUSIVE_PROCESS
		           ? "EXCLUSIVE_PROCESS"
		           : "DEFAULT",
		       bus);
	}
	printf("All done.\n");
	return 0;
}

static int set_mig_mode(const char *ids, const char *arg)
{
	struct target t[MAX_IDS];
	unsigned int mode;
	int n, rc;

	if (strcmp(arg, "0") != 0 && strcmp(arg, "1") != 0)
		return invalid("Invalid MIG mode.");
	mode = arg[0] == '1' ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
	rc = targets(ids, t, &n);
	if (rc != 0)
		return rc;
	for (int i = 0; i < n; i++) {
		nvmlReturn_t act = NVML_SUCCESS, r;
		char bus[64];

		bus_id(t[i].dev, bus, sizeof(bus));
		r = nvmlDeviceSetMigMode(t[i].dev, mode, &act);
		if (r != NVML_SUCCESS) {
			fprintf(stderr,
			        "Unable to %s MIG Mode for GPU %s: %s\n",
			        mode ? "enable" : "disable", bus,
			        nvmlErrorString(r));
			return exit_for(r);
		}
		if (act == NVML_SUCCESS) {
			printf("%s MIG Mode for GPU %s\n",
			       mode ? "Enabled" : "Disabled", bus);
		} else {
			printf("Warning: MIG mode is in pending %s state for GPU %s:%s\n",
			       mode ? "enable" : "disable", bus,
			       nvmlErrorString(act));
			printf("Reset the GPU (nvidia-smi -i %u -r) to make MIG mode effective on GPU %s (simulated)\n",
			       t[i].gpu, bus);
		}
	}
	printf("All done.\n");
	return 0;
}

/*
 * A GPU reset on the sim: the pending MIG mode takes effect. Refused while
 * processes hold contexts on the GPU, like the real one.
 */
static int gpu_reset(const char *ids)
{
	struct target t[MAX_IDS];
	char bus[MAX_IDS][64];
	struct gs_sim_map *map = NULL;
	struct gs_sim_state *st;
	int n, rc = 0;

	if (ids == NULL)
		return invalid("A GPU reset needs -i <ID>.");
	rc = targets(ids, t, &n);
	if (rc != 0)
		return rc;
	/* NVML takes the state lock itself: ask it before locking here. */
	for (int i = 0; i < n; i++)
		bus_id(t[i].dev, bus[i], sizeof(bus[i]));
	st = state_open(&map);
	if (st == NULL)
		return 1;
	if (gs_sim_lock(st) != GS_OK) {
		gs_sim_state_close(map);
		return 1;
	}
	(void)gs_sim_reap(st, gs_sim_now_ns());
	for (int i = 0; i < n && rc == 0; i++) {
		struct gs_sim_gpu *g = &st->gpus[t[i].gpu];
		bool busy = false;

		for (int p = 0; p < GS_SIM_MAX_PROCS; p++)
			if (st->procs[p].state == GS_SIM_PROC_LIVE &&
			    st->procs[p].gpu == t[i].gpu)
				busy = true;
		if (busy) {
			fprintf(stderr,
			        "Unable to reset GPU %s because it's being used by some other process.\n",
			        bus[i]);
			rc = 1;
			break;
		}
		g->mig_mode = g->mig_pending;
		printf("GPU %s was successfully reset (simulated).\n", bus[i]);
	}
	gs_sim_unlock(st);
	gs_sim_state_close(map);
	if (rc == 0)
		printf("All done.\n");
	return rc;
}

static int compute_policy(int argc, char **argv)
{
	struct target t[MAX_IDS];
	struct gs_sim_map *map = NULL;
	struct gs_sim_state *st;
	const char *ids = NULL, *level = NULL;
	char *end;
	unsigned long v;
	int n, rc;

	for (int i = 1; i < argc; i++) {
		if ((strcmp(argv[i], "-i") == 0 ||
		     strcmp(argv[i], "--id") == 0) &&
		    i + 1 < argc)
			ids = argv[++i];
		else if (strncmp(argv[i], "--id=", 5) == 0)
			ids = argv[i] + 5;
		else if (strcmp(argv[i], "--set-timeslice") == 0 &&
		         i + 1 < argc)
			level = argv[++i];
		else if (strncmp(argv[i], "--set-timeslice=", 16) == 0)
			level = argv[i] + 16;
		else if (strcmp(argv[i], "-h") == 0 ||
		         strcmp(argv[i], "--help") == 0) {
			printf("nvidia-smi compute-policy [-i ID] --set-timeslice N (simulated)\n"
			       "    N: 0=DEFAULT, 1=SHORT, 2=MEDIUM, 3=LONG\n");
			return 0;
		} else {
			return invalid("Invalid combination of input arguments.");
		}
	}
	if (level == NULL)
		return invalid("Invalid combination of input arguments.");
	v = strtoul(level, &end, 10);
	if (level[0] < '0' || level[0] > '9' || *end != '\0' ||
	    v >= GS_SIM_TIMESLICE_LEVELS)
		return invalid("Invalid timeslice value: use 0 (DEFAULT), 1 (SHORT), 2 (MEDIUM) or 3 (LONG).");
	rc = targets(ids, t, &n);
	if (rc != 0)
		return rc;
	for (int i = 0; i < n; i++)
		if (t[i].mig) {
			fprintf(stderr, "Setting the timeslice is not supported on MIG devices.\n");
			return EXIT_NOT_SUPPORTED;
		}
	st = state_open(&map);
	if (st == NULL)
		return 1;
	if (gs_sim_lock(st) != GS_OK) {
		gs_sim_state_close(map);
		return 1;
	}
	for (int i = 0; i < n; i++)
		st->gpus[t[i].gpu].timeslice_level = (uint32_t)v;
	gs_sim_unlock(st);
	gs_sim_state_close(map);
	for (int i = 0; i < n; i++) {
		char bus[64];

		bus_id(t[i].dev, bus, sizeof(bus));
		printf("Set timeslice to %s (%lu) for GPU %s (simulated).\n",
		       timeslice_names[v], v, bus);
	}
	return 0;
}

/* ---- mig
 * ------------------------------------------------------------------------ */

static const char *yes_no(unsigned int v)
{
	return v ? "Yes" : "No";
}

/* Profile info by index or -1; info.version set to v2. */
static bool profile_at(nvmlDevice_t dev, unsigned int idx,
                       nvmlGpuInstanceProfileInfo_v2_t *info)
{
	memset(info, 0, sizeof(*info));
	info->version = nvmlGpuInstanceProfileInfo_v2;
	return nvmlDeviceGetGpuInstanceProfileInfoV(dev, idx, info) ==
	       NVML_SUCCESS;
}

static bool mig_on(const struct target *t)
{
	unsigned int cur = 0, pend = 0;

	return nvmlDeviceGetMigMode(t->dev, &cur, &pend) == NVML_SUCCESS &&
	       cur == NVML_DEVICE_MIG_ENABLE;
}

static int mig_list_profiles(struct target *t, int n, bool placements)
{
	bool any = false;

	if (!placements) {
		printf(
		    "+-----------------------------------------------------------------------------+\n"
		    "| GPU instance profiles: (simulated)                                          |\n"
		    "| GPU   Name               ID    Instances   Memory     P2P    SM    DEC   ENC |\n"
		    "|                                Free/Total   GiB              CE    JPEG  OFA |\n"
		    "|=============================================================================|\n");
	}
	for (int i = 0; i < n; i++) {
		if (t[i].mig || !mig_on(&t[i]))
			continue;
		any = true;
		for (unsigned int p = 0; p < NVML_GPU_INSTANCE_PROFILE_COUNT;
		     p++) {
			nvmlGpuInstanceProfileInfo_v2_t info;
			nvmlGpuInstancePlacement_t pl[16];
			unsigned int free_n = 0, cnt = 16;

			if (!profile_at(t[i].dev, p, &info))
				continue;
			if (placements) {
				if (nvmlDeviceGetGpuInstancePossiblePlacements_v2(
				        t[i].dev, info.id, pl, &cnt) !=
				    NVML_SUCCESS)
					continue;
				printf("GPU %2u Profile ID %2u Placements: {",
				       t[i].gpu, info.id);
				for (unsigned int k = 0; k < cnt; k++)
					printf("%s%u", k ? "," : "",
					       pl[k].start);
				printf("}:%u\n", cnt ? pl[0].size : 0);
				continue;
			}
			(void)nvmlDeviceGetGpuInstanceRemainingCapacity(
			    t[i].dev, info.id, &free_n);
			printf("|  %2u  %-18s %3u    %2u/%-2u      %6.2f     %-3s  %4u  %4u  %4u |\n",
			       t[i].gpu, info.name, info.id, free_n,
			       info.instanceCount,
			       (double)info.memorySizeMB / 1024.0,
			       yes_no(info.isP2pSupported),
			       info.multiprocessorCount, info.decoderCount,
			       info.encoderCount);
			printf(
			    "|                                                              %4u  %4u  %4u |\n",
			    info.copyEngineCount, info.jpegCount,
			    info.ofaCount);
			printf(
			    "+-----------------------------------------------------------------------------+\n");
		}
	}
	if (!any) {
		fprintf(stderr, "No MIG-enabled devices found.\n");
		return EXIT_NOT_FOUND;
	}
	return 0;
}

/* A profile given as an ID ("9") or a name ("3g.40gb"); -1 if unknown. */
static int profile_id_of(nvmlDevice_t dev, const char *s)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);

	if (s[0] >= '0' && s[0] <= '9' && *end == '\0')
		return (int)v;
	for (unsigned int p = 0; p < NVML_GPU_INSTANCE_PROFILE_COUNT; p++) {
		nvmlGpuInstanceProfileInfo_v2_t info;

		if (profile_at(dev, p, &info) &&
		    (strcasecmp(info.name, s) == 0 ||
		     strcasecmp(info.name + 4, s) == 0))
			return (int)info.id;
	}
	return -1;
}

/* Creates the full-size CI of a GI (the CI profile with its slice count). */
static nvmlReturn_t
create_default_ci(nvmlGpuInstance_t gi, nvmlComputeInstance_t *ci,
                  nvmlComputeInstanceProfileInfo_v2_t *ci_info)
{
	nvmlGpuInstanceInfo_t gi_info;
	nvmlGpuInstanceProfileInfo_v2_t p;
	nvmlReturn_t r;
	unsigned int slices = 0;

	r = nvmlGpuInstanceGetInfo(gi, &gi_info);
	if (r != NVML_SUCCESS)
		return r;
	memset(&p, 0, sizeof(p));
	p.version = nvmlGpuInstanceProfileInfo_v2;
	r = nvmlDeviceGetGpuInstanceProfileInfoByIdV(gi_info.device,
	                                             gi_info.profileId, &p);
	if (r != NVML_SUCCESS)
		return r;
	slices = p.sliceCount;
	for (unsigned int c = 0; c < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; c++) {
		memset(ci_info, 0, sizeof(*ci_info));
		ci_info->version = nvmlComputeInstanceProfileInfo_v2;
		if (nvmlGpuInstanceGetComputeInstanceProfileInfoV(
		        gi, c, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED,
		        ci_info) == NVML_SUCCESS &&
		    ci_info->sliceCount == slices)
			return nvmlGpuInstanceCreateComputeInstance(
			    gi, ci_info->id, ci);
	}
	return NVML_ERROR_NOT_SUPPORTED;
}

static int mig_create_gi(struct target *t, int n, const char *list,
                         bool with_ci)
{
	for (int i = 0; i < n; i++) {
		char buf[512], *save = NULL, *tok;

		if (t[i].mig)
			return invalid("Name the GPU, not a MIG device.");
		(void)snprintf(buf, sizeof(buf), "%s", list);
		for (tok = strtok_r(buf, ",", &save); tok != NULL;
		     tok = strtok_r(NULL, ",", &save)) {
			char *colon = strchr(tok, ':');
			nvmlGpuInstanceProfileInfo_v2_t info;
			nvmlGpuInstanceInfo_t gi_info;
			nvmlGpuInstance_t gi;
			nvmlReturn_t r;
			int id;

			if (colon != NULL)
				*colon = '\0';
			id = profile_id_of(t[i].dev, tok);
			memset(&info, 0, sizeof(info));
			info.version = nvmlGpuInstanceProfileInfo_v2;
			if (id < 0 || nvmlDeviceGetGpuInstanceProfileInfoByIdV(
			                  t[i].dev, (unsigned int)id, &info) !=
			                  NVML_SUCCESS) {
				fprintf(
				    stderr,
				    "Unable to create a GPU instance on GPU %2u using profile %s: Invalid Argument\n",
				    t[i].gpu, tok);
				return EXIT_INVALID;
			}
			if (colon != NULL) {
				nvmlGpuInstancePlacement_t pl;

				pl.start =
				    (unsigned int)strtoul(colon + 1, NULL, 10);
				pl.size = 0;
				{
					nvmlGpuInstancePlacement_t all[16];
					unsigned int cnt = 16;

					if (nvmlDeviceGetGpuInstancePossiblePlacements_v2(
					        t[i].dev, info.id, all, &cnt) ==
					        NVML_SUCCESS &&
					    cnt > 0)
						pl.size = all[0].size;
				}
				r = nvmlDeviceCreateGpuInstanceWithPlacement(
				    t[i].dev, info.id, &pl, &gi);
			} else {
				r = nvmlDeviceCreateGpuInstance(t[i].dev,
				                                info.id, &gi);
			}
			if (r != NVML_SUCCESS) {
				fprintf(
				    stderr,
				    "Unable to create a GPU instance on GPU %2u using profile %u: %s\n",
				    t[i].gpu, info.id, nvmlErrorString(r));
				return exit_for(r);
			}
			(void)nvmlGpuInstanceGetInfo(gi, &gi_info);
			printf(
			    "Successfully created GPU instance ID %2u on GPU %2u using profile %s (ID %2u)\n",
			    gi_info.id, t[i].gpu, info.name, info.id);
			if (with_ci) {
				nvmlComputeInstanceProfileInfo_v2_t ci_info;
				nvmlComputeInstanceInfo_t cinfo;
				nvmlComputeInstance_t ci;

				r = create_default_ci(gi, &ci, &ci_info);
				if (r != NVML_SUCCESS) {
					fprintf(stderr,
					        "Unable to create a compute instance on GPU %2u GPU instance ID %2u: %s\n",
					        t[i].gpu, gi_info.id,
					        nvmlErrorString(r));
					return exit_for(r);
				}
				(void)nvmlComputeInstanceGetInfo_v2(ci, &cinfo);
				printf("Successfully created compute instance ID %2u on GPU %2u GPU instance ID %2u using profile %s (ID %2u)\n",
				       cinfo.id, t[i].gpu, gi_info.id,
				       ci_info.name, ci_info.id);
			}
		}
	}
	return 0;
}

/* Every live GI of a GPU. OUT: gis, returns the count. */
static unsigned int all_gis(nvmlDevice_t dev, nvmlGpuInstance_t *gis,
                            unsigned int cap)
{
	unsigned int n = 0;

	for (unsigned int p = 0; p < NVML_GPU_INSTANCE_PROFILE_COUNT; p++) {
		nvmlGpuInstanceProfileInfo_v2_t info;
		nvmlGpuInstance_t buf[8];
		unsigned int cnt = 8;

		if (!profile_at(dev, p, &info) ||
		    nvmlDeviceGetGpuInstances(dev, info.id, buf, &cnt) !=
		        NVML_SUCCESS)
			continue;
		for (unsigned int k = 0; k < cnt && n < cap; k++)
			gis[n++] = buf[k];
	}
	return n;
}

static bool id_selected(const char *list, unsigned int id)
{
	char buf[256], *save = NULL, *tok;

	if (list == NULL)
		return true;
	(void)snprintf(buf, sizeof(buf), "%s", list);
	for (tok = strtok_r(buf, ",", &save); tok != NULL;
	     tok = strtok_r(NULL, ",", &save))
		if (strtoul(tok, NULL, 10) == id)
			return true;
	return false;
}

/* The CI of a GI, if any (the sim keeps at most one). */
static bool gi_ci(nvmlGpuInstance_t gi, nvmlComputeInstance_t *ci)
{
	for (unsigned int c = 0; c < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; c++) {
		nvmlComputeInstance_t buf[8];
		unsigned int cnt = 0;

		if (nvmlGpuInstanceGetComputeInstances(gi, c, buf, &cnt) ==
		        NVML_SUCCESS &&
		    cnt > 0) {
			*ci = buf[0];
			return true;
		}
	}
	return false;
}

/* -lgi, -lci, -cci, -dci, -dgi over the selected GPUs and GIs. */
static int mig_walk(struct target *t, int n, const char *op, const char *gi_ids,
                    const char *ci_ids)
{
	int rc = 0;

	if (strcmp(op, "-lgi") == 0 || strcmp(op, "-lci") == 0)
		printf(
		    "+-------------------------------------------------------+\n"
		    "| %s instances: (simulated)%*s|\n"
		    "| GPU   Name               Profile  Instance  Placement |\n"
		    "|                            ID       ID     Start:Size |\n"
		    "+-------------------------------------------------------+\n",
		    op[2] == 'g' ? "GPU" : "Compute", op[2] == 'g' ? 28 : 24,
		    "");
	for (int i = 0; i < n; i++) {
		nvmlGpuInstance_t gis[GS_SIM_MAX_MIG];
		unsigned int ngi;

		if (t[i].mig)
			return invalid("Name the GPU, not a MIG device.");
		if (!mig_on(&t[i]))
			continue;
		ngi = all_gis(t[i].dev, gis, GS_SIM_MAX_MIG);
		for (unsigned int k = 0; k < ngi; k++) {
			nvmlGpuInstanceProfileInfo_v2_t info;
			nvmlComputeInstanceProfileInfo_v2_t ci_info;
			nvmlComputeInstanceInfo_t cinfo;
			nvmlGpuInstanceInfo_t gi;
			nvmlComputeInstance_t ci;
			nvmlReturn_t r;
			bool has_ci;

			(void)nvmlGpuInstanceGetInfo(gis[k], &gi);
			if (!id_selected(gi_ids, gi.id))
				continue;
			memset(&info, 0, sizeof(info));
			info.version = nvmlGpuInstanceProfileInfo_v2;
			(void)nvmlDeviceGetGpuInstanceProfileInfoByIdV(
			    t[i].dev, gi.profileId, &info);
			has_ci = gi_ci(gis[k], &ci);
			if (has_ci)
				(void)nvmlComputeInstanceGetInfo_v2(ci, &cinfo);
			if (strcmp(op, "-lgi") == 0) {
				printf("|  %2u  %-18s %5u %9u %9u:%-4u|\n",
				       t[i].gpu, info.name, gi.profileId, gi.id,
				       gi.placement.start, gi.placement.size);
			} else if (strcmp(op, "-lci") == 0) {
				if (has_ci && id_selected(ci_ids, cinfo.id))
					printf("|  %2u  GI %-3u %-11s %5u %9u %9u:%-4u|\n",
					       t[i].gpu, gi.id, info.name + 4,
					       cinfo.profileId, cinfo.id,
					       cinfo.placement.start,
					       cinfo.placement.size);
			} else if (strcmp(op, "-cci") == 0) {
				if (has_ci)
					continue;
				r = create_default_ci(gis[k], &ci, &ci_info);
				if (r != NVML_SUCCESS) {
					fprintf(stderr,
					        "Unable to create a compute instance on GPU %2u GPU instance ID %2u: %s\n",
					        t[i].gpu, gi.id,
					        nvmlErrorString(r));
					rc = exit_for(r);
					continue;
				}
				(void)nvmlComputeInstanceGetInfo_v2(ci, &cinfo);
				printf("Successfully created compute instance ID %2u on GPU %2u GPU instance ID %2u using profile %s (ID %2u)\n",
				       cinfo.id, t[i].gpu, gi.id, ci_info.name,
				       ci_info.id);
			} else if (strcmp(op, "-dci") == 0) {
				if (!has_ci || !id_selected(ci_ids, cinfo.id))
					continue;
				r = nvmlComputeInstanceDestroy(ci);
				if (r != NVML_SUCCESS) {
					fprintf(stderr,
					        "Unable to destroy compute instance ID %2u from GPU %2u GPU instance ID %2u: %s\n",
					        cinfo.id, t[i].gpu, gi.id,
					        nvmlErrorString(r));
					rc = exit_for(r);
					continue;
				}
				printf(
				    "Successfully destroyed compute instance ID %2u from GPU %2u GPU instance ID %2u\n",
				    cinfo.id, t[i].gpu, gi.id);
			} else {
				r = nvmlGpuInstanceDestroy(gis[k]);
				if (r != NVML_SUCCESS) {
					fprintf(
					    stderr,
					    "Unable to destroy GPU instance ID %2u from GPU %2u: %s\n",
					    gi.id, t[i].gpu,
					    nvmlErrorString(r));
					rc = exit_for(r);
					continue;
				}
				printf("Successfully destroyed GPU instance ID %2u from GPU %2u\n",
				       gi.id, t[i].gpu);
			}
		}
	}
	return rc;
}

static int mig(int argc, char **argv, const char *ids)
{
	struct target t[MAX_IDS];
	const char *op = NULL, *cgi = NULL, *gi_ids = NULL, *ci_ids = NULL;
	bool with_ci = false;
	int n, rc;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if ((strcmp(a, "-i") == 0 || strcmp(a, "--id") == 0) &&
		    i + 1 < argc)
			ids = argv[++i];
		else if (strcmp(a, "-lgip") == 0 || strcmp(a, "-lgipp") == 0 ||
		         strcmp(a, "-lgi") == 0 || strcmp(a, "-lci") == 0 ||
		         strcmp(a, "-dgi") == 0 || strcmp(a, "-dci") == 0)
			op = a;
		else if (strcmp(a, "-cci") == 0) {
			op = a;
			/* An optional CI profile list: the sim makes the
			 * full-size one either way. */
			if (i + 1 < argc && argv[i + 1][0] != '-')
				i++;
		} else if (strcmp(a, "-cgi") == 0 && i + 1 < argc) {
			op = a;
			cgi = argv[++i];
		} else if (strcmp(a, "-C") == 0)
			with_ci = true;
		else if ((strcmp(a, "-gi") == 0 ||
		          strcmp(a, "--gpu-instance-id") == 0) &&
		         i + 1 < argc)
			gi_ids = argv[++i];
		else if ((strcmp(a, "-ci") == 0 ||
		          strcmp(a, "--compute-instance-id") == 0) &&
		         i + 1 < argc)
			ci_ids = argv[++i];
		else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			printf("nvidia-smi mig [-i ID] -lgip | -lgipp | -lgi | -lci | -cgi LIST [-C] | -cci [-gi IDS] | -dci [-gi IDS] [-ci IDS] | -dgi [-gi IDS] (simulated)\n"
			       "  LIST: profile IDs or names, each optionally with :START (placement), comma-separated\n");
			return 0;
		} else
			return invalid("Invalid combination of input arguments.");
	}
	if (op == NULL)
		return invalid("Invalid combination of input arguments.");
	rc = targets(ids, t, &n);
	if (rc != 0)
		return rc;
	if (strcmp(op, "-lgip") == 0)
		return mig_list_profiles(t, n, false);
	if (strcmp(op, "-lgipp") == 0)
		return mig_list_profiles(t, n, true);
	if (strcmp(op, "-cgi") == 0)
		return mig_create_gi(t, n, cgi, with_ci);
	return mig_walk(t, n, op, gi_ids, ci_ids);
}

/* ---- main
 * ------------------------------------------------------------------------ */

static void usage(void)
{
	printf("nvidia-smi (simulated by gpuslice) - the subset gpuslice uses, on the simulated node\n"
	       "\n"
	       "  nvidia-smi                          summary\n"
	       "  nvidia-smi -L                       list GPUs and MIG devices\n"
	       "  nvidia-smi [-i ID] --query-gpu=F,... --format=csv[,noheader][,nounits]\n"
	       "      F: index count uuid name pci.bus_id driver_version memory.total memory.used\n"
	       "         memory.free utilization.gpu compute_mode mig.mode.current mig.mode.pending\n"
	       "  nvidia-smi [-i ID] --query-compute-apps=F,... --format=csv[,noheader][,nounits]\n"
	       "      F: pid process_name used_memory gpu_uuid gpu_bus_id\n"
	       "  nvidia-smi -i ID -c DEFAULT|PROHIBITED|EXCLUSIVE_PROCESS\n"
	       "  nvidia-smi -i ID -mig 0|1\n"
	       "  nvidia-smi -i ID -r                 reset: applies a pending MIG mode\n"
	       "  nvidia-smi compute-policy [-i ID] --set-timeslice 0|1|2|3\n"
	       "  nvidia-smi mig [-i ID] -lgip|-lgipp|-lgi|-lci|-cgi LIST [-C]|-cci|-dci|-dgi\n"
	       "ID: index, UUID or PCI bus id (comma-separated list).\n");
}

int main(int argc, char **argv)
{
	const char *ids = NULL, *query = NULL, *apps = NULL, *format = NULL;
	const char *cmode = NULL, *migmode = NULL;
	bool list = false, reset = false;
	nvmlReturn_t r;
	int rc = 0;

	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "-h") == 0 ||
		    strcmp(argv[i], "--help") == 0) {
			if (i == 1) {
				usage();
				return 0;
			}
		}
	r = nvmlInit_v2();
	if (r != NVML_SUCCESS) {
		fprintf(stderr,
		        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver (simulated: %s; run `gpuslice sim init`).\n",
		        nvmlErrorString(r));
		return EXIT_NO_NVML;
	}
	if (argc > 1 && strcmp(argv[1], "compute-policy") == 0) {
		rc = compute_policy(argc - 1, argv + 1);
		goto out;
	}
	if (argc > 1 && strcmp(argv[1], "mig") == 0) {
		rc = mig(argc - 1, argv + 1, NULL);
		goto out;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if ((strcmp(a, "-i") == 0 || strcmp(a, "--id") == 0) &&
		    i + 1 < argc)
			ids = argv[++i];
		else if (strncmp(a, "--id=", 5) == 0)
			ids = a + 5;
		else if (strcmp(a, "-L") == 0 || strcmp(a, "--list-gpus") == 0)
			list = true;
		else if (strncmp(a, "--query-gpu=", 12) == 0)
			query = a + 12;
		else if (strncmp(a, "--query-compute-apps=", 21) == 0)
			apps = a + 21;
		else if (strncmp(a, "--format=", 9) == 0)
			format = a + 9;
		else if ((strcmp(a, "-c") == 0 ||
		          strcmp(a, "--compute-mode") == 0) &&
		         i + 1 < argc)
			cmode = argv[++i];
		else if (strncmp(a, "--compute-mode=", 15) == 0)
			cmode = a + 15;
		else if ((strcmp(a, "-mig") == 0 ||
		          strcmp(a, "--multi-instance-gpu") == 0) &&
		         i + 1 < argc)
			migmode = argv[++i];
		else if (strcmp(a, "-r") == 0 || strcmp(a, "--gpu-reset") == 0)
			reset = true;
		else {
			rc = invalid("Invalid combination of input arguments.");
			goto out;
		}
	}
	if (query != NULL || apps != NULL) {
		struct csv c;

		if (format == NULL || parse_format(format, &c) != 0) {
			rc = invalid("Invalid format: use --format=csv[,noheader][,nounits].");
			goto out;
		}
		rc = query != NULL ? query_gpu(query, ids, &c)
		                   : query_apps(apps, ids, &c);
	} else if (format != NULL) {
		rc = invalid("--format needs --query-gpu or --query-compute-apps.");
	} else if (list) {
		rc = list_gpus();
	} else if (cmode != NULL) {
		rc = set_compute_mode(ids, cmode);
	} else if (migmode != NULL) {
		rc = set_mig_mode(ids, migmode);
	} else if (reset) {
		rc = gpu_reset(ids);
	} else if (ids == NULL) {
		rc = summary();
	} else {
		struct target t[MAX_IDS];
		int n;

		rc = targets(ids, t, &n);
		if (rc == 0)
			rc = summary();
	}
out:
	(void)nvmlShutdown();
	return rc;
}
