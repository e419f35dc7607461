/*
 * jobspec.c - a Slurm job step's request and the slice limits that follow
 * (see jobspec.h for the rules). Pure: strings in, values out.
 */
#include "jobspec.h"

#include <errno.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gs/spec.h"

void gs_slurm_conf_init(struct gs_slurm_conf *c)
{
	memset(c, 0, sizeof(*c));
	(void)snprintf(c->run_dir, sizeof(c->run_dir), "%s",
	               GS_SLURM_DEFAULT_RUN_DIR);
	(void)snprintf(c->socket, sizeof(c->socket), "%s",
	               GS_SLURM_DEFAULT_SOCKET);
	c->daemon = GS_SLURM_DAEMON_AUTO;
	c->compute_mode = GS_REGION_COMPUTE_STRICT;
}

/* Copies an absolute path into `dst` (n bytes). */
static gs_err set_path(char *dst, size_t n, const char *key, const char *v,
                       struct gs_errbuf *eb)
{
	if (v[0] != '/')
		return gs_fail(
		    eb, GS_ERR_INVALID,
		    "plugstack argument %s must be an absolute path, got '%s'",
		    key, v);
	if (strlen(v) >= n)
		return gs_fail(eb, GS_ERR_RANGE,
		               "plugstack argument %s is too long", key);
	(void)snprintf(dst, n, "%s", v);
	return GS_OK;
}

/*
 * Reads "QOS:PRIO[,QOS:PRIO...]" into c->qos; a QOS listed again takes
 * the later priority. QOS names are Slurm's ([A-Za-z0-9_.-], see
 * sacctmgr), compared as Slurm stores them (lower case).
 */
/* The characters of a QOS name. */
#define QOS_CHARS                                                              \
	"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-"

static gs_err set_qos_table(struct gs_slurm_conf *c, const char *v,
                            struct gs_errbuf *eb)
{
	const char *p = v;

	if (*p == '\0')
		return gs_fail(eb, GS_ERR_PARSE,
		               "plugstack argument qos_priority is empty (expected QOS:PRIO[,QOS:PRIO...])");
	while (*p != '\0') {
		size_t len = strcspn(p, ","), nlen;
		const char *colon = memchr(p, ':', len);
		char name[GS_SLURM_QOS_NAME], prio[16];
		struct gs_errbuf inner = {0};
		enum gs_priority pr = GS_PRIORITY_NORMAL;
		gs_err err;
		int i;

		if (colon == NULL || colon == p)
			return gs_fail(eb, GS_ERR_PARSE,
			               "plugstack argument qos_priority: '%.*s' is not QOS:PRIO",
			               (int)len, p);
		nlen = (size_t)(colon - p);
		if (nlen >= sizeof(name))
			return gs_fail(eb, GS_ERR_RANGE,
			               "plugstack argument qos_priority: QOS name '%.*s' is too long",
			               (int)nlen, p);
		if (len - nlen - 1 >= sizeof(prio))
			return gs_fail(eb, GS_ERR_PARSE,
			               "plugstack argument qos_priority: priority of QOS '%.*s' not understood",
			               (int)nlen, p);
		memcpy(name, p, nlen);
		name[nlen] = '\0';
		if (strspn(name, QOS_CHARS) != nlen)
			return gs_fail(eb, GS_ERR_PARSE,
			               "plugstack argument qos_priority: '%s' is not a QOS name",
			               name);
		memcpy(prio, colon + 1, len - nlen - 1);
		prio[len - nlen - 1] = '\0';
		err = gs_parse_priority(prio, &pr, &inner);
		if (err != GS_OK)
			return gs_fail(eb, err,
			               "plugstack argument qos_priority: QOS '%s': %s",
			               name, gs_errbuf_msg(&inner, err));
		for (i = 0; i < c->n_qos; i++)
			if (strcasecmp(c->qos[i].name, name) == 0)
				break;
		if (i == c->n_qos) {
			if (c->n_qos == GS_SLURM_QOS_MAX)
				return gs_fail(eb, GS_ERR_RANGE,
				               "plugstack argument qos_priority: more than %d QOS",
				               GS_SLURM_QOS_MAX);
			c->n_qos++;
		}
		(void)snprintf(c->qos[i].name, sizeof(c->qos[i].name), "%s",
		               name);
		c->qos[i].priority = (int)pr;
		p += len;
		if (*p == ',') {
			p++;
			if (*p == '\0')
				return gs_fail(eb, GS_ERR_PARSE,
				               "plugstack argument qos_priority ends with ','");
		}
	}
	return GS_OK;
}

