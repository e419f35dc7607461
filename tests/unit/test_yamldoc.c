/*
 * test_yamldoc.c - the one YAML reader (gs/yamldoc.h): the tree it builds
 * (kinds, lines, columns, quoting, documents), aliases when asked for, and
 * its errors from a table: the text, the code, the exact message with the
 * file (or "line") and line.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "gs/yamldoc.h"

static struct gs_doc *read_ok(const char *text, unsigned flags)
{
	struct gs_doc *doc = NULL;
	struct gs_errbuf eb = {0};

	if (gs_yamldoc_read(text, strlen(text), "t.yaml", flags, &doc, &eb) !=
	    GS_OK)
		fail_msg("'%s': %s", text, eb.msg);
	return doc;
}

static void tree_keeps_kinds_places_and_quoting(void **state)
{
	struct gs_doc *doc =
	    read_ok("a: 1\nb:\n  - x\n  - 'y'\nc: {d: e}\n", 0);
	const struct gs_doc_node *root, *a, *b, *d;

	(void)state;
	assert_int_equal(gs_doc_count(doc), 1);
	assert_string_equal(gs_doc_name(doc), "t.yaml");
	root = gs_doc_root(doc, 0);
	assert_int_equal(root->kind, GS_DOC_MAP);
	assert_int_equal(root->n, 3);
	assert_string_equal(gs_doc_key(root, 0)->value, "a");
	a = gs_doc_get(root, "a");
	assert_int_equal(a->kind, GS_DOC_SCALAR);
	assert_string_equal(a->value, "1");
	assert_int_equal(a->line, 1);
	assert_int_equal(a->col, 4);
	assert_false(a->quoted);
	b = gs_doc_get(root, "b");
	assert_int_equal(b->kind, GS_DOC_SEQ);
	assert_int_equal(b->n, 2);
	assert_int_equal(b->line, 3);
	assert_int_equal(b->col, 3);
	assert_string_equal(b->kids[0]->value, "x");
	assert_false(b->kids[0]->quoted);
	assert_string_equal(b->kids[1]->value, "y");
	assert_true(b->kids[1]->quoted);
	assert_int_equal(b->kids[1]->line, 4);
	assert_int_equal(b->kids[1]->col, 5);
	d = gs_doc_get(gs_doc_get(root, "c"), "d");
	assert_string_equal(d->value, "e");
	assert_int_equal(d->line, 5);
	assert_int_equal(d->col, 8);
	gs_doc_destroy(doc);
}

static void
each_document_is_a_root_and_comment_only_ones_are_skipped(void **state)
{
	struct gs_doc *doc =
	    read_ok("# head\n---\na: 1\n---\n# only a comment\n---\n- 2\n", 0);

	(void)state;
	assert_int_equal(gs_doc_count(doc), 2);
	assert_int_equal(gs_doc_root(doc, 0)->kind, GS_DOC_MAP);
	assert_int_equal(gs_doc_root(doc, 1)->kind, GS_DOC_SEQ);
	assert_int_equal(gs_doc_root(doc, 1)->line, 7);
	gs_doc_destroy(doc);
	doc = read_ok("", 0);
	assert_int_equal(gs_doc_count(doc), 0);
	gs_doc_destroy(doc);
	/* a quoted empty string is a value, not nothing */
	doc = read_ok("''\n", 0);
	assert_int_equal(gs_doc_count(doc), 1);
	gs_doc_destroy(doc);
}

static void aliases_when_asked_are_the_anchored_node_itself(void **state)
{
	struct gs_doc *doc = read_ok("base: &b {x: 1}\nname: &n web\n"
	                             "use: *b\nagain: *n\n",
	                             GS_YAMLDOC_ALIASES);
	const struct gs_doc_node *root = gs_doc_root(doc, 0);

	(void)state;
	assert_ptr_equal(gs_doc_get(root, "use"), gs_doc_get(root, "base"));
	assert_ptr_equal(gs_doc_get(root, "again"), gs_doc_get(root, "name"));
	assert_string_equal(gs_doc_get(gs_doc_get(root, "use"), "x")->value,
	                    "1");
	gs_doc_destroy(doc);
}

