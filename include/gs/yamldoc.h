/*
 * yamldoc.h - the one YAML reader: YAML text into core's document tree
 * (struct gs_doc, doc.h), with libyaml (core/yaml/yamldoc.c, library
 * gs_core_yaml; core itself never sees libyaml or a file).
 *
 * Everything in gpuslice that reads YAML reads it here and walks the
 * tree: gpusliced's configuration (daemon/config.c), mig-parted configs
 * (core/yaml/migparted.c), the importers behind `gpuslice import`
 * (core's import.h) and kubeconfig files (integrations/kubernetes/kube.c).
 *
 * Every YAML document of the text (`---`) becomes one root; documents
 * holding only comments are skipped, so an empty file has no root. Each
 * node keeps its 1-based line and column, and whether a scalar was
 * quoted. A key that appears twice in a mapping is an error. Aliases
 * (*name) are refused unless the caller asks for them
 * (GS_YAMLDOC_ALIASES); then the alias is the anchored node itself, shared
 * and never copied, so a small file cannot expand into a huge tree (the
 * walker still bounds its loops). Nesting is capped at
 * GS_YAMLDOC_MAX_DEPTH and the text at GS_YAMLDOC_MAX_BYTES.
 *
 * Messages name the place: "conf.yaml:7: mapping values are not allowed
 * in this context" for a file named `conf.yaml`, "line 7: ..." when the
 * caller gives no name.
 */
#ifndef GS_YAMLDOC_H
#define GS_YAMLDOC_H

#include <stddef.h>

#include "gs/doc.h"
#include "gs/err.h"

#define GS_YAMLDOC_MAX_DEPTH   64
#define GS_YAMLDOC_MAX_BYTES   (1024 * 1024)
#define GS_YAMLDOC_MAX_ANCHORS 1024

/* Flags for gs_yamldoc_read(). */
enum {
	/* Resolve *name to the node anchored &name (a shared node). */
	GS_YAMLDOC_ALIASES = 1u << 0,
};

/*
 * Parses `len` bytes (no NUL needed). `name` names the text in messages
 * (NULL: "line N: ..."). OUT: *doc, which the caller frees with
 * gs_doc_destroy(); NULL on error. GS_ERR_PARSE for text that is not YAML
 * (or repeats a key, or uses an alias it may not), GS_ERR_RANGE past a
 * cap, GS_ERR_NOMEM.
 */
gs_err gs_yamldoc_read(const char *buf, size_t len, const char *name,
                       unsigned flags, struct gs_doc **doc,
                       struct gs_errbuf *eb);

/*
 * gs_yamldoc_read() of text embedded in a larger file (a ConfigMap's
 * data value, a Helm values string): every line number, in nodes and
 * messages, is `line0` more, so a literal block scalar (`key: |`) on
 * line L read with line0 = L names the file's own lines.
 */
gs_err gs_yamldoc_read_at(const char *buf, size_t len, const char *name,
                          int line0, unsigned flags, struct gs_doc **doc,
                          struct gs_errbuf *eb);

/* gs_yamldoc_read() with no flags: aliases refused. */
gs_err gs_yamldoc_parse(const char *buf, size_t len, const char *name,
                        struct gs_doc **doc, struct gs_errbuf *eb);

#endif
