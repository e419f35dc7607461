/*
 * cmd_doctor.c - `gpuslice doctor`: checks a node the way a user would
 * before trusting it, and says what to fix. Each check is one line with a
 * status (ok, warn, fail, skip, info), what was found and, when it is not
 * ok, what to do:
 *
 *   nvml         the driver's NVML loads and answers: driver version, GPUs
 *                (or that it is gpuslice's simulated node)
 *   gpus         per GPU: model, memory, MIG mode, persistence mode
 *   persistence  persistence mode on every real GPU
 *   mig          which GPUs can do MIG and which have it on
 *   mps          nvidia-cuda-mps-control on PATH (MPS slices need it)
 *   shim         libgpuslice.so found, the newest GLIBC_x.y it needs
 *                against this host's glibc
 *   program      with --program PATH: a binary's libc (glibc version it
 *                needs, musl, static) or an image's root filesystem (the
 *                glibc or musl it ships) against what the shim needs
 *   daemon       gpusliced answers on its socket
 *   kubernetes   on a Kubernetes node: the kubelet's DRA feature and CDI
 *   slurm        where Slurm is installed: plugstack.conf loads the plugin
 *
 * --json prints the same as one object. Exit status 0 when nothing
 * failed, 1 when a check failed, 2 for a usage error. Reads only; never
 * changes a setting.
 */
#include <dirent.h>
#include <getopt.h>
#include <gnu/libc-version.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "gs/elflibc.h"
#include "gs/rootlibc.h"
#include "gs/client.h"
#include "gs/nvml_load.h"
#include "gs/paths.h"
#include "gs/proc.h"

static const char *const CMD = "doctor";

enum status { ST_OK, ST_WARN, ST_FAIL, ST_SKIP, ST_INFO };
static const char *const status_name[] = {"ok", "warn", "fail", "skip",
                                          "info"};

#define MAX_CHECKS 24

struct check {
	const char *name;
	enum status st;
	char detail[640];
	char fix[320];
};

struct report {
	struct check c[MAX_CHECKS];
	int n;
	const char *source; /* "nvml", "sim" or "none" */
	int shim_major, shim_minor;
	char shim[PATH_MAX];
};

static const char usage_text[] =
    "usage: gpuslice doctor [--json] [--program PATH] [--nvml LIBRARY]\n"
    "\n"
    "Checks this node before you trust it with slices: NVML and the driver,\n"
    "MIG, MPS, persistence mode, the shim and the C library of a program or\n"
    "image (--program), gpusliced, the kubelet's DRA/CDI settings and Slurm's\n"
    "plugstack.conf. Each check prints ok, warn, fail, skip or info, and what to\n"
    "fix. Changes nothing.\n"
    "\n"
    "  --program PATH   a program (ELF) or an image's unpacked root filesystem:\n"
    "                   will the shim load there? (glibc version, musl, static)\n"
    "  --nvml LIBRARY   the NVML library to load (default libnvidia-ml.so.1)\n"
    "  --json           print the report as one JSON object\n"
    "\n"
    "exit status: 0 nothing failed, 1 a check failed, 2 usage\n";

