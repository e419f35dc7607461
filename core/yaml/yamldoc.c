/*
 * yamldoc.c - the one YAML reader (see gs/yamldoc.h): YAML text to core's
 * document tree, one libyaml event at a time.
 *
 * A stack holds the open mappings and sequences; a mapping also holds the
 * key read last, waiting for its value. Each new node is attached to the
 * top of the stack (or becomes the document's root). With
 * GS_YAMLDOC_ALIASES, anchors are remembered by name: a scalar's at once,
 * a collection's only when it ends, so an alias inside the collection it
 * names is an unknown anchor rather than a loop in the tree.
 */
#include "gs/yamldoc.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

struct frame {
	struct gs_doc_node *node;
	struct gs_doc_node *key; /* maps: a key waiting for its value */
	char *anchor;            /* &name to remember when it ends, or NULL */
};

struct anchor {
	char *name;
	struct gs_doc_node *node;
};

struct reader {
	struct gs_doc *doc;
	const char *name; /* NULL: messages say "line N:" */
	int line0;        /* added to every line: text embedded in a file */
	unsigned flags;
	struct frame stack[GS_YAMLDOC_MAX_DEPTH];
	int depth;
	struct gs_doc_node *root;
	struct anchor *anchors;
	int n_anchors;
	struct gs_errbuf *eb;
};

/* Fails with "NAME:LINE: what" (or "line LINE: what" without a name). */
static gs_err fail_at(struct reader *r, gs_err code, int line, const char *fmt,
                      ...) __attribute__((format(printf, 4, 5)));

static gs_err fail_at(struct reader *r, gs_err code, int line, const char *fmt,
                      ...)
{
	char what[200];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (r->name)
		return gs_fail(r->eb, code, "%s:%d: %s", r->name, line, what);
	return gs_fail(r->eb, code, "line %d: %s", line, what);
}

static gs_err fail_doc(struct reader *r, int line)
{
	gs_err err = gs_doc_error(r->doc);

	return fail_at(r, err, line, "%s",
	               err == GS_ERR_RANGE ? "the document is too large"
	                                   : "out of memory");
}

static gs_err attach(struct reader *r, struct gs_doc_node *n, int line)
{
	struct frame *top;
	gs_err err;

	if (n == NULL)
		return fail_doc(r, line);
	if (r->depth == 0) {
		r->root = n;
		return GS_OK;
	}
	top = &r->stack[r->depth - 1];
	if (top->node->kind == GS_DOC_SEQ) {
		err = gs_doc_append(r->doc, top->node, n);
		return err == GS_OK ? GS_OK
		                    : fail_at(r, err, n->line, "out of memory");
	}
	if (top->key == NULL) {
		if (n->kind != GS_DOC_SCALAR)
			return fail_at(r, GS_ERR_PARSE, n->line,
			               "a mapping key must be a plain value");
		top->key = n;
		return GS_OK;
	}
	err = gs_doc_put(r->doc, top->node, top->key, n);
	if (err == GS_ERR_EXISTS)
		return fail_at(r, GS_ERR_PARSE, top->key->line,
		               "key '%s' appears twice", top->key->value);
	if (err != GS_OK)
		return fail_at(r, err, n->line, "out of memory");
	top->key = NULL;
	return GS_OK;
}

/* Remembers &name for node n (the latest definition wins, as in YAML). */
static gs_err remember(struct reader *r, const char *name,
                       struct gs_doc_node *n)
{
	char *copy;

	for (int i = 0; i < r->n_anchors; i++)
		if (strcmp(r->anchors[i].name, name) == 0) {
			r->anchors[i].node = n;
			return GS_OK;
		}
	if (r->n_anchors == GS_YAMLDOC_MAX_ANCHORS)
		return fail_at(r, GS_ERR_RANGE, n->line, "more than %d anchors",
		               GS_YAMLDOC_MAX_ANCHORS);
	if (r->anchors == NULL) {
		r->anchors =
		    calloc(GS_YAMLDOC_MAX_ANCHORS, sizeof(*r->anchors));
		if (r->anchors == NULL)
			return fail_at(r, GS_ERR_NOMEM, n->line,
			               "out of memory");
	}
	copy = strdup(name);
	if (copy == NULL)
		return fail_at(r, GS_ERR_NOMEM, n->line, "out of memory");
	r->anchors[r->n_anchors].name = copy;
	r->anchors[r->n_anchors].node = n;
	r->n_anchors++;
	return GS_OK;
}

static gs_err alias(struct reader *r, const char *name, int line)
{
	if (!(r->flags & GS_YAMLDOC_ALIASES))
		return fail_at(r, GS_ERR_PARSE, line,
		               "YAML aliases (*name) are not supported");
	for (int i = 0; i < r->n_anchors; i++)
		if (strcmp(r->anchors[i].name, name) == 0)
			return attach(r, r->anchors[i].node, line);
	return fail_at(r, GS_ERR_PARSE, line, "unknown anchor '%s'", name);
}

