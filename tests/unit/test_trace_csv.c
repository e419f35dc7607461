/*
 * test_trace_csv.c - the trace CSV reader (bench/trace_csv.c), from tables:
 * each input either parses to the expected values or fails with the
 * expected code and a message naming the file and line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "trace_csv.h"

#define NODES_OK                                                               \
	"sn,cpu_milli,memory_mib,gpu,model\n"                                  \
	"n0,96000,393216,8,G2\n"                                               \
	"n1,64000,262144,2,V100M16\n"                                          \
	"n2,32000,65536,0,\n"

static void nodes_parse_with_models_interned(void **state)
{
	struct gs_trace_models models = {0};
	struct gs_trace_node *nodes;
	struct gs_errbuf eb = {0};
	size_t n;

	(void)state;
	assert_int_equal(gs_trace_csv_parse_nodes(NODES_OK, strlen(NODES_OK),
	                                          "n.csv", &models, &nodes, &n,
	                                          &eb),
	                 GS_OK);
	assert_int_equal(n, 3);
	assert_int_equal(models.count, 2);
	assert_int_equal(nodes[0].cpu_milli, 96000);
	assert_int_equal(nodes[0].memory_mib, 393216);
	assert_int_equal(nodes[0].gpus, 8);
	assert_int_equal(nodes[1].model, 1);
	assert_int_equal(nodes[2].gpus, 0);
	free(nodes);
}

static void
pods_parse_in_any_column_order_with_quotes_crlf_and_bom(void **state)
{
	static const char in[] =
	    "\xef\xbb\xbfgpu_spec,gpu_milli,num_gpu,memory_mib,cpu_milli,name,extra\r\n"
	    "\r\n"
	    "\"G2|V100M16|V100M16\",470,1,1024,\"6000\",\"p,0\",x\r\n"
	    ",1000,8,0,64000,p1,\"a \"\"quoted\"\" word\"\r\n"
	    "  , 0 ,0, 2048 , 1000 ,p2,\r\n";
	struct gs_trace_models models = {0};
	struct gs_trace_node *nodes;
	struct gs_trace_pod *pods;
	struct gs_errbuf eb = {0};
	size_t nn, n;

	(void)state;
	assert_int_equal(gs_trace_csv_parse_nodes(NODES_OK, strlen(NODES_OK),
	                                          "n.csv", &models, &nodes, &nn,
	                                          &eb),
	                 GS_OK);
	assert_int_equal(gs_trace_csv_parse_pods(in, strlen(in), "p.csv",
	                                         &models, &pods, &n, &eb),
	                 GS_OK);
	assert_int_equal(n, 3);
	assert_int_equal(pods[0].cpu_milli, 6000);
	assert_int_equal(pods[0].gpu_milli, 470);
	assert_int_equal(pods[0].num_gpu, 1);
	assert_int_equal(pods[0].spec, (1u << 0) | (1u << 1));
	assert_int_equal(pods[1].num_gpu, 8);
	assert_int_equal(pods[1].memory_mib, 0);
	assert_int_equal(pods[1].spec, 0);
	assert_int_equal(pods[2].gpu_milli, 0);
	assert_int_equal(pods[2].memory_mib, 2048);
	free(nodes);
	free(pods);
}

struct bad_case {
	const char *in;
	gs_err code;
	const char *msg; /* must appear in the message */
};

