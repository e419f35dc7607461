/*
 * import_int.h - what the importers (import_*.c) share: messages that
 * carry FILE:LINE and a field path, and typed reads of document nodes
 * that fail with a precise message.
 *
 * A path is built on the stack as the importer walks down
 * ("sharing.mps.resources[0]"), so every message can name the field the
 * way a user would look for it.
 */
#ifndef GS_IMPORT_INT_H
#define GS_IMPORT_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "gs/doc.h"
#include "gs/err.h"

#define GS__PATH_MAX 192

struct gs__ictx {
	const struct gs_doc *doc;
	struct gs_errbuf *eb;
};

/* "FILE:LINE: <message>" (LINE from `at`; left out when unknown). */
gs_err gs__imp_fail(const struct gs__ictx *c, const struct gs_doc_node *at,
                    gs_err code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* path + "." + key, or path + "[i]" (key NULL), into out. */
void gs__imp_path(char *out, const char *path, const char *key, int index);

/* Plain "", "~", "null", "Null", "NULL": YAML's null. */
bool gs__imp_is_null(const struct gs_doc_node *n);

/* GS_ERR_PARSE unless n has the kind: "PATH must be a mapping". */
gs_err gs__imp_expect(const struct gs__ictx *c, const struct gs_doc_node *n,
                      enum gs_doc_kind kind, const char *path);

/* GS_ERR_PARSE at the first key of `map` not in allowed[] (NULL-ended). */
gs_err gs__imp_keys(const struct gs__ictx *c, const struct gs_doc_node *map,
                    const char *path, const char *const *allowed);

/* Typed scalars: true/false; an integer in [min, max]; any string (a
 * plain null reads as ""); one of choices[] (NULL-ended), OUT: index. */
gs_err gs__imp_bool(const struct gs__ictx *c, const struct gs_doc_node *n,
                    const char *path, bool *out);
gs_err gs__imp_int(const struct gs__ictx *c, const struct gs_doc_node *n,
                   const char *path, long min, long max, long *out);
gs_err gs__imp_str(const struct gs__ictx *c, const struct gs_doc_node *n,
                   const char *path, const char **out);
gs_err gs__imp_choice(const struct gs__ictx *c, const struct gs_doc_node *n,
                      const char *path, const char *const *choices, int *out);

/* Records "FILE:LINE: <message>" in *b unless it holds one already. */
struct gs_import_block;
void gs__imp_block(const struct gs__ictx *c, struct gs_import_block *b,
                   const struct gs_doc_node *at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Appends a note (dropped when the list is full). */
struct gs_import_notes;
void gs__imp_note(struct gs_import_notes *notes, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
