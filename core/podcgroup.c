/*
 * podcgroup.c - a process's pod UID and container ID from its
 * /proc/PID/cgroup text (see gs/podcgroup.h for the forms), and the
 * claims' consumers files that name the pods the process may belong to.
 * Pure.
 */
#include "gs/podcgroup.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>


static bool is_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
		      (c >= 'A' && c <= 'F')))
			return false;
	}
	return true;
}

static char lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/*
 * Checks and normalises a pod UID of `n` bytes: 8-4-4-4-12 hex digits
 * separated by '-' or systemd's '_', or 32 hex digits (a static pod).
 */
static bool uid_take(const char *s, size_t n, char out[GS_POD_UID_MAX])
{
	static const size_t dash[] = {8, 13, 18, 23};

	if (n == 32 && is_hex(s, n)) {
		for (size_t i = 0; i < n; i++)
			out[i] = lower(s[i]);
		out[n] = '\0';
		return true;
	}
	if (n != 36)
		return false;
	for (size_t i = 0, d = 0; i < n; i++) {
		if (d < 4 && i == dash[d]) {
			if (s[i] != '-' && s[i] != '_')
				return false;
			out[i] = '-';
			d++;
			continue;
		}
		if (!is_hex(s + i, 1))
			return false;
		out[i] = lower(s[i]);
	}
	out[n] = '\0';
	return true;
}

static bool has_prefix(const char *s, size_t n, const char *p)
{
	size_t pn = strlen(p);

	return n >= pn && memcmp(s, p, pn) == 0;
}

static bool has_suffix(const char *s, size_t n, const char *p)
{
	size_t pn = strlen(p);

	return n >= pn && memcmp(s + n - pn, p, pn) == 0;
}

/* Whether `s` (n bytes) contains `p`. */
static const char *find_in(const char *s, size_t n, const char *p)
{
	size_t pn = strlen(p);

	for (size_t i = 0; i + pn <= n; i++)
		if (memcmp(s + i, p, pn) == 0)
			return s + i;
	return NULL;
}

/*
 * The pod component, systemd form: "[prefix-]kubepods[-QOS]-pod<UID>.slice".
 * true with *out's pod_uid and qos set.
 */
static bool pod_systemd(const char *c, size_t n, struct gs_podcgroup *out)
{
	const char *pod = NULL, *k;

	if (!has_suffix(c, n, ".slice") || find_in(c, n, "kubepods") == NULL)
		return false;
	for (k = c; (k = find_in(k, n - (size_t)(k - c), "-pod")) != NULL;
	     k++)
		pod = k;
	if (pod == NULL)
		return false;
	if (!uid_take(pod + 4, (size_t)(c + n - 6 - (pod + 4)), out->pod_uid))
		return false;
	if (find_in(c, (size_t)(pod - c), "-burstable") != NULL)
		out->qos = GS_POD_QOS_BURSTABLE;
	else if (find_in(c, (size_t)(pod - c), "-besteffort") != NULL)
		out->qos = GS_POD_QOS_BESTEFFORT;
	else
		out->qos = GS_POD_QOS_GUARANTEED;
	return true;
}

/* The pod component, cgroupfs form: "pod<UID>" under kubepods[/QOS]. */
static bool pod_cgroupfs(const char *c, size_t n, const char *parent,
                         size_t pn, struct gs_podcgroup *out)
{
	if (!has_prefix(c, n, "pod") || !uid_take(c + 3, n - 3, out->pod_uid))
		return false;
	if (pn == 9 && memcmp(parent, "burstable", 9) == 0)
		out->qos = GS_POD_QOS_BURSTABLE;
	else if (pn == 10 && memcmp(parent, "besteffort", 10) == 0)
		out->qos = GS_POD_QOS_BESTEFFORT;
	else
		out->qos = GS_POD_QOS_GUARANTEED;
	return true;
}