gs_err gs_slurm_conf_parse(struct gs_slurm_conf *c, int argc, char *const *argv,
                           struct gs_errbuf *eb)
{
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *eq = strchr(a, '=');
		const char *v;
		size_t klen;

		if (eq == NULL || eq == a)
			return gs_fail(
			    eb, GS_ERR_INVALID,
			    "plugstack argument '%s' is not key=value", a);
		klen = (size_t)(eq - a);
		v = eq + 1;
#define KEY_IS(k) (klen == strlen(k) && strncmp(a, k, klen) == 0)
		if (KEY_IS("run_dir")) {
			gs_err err = set_path(c->run_dir, sizeof(c->run_dir),
			                      "run_dir", v, eb);
			if (err != GS_OK)
				return err;
		} else if (KEY_IS("socket")) {
			gs_err err = set_path(c->socket, sizeof(c->socket),
			                      "socket", v, eb);
			if (err != GS_OK)
				return err;
		} else if (KEY_IS("shim")) {
			gs_err err =
			    set_path(c->shim, sizeof(c->shim), "shim", v, eb);
			if (err != GS_OK)
				return err;
		} else if (KEY_IS("gres_conf")) {
			gs_err err =
			    set_path(c->gres_conf, sizeof(c->gres_conf),
			             "gres_conf", v, eb);
			if (err != GS_OK)
				return err;
		} else if (KEY_IS("shards_per_gpu")) {
			char *end;
			long n;

			errno = 0;
			n = strtol(v, &end, 10);
			if (errno != 0 || end == v || *end != '\0' || n < 1 ||
			    n > 1000000)
				return gs_fail(
				    eb, GS_ERR_RANGE,
				    "plugstack argument shards_per_gpu must be 1..1000000, got '%s'",
				    v);
			c->shards_per_gpu = (int)n;
		} else if (KEY_IS("daemon")) {
			if (strcmp(v, "auto") == 0)
				c->daemon = GS_SLURM_DAEMON_AUTO;
			else if (strcmp(v, "off") == 0)
				c->daemon = GS_SLURM_DAEMON_OFF;
			else if (strcmp(v, "required") == 0)
				c->daemon = GS_SLURM_DAEMON_REQUIRED;
			else
				return gs_fail(
				    eb, GS_ERR_PARSE,
				    "plugstack argument daemon must be auto, off or required, got '%s'",
				    v);
		} else if (KEY_IS("compute_mode")) {
			if (strcmp(v, "strict") == 0)
				c->compute_mode = GS_REGION_COMPUTE_STRICT;
			else if (strcmp(v, "share") == 0)
				c->compute_mode = GS_REGION_COMPUTE_SHARE;
			else
				return gs_fail(
				    eb, GS_ERR_PARSE,
				    "plugstack argument compute_mode must be strict or share, got '%s'",
				    v);
		} else if (KEY_IS("qos_priority")) {
			gs_err err = set_qos_table(c, v, eb);
			if (err != GS_OK)
				return err;
		} else {
			return gs_fail(eb, GS_ERR_INVALID,
			               "unknown plugstack argument '%.*s'",
			               (int)klen, a);
		}
#undef KEY_IS
	}
	return GS_OK;
}

void gs_slurm_request_init(struct gs_slurm_request *rq)
{
	rq->mem = 0;
	rq->compute = 0;
	rq->priority = -1;
	rq->swap = -1;
}