static void check_bad(const struct bad_case *c, size_t n, bool pods)
{
	for (size_t i = 0; i < n; i++) {
		struct gs_trace_models models = {0};
		struct gs_trace_node *nodes = NULL;
		struct gs_trace_pod *out = NULL;
		struct gs_errbuf eb = {0};
		size_t nn = 0, np = 0;
		gs_err err;

		assert_int_equal(gs_trace_csv_parse_nodes(
		                     NODES_OK, strlen(NODES_OK), "n.csv",
		                     &models, &nodes, &nn, &eb),
		                 GS_OK);
		free(nodes);
		nodes = NULL;
		nn = 0;
		gs_errbuf_init(&eb);
		if (pods)
			err = gs_trace_csv_parse_pods(c[i].in, strlen(c[i].in),
			                              "t.csv", &models, &out,
			                              &np, &eb);
		else
			err = gs_trace_csv_parse_nodes(c[i].in, strlen(c[i].in),
			                               "t.csv", &models, &nodes,
			                               &nn, &eb);
		if (err != c[i].code || strstr(eb.msg, c[i].msg) == NULL)
			fail_msg("case %zu: got %s \"%s\", want %s \"%s\"", i,
			         gs_err_name(err), eb.msg,
			         gs_err_name(c[i].code), c[i].msg);
		assert_null(out);
		assert_null(nodes);
		assert_int_equal(np + nn, 0);
	}
}

static void bad_node_lists_fail_naming_file_and_line(void **state)
{
	static const struct bad_case cases[] = {
	    {"", GS_ERR_PARSE, "t.csv: empty file"},
	    {"sn,cpu_milli,memory_mib,gpu,model\n", GS_ERR_PARSE,
	     "t.csv: no nodes"},
	    {"sn,cpu_milli,memory_mib,model\nx,1,1,G2\n", GS_ERR_PARSE,
	     "t.csv:1: no column named gpu"},
	    {"sn,cpu_milli,cpu_milli,memory_mib,gpu,model\n", GS_ERR_PARSE,
	     "column cpu_milli appears twice"},
	    {"sn,cpu_milli,memory_mib,gpu,model\nn0,1,1,1,G2\nn1,1,1,1\n",
	     GS_ERR_PARSE, "t.csv:3: 4 fields, the header has 5"},
	    {"sn,cpu_milli,memory_mib,gpu,model\n\n\nn0,-5,1,1,G2\n",
	     GS_ERR_RANGE, "t.csv:4: cpu_milli '-5' is negative"},
	    {"sn,cpu_milli,memory_mib,gpu,model\nn0,12.5,1,1,G2\n",
	     GS_ERR_PARSE, "t.csv:2: cpu_milli '12.5' is not a whole number"},
	    {"sn,cpu_milli,memory_mib,gpu,model\nn0,1,99999999999999999999999,1,G2\n",
	     GS_ERR_RANGE, "memory_mib"},
	    {"sn,cpu_milli,memory_mib,gpu,model\nn0,1,1,17,G2\n", GS_ERR_RANGE,
	     "t.csv:2: gpu '17' is absurd"},
	    {"sn,cpu_milli,memory_mib,gpu,model\nn0,1,1,2,\n", GS_ERR_PARSE,
	     "t.csv:2: a node with 2 GPUs needs a model"},
	    {"sn,cpu_milli,memory_mib,gpu,model\nn0,1,1,2,A|B\n", GS_ERR_PARSE,
	     "model name 'A|B' is not valid"},
	    {"sn,cpu_milli,memory_mib,gpu,model\nn0,1,1,2,\"G2\n", GS_ERR_PARSE,
	     "t.csv:2: field 5: unterminated quote"},
	    {"sn,cpu_milli,memory_mib,gpu,model\nn0,1,1,2,G\"2\n", GS_ERR_PARSE,
	     "quote inside an unquoted field"},
	    {"sn,cpu_milli,memory_mib,gpu,model\nn0,1,1,2,\"G2\"x\n",
	     GS_ERR_PARSE, "after the closing quote"},
	    {"sn,cpu_milli,memory_mib,gpu,model\nn0,,1,2,G2\n", GS_ERR_PARSE,
	     "cpu_milli is empty"},
	};

	(void)state;
	check_bad(cases, sizeof(cases) / sizeof(cases[0]), false);
}