static struct check *add(struct report *r, const char *name, enum status st,
                         const char *fix, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static struct check *add(struct report *r, const char *name, enum status st,
                         const char *fix, const char *fmt, ...)
{
	struct check *c;
	va_list ap;

	if (r->n == MAX_CHECKS)
		return NULL;
	c = &r->c[r->n++];
	c->name = name;
	c->st = st;
	va_start(ap, fmt);
	(void)vsnprintf(c->detail, sizeof(c->detail), fmt, ap);
	va_end(ap);
	(void)snprintf(c->fix, sizeof(c->fix), "%s", fix ? fix : "");
	return c;
}

static bool newer(int a_maj, int a_min, int b_maj, int b_min)
{
	return a_maj > b_maj || (a_maj == b_maj && a_min > b_min);
}

/* ---- NVML: driver, GPUs, MIG, persistence ---- */

static void check_nvml(struct report *r, const char *lib)
{
	struct gs_errbuf eb = {0};
	struct gs_nvml *f = NULL;
	char driver[96] = "?", gpus[640] = "", mig[320] = "", off[160] = "";
	unsigned int n = 0;
	int sim = 0, mig_capable = 0;

	r->source = "none";
	if (gs_nvml_load(lib, &f, &eb) != GS_OK) {
		add(r, "nvml", ST_FAIL,
		    "install the NVIDIA driver (its NVML is libnvidia-ml.so.1); to try gpuslice without a GPU: eval \"$(gpuslice sim env)\" after gpuslice sim init",
		    "%s", eb.msg);
		return;
	}
	if (f->nvmlInit_v2 == NULL || f->nvmlInit_v2() != NVML_SUCCESS) {
		add(r, "nvml", ST_FAIL,
		    "check the driver: nvidia-smi should list the GPUs (a driver/library mismatch after an upgrade needs a reboot)",
		    "%s loads but nvmlInit fails", lib);
		gs_nvml_unload(f);
		return;
	}
	if (f->nvmlSystemGetDriverVersion)
		(void)f->nvmlSystemGetDriverVersion(driver, sizeof(driver));
	if (f->nvmlDeviceGetCount_v2)
		(void)f->nvmlDeviceGetCount_v2(&n);
	for (unsigned int i = 0; i < n; i++) {
		nvmlDevice_t h;
		char name[96] = "?", serial[64] = "";
		unsigned int cur = 0, pend = 0;
		nvmlEnableState_t pm = NVML_FEATURE_DISABLED;
		nvmlMemory_t mem = {0};
		const char *migs = "n/a", *pms = "?";
		size_t len;

		if (f->nvmlDeviceGetHandleByIndex_v2(i, &h) != NVML_SUCCESS)
			continue;
		(void)f->nvmlDeviceGetName(h, name, sizeof(name));
		if (f->nvmlDeviceGetSerial &&
		    f->nvmlDeviceGetSerial(h, serial, sizeof(serial)) ==
		        NVML_SUCCESS &&
		    strncmp(serial, "SIM", 3) == 0)
			sim++;
		if (f->nvmlDeviceGetMemoryInfo)
			(void)f->nvmlDeviceGetMemoryInfo(h, &mem);
		if (f->nvmlDeviceGetMigMode &&
		    f->nvmlDeviceGetMigMode(h, &cur, &pend) == NVML_SUCCESS) {
			migs = cur ? "on" : "off";
			mig_capable++;
			len = strlen(mig);
			(void)snprintf(mig + len, sizeof(mig) - len,
			               "%sgpu %u %s", len ? ", " : "", i, migs);
		}
		if (f->nvmlDeviceGetPersistenceMode &&
		    f->nvmlDeviceGetPersistenceMode(h, &pm) == NVML_SUCCESS) {
			pms = pm == NVML_FEATURE_ENABLED ? "on" : "off";
			if (pm != NVML_FEATURE_ENABLED) {
				len = strlen(off);
				(void)snprintf(off + len, sizeof(off) - len,
				               "%s%u", len ? "," : "", i);
			}
		}
		len = strlen(gpus);
		(void)snprintf(gpus + len, sizeof(gpus) - len,
		               "%sgpu %u %s %lluGiB MIG %s persistence %s",
		               len ? "; " : "", i, name,
		               (unsigned long long)(mem.total >> 30), migs, pms);
	}
	(void)f->nvmlShutdown();
	gs_nvml_unload(f);

	r->source = n > 0 && sim == (int)n ? "sim" : "nvml";
	if (n == 0) {
		add(r, "nvml", ST_FAIL,
		    "nvidia-smi -L should list the GPUs; check the driver and that this machine has one",
		    "driver %s answers but shows no GPU", driver);
		return;
	}
	if (strcmp(r->source, "sim") == 0)
		add(r, "nvml", ST_INFO, NULL,
		    "SIMULATED node (gpuslice sim, driver %s): %u GPU%s; figures measure gpuslice, not a GPU",
		    driver, n, n == 1 ? "" : "s");
	else
		add(r, "nvml", ST_OK, NULL, "driver %s, %u GPU%s", driver, n,
		    n == 1 ? "" : "s");
	add(r, "gpus", ST_INFO, NULL, "%s", gpus);
	if (off[0] && strcmp(r->source, "sim") != 0)
		add(r, "persistence", ST_WARN,
		    "enable it (nvidia-smi -pm 1, or run nvidia-persistenced) so each job does not pay the driver's start-up",
		    "persistence mode is off on gpu %s", off);
	else
		add(r, "persistence", ST_OK, NULL, "on for every GPU%s",
		    strcmp(r->source, "sim") == 0 ? " (simulated)" : "");
	if (mig_capable)
		add(r, "mig", ST_INFO, NULL, "%s", mig);
	else
		add(r, "mig", ST_INFO, NULL,
		    "no GPU here can do MIG (slices use time-slicing or MPS)");
}

/* ---- MPS ---- */

static void check_mps(struct report *r)
{
	char path[PATH_MAX], sim[PATH_MAX];

	if (!gs_find_program("nvidia-cuda-mps-control", path, sizeof(path))) {
		add(r, "mps", ST_WARN,
		    "install the driver's MPS control program (nvidia-cuda-mps-control, in the NVIDIA utils package) to offer MPS slices",
		    "nvidia-cuda-mps-control is not on PATH: MPS slices are unavailable");
		return;
	}
	if (gs_paths_sim_dir(sim, sizeof(sim)) &&
	    strncmp(path, sim, strlen(sim)) == 0)
		add(r, "mps", ST_OK, NULL, "%s (the simulator's)", path);
	else
		add(r, "mps", ST_OK, NULL, "%s", path);
}

/* ---- the shim and a program's or image's libc ---- */

/* A musl build of the shim beside the glibc one, if installed. */
static bool musl_shim(const struct report *r, char *out, size_t n)
{
	static const char *const names[] = {"libgpuslice-musl.so",
	                                    "libgpuslice.musl.so",
	                                    "musl/libgpuslice.so"};
	char dir[PATH_MAX], *slash;
	struct stat st;

	(void)snprintf(dir, sizeof(dir), "%s", r->shim);
	slash = strrchr(dir, '/');
	if (slash == NULL)
		return false;
	*slash = '\0';
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		int k = snprintf(out, n, "%s/%s", dir, names[i]);

		if (k > 0 && (size_t)k < n && stat(out, &st) == 0)
			return true;
	}
	return false;
}

