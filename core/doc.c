/*
 * doc.c - the document tree (see doc.h).
 *
 * Every node and every scalar's text is one malloc, remembered in the
 * doc's `owned` array so that gs_doc_destroy() can free them all; kid
 * arrays grow by doubling and are freed with their node. Counting nodes
 * and bytes against the caps happens in one place, take().
 */
#include "gs/doc.h"

#include <stdlib.h>
#include <string.h>

struct gs_doc {
	char *name;
	void **owned; /* nodes and strings to free */
	size_t n_owned, cap_owned;
	size_t n_nodes, n_bytes;
	gs_err last;
	int n_roots;
	struct gs_doc_node *roots[GS_DOC_MAX_DOCS];
};

struct gs_doc *gs_doc_create(const char *name)
{
	struct gs_doc *doc = calloc(1, sizeof(*doc));
	size_t len = name ? strlen(name) : 0;

	if (doc == NULL)
		return NULL;
	doc->name = malloc(len + 1);
	if (doc->name == NULL) {
		free(doc);
		return NULL;
	}
	if (len)
		memcpy(doc->name, name, len);
	doc->name[len] = '\0';
	return doc;
}

void gs_doc_destroy(struct gs_doc *doc)
{
	if (doc == NULL)
		return;
	for (size_t i = 0; i < doc->n_owned; i++)
		free(doc->owned[i]);
	free(doc->owned);
	free(doc->name);
	free(doc);
}

const char *gs_doc_name(const struct gs_doc *doc)
{
	return doc->name;
}

gs_err gs_doc_error(const struct gs_doc *doc)
{
	return doc->last;
}

/* Remembers p for destroy; frees it and returns false when that fails. */
static bool own(struct gs_doc *doc, void *p)
{
	if (doc->n_owned == doc->cap_owned) {
		size_t cap = doc->cap_owned ? 2 * doc->cap_owned : 64;
		void **o = realloc(doc->owned, cap * sizeof(*o));

		if (o == NULL) {
			free(p);
			doc->last = GS_ERR_NOMEM;
			return false;
		}
		doc->owned = o;
		doc->cap_owned = cap;
	}
	doc->owned[doc->n_owned++] = p;
	return true;
}

static struct gs_doc_node *take(struct gs_doc *doc, enum gs_doc_kind kind,
                                int line, int col)
{
	struct gs_doc_node *n;

	if (doc->n_nodes >= GS_DOC_MAX_NODES) {
		doc->last = GS_ERR_RANGE;
		return NULL;
	}
	n = calloc(1, sizeof(*n));
	if (n == NULL) {
		doc->last = GS_ERR_NOMEM;
		return NULL;
	}
	if (!own(doc, n))
		return NULL;
	doc->n_nodes++;
	n->kind = kind;
	n->line = line;
	n->col = col;
	return n;
}

struct gs_doc_node *gs_doc_scalar(struct gs_doc *doc, const char *text,
                                  size_t len, bool quoted, int line, int col)
{
	struct gs_doc_node *n;
	char *s;

	if (len > GS_DOC_MAX_BYTES - doc->n_bytes) {
		doc->last = GS_ERR_RANGE;
		return NULL;
	}
	n = take(doc, GS_DOC_SCALAR, line, col);
	if (n == NULL)
		return NULL;
	s = malloc(len + 1);
	if (s == NULL) {
		doc->last = GS_ERR_NOMEM;
		return NULL;
	}
	if (!own(doc, s))
		return NULL;
	if (len)
		memcpy(s, text, len);
	s[len] = '\0';
	doc->n_bytes += len;
	n->value = s;
	n->quoted = quoted;
	return n;
}

struct gs_doc_node *gs_doc_map(struct gs_doc *doc, int line, int col)
{
	return take(doc, GS_DOC_MAP, line, col);
}

struct gs_doc_node *gs_doc_seq(struct gs_doc *doc, int line, int col)
{
	return take(doc, GS_DOC_SEQ, line, col);
}

/* Room for `more` kids; the kid array is owned like everything else. */
static gs_err room(struct gs_doc *doc, struct gs_doc_node *n, int more)
{
	struct gs_doc_node **k;
	int cap;

	if (n->n * (n->kind == GS_DOC_MAP ? 2 : 1) + more <= n->cap)
		return GS_OK;
	cap = n->cap ? 2 * n->cap : 8;
	k = malloc((size_t)cap * sizeof(*k));
	if (k == NULL)
		return GS_ERR_NOMEM;
	if (!own(doc, k))
		return GS_ERR_NOMEM;
	if (n->cap)
		memcpy(k, n->kids, (size_t)n->cap * sizeof(*k));
	/* the old array stays owned until destroy: no double bookkeeping */
	n->kids = k;
	n->cap = cap;
	return GS_OK;
}

gs_err gs_doc_append(struct gs_doc *doc, struct gs_doc_node *seq,
                     struct gs_doc_node *item)
{
	gs_err err;

	if (seq->kind != GS_DOC_SEQ || item == NULL)
		return GS_ERR_INVALID;
	err = room(doc, seq, 1);
	if (err != GS_OK)
		return err;
	seq->kids[seq->n++] = item;
	return GS_OK;
}

gs_err gs_doc_put(struct gs_doc *doc, struct gs_doc_node *map,
                  struct gs_doc_node *key, struct gs_doc_node *value)
{
	gs_err err;

	if (map->kind != GS_DOC_MAP || key == NULL || value == NULL ||
	    key->kind != GS_DOC_SCALAR)
		return GS_ERR_INVALID;
	if (gs_doc_get(map, key->value) != NULL)
		return GS_ERR_EXISTS;
	err = room(doc, map, 2);
	if (err != GS_OK)
		return err;
	map->kids[2 * map->n] = key;
	map->kids[2 * map->n + 1] = value;
	map->n++;
	return GS_OK;
}

gs_err gs_doc_add_root(struct gs_doc *doc, struct gs_doc_node *root)
{
	if (root == NULL)
		return GS_ERR_INVALID;
	if (doc->n_roots >= GS_DOC_MAX_DOCS)
		return GS_ERR_RANGE;
	doc->roots[doc->n_roots++] = root;
	return GS_OK;
}

int gs_doc_count(const struct gs_doc *doc)
{
	return doc->n_roots;
}

const struct gs_doc_node *gs_doc_root(const struct gs_doc *doc, int i)
{
	if (i < 0 || i >= doc->n_roots)
		return NULL;
	return doc->roots[i];
}

const struct gs_doc_node *gs_doc_get(const struct gs_doc_node *map,
                                     const char *key)
{
	if (map == NULL || map->kind != GS_DOC_MAP)
		return NULL;
	for (int i = 0; i < map->n; i++)
		if (strcmp(map->kids[2 * i]->value, key) == 0)
			return map->kids[2 * i + 1];
	return NULL;
}

const struct gs_doc_node *gs_doc_key(const struct gs_doc_node *map, int i)
{
	return map->kids[2 * i];
}

const struct gs_doc_node *gs_doc_value(const struct gs_doc_node *map, int i)
{
	return map->kids[2 * i + 1];
}

const char *gs_doc_kind_name(enum gs_doc_kind kind)
{
	switch (kind) {
	case GS_DOC_SCALAR:
		return "scalar";
	case GS_DOC_MAP:
		return "mapping";
	case GS_DOC_SEQ:
		return "sequence";
	}
	return "?";
}
