/*
 * yamldoc.h - reads YAML text into a struct gs_doc (doc.h) with libyaml.
 *
 * The CLI's importers and their fuzz targets use it; the translation
 * itself stays in core (import.h), which never sees libyaml. Every YAML
 * document of the text (`---`) becomes one root; documents holding only
 * comments are skipped. Aliases (*name) are refused rather than expanded,
 * so a small file cannot expand into a huge tree; nesting is capped at
 * GS_YAMLDOC_MAX_DEPTH and the text at GS_YAMLDOC_MAX_BYTES.
 */
#ifndef GS_YAMLDOC_H
#define GS_YAMLDOC_H

#include <stddef.h>

#include "gs/doc.h"
#include "gs/err.h"

#define GS_YAMLDOC_MAX_DEPTH 64
#define GS_YAMLDOC_MAX_BYTES (1024 * 1024)

/*
 * Parses `len` bytes. `name` names the file in messages. OUT: *doc, which
 * the caller frees with gs_doc_destroy(); NULL on error. Errors carry the
 * place: "conf.yaml:7: mapping values are not allowed in this context".
 * GS_ERR_PARSE for text that is not YAML (or uses aliases, or repeats a
 * key), GS_ERR_RANGE past a cap, GS_ERR_NOMEM.
 */
gs_err gs_yamldoc_parse(const char *buf, size_t len, const char *name,
                        struct gs_doc **doc, struct gs_errbuf *eb);

#endif