gs_err gs_slurm_request_set(struct gs_slurm_request *rq, enum gs_slurm_opt opt,
                            const char *text, struct gs_errbuf *eb)
{
	struct gs_errbuf inner = {0};
	const char *name;
	gs_err err;

	if (text == NULL)
		text = "";
	switch (opt) {
	case GS_SLURM_OPT_MEM: {
		uint64_t bytes = 0;

		name = "--gpu-mem";
		err = gs_parse_memory(text, &bytes, &inner);
		if (err == GS_OK)
			rq->mem = bytes;
		break;
	}
	case GS_SLURM_OPT_COMPUTE: {
		int pct = 0;

		name = "--gpu-compute";
		err = gs_parse_compute(text, &pct, &inner);
		if (err == GS_OK)
			rq->compute = pct;
		break;
	}
	case GS_SLURM_OPT_PRIORITY: {
		enum gs_priority p = GS_PRIORITY_NORMAL;

		name = "--gpu-priority";
		err = gs_parse_priority(text, &p, &inner);
		if (err == GS_OK)
			rq->priority = (int)p;
		break;
	}
	case GS_SLURM_OPT_SWAP:
		name = "--gpuslice-swap";
		err = GS_OK;
		if (strcmp(text, "allow") == 0)
			rq->swap = GS_SWAP_ALLOW;
		else if (strcmp(text, "never") == 0)
			rq->swap = GS_SWAP_NEVER;
		else
			err = gs_fail(&inner, GS_ERR_PARSE,
			              "'%s' not understood (expected allow|never)",
			              text);
		break;
	default:
		return gs_fail(eb, GS_ERR_INVALID, "unknown option %d",
		               (int)opt);
	}
	if (err != GS_OK)
		return gs_fail(eb, err, "%s: %s", name,
		               gs_errbuf_msg(&inner, err));
	return GS_OK;
}

bool gs_slurm_request_is_set(const struct gs_slurm_request *rq)
{
	return rq->mem != 0 || rq->compute != 0 || rq->priority >= 0 ||
	       rq->swap >= 0;
}

gs_err gs_slurm_gres_from_env(struct gs_slurm_gres *g,
                              const char *cuda_visible_devices,
                              const char *shards_on_node, struct gs_errbuf *eb)
{
	memset(g, 0, sizeof(*g));
	g->first_gpu = -1;
	if (cuda_visible_devices != NULL && cuda_visible_devices[0] != '\0') {
		const char *p = cuda_visible_devices;
		char *end;
		long first;

		g->n_gpus = 1;
		for (; *p; p++)
			if (*p == ',')
				g->n_gpus++;
		errno = 0;
		first = strtol(cuda_visible_devices, &end, 10);
		if (errno == 0 && end != cuda_visible_devices &&
		    (*end == ',' || *end == '\0') && first >= 0 &&
		    first < 1000000)
			g->first_gpu = (int)first;
	}
	if (shards_on_node != NULL && shards_on_node[0] != '\0') {
		char *end;
		long n;

		errno = 0;
		n = strtol(shards_on_node, &end, 10);
		if (errno != 0 || end == shards_on_node || *end != '\0' ||
		    n < 0 || n > 1000000)
			return gs_fail(
			    eb, GS_ERR_PARSE,
			    "SLURM_SHARDS_ON_NODE='%s' is not a count",
			    shards_on_node);
		g->shards_held = (int)n;
	}
	return GS_OK;
}

void gs_slurm_qos_ceiling(const struct gs_slurm_conf *c, const char *qos,
                          int *ceiling)
{
	*ceiling = GS_PRIORITY_NORMAL;
	if (qos == NULL || qos[0] == '\0')
		return;
	for (int i = 0; i < c->n_qos; i++)
		if (strcasecmp(c->qos[i].name, qos) == 0) {
			*ceiling = c->qos[i].priority;
			return;
		}
}

