/*
 * yamldoc.c - YAML text to a document tree, one libyaml event at a time.
 *
 * A stack holds the open mappings and sequences; a mapping also holds the
 * key read last, waiting for its value. Each new node is attached to the
 * top of the stack (or becomes the document's root).
 */
#include "yamldoc.h"

#include <stdbool.h>
#include <string.h>
#include <yaml.h>

struct frame {
	struct gs_doc_node *node;
	struct gs_doc_node *key; /* maps: a key waiting for its value */
};

struct reader {
	struct gs_doc *doc;
	const char *name;
	struct frame stack[GS_YAMLDOC_MAX_DEPTH];
	int depth;
	struct gs_doc_node *root;
	struct gs_errbuf *eb;
};

static gs_err fail_at(struct reader *r, gs_err code, int line, const char *what,
                      const char *detail)
{
	return gs_fail(r->eb, code, "%s:%d: %s%s", r->name, line, what,
	               detail ? detail : "");
}

static gs_err attach(struct reader *r, struct gs_doc_node *n)
{
	struct frame *top;
	gs_err err;

	if (n == NULL)
		return fail_at(r, gs_doc_error(r->doc), 0,
		               gs_doc_error(r->doc) == GS_ERR_RANGE
		                   ? "the document is too large"
		                   : "out of memory",
		               NULL);
	if (r->depth == 0) {
		r->root = n;
		return GS_OK;
	}
	top = &r->stack[r->depth - 1];
	if (top->node->kind == GS_DOC_SEQ) {
		err = gs_doc_append(r->doc, top->node, n);
		return err == GS_OK
		           ? GS_OK
		           : fail_at(r, err, n->line, "out of memory", NULL);
	}
	if (top->key == NULL) {
		if (n->kind != GS_DOC_SCALAR)
			return fail_at(r, GS_ERR_PARSE, n->line,
			               "a mapping key must be a plain value",
			               NULL);
		top->key = n;
		return GS_OK;
	}
	err = gs_doc_put(r->doc, top->node, top->key, n);
	if (err == GS_ERR_EXISTS)
		return gs_fail(r->eb, GS_ERR_PARSE,
		               "%s:%d: key '%s' appears twice", r->name,
		               top->key->line, top->key->value);
	if (err != GS_OK)
		return fail_at(r, err, n->line, "out of memory", NULL);
	top->key = NULL;
	return GS_OK;
}

static gs_err push(struct reader *r, struct gs_doc_node *n)
{
	gs_err err = attach(r, n);

	if (err != GS_OK)
		return err;
	if (r->depth >= GS_YAMLDOC_MAX_DEPTH)
		return fail_at(r, GS_ERR_RANGE, n->line,
		               "nesting is deeper than 64 levels", NULL);
	r->stack[r->depth].node = n;
	r->stack[r->depth].key = NULL;
	r->depth++;
	return GS_OK;
}

static gs_err on_event(struct reader *r, const yaml_event_t *ev, bool *done)
{
	int line = (int)ev->start_mark.line + 1;
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
			               "more YAML documents than allowed",
			               NULL);
		return GS_OK;
	case YAML_MAPPING_START_EVENT:
		return push(r, gs_doc_map(r->doc, line, col));
	case YAML_SEQUENCE_START_EVENT:
		return push(r, gs_doc_seq(r->doc, line, col));
	case YAML_MAPPING_END_EVENT:
	case YAML_SEQUENCE_END_EVENT:
		if (r->depth > 0)
			r->depth--;
		return GS_OK;
	case YAML_SCALAR_EVENT:
		return attach(
		    r, gs_doc_scalar(
		           r->doc, (const char *)ev->data.scalar.value,
		           ev->data.scalar.length,
		           ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE,
		           line, col));
	case YAML_ALIAS_EVENT:
		return fail_at(r, GS_ERR_PARSE, line,
		               "YAML aliases (*name) are not supported", NULL);
	default:
		return GS_OK;
	}
}

gs_err gs_yamldoc_parse(const char *buf, size_t len, const char *name,
                        struct gs_doc **doc, struct gs_errbuf *eb)
{
	struct reader r = {.name = name ? name : "<input>", .eb = eb};
	yaml_parser_t parser;
	bool done = false;
	gs_err err = GS_OK;

	*doc = NULL;
	if (len > GS_YAMLDOC_MAX_BYTES)
		return gs_fail(eb, GS_ERR_RANGE, "%s: larger than %d bytes",
		               r.name, GS_YAMLDOC_MAX_BYTES);
	r.doc = gs_doc_create(r.name);
	if (r.doc == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "%s: out of memory", r.name);
	if (!yaml_parser_initialize(&parser)) {
		gs_doc_destroy(r.doc);
		return gs_fail(eb, GS_ERR_NOMEM, "%s: out of memory", r.name);
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	while (!done && err == GS_OK) {
		yaml_event_t ev;

		if (!yaml_parser_parse(&parser, &ev)) {
			err = gs_fail(eb, GS_ERR_PARSE, "%s:%d: %s%s%s", r.name,
			              (int)parser.problem_mark.line + 1,
			              parser.problem ? parser.problem
			                             : "not YAML",
			              parser.context ? " " : "",
			              parser.context ? parser.context : "");
			break;
		}
		err = on_event(&r, &ev, &done);
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	if (err != GS_OK) {
		gs_doc_destroy(r.doc);
		return err;
	}
	*doc = r.doc;
	return GS_OK;
}