static void check_shim(struct report *r)
{
	struct gs_errbuf eb = {0};
	struct gs_elf_libc e;
	int hmaj = 0, hmin = 0;

	if (!gs_paths_shim(r->shim, sizeof(r->shim))) {
		r->shim[0] = '\0';
		add(r, "shim", ST_FAIL,
		    "install the gpuslice package (or set GPUSLICE_SHIM): without libgpuslice.so `gpuslice run` enforces nothing",
		    "libgpuslice.so not found");
		return;
	}
	if (gs_elf_libc_read(r->shim, &e, &eb) != GS_OK) {
		add(r, "shim", ST_FAIL, "reinstall the gpuslice package", "%s",
		    eb.msg);
		return;
	}
	r->shim_major = e.need_major;
	r->shim_minor = e.need_minor;
	(void)sscanf(gnu_get_libc_version(), "%d.%d", &hmaj, &hmin);
	if (newer(e.need_major, e.need_minor, hmaj, hmin))
		add(r, "shim", ST_FAIL,
		    "install a gpuslice build for this distribution's glibc",
		    "%s needs GLIBC_%d.%d, this host has %s: it would not load",
		    r->shim, e.need_major, e.need_minor,
		    gnu_get_libc_version());
	else
		add(r, "shim", ST_OK, NULL,
		    "%s needs GLIBC_%d.%d (host glibc %s)", r->shim,
		    e.need_major, e.need_minor, gnu_get_libc_version());
}

/* The verdict for a program or image that uses musl. */
static void musl_verdict(struct report *r, const char *what)
{
	char m[PATH_MAX];

	if (r->shim[0] && musl_shim(r, m, sizeof(m)))
		add(r, "program", ST_OK, NULL,
		    "%s uses musl: the musl build %s is there for it", what, m);
	else
		add(r, "program", ST_FAIL,
		    "use a glibc-based image, or install a gpuslice with the musl build of the shim",
		    "%s uses musl; libgpuslice.so is built for glibc and would not load: the program would run with no limits",
		    what);
}

/* An image's root filesystem: the libc it ships (gs/rootlibc.h, shared
 * with the Kubernetes CDI hook). */
static void check_image(struct report *r, const char *root)
{
	struct gs_errbuf eb = {0};
	struct gs_root_libc lc;
	gs_err err = gs_root_libc_find(root, &lc, &eb);

	if (err == GS_ERR_NOT_FOUND || err == GS_ERR_INVALID) {
		add(r, "program", ST_WARN,
		    "point --program at the image's root filesystem or a program in it",
		    "%s", eb.msg);
		return;
	}
	if (err != GS_OK) {
		add(r, "program", ST_WARN,
		    "check the image's glibc version by hand", "%s", eb.msg);
		return;
	}
	if (lc.kind == GS_ROOT_LIBC_MUSL) {
		musl_verdict(r, "the image");
		return;
	}
	if (r->shim_major == 0)
		add(r, "program", ST_WARN, "see the shim check",
		    "image glibc %d.%d; the shim's needs are unknown",
		    lc.glibc_major, lc.glibc_minor);
	else if (newer(r->shim_major, r->shim_minor, lc.glibc_major,
	               lc.glibc_minor))
		add(r, "program", ST_FAIL,
		    "use an image with a newer glibc, or a gpuslice whose shim needs no newer than the image's glibc",
		    "the image's glibc is %d.%d but the shim needs GLIBC_%d.%d: ld.so would print \"cannot be preloaded\" and programs would run with no limits",
		    lc.glibc_major, lc.glibc_minor, r->shim_major,
		    r->shim_minor);
	else
		add(r, "program", ST_OK, NULL,
		    "the image's glibc %d.%d has GLIBC_%d.%d the shim needs",
		    lc.glibc_major, lc.glibc_minor, r->shim_major,
		    r->shim_minor);
}