/* Both limits functions; `policy` false: no QOS ceiling (high allowed). */
static gs_err limits(const struct gs_slurm_conf *c,
                     const struct gs_slurm_request *rq,
                     const struct gs_slurm_gres *g, bool policy,
                     const char *qos, struct gs_slice_limits *lim,
                     bool *wanted, struct gs_errbuf *eb)
{
	struct gs_slice_limits l;
	int pct = rq->compute, ceiling;

	*wanted = false;
	if (pct == 0 && g->shards_held > 0) {
		long long total;

		if (g->shards_per_gpu <= 0)
			return gs_fail(
			    eb, GS_ERR_INVALID,
			    "the step holds %d shard(s) but the shards per GPU are not known: give the plugin shards_per_gpu=N in plugstack.conf or Name=shard lines with File= in gres.conf",
			    g->shards_held);
		total = (long long)g->shards_per_gpu *
		        (g->n_gpus > 0 ? g->n_gpus : 1);
		pct = (int)((long long)g->shards_held * 100 / total);
		if (pct < 1)
			pct = 1;
		if (pct > 100)
			pct = 100;
	}
	if (pct == 0 && rq->mem == 0 && rq->priority < 0)
		return GS_OK;
	if (policy)
		gs_slurm_qos_ceiling(c, qos, &ceiling);
	else
		ceiling = GS_PRIORITY_HIGH;
	if (rq->priority > ceiling)
		return gs_fail(
		    eb, GS_ERR_PERM,
		    "--gpu-priority=%s is above what QOS '%s' allows (%s; the administrator sets it with qos_priority= in plugstack.conf)",
		    gs_priority_name((enum gs_priority)rq->priority),
		    qos != NULL && qos[0] != '\0' ? qos : "(none)",
		    gs_priority_name((enum gs_priority)ceiling));
	{
		/* The one spec -> limits conversion (core/spec.c). */
		struct gs_slice_spec spec;
		gs_err err;

		gs_spec_init(&spec);
		spec.memory_bytes = rq->mem;
		spec.compute_pct = pct;
		if (rq->priority >= 0)
			spec.priority = (enum gs_priority)rq->priority;
		else if (policy)
			spec.priority = (enum gs_priority)ceiling;
		spec.compute_mode = c->compute_mode == GS_REGION_COMPUTE_SHARE
		                        ? GS_COMPUTE_SHARE
		                        : GS_COMPUTE_STRICT;
		err = gs_spec_limits(&spec, &l, eb);
		if (err != GS_OK)
			return err;
	}
	l.owner_uid = (uint32_t)geteuid();
	l.flags = GS_SLICE_EPHEMERAL;
	*lim = l;
	*wanted = true;
	return GS_OK;
}

gs_err gs_slurm_limits(const struct gs_slurm_conf *c,
                       const struct gs_slurm_request *rq,
                       const struct gs_slurm_gres *g,
                       struct gs_slice_limits *lim, bool *wanted,
                       struct gs_errbuf *eb)
{
	return limits(c, rq, g, false, NULL, lim, wanted, eb);
}

gs_err gs_slurm_limits_qos(const struct gs_slurm_conf *c,
                           const struct gs_slurm_request *rq,
                           const struct gs_slurm_gres *g, const char *qos,
                           struct gs_slice_limits *lim, bool *wanted,
                           struct gs_errbuf *eb)
{
	return limits(c, rq, g, true, qos, lim, wanted, eb);
}

bool gs_slurm_limits_same(const struct gs_slice_limits *a,
                          const struct gs_slice_limits *b)
{
	return a->mem_limit == b->mem_limit &&
	       a->compute_pct == b->compute_pct && a->priority == b->priority &&
	       a->weight == b->weight && a->mode == b->mode;
}

/* Slurm's special step ids (slurm.h; copied so this file needs no Slurm
 * header). */
#define STEP_INTERACTIVE 0xfffffffau
#define STEP_BATCH       0xfffffffbu
#define STEP_EXTERN      0xfffffffcu

const char *gs_slurm_step_name(uint32_t step, char *buf, size_t len)
{
	switch (step) {
	case STEP_BATCH:
		(void)snprintf(buf, len, "batch");
		break;
	case STEP_EXTERN:
		(void)snprintf(buf, len, "extern");
		break;
	case STEP_INTERACTIVE:
		(void)snprintf(buf, len, "interactive");
		break;
	default:
		(void)snprintf(buf, len, "%u", step);
		break;
	}
	return buf;
}

int gs_slurm_slice_name(uint32_t job, const char *step, char *buf, size_t len)
{
	if (step == NULL)
		return snprintf(buf, len, "slurm-%u", job);
	return snprintf(buf, len, "slurm-%u.%s", job, step);
}

bool gs_slurm_slice_is_of_job(const char *name, uint32_t job)
{
	char prefix[32];
	int n = snprintf(prefix, sizeof(prefix), "slurm-%u", job);

	if (n <= 0 || strncmp(name, prefix, (size_t)n) != 0)
		return false;
	return name[n] == '\0' || (name[n] == '.' && name[n + 1] != '\0');
}

bool gs_slurm_team_is_valid(const char *account)
{
	size_t n;

	if (account == NULL || account[0] == '\0')
		return false;
	for (n = 0; account[n]; n++) {
		char ch = account[n];
		bool alnum = (ch >= 'a' && ch <= 'z') ||
		             (ch >= 'A' && ch <= 'Z') ||
		             (ch >= '0' && ch <= '9');

		if (n >= 63)
			return false;
		if (!alnum && (n == 0 || (ch != '.' && ch != '_' && ch != '-')))
			return false;
	}
	return true;
}