/* The container component under the pod's. GS_ERR_PARSE when unknown. */
static gs_err container_take(const char *c, size_t n,
                             struct gs_podcgroup *out, struct gs_errbuf *eb)
{
	static const struct {
		const char *prefix, *suffix;
		enum gs_pod_runtime rt;
	} forms[] = {
	    {"cri-containerd-", ".scope", GS_POD_RUNTIME_CONTAINERD},
	    {"crio-", ".scope", GS_POD_RUNTIME_CRIO},
	    {"docker-", ".scope", GS_POD_RUNTIME_DOCKER},
	    {"crio-", "", GS_POD_RUNTIME_CRIO},
	    {"", "", GS_POD_RUNTIME_UNKNOWN},
	};

	/* CRI-O's monitor: the pod's, no container's. */
	if (has_prefix(c, n, "crio-conmon-"))
		return GS_OK;
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		size_t pre = strlen(forms[i].prefix);
		size_t suf = strlen(forms[i].suffix);

		if (!has_prefix(c, n, forms[i].prefix) ||
		    !has_suffix(c, n, forms[i].suffix) || n != pre + 64 + suf ||
		    !is_hex(c + pre, 64))
			continue;
		for (size_t k = 0; k < 64; k++)
			out->container_id[k] = lower(c[pre + k]);
		out->container_id[64] = '\0';
		out->runtime = forms[i].rt;
		return GS_OK;
	}
	return gs_fail(eb, GS_ERR_PARSE,
	               "cgroup of pod %s: container part '%.*s' is none of cri-containerd-<id>.scope, crio-<id>[.scope], docker-<id>.scope or <id> (64 hex digits)",
	               out->pod_uid, (int)(n > 120 ? 120 : n), c);
}

gs_err gs_podcgroup_parse_path(const char *path, struct gs_podcgroup *out,
                               struct gs_errbuf *eb)
{
	const char *p = path, *prev = "";
	size_t prev_n = 0;
	bool under_kubepods = false;

	memset(out, 0, sizeof(*out));
	out->cgroup_version = 2;
	while (*p != '\0') {
		const char *c;
		size_t n;

		while (*p == '/')
			p++;
		c = p;
		n = strcspn(c, "/");
		p = c + n;
		if (n == 0)
			break;
		if (find_in(c, n, "kubepods") != NULL)
			under_kubepods = true;
		if (under_kubepods && (pod_systemd(c, n, out) ||
		                       pod_cgroupfs(c, n, prev, prev_n, out))) {
			while (*p == '/')
				p++;
			if (*p == '\0')
				return GS_OK; /* the pod's own cgroup */
			return container_take(p, strcspn(p, "/"), out, eb);
		}
		if (under_kubepods && has_prefix(c, n, "pod") &&
		    !has_suffix(c, n, ".slice"))
			return gs_fail(eb, GS_ERR_PARSE,
			               "cgroup '%.200s': '%.*s' is not pod<UID>",
			               path, (int)(n > 80 ? 80 : n), c);
		prev = c;
		prev_n = n;
	}
	memset(out, 0, sizeof(*out));
	return GS_ERR_NOT_FOUND;
}

gs_err gs_podcgroup_parse(const char *text, size_t len,
                          struct gs_podcgroup *out, struct gs_errbuf *eb)
{
	struct gs_podcgroup v1 = {0}, got;
	bool have_v1 = false;
	size_t off = 0;
	int line_no = 0;