static void check_program(struct report *r, const char *path)
{
	struct gs_errbuf eb = {0};
	struct gs_elf_libc e;
	struct stat st;

	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		check_image(r, path);
		return;
	}
	if (gs_elf_libc_read(path, &e, &eb) != GS_OK) {
		add(r, "program", ST_FAIL,
		    "point --program at the ELF binary (for a script, its interpreter)",
		    "%s", eb.msg);
		return;
	}
	if (!e.dynamic) {
		add(r, "program", ST_FAIL,
		    "link the program dynamically (LD_PRELOAD cannot reach a static binary); a slice's MIG or MPS limits still apply",
		    "%s is statically linked: the shim cannot be preloaded into it, no memory cap would apply",
		    path);
		return;
	}
	if (e.musl) {
		musl_verdict(r, path);
		return;
	}
	if (r->shim_major == 0) {
		add(r, "program", ST_WARN, "see the shim check",
		    "%s needs GLIBC_%d.%d; the shim's needs are unknown", path,
		    e.need_major, e.need_minor);
		return;
	}
	if (newer(r->shim_major, r->shim_minor, e.need_major, e.need_minor))
		add(r, "program", ST_WARN,
		    "check the image it runs in: gpuslice doctor --program <image root>",
		    "%s runs on glibc %d.%d or newer, the shim needs GLIBC_%d.%d: in an image with an older glibc the shim would not load and the program would run with no limits",
		    path, e.need_major, e.need_minor, r->shim_major,
		    r->shim_minor);
	else
		add(r, "program", ST_OK, NULL,
		    "%s needs GLIBC_%d.%d, the shim GLIBC_%d.%d: wherever the program runs, the shim loads",
		    path, e.need_major, e.need_minor, r->shim_major,
		    r->shim_minor);
}

/* ---- gpusliced, Kubernetes, Slurm ---- */

static void check_daemon(struct report *r)
{
	const char *sock = gs_cli_socket ? gs_cli_socket
	                                 : gs_client_default_socket();
	struct gs_errbuf eb = {0};
	json_t *g = NULL;

	if (gs_client_call(sock, "GET", "/v1/gpus", NULL, &g, &eb) != GS_OK) {
		add(r, "daemon", ST_WARN,
		    "start it: systemctl enable --now gpusliced (or pass --socket)",
		    "gpusliced does not answer on %s: %s", sock, eb.msg);
		return;
	}
	add(r, "daemon", ST_OK, NULL, "gpusliced answers on %s (%s GPUs)",
	    sock, gs_client_str(g, "source"));
	json_decref(g);
}

/* Whether the file at path holds `needle` (first 1 MiB). */
static bool file_has(const char *path, const char *needle)
{
	FILE *f = fopen(path, "re");
	static char buf[1 << 20];
	size_t n;

	if (f == NULL)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	(void)fclose(f);
	buf[n] = '\0';
	return strstr(buf, needle) != NULL;
}

static void check_kubernetes(struct report *r)
{
	static const char kcfg[] = "/var/lib/kubelet/config.yaml";
	struct stat st;
	bool cdi = stat("/etc/cdi", &st) == 0 || stat("/var/run/cdi", &st) == 0;

	if (stat(kcfg, &st) != 0) {
		add(r, "kubernetes", ST_SKIP, NULL,
		    "not a Kubernetes node (no %s)", kcfg);
		return;
	}
	if (file_has(kcfg, "DynamicResourceAllocation: false"))
		add(r, "kubernetes", ST_FAIL,
		    "enable the DynamicResourceAllocation feature gate in the kubelet's config (docs/kubernetes.md)",
		    "%s turns DynamicResourceAllocation off: the gpuslice DRA driver cannot serve claims",
		    kcfg);
	else if (!cdi)
		add(r, "kubernetes", ST_WARN,
		    "the kubelet plugin writes CDI specs to /var/run/cdi; make sure the container runtime has CDI enabled (containerd: enable_cdi)",
		    "no /etc/cdi or /var/run/cdi yet");
	else
		add(r, "kubernetes", ST_OK, NULL,
		    "kubelet config %s, CDI directory present", kcfg);
}