static void bad_task_lists_fail_naming_file_and_line(void **state)
{
	static const struct bad_case cases[] = {
	    {"name,cpu_milli,memory_mib,num_gpu\n", GS_ERR_PARSE,
	     "no column named gpu_milli"},
	    {"cpu_milli,memory_mib,num_gpu,gpu_milli\n", GS_ERR_PARSE,
	     "t.csv: no tasks"},
	    {"cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n1000,1,1,500,A100\n",
	     GS_ERR_UNKNOWN_MODEL,
	     "t.csv:2: gpu_spec names GPU model 'A100', which no node has"},
	    {"cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n1000,1,1,500,G2||T4\n",
	     GS_ERR_PARSE,
	     "t.csv:2: gpu_spec 'G2||T4' has an empty model name"},
	    {"cpu_milli,memory_mib,num_gpu,gpu_milli\n1000,1,2,500\n",
	     GS_ERR_PARSE,
	     "t.csv:2: a share of a GPU (gpu_milli 500) must ask for one GPU, not 2"},
	    {"cpu_milli,memory_mib,num_gpu,gpu_milli\n1000,1,0,300\n",
	     GS_ERR_PARSE, "num_gpu 0 with gpu_milli 300"},
	    {"cpu_milli,memory_mib,num_gpu,gpu_milli\n1000,1,1,0\n",
	     GS_ERR_PARSE, "num_gpu 1 with gpu_milli 0"},
	    {"cpu_milli,memory_mib,num_gpu,gpu_milli\n1000,1,1,1500\n",
	     GS_ERR_RANGE,
	     "t.csv:2: gpu_milli '1500' is absurd (the limit is 1000)"},
	    {"cpu_milli,memory_mib,num_gpu,gpu_milli\n1000,1,64,1000\n",
	     GS_ERR_RANGE, "num_gpu '64' is absurd"},
	    {"cpu_milli,memory_mib,num_gpu,gpu_milli\n100000001,1,1,1000\n",
	     GS_ERR_RANGE, "cpu_milli '100000001' is absurd"},
	    {"cpu_milli,memory_mib,num_gpu,gpu_milli\n-1000,1,1,1000\n",
	     GS_ERR_RANGE, "is negative"},
	    {"cpu_milli,memory_mib,num_gpu,gpu_milli\n1000,1,1,abc\n",
	     GS_ERR_PARSE, "gpu_milli 'abc' is not a whole number"},
	    {"cpu_milli,memory_mib,num_gpu,gpu_milli\n1000,1,1,1000,5\n",
	     GS_ERR_PARSE, "t.csv:2: 5 fields, the header has 4"},
	};

	(void)state;
	check_bad(cases, sizeof(cases) / sizeof(cases[0]), true);
}

static void read_file_reports_a_missing_file(void **state)
{
	struct gs_errbuf eb = {0};
	char *buf = (char *)1;
	size_t len = 1;

	(void)state;
	assert_int_equal(
	    gs_trace_csv_read_file("/nonexistent/trace.csv", &buf, &len, &eb),
	    GS_ERR_NOT_FOUND);
	assert_null(buf);
	assert_non_null(strstr(eb.msg, "/nonexistent/trace.csv"));
}

static void a_line_over_the_cap_is_refused(void **state)
{
	size_t n = GS_TRACE_CSV_MAX_LINE + 64;
	char *in = malloc(n + 64);
	struct gs_trace_models models = {0};
	struct gs_trace_node *nodes;
	struct gs_errbuf eb = {0};
	size_t nn;

	(void)state;
	strcpy(in, "sn,cpu_milli,memory_mib,gpu,model\nn0,1,1,1,");
	memset(in + strlen(in), 'x', n);
	in[n] = '\0';
	assert_int_equal(gs_trace_csv_parse_nodes(in, strlen(in), "t.csv",
	                                          &models, &nodes, &nn, &eb),
	                 GS_ERR_PARSE);
	assert_non_null(strstr(eb.msg, "t.csv:2: line longer than"));
	free(in);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(nodes_parse_with_models_interned),
	    cmocka_unit_test(
	        pods_parse_in_any_column_order_with_quotes_crlf_and_bom),
	    cmocka_unit_test(bad_node_lists_fail_naming_file_and_line),
	    cmocka_unit_test(bad_task_lists_fail_naming_file_and_line),
	    cmocka_unit_test(read_file_reports_a_missing_file),
	    cmocka_unit_test(a_line_over_the_cap_is_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