	memset(out, 0, sizeof(*out));
	while (off < len) {
		const char *line = text + off, *nl, *c1, *c2;
		size_t n = len - off;
		char path[4096];
		bool is_v2;
		gs_err err;

		nl = memchr(line, '\n', n);
		if (nl != NULL)
			n = (size_t)(nl - line);
		off += n + 1;
		line_no++;
		if (n == 0)
			continue;
		c1 = memchr(line, ':', n);
		c2 = c1 ? memchr(c1 + 1, ':', n - (size_t)(c1 + 1 - line))
		        : NULL;
		if (c2 == NULL)
			return gs_fail(eb, GS_ERR_PARSE,
			               "cgroup line %d is not ID:CONTROLLERS:PATH",
			               line_no);
		if ((size_t)(line + n - (c2 + 1)) >= sizeof(path))
			return gs_fail(eb, GS_ERR_PARSE,
			               "cgroup line %d: path too long", line_no);
		memcpy(path, c2 + 1, (size_t)(line + n - (c2 + 1)));
		path[line + n - (c2 + 1)] = '\0';
		is_v2 = c1 - line == 1 && line[0] == '0' && c2 == c1 + 1;
		err = gs_podcgroup_parse_path(path, &got, eb);
		if (err == GS_ERR_NOT_FOUND)
			continue;
		if (err != GS_OK)
			return err;
		if (is_v2) {
			*out = got;
			return GS_OK;
		}
		got.cgroup_version = 1;
		if (!have_v1) {
			v1 = got;
			have_v1 = true;
		} else if (strcmp(v1.pod_uid, got.pod_uid) != 0 ||
		           strcmp(v1.container_id, got.container_id) != 0) {
			return gs_fail(eb, GS_ERR_PARSE,
			               "cgroup v1 hierarchies disagree: line %d names pod %s container '%s', an earlier one pod %s container '%s'",
			               line_no, got.pod_uid, got.container_id,
			               v1.pod_uid, v1.container_id);
		}
	}
	if (!have_v1)
		return GS_ERR_NOT_FOUND;
	*out = v1;
	return GS_OK;
}

bool gs_podset_uid_is_valid(const char *uid)
{
	static const char ok[] =
	    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_-";
	size_t n = strlen(uid);

	return n > 0 && n < 64 && strspn(uid, ok) == n;
}

/* The next line of `text` from *off (without its '\n'). False at the end. */
static bool next_line(const char *text, size_t len, size_t *off,
                      const char **line, size_t *n)
{
	const char *nl;

	if (*off >= len)
		return false;
	*line = text + *off;
	nl = memchr(*line, '\n', len - *off);
	*n = nl ? (size_t)(nl - *line) : len - *off;
	*off += *n + 1;
	return true;
}

gs_err gs_podset_check(const char *text, size_t len, int *n,
                       struct gs_errbuf *eb)
{
	size_t off = 0, ln;
	const char *line;
	int line_no = 1;

	*n = 0;
	if (!next_line(text, len, &off, &line, &ln) ||
	    ln != strlen(GS_K8S_PODS_MAGIC) ||
	    memcmp(line, GS_K8S_PODS_MAGIC, ln) != 0)
		return gs_fail(eb, GS_ERR_PARSE,
		               "consumers file: line 1 is not '%s'",
		               GS_K8S_PODS_MAGIC);
	while (next_line(text, len, &off, &line, &ln)) {
		char uid[64];

		line_no++;
		if (ln == 0 || ln >= sizeof(uid))
			return gs_fail(eb, GS_ERR_PARSE,
			               "consumers file: line %d is not a pod UID",
			               line_no);
		memcpy(uid, line, ln);
		uid[ln] = '\0';
		if (!gs_podset_uid_is_valid(uid))
			return gs_fail(eb, GS_ERR_PARSE,
			               "consumers file: line %d is not a pod UID",
			               line_no);
		if (++*n > GS_K8S_PODS_MAX)
			return gs_fail(eb, GS_ERR_PARSE,
			               "consumers file: more than %d pod UIDs",
			               GS_K8S_PODS_MAX);
	}
	return GS_OK;
}

bool gs_podset_has(const char *text, size_t len, const char *uid)
{
	size_t off = 0, ln, n = strlen(uid);
	const char *line;

	if (!next_line(text, len, &off, &line, &ln)) /* the magic */
		return false;
	while (next_line(text, len, &off, &line, &ln))
		if (ln == n && strncasecmp(line, uid, n) == 0)
			return true;
	return false;
}

const char *gs_pod_runtime_name(enum gs_pod_runtime rt)
{
	switch (rt) {
	case GS_POD_RUNTIME_CONTAINERD:
		return "containerd";
	case GS_POD_RUNTIME_CRIO:
		return "cri-o";
	case GS_POD_RUNTIME_DOCKER:
		return "docker";
	default:
		return "unknown";
	}
}

const char *gs_pod_qos_name(enum gs_pod_qos qos)
{
	switch (qos) {
	case GS_POD_QOS_BURSTABLE:
		return "Burstable";
	case GS_POD_QOS_BESTEFFORT:
		return "BestEffort";
	default:
		return "Guaranteed";
	}
}