static void check_slurm(struct report *r)
{
	static const char *const confs[] = {"/etc/slurm/plugstack.conf",
	                                    "/etc/slurm-llnl/plugstack.conf"};
	char path[PATH_MAX];
	bool slurmd = gs_find_program("slurmd", path, sizeof(path));
	struct stat st;

	for (size_t i = 0; i < sizeof(confs) / sizeof(confs[0]); i++) {
		if (stat(confs[i], &st) != 0)
			continue;
		if (file_has(confs[i], "spank_gpuslice"))
			add(r, "slurm", ST_OK, NULL, "%s loads spank_gpuslice.so",
			    confs[i]);
		else
			add(r, "slurm", ST_WARN,
			    "add: optional spank_gpuslice.so (see /usr/share/doc/gpuslice-slurm/README.Debian)",
			    "%s does not load spank_gpuslice.so: jobs run without slices",
			    confs[i]);
		return;
	}
	if (slurmd)
		add(r, "slurm", ST_WARN,
		    "create /etc/slurm/plugstack.conf with: optional spank_gpuslice.so",
		    "slurmd is installed but there is no plugstack.conf");
	else
		add(r, "slurm", ST_SKIP, NULL, "Slurm is not installed here");
}

/* ---- output ---- */

static void print_text(const struct report *r)
{
	printf("gpuslice doctor: %s\n",
	       strcmp(r->source, "sim") == 0    ? "SIMULATED node (gpuslice sim)"
	       : strcmp(r->source, "nvml") == 0 ? "NVIDIA driver"
	                                        : "no GPU driver answers");
	for (int i = 0; i < r->n; i++) {
		const struct check *c = &r->c[i];

		printf("  %-5s %-12s %s\n", status_name[c->st], c->name,
		       c->detail);
		if (c->fix[0])
			printf("  %-5s %-12s fix: %s\n", "", "", c->fix);
	}
}

static void print_json(const struct report *r, bool failed)
{
	json_t *o = json_object(), *a = json_array();

	json_object_set_new(o, "source", json_string(r->source));
	json_object_set_new(o, "ok", json_boolean(!failed));
	for (int i = 0; i < r->n; i++) {
		const struct check *c = &r->c[i];
		json_t *j = json_object();

		json_object_set_new(j, "name", json_string(c->name));
		json_object_set_new(j, "status",
		                    json_string(status_name[c->st]));
		json_object_set_new(j, "detail", json_string(c->detail));
		if (c->fix[0])
			json_object_set_new(j, "fix", json_string(c->fix));
		json_array_append_new(a, j);
	}
	json_object_set_new(o, "checks", a);
	gs_cli_print_json(o);
	json_decref(o);
}

int gs_cli_doctor(int argc, char **argv)
{
	enum { O_JSON = 1, O_PROGRAM, O_NVML, O_HELP };
	static const struct option opts[] = {
	    {"json", no_argument, NULL, O_JSON},
	    {"program", required_argument, NULL, O_PROGRAM},
	    {"nvml", required_argument, NULL, O_NVML},
	    {"help", no_argument, NULL, O_HELP},
	    {NULL, 0, NULL, 0},
	};
	static struct report r;
	const char *program = NULL, *nvml = "libnvidia-ml.so.1";
	bool as_json = false, failed = false;
	int opt;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case O_JSON:
			as_json = true;
			break;
		case O_PROGRAM:
			program = optarg;
			break;
		case O_NVML:
			nvml = optarg;
			break;
		case 'h':
		case O_HELP:
			fputs(usage_text, stdout);
			return GS_EXIT_OK;
		default:
			gs_cli_error(CMD, "unknown or incomplete option '%s' (see --help)",
			             argv[optind - 1]);
			return GS_EXIT_USAGE;
		}
	}
	if (optind != argc) {
		gs_cli_error(CMD, "unexpected argument '%s'", argv[optind]);
		return GS_EXIT_USAGE;
	}
	memset(&r, 0, sizeof(r));
	check_nvml(&r, nvml);
	check_mps(&r);
	check_shim(&r);
	if (program)
		check_program(&r, program);
	check_daemon(&r);
	check_kubernetes(&r);
	check_slurm(&r);
	for (int i = 0; i < r.n; i++)
		failed |= r.c[i].st == ST_FAIL;
	if (as_json)
		print_json(&r, failed);
	else
		print_text(&r);
	return failed ? GS_EXIT_FAILURE : GS_EXIT_OK;
}
