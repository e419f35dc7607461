/*
 * xidlog.c - parsing the driver's Xid kernel-log lines (see
 * include/gs/xidlog.h).
 */
#include "gs/xidlog.h"

#include <stdlib.h>
#include <string.h>

/* Skips `c` and blanks; NULL when `c` is not next. */
static const char *expect(const char *p, char c)
{
	while (*p == ' ')
		p++;
	return *p == c ? p + 1 : NULL;
}

static const char *hex(const char *p, uint32_t *out)
{
	char *end;
	unsigned long v = strtoul(p, &end, 16);

	if (end == p || v > 0xFFFFFFFFul)
		return NULL;
	*out = (uint32_t)v;
	return end;
}

bool gs_xid_line_parse(const char *line, struct gs_xid_line *out)
{
	const char *p = strstr(line, "NVRM: Xid (PCI:");
	const char *q;
	char *end;
	unsigned long long xid;

	if (p == NULL)
		return false;
	memset(out, 0, sizeof(*out));
	out->pid = -1;
	p += strlen("NVRM: Xid (PCI:");
	/* DDDD:BB:DD, sometimes DDDD:BB:DD.F */
	if ((p = hex(p, &out->pci_domain)) == NULL || (p = expect(p, ':')) == NULL ||
	    (p = hex(p, &out->pci_bus)) == NULL || (p = expect(p, ':')) == NULL ||
	    (p = hex(p, &out->pci_device)) == NULL)
		return false;
	if (*p == '.')
		while (*p && *p != ')')
			p++;
	if ((p = expect(p, ')')) == NULL || (p = expect(p, ':')) == NULL)
		return false;
	while (*p == ' ')
		p++;
	xid = strtoull(p, &end, 10);
	if (end == p)
		return false;
	out->xid = xid;
	p = end;
	/* Optional ", pid=N" (or 'N', or <unknown>), then ", name=S". */
	if ((q = strstr(p, "pid=")) != NULL && q - p < 8) {
		q += 4;
		if (*q == '\'')
			q++;
		if (*q >= '0' && *q <= '9') {
			long v = strtol(q, &end, 10);

			if (v >= 0 && v <= 0x7FFFFFFF)
				out->pid = (int32_t)v;
			q = end;
		}
		p = q;
	}
	if ((q = strstr(p, "name=")) != NULL && q - p < 24) {
		size_t n = 0;

		q += 5;
		if (*q == '\'')
			q++;
		while (q[n] && q[n] != ',' && q[n] != '\'' && q[n] != '\n' &&
		       n + 1 < sizeof(out->name))
			n++;
		memcpy(out->name, q, n);
		out->name[n] = '\0';
		if (strcmp(out->name, "<unknown>") == 0)
			out->name[0] = '\0';
	}
	return true;
}