static const struct {
	const char *text;
	const char *name;
	unsigned flags;
	gs_err err;
	const char *msg;
} bad[] = {
    {"a: [1, 2\nb: 3\n", "t.yaml", 0, GS_ERR_PARSE,
     "t.yaml:2: did not find expected ',' or ']' while parsing a flow "
     "sequence"},
    {"a: 1\n  b: 2\n", "t.yaml", 0, GS_ERR_PARSE,
     "t.yaml:2: mapping values are not allowed in this context"},
    {"k: \"open\n", "t.yaml", 0, GS_ERR_PARSE,
     "t.yaml:2: found unexpected end of stream while scanning a quoted "
     "scalar"},
    {"a: 1\nb: 2\na: 3\n", "t.yaml", 0, GS_ERR_PARSE,
     "t.yaml:3: key 'a' appears twice"},
    {"a: 1\na: 2\n", NULL, 0, GS_ERR_PARSE, "line 2: key 'a' appears twice"},
    {"? [a]\n: 1\n", "t.yaml", 0, GS_ERR_PARSE,
     "t.yaml:1: a mapping key must be a plain value"},
    {"a: &x 1\nb: *x\n", "t.yaml", 0, GS_ERR_PARSE,
     "t.yaml:2: YAML aliases (*name) are not supported"},
    {"a: *nope\n", "t.yaml", GS_YAMLDOC_ALIASES, GS_ERR_PARSE,
     "t.yaml:1: unknown anchor 'nope'"},
    /* no loops: a collection's anchor is known only once it ends */
    {"a: &s [1, *s]\n", NULL, GS_YAMLDOC_ALIASES, GS_ERR_PARSE,
     "line 1: unknown anchor 's'"},
};

static void bad_text_is_refused_with_its_place(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct gs_doc *doc = (struct gs_doc *)&doc;
		struct gs_errbuf eb = {0};
		gs_err err =
		    gs_yamldoc_read(bad[i].text, strlen(bad[i].text),
		                    bad[i].name, bad[i].flags, &doc, &eb);

		if (err != bad[i].err || strcmp(eb.msg, bad[i].msg) != 0)
			fail_msg("case %zu: got %s '%s', want %s '%s'", i,
			         gs_err_name(err), eb.msg,
			         gs_err_name(bad[i].err), bad[i].msg);
		assert_null(doc);
	}
}

static void caps_on_size_and_depth_are_range_errors(void **state)
{
	size_t len = GS_YAMLDOC_MAX_BYTES + 1;
	char *big = malloc(len);
	char deep[200];
	struct gs_doc *doc;
	struct gs_errbuf eb = {0};

	(void)state;
	assert_non_null(big);
	memset(big, '#', len);
	assert_int_equal(gs_yamldoc_parse(big, len, "big.yaml", &doc, &eb),
	                 GS_ERR_RANGE);
	assert_string_equal(eb.msg, "big.yaml: larger than 1048576 bytes");
	free(big);
	memset(deep, '[', 65);
	deep[65] = '\0';
	gs_errbuf_init(&eb);
	assert_int_equal(gs_yamldoc_parse(deep, 65, NULL, &doc, &eb),
	                 GS_ERR_RANGE);
	assert_string_equal(eb.msg, "line 1: nesting is deeper than 64 levels");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(tree_keeps_kinds_places_and_quoting),
	    cmocka_unit_test(
	        each_document_is_a_root_and_comment_only_ones_are_skipped),
	    cmocka_unit_test(aliases_when_asked_are_the_anchored_node_itself),
	    cmocka_unit_test(bad_text_is_refused_with_its_place),
	    cmocka_unit_test(caps_on_size_and_depth_are_range_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
