/*
 * doc.h - a parsed configuration document: scalars, maps and sequences
 * with the line and column each came from.
 *
 * The importers (import.h) translate documents without knowing the file
 * format; a reader builds the tree (the one YAML reader, gs/yamldoc.h,
 * does it with libyaml; tests build trees by hand). One struct gs_doc
 * holds every document of a file (YAML's `---` separates them) and owns
 * every node and string in it: gs_doc_destroy() frees them all; nodes are
 * lent. A node may be reachable twice (a YAML alias read with
 * GS_YAMLDOC_ALIASES): walkers bound their loops.
 *
 * Caps keep a hostile file from using unbounded memory: at most
 * GS_DOC_MAX_NODES nodes and GS_DOC_MAX_BYTES of scalar text per doc
 * (GS_ERR_RANGE past them). Maps keep their keys in file order; a key
 * that appears twice is the reader's error to report (gs_doc_put refuses
 * it with GS_ERR_EXISTS).
 */
#ifndef GS_DOC_H
#define GS_DOC_H

#include <stdbool.h>
#include <stddef.h>

#include "gs/err.h"

#define GS_DOC_MAX_NODES 100000
#define GS_DOC_MAX_BYTES (4 * 1024 * 1024)
#define GS_DOC_MAX_DOCS  64

enum gs_doc_kind {
	GS_DOC_SCALAR = 0,
	GS_DOC_MAP,
	GS_DOC_SEQ,
};

struct gs_doc_node {
	enum gs_doc_kind kind;
	int line, col;             /* 1-based; 0 when unknown */
	const char *value;         /* SCALAR: the text, NUL-terminated */
	bool quoted;               /* SCALAR: written in quotes */
	int n;                     /* MAP: pairs; SEQ: items */
	struct gs_doc_node **kids; /* SEQ: items; MAP: key 2i, value 2i+1 */
	int cap;
};

struct gs_doc;

/* An empty doc named `name` (a file name for messages; copied). */
struct gs_doc *gs_doc_create(const char *name);
void gs_doc_destroy(struct gs_doc *doc);
const char *gs_doc_name(const struct gs_doc *doc);

/* New nodes, owned by doc. NULL when out of memory or over a cap (then
 * gs_doc_error() says which). `text` is copied (len bytes, may hold no
 * NUL). */
struct gs_doc_node *gs_doc_scalar(struct gs_doc *doc, const char *text,
                                  size_t len, bool quoted, int line, int col);
struct gs_doc_node *gs_doc_map(struct gs_doc *doc, int line, int col);
struct gs_doc_node *gs_doc_seq(struct gs_doc *doc, int line, int col);
/* Why the last constructor returned NULL: GS_ERR_NOMEM or GS_ERR_RANGE. */
gs_err gs_doc_error(const struct gs_doc *doc);

/* Appends to a sequence; adds a pair to a map (the key must be a scalar
 * not already there: GS_ERR_EXISTS); adds a top-level document. */
gs_err gs_doc_append(struct gs_doc *doc, struct gs_doc_node *seq,
                     struct gs_doc_node *item);
gs_err gs_doc_put(struct gs_doc *doc, struct gs_doc_node *map,
                  struct gs_doc_node *key, struct gs_doc_node *value);
gs_err gs_doc_add_root(struct gs_doc *doc, struct gs_doc_node *root);

int gs_doc_count(const struct gs_doc *doc);
const struct gs_doc_node *gs_doc_root(const struct gs_doc *doc, int i);

/* The value of `key` in a map, or NULL (also when `map` is not a map). */
const struct gs_doc_node *gs_doc_get(const struct gs_doc_node *map,
                                     const char *key);
/* Key i of a map (a scalar) and its value. */
const struct gs_doc_node *gs_doc_key(const struct gs_doc_node *map, int i);
const struct gs_doc_node *gs_doc_value(const struct gs_doc_node *map, int i);
/* "scalar", "mapping", "sequence". */
const char *gs_doc_kind_name(enum gs_doc_kind kind);

#endif
