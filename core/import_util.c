/*
 * import_util.c - messages and typed reads shared by the importers (see
 * import_int.h).
 */
#include "import_int.h"

#include "gs/import.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

gs_err gs__imp_fail(const struct gs__ictx *c, const struct gs_doc_node *at,
                    gs_err code, const char *fmt, ...)
{
	char msg[GS_ERRBUF_SIZE];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (at != NULL && at->line > 0)
		return gs_fail(c->eb, code, "%s:%d: %s", gs_doc_name(c->doc),
		               at->line, msg);
	return gs_fail(c->eb, code, "%s: %s", gs_doc_name(c->doc), msg);
}

void gs__imp_block(const struct gs__ictx *c, struct gs_import_block *b,
                   const struct gs_doc_node *at, const char *fmt, ...)
{
	char msg[384];
	va_list ap;

	if (b->line != 0)
		return;
	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	b->line = at != NULL && at->line > 0 ? at->line : -1;
	if (b->line > 0)
		snprintf(b->msg, sizeof(b->msg), "%.100s:%d: %s",
		         gs_doc_name(c->doc), b->line, msg);
	else
		snprintf(b->msg, sizeof(b->msg), "%.100s: %s",
		         gs_doc_name(c->doc), msg);
}

void gs__imp_path(char *out, const char *path, const char *key, int index)
{
	if (key != NULL)
		snprintf(out, GS__PATH_MAX, "%s%s%s", path, path[0] ? "." : "",
		         key);
	else
		snprintf(out, GS__PATH_MAX, "%s[%d]", path, index);
}

bool gs__imp_is_null(const struct gs_doc_node *n)
{
	static const char *const nulls[] = {"", "~", "null", "Null", "NULL"};

	if (n == NULL)
		return true;
	if (n->kind != GS_DOC_SCALAR || n->quoted)
		return false;
	for (size_t i = 0; i < sizeof(nulls) / sizeof(nulls[0]); i++)
		if (strcmp(n->value, nulls[i]) == 0)
			return true;
	return false;
}

gs_err gs__imp_expect(const struct gs__ictx *c, const struct gs_doc_node *n,
                      enum gs_doc_kind kind, const char *path)
{
	if (n->kind == kind)
		return GS_OK;
	return gs__imp_fail(c, n, GS_ERR_PARSE, "%s must be a %s, not a %s",
	                    path[0] ? path : "the document",
	                    gs_doc_kind_name(kind), gs_doc_kind_name(n->kind));
}

/* Edit distance of two short keys (insert, delete, substitute). */
static int distance(const char *a, const char *b)
{
	int row[64], la = (int)strlen(a), lb = (int)strlen(b);

	if (la >= 63 || lb >= 63)
		return 99;
	for (int j = 0; j <= lb; j++)
		row[j] = j;
	for (int i = 1; i <= la; i++) {
		int diag = row[0];

		row[0] = i;
		for (int j = 1; j <= lb; j++) {
			int up = row[j], best = diag + (a[i - 1] != b[j - 1]);

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = up;
			row[j] = best;
		}
	}
	return row[lb];
}

gs_err gs__imp_keys(const struct gs__ictx *c, const struct gs_doc_node *map,
                    const char *path, const char *const *allowed)
{
	for (int i = 0; i < map->n; i++) {
		const struct gs_doc_node *k = gs_doc_key(map, i);
		const char *close = NULL;
		char list[200];
		size_t len = 0;
		bool ok = false;
		int best = 3;

		for (int a = 0; allowed[a] != NULL && !ok; a++)
			ok = strcmp(k->value, allowed[a]) == 0;
		if (ok)
			continue;
		for (int a = 0; allowed[a] != NULL; a++) {
			int d = distance(k->value, allowed[a]);

			if (d < best) {
				best = d;
				close = allowed[a];
			}
		}
		if (close != NULL)
			return gs__imp_fail(
			    c, k, GS_ERR_PARSE,
			    "unknown field '%.40s' in %s (did you mean %s?)",
			    k->value, path[0] ? path : "the document", close);
		list[0] = '\0';
		for (int a = 0; allowed[a] != NULL; a++) {
			int w = snprintf(list + len, sizeof(list) - len, "%s%s",
			                 a ? ", " : "", allowed[a]);
			if (w < 0 || (size_t)w >= sizeof(list) - len) {
				size_t at = len < sizeof(list) - 6
				                ? len
				                : sizeof(list) - 6;

				memcpy(list + at, ", ...", 6);
				break;
			}
			len += (size_t)w;
		}
		return gs__imp_fail(
		    c, k, GS_ERR_PARSE,
		    "unknown field '%.40s' in %s (expected: %s)", k->value,
		    path[0] ? path : "the document", list);
	}
	return GS_OK;
}