static gs_err push(struct reader *r, struct gs_doc_node *n, int line,
                   const yaml_char_t *anchor)
{
	gs_err err = attach(r, n, line);

	if (err != GS_OK)
		return err;
	if (r->depth >= GS_YAMLDOC_MAX_DEPTH)
		return fail_at(r, GS_ERR_RANGE, n->line,
		               "nesting is deeper than 64 levels");
	r->stack[r->depth].node = n;
	r->stack[r->depth].key = NULL;
	r->stack[r->depth].anchor = NULL;
	if (anchor && (r->flags & GS_YAMLDOC_ALIASES)) {
		r->stack[r->depth].anchor = strdup((const char *)anchor);
		if (r->stack[r->depth].anchor == NULL)
			return fail_at(r, GS_ERR_NOMEM, line, "out of memory");
	}
	r->depth++;
	return GS_OK;
}

static gs_err pop(struct reader *r)
{
	struct frame *top;
	gs_err err = GS_OK;

	if (r->depth == 0)
		return GS_OK;
	top = &r->stack[--r->depth];
	if (top->anchor) {
		err = remember(r, top->anchor, top->node);
		free(top->anchor);
		top->anchor = NULL;
	}
	return err;
}

static gs_err scalar(struct reader *r, const yaml_event_t *ev, int line,
                     int col)
{
	struct gs_doc_node *n = gs_doc_scalar(
	    r->doc, (const char *)ev->data.scalar.value, ev->data.scalar.length,
	    ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE, line, col);
	gs_err err = attach(r, n, line);

	if (err == GS_OK && ev->data.scalar.anchor &&
	    (r->flags & GS_YAMLDOC_ALIASES))
		err = remember(r, (const char *)ev->data.scalar.anchor, n);
	return err;
}

static gs_err on_event(struct reader *r, const yaml_event_t *ev, bool *done)
{
	int line = (int)ev->start_mark.line + 1 + r->line0;
	int col = (int)ev->start_mark.column + 1;
	gs_err err;

	switch (ev->type) {
	case YAML_STREAM_END_EVENT:
		*done = true;
		return GS_OK;
	case YAML_DOCUMENT_START_EVENT:
		r->root = NULL;
		return GS_OK;
	case YAML_DOCUMENT_END_EVENT:
		/* a document of comments only is an empty plain scalar */
		if (r->root == NULL ||
		    (r->root->kind == GS_DOC_SCALAR && !r->root->quoted &&
		     r->root->value[0] == '\0'))
			return GS_OK;
		err = gs_doc_add_root(r->doc, r->root);
		if (err != GS_OK)
			return fail_at(r, err, line,
			               "more YAML documents than allowed");
		return GS_OK;
	case YAML_MAPPING_START_EVENT:
		return push(r, gs_doc_map(r->doc, line, col), line,
		            ev->data.mapping_start.anchor);
	case YAML_SEQUENCE_START_EVENT:
		return push(r, gs_doc_seq(r->doc, line, col), line,
		            ev->data.sequence_start.anchor);
	case YAML_MAPPING_END_EVENT:
	case YAML_SEQUENCE_END_EVENT:
		return pop(r);
	case YAML_SCALAR_EVENT:
		return scalar(r, ev, line, col);
	case YAML_ALIAS_EVENT:
		return alias(r, (const char *)ev->data.alias.anchor, line);
	default:
		return GS_OK;
	}
}

static void reader_fini(struct reader *r)
{
	for (int i = 0; i < r->depth; i++)
		free(r->stack[i].anchor);
	for (int i = 0; i < r->n_anchors; i++)
		free(r->anchors[i].name);
	free(r->anchors);
}

gs_err gs_yamldoc_read_at(const char *buf, size_t len, const char *name,
                          int line0, unsigned flags, struct gs_doc **doc,
                          struct gs_errbuf *eb)
{
	struct reader r = {
	    .name = name, .line0 = line0, .flags = flags, .eb = eb};
	yaml_parser_t parser;
	bool done = false;
	gs_err err = GS_OK;

	*doc = NULL;
	if (len > GS_YAMLDOC_MAX_BYTES)
		return gs_fail(eb, GS_ERR_RANGE, "%s: larger than %d bytes",
		               name ? name : "the text", GS_YAMLDOC_MAX_BYTES);
	r.doc = gs_doc_create(name ? name : "");
	if (r.doc == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "%s: out of memory",
		               name ? name : "YAML");
	if (!yaml_parser_initialize(&parser)) {
		gs_doc_destroy(r.doc);
		return gs_fail(eb, GS_ERR_NOMEM, "%s: out of memory",
		               name ? name : "YAML");
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	while (!done && err == GS_OK) {
		yaml_event_t ev;

		if (!yaml_parser_parse(&parser, &ev)) {
			err = fail_at(
			    &r, GS_ERR_PARSE,
			    (int)parser.problem_mark.line + 1 + line0, "%s%s%s",
			    parser.problem ? parser.problem : "not YAML",
			    parser.context ? " " : "",
			    parser.context ? parser.context : "");
			break;
		}
		err = on_event(&r, &ev, &done);
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	reader_fini(&r);
	if (err != GS_OK) {
		gs_doc_destroy(r.doc);
		return err;
	}
	*doc = r.doc;
	return GS_OK;
}

gs_err gs_yamldoc_read(const char *buf, size_t len, const char *name,
                       unsigned flags, struct gs_doc **doc,
                       struct gs_errbuf *eb)
{
	return gs_yamldoc_read_at(buf, len, name, 0, flags, doc, eb);
}

gs_err gs_yamldoc_parse(const char *buf, size_t len, const char *name,
                        struct gs_doc **doc, struct gs_errbuf *eb)
{
	return gs_yamldoc_read(buf, len, name, 0, doc, eb);
}
