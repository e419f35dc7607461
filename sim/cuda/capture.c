/*
 * capture.c - the structure under CUDA graphs and stream capture: graph
 * nodes with their dependencies (the edges), adding a node to a graph,
 * and the state of a stream capture - which streams take part, each
 * one's current dependencies, events recorded inside it, and whether it
 * was invalidated. launch.c, stream.c, copy.c and mem.c record work into
 * a capture through it; graph.c builds the graph API on it. Lock held in
 * every function here.
 *
 * A capture starts on its origin stream (gs__capture_begin) with no
 * dependencies. Each captured operation becomes a node depending on the
 * stream's current dependencies, and becomes the stream's only one.
 * Recording an event in a capture keeps the stream's dependencies in the
 * event; a stream that waits on it takes them over (joining the capture
 * if it was not in it: fork) or adds them to its own (join). Ending the
 * capture on the origin stream wants every node to lead to the origin's
 * dependencies (else CUDA_ERROR_STREAM_CAPTURE_UNJOINED), and takes every
 * stream out of the capture.
 *
 *   (none) --begin--> active --illegal call--> invalidated
 *   active --end--> (none), graph returned
 *   invalidated --end--> (none), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
 *
 * Captures are isolated: a stream of one capture cannot wait on an event
 * of another (CUDA_ERROR_STREAM_CAPTURE_ISOLATION), as with the real
 * driver.
 */
#include "cuda_int.h"
#include "halloc.h"

#include <stdlib.h>
#include <string.h>

/* Live captures, so an event's capture id finds its capture. */
static struct gs__capture *live;

/* ---- nodes and edges ---------------------------------------------------- */

struct gs__node *gs__node_new(enum gs__nkind kind)
{
	struct gs__node *n = gs__calloc(1, sizeof(*n));

	if (n != NULL)
		n->kind = kind;
	return n;
}

void gs__graph_node_free(struct gs__node *n)
{
	if (n == NULL)
		return;
	gs__gmem_node_gone(n);
	gs__h_del(n);
	free(n->launch.args);
	free(n->argv);
	free(n->deps);
	free(n);
}

static bool list_has(struct gs__node *const *l, int n, const struct gs__node *x)
{
	for (int i = 0; i < n; i++)
		if (l[i] == x)
			return true;
	return false;
}

/* Appends x to a growable node list unless it is there. false on OOM. */
static bool list_add(struct gs__node ***l, int *n, int *cap, struct gs__node *x)
{
	if (list_has(*l, *n, x))
		return true;
	if (*n == *cap) {
		int ncap = *cap ? *cap * 2 : 4;
		struct gs__node **nl =
		    gs__realloc(*l, sizeof(*nl) * (size_t)ncap);

		if (nl == NULL)
			return false;
		*l = nl;
		*cap = ncap;
	}
	(*l)[(*n)++] = x;
	return true;
}

CUresult gs__node_dep_add(struct gs__node *n, struct gs__node *dep)
{
	return list_add(&n->deps, &n->n_deps, &n->cap_deps, dep)
	           ? CUDA_SUCCESS
	           : CUDA_ERROR_OUT_OF_MEMORY;
}

bool gs__node_dep_remove(struct gs__node *n, const struct gs__node *dep)
{
	for (int i = 0; i < n->n_deps; i++)
		if (n->deps[i] == dep) {
			n->deps[i] = n->deps[--n->n_deps];
			return true;
		}
	return false;
}