gs_err gs__imp_bool(const struct gs__ictx *c, const struct gs_doc_node *n,
                    const char *path, bool *out)
{
	static const char *const t[] = {"true", "True", "TRUE"};
	static const char *const f[] = {"false", "False", "FALSE"};

	if (n->kind == GS_DOC_SCALAR && !n->quoted) {
		for (int i = 0; i < 3; i++) {
			if (strcmp(n->value, t[i]) == 0) {
				*out = true;
				return GS_OK;
			}
			if (strcmp(n->value, f[i]) == 0) {
				*out = false;
				return GS_OK;
			}
		}
	}
	if (n->kind != GS_DOC_SCALAR)
		return gs__imp_expect(c, n, GS_DOC_SCALAR, path);
	return gs__imp_fail(c, n, GS_ERR_PARSE,
	                    "%s must be true or false, got %s'%.40s'%s", path,
	                    n->quoted ? "the string " : "", n->value,
	                    n->quoted ? " (remove the quotes)" : "");
}

gs_err gs__imp_int(const struct gs__ictx *c, const struct gs_doc_node *n,
                   const char *path, long min, long max, long *out)
{
	char *end;
	long v;
	int saved;

	if (n->kind != GS_DOC_SCALAR)
		return gs__imp_expect(c, n, GS_DOC_SCALAR, path);
	errno = 0;
	v = strtol(n->value, &end, 10);
	saved = errno;
	if (n->quoted || n->value[0] == '\0' || *end != '\0' ||
	    (n->value[0] == '+' && n->value[1] == '\0'))
		return gs__imp_fail(c, n, GS_ERR_PARSE,
		                    "%s must be a whole number, got %s'%.40s'",
		                    path, n->quoted ? "the string " : "",
		                    n->value);
	if (saved == ERANGE || v < min || v > max) {
		if (max == 2147483647L)
			return gs__imp_fail(
			    c, n, GS_ERR_RANGE,
			    "%s must be at least %ld, got %.40s", path, min,
			    n->value);
		return gs__imp_fail(c, n, GS_ERR_RANGE,
		                    "%s must be %ld..%ld, got %.40s", path, min,
		                    max, n->value);
	}
	*out = v;
	return GS_OK;
}

gs_err gs__imp_str(const struct gs__ictx *c, const struct gs_doc_node *n,
                   const char *path, const char **out)
{
	if (n->kind != GS_DOC_SCALAR)
		return gs__imp_expect(c, n, GS_DOC_SCALAR, path);
	*out = gs__imp_is_null(n) ? "" : n->value;
	return GS_OK;
}

gs_err gs__imp_choice(const struct gs__ictx *c, const struct gs_doc_node *n,
                      const char *path, const char *const *choices, int *out)
{
	char list[160];
	size_t len = 0;

	if (n->kind != GS_DOC_SCALAR)
		return gs__imp_expect(c, n, GS_DOC_SCALAR, path);
	for (int i = 0; choices[i] != NULL; i++)
		if (strcmp(n->value, choices[i]) == 0) {
			*out = i;
			return GS_OK;
		}
	list[0] = '\0';
	for (int i = 0; choices[i] != NULL && len < sizeof(list); i++) {
		int w = snprintf(list + len, sizeof(list) - len, "%s%s",
		                 i ? "|" : "", choices[i]);
		if (w > 0)
			len += (size_t)w;
	}
	return gs__imp_fail(c, n, GS_ERR_INVALID, "%s must be %s, got '%.40s'",
	                    path, list, n->value);
}

void gs__imp_note(struct gs_import_notes *notes, const char *fmt, ...)
{
	va_list ap;

	if (notes->n >= GS_IMPORT_MAX_NOTES)
		return;
	va_start(ap, fmt);
	(void)vsnprintf(notes->text[notes->n], GS_IMPORT_NOTE_MAX, fmt, ap);
	va_end(ap);
	notes->n++;
}
