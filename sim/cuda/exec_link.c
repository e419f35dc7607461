/*
 * exec_link.c - checks on a linked PTX program's calls (exec.h): a .func
 * keeps its registers in fixed rows, not in a frame per call, so a call
 * that can come back to its caller (recursion, direct or through other
 * functions) is made XO_BAD and fails the launch if a thread makes it.
 */
#include "exec.h"
#include "halloc.h"

#include <stdlib.h>
#include <string.h>

/* The function (index into m->funcs) whose code holds pc. */
static int func_at(const int *start, int n_funcs, int pc)
{
	int best = -1;

	for (int f = 0; f < n_funcs; f++)
		if (start[f] >= 0 && start[f] <= pc &&
		    (best < 0 || start[f] > start[best]))
			best = f;
	return best;
}

/*
 * A .func's registers are its own, not a frame's: a call that can come
 * back to its caller (recursion) would overwrite them, so such calls
 * become XO_BAD (the launch fails if a thread makes one). Before the
 * calls' pc fields are relocated (they hold callee indices). false: out
 * of memory.
 */
bool gs__xcalls_mark_recursion(struct gs__xprog *p, const int *start, int nf)
{
	int n = p->n_calls;
	int *caller = gs__calloc((size_t)n + 1, sizeof(int));
	bool *seen = gs__calloc((size_t)nf + 1, sizeof(bool));
	int *stack = gs__calloc((size_t)nf + 1, sizeof(int));
	bool ok = caller != NULL && seen != NULL && stack != NULL;

	for (int i = 0; ok && i < n; i++)
		caller[i] = func_at(start, nf, p->calls[i].site);
	for (int i = 0; ok && i < n; i++) {
		/* can the callee reach the caller? */
		int top = 0, target = caller[i];
		bool back = false;

		if (p->calls[i].pc < 0)
			continue; /* vprintf, __assertfail */
		memset(seen, 0, sizeof(bool) * (size_t)nf);
		stack[top++] = p->calls[i].pc;
		seen[p->calls[i].pc] = true;
		while (top > 0 && !back) {
			int f = stack[--top];
			if (f == target) {
				back = true;
				break;
			}
			for (int j = 0; j < n; j++)
				if (caller[j] == f && p->calls[j].pc >= 0 &&
				    !seen[p->calls[j].pc]) {
					seen[p->calls[j].pc] = true;
					stack[top++] = p->calls[j].pc;
				}
		}
		if (back)
			p->code[p->calls[i].site].op = XO_BAD;
	}
	free(caller);
	free(seen);
	free(stack);
	return ok;
}