CUresult gs__graph_add(struct gs__graph *g, struct gs__node *n,
                       struct gs__node *const *deps, int ndeps)
{
	for (int i = 0; i < ndeps; i++) {
		if (!gs__h_is(deps[i], GS__H_GRAPH_NODE) || deps[i]->graph != g)
			return CUDA_ERROR_INVALID_VALUE;
		if (gs__node_dep_add(n, deps[i]) != CUDA_SUCCESS)
			return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (g->n_nodes == g->cap) {
		int ncap = g->cap ? g->cap * 2 : 16;
		struct gs__node **nn =
		    gs__realloc(g->nodes, sizeof(*nn) * (size_t)ncap);

		if (nn == NULL)
			return CUDA_ERROR_OUT_OF_MEMORY;
		g->nodes = nn;
		g->cap = ncap;
	}
	if (!gs__h_add(n, GS__H_GRAPH_NODE))
		return CUDA_ERROR_OUT_OF_MEMORY;
	n->graph = g;
	g->nodes[g->n_nodes++] = n;
	gs__gmem_node_added(n);
	return CUDA_SUCCESS;
}

/* ---- captures ----------------------------------------------------------- */

static struct gs__capture *capture_find(unsigned long long id)
{
	for (struct gs__capture *c = live; c != NULL; c = c->next)
		if (c->id == id)
			return c;
	return NULL;
}

static void stream_leave(struct gs__stream *s)
{
	free(s->deps);
	s->deps = NULL;
	s->n_deps = s->cap_deps = 0;
	s->capture = NULL;
}

static CUresult stream_join(struct gs__capture *c, struct gs__stream *s)
{
	if (c->n_streams == c->cap_streams) {
		int ncap = c->cap_streams ? c->cap_streams * 2 : 4;
		struct gs__stream **nl =
		    gs__realloc(c->streams, sizeof(*nl) * (size_t)ncap);

		if (nl == NULL)
			return CUDA_ERROR_OUT_OF_MEMORY;
		c->streams = nl;
		c->cap_streams = ncap;
	}
	c->streams[c->n_streams++] = s;
	s->capture = c;
	s->n_deps = 0;
	return CUDA_SUCCESS;
}

static void capture_free(struct gs__capture *c)
{
	struct gs__capture **pp = &live;

	for (int i = 0; i < c->n_streams; i++)
		stream_leave(c->streams[i]);
	while (*pp != NULL && *pp != c)
		pp = &(*pp)->next;
	if (*pp == c)
		*pp = c->next;
	free(c->streams);
	free(c);
}

CUresult gs__capture_begin(struct gs__stream *s, CUstreamCaptureMode mode,
                           struct gs__graph *g, bool own_graph)
{
	struct gs__capture *c = gs__calloc(1, sizeof(*c));

	if (c == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	c->graph = g;
	c->own_graph = own_graph;
	c->origin = s;
	c->mode = mode;
	c->id = ++gs__drv.next_id;
	c->invalid = CUDA_SUCCESS;
	if (stream_join(c, s) != CUDA_SUCCESS) {
		free(c);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	c->next = live;
	live = c;
	return CUDA_SUCCESS;
}

/* Whether node n leads to one of `to` (or is one). */
static bool leads_to(const struct gs__graph *g, const struct gs__node *n,
                     struct gs__node *const *to, int n_to)
{
	/* the nodes that reach `to`: walk the dependencies backwards */
	bool *seen = gs__calloc((size_t)(g->n_nodes ? g->n_nodes : 1), 1);
	struct gs__node **stack;
	int sp = 0;
	bool found = false;

	stack = gs__calloc((size_t)(g->n_nodes ? g->n_nodes : 1) + (size_t)n_to,
	                   sizeof(*stack));
	if (seen == NULL || stack == NULL) {
		free(seen);
		free(stack);
		return true; /* cannot tell: do not refuse */
	}
	for (int i = 0; i < n_to; i++)
		stack[sp++] = to[i];
	while (sp > 0 && !found) {
		struct gs__node *x = stack[--sp];
		int idx = -1;

		if (x == n) {
			found = true;
			break;
		}
		for (int i = 0; i < g->n_nodes; i++)
			if (g->nodes[i] == x) {
				idx = i;
				break;
			}
		if (idx < 0 || seen[idx])
			continue;
		seen[idx] = true;
		for (int i = 0; i < x->n_deps; i++)
			stack[sp++] = x->deps[i];
	}
	free(seen);
	free(stack);
	return found;
}

CUresult gs__capture_end(struct gs__stream *s, struct gs__graph **out)
{
	struct gs__capture *c = s->capture;
	CUresult r = CUDA_SUCCESS;

	*out = NULL;
	if (c == NULL)
		return CUDA_ERROR_ILLEGAL_STATE;
	if (c->origin != s) {
		/* only the origin ends it; the capture is lost */
		c->invalid = CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
		return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
	}
	if (c->invalid != CUDA_SUCCESS) {
		r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	} else {
		for (int i = 0; i < c->graph->n_nodes; i++)
			if (!leads_to(c->graph, c->graph->nodes[i], s->deps,
			              s->n_deps)) {
				r = CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
				break;
			}
	}
	if (r == CUDA_SUCCESS)
		*out = c->graph;
	else if (c->own_graph)
		gs__graph_free(c->graph);
	capture_free(c);
	return r;
}

void gs__capture_invalidate(struct gs__stream *s, CUresult why)
{
	if (s->capture != NULL && s->capture->invalid == CUDA_SUCCESS)
		s->capture->invalid = why;
}

CUresult gs__capture_node(struct gs__stream *s, struct gs__node *n)
{
	struct gs__capture *c = s->capture;
	CUresult r;

	if (c->invalid != CUDA_SUCCESS)
		return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	r = gs__graph_add(c->graph, n, s->deps, s->n_deps);
	if (r != CUDA_SUCCESS) {
		free(n->deps);
		n->deps = NULL;
		n->n_deps = n->cap_deps = 0;
		return r;
	}
	s->n_deps = 0;
	if (!list_add(&s->deps, &s->n_deps, &s->cap_deps, n)) {
		/* the node is in the graph; the stream lost its place */
		c->invalid = CUDA_ERROR_OUT_OF_MEMORY;
	}
	return CUDA_SUCCESS;
}

CUresult gs__capture_event_record(struct gs__stream *s, struct gs__event *ev)
{
	struct gs__node **copy = NULL;

	if (s->capture->invalid != CUDA_SUCCESS)
		return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	if (s->n_deps > 0) {
		copy = gs__malloc(sizeof(*copy) * (size_t)s->n_deps);
		if (copy == NULL)
			return CUDA_ERROR_OUT_OF_MEMORY;
		memcpy(copy, s->deps, sizeof(*copy) * (size_t)s->n_deps);
	}
	free(ev->cap_deps);
	ev->cap_deps = copy;
	ev->n_cap_deps = s->n_deps;
	ev->cap_id = s->capture->id;
	return CUDA_SUCCESS;
}

CUresult gs__capture_event_wait(struct gs__stream *s, struct gs__event *ev)
{
	struct gs__capture *c = ev->cap_id ? capture_find(ev->cap_id) : NULL;
	CUresult r;

	if (c == NULL) {
		/* an event recorded outside any live capture: a capturing
		 * stream may not wait on it (the graph could not) */
		if (s->capture != NULL) {
			gs__capture_invalidate(
			    s, CUDA_ERROR_STREAM_CAPTURE_ISOLATION);
			return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
		}
		return CUDA_SUCCESS;
	}
	if (s->capture != NULL && s->capture != c) {
		gs__capture_invalidate(s, CUDA_ERROR_STREAM_CAPTURE_ISOLATION);
		c->invalid = CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
		return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
	}
	if (c->invalid != CUDA_SUCCESS)
		return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	if (s->capture == NULL) {
		/* fork: s joins the capture after the event's work */
		if (s == &s->ctx->legacy)
			return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
		r = stream_join(c, s);
		if (r != CUDA_SUCCESS)
			return r;
	}
	for (int i = 0; i < ev->n_cap_deps; i++)
		if (!list_add(&s->deps, &s->n_deps, &s->cap_deps,
		              ev->cap_deps[i]))
			return CUDA_ERROR_OUT_OF_MEMORY;
	return CUDA_SUCCESS;
}

CUresult gs__capture_deps_set(struct gs__stream *s,
                              struct gs__node *const *deps, size_t n, bool add)
{
	struct gs__capture *c = s->capture;

	for (size_t i = 0; i < n; i++)
		if (!gs__h_is(deps[i], GS__H_GRAPH_NODE) ||
		    deps[i]->graph != c->graph)
			return CUDA_ERROR_INVALID_VALUE;
	if (!add)
		s->n_deps = 0;
	for (size_t i = 0; i < n; i++)
		if (!list_add(&s->deps, &s->n_deps, &s->cap_deps, deps[i]))
			return CUDA_ERROR_OUT_OF_MEMORY;
	return CUDA_SUCCESS;
}

void gs__capture_event_gone(struct gs__event *ev)
{
	free(ev->cap_deps);
	ev->cap_deps = NULL;
	ev->n_cap_deps = 0;
	ev->cap_id = 0;
}

CUresult gs__capture_stream_gone(struct gs__stream *s)
{
	struct gs__capture *c = s->capture;

	if (c == NULL)
		return CUDA_SUCCESS;
	if (c->origin == s) {
		struct gs__graph *g = c->graph;
		bool own = c->own_graph;

		capture_free(c);
		if (own)
			gs__graph_free(g);
	} else {
		for (int i = 0; i < c->n_streams; i++)
			if (c->streams[i] == s) {
				c->streams[i] = c->streams[--c->n_streams];
				break;
			}
		stream_leave(s);
		c->invalid = CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
	}
	return CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
}

/* ---- graphs ------------------------------------------------------------- */

struct gs__graph *gs__graph_new(void)
{
	struct gs__graph *g = gs__calloc(1, sizeof(*g));

	if (g != NULL && !gs__h_add(g, GS__H_GRAPH)) {
		free(g);
		g = NULL;
	}
	return g;
}

void gs__graph_free(struct gs__graph *g)
{
	if (g == NULL)
		return;
	if (g->mem_exec != NULL)
		g->mem_exec->mem_graph = NULL;
	for (int i = 0; i < g->n_nodes; i++)
		gs__graph_node_free(g->nodes[i]);
	free(g->nodes);
	gs__h_del(g);
	free(g);
}
