/*
 * exec_lk.h - private to the interpreter's reader (exec_decode.c,
 * exec_parse.c): the state of linking one entry, a statement split into
 * its parts, and the decoder's calls.
 */
#ifndef GS_SIM_EXEC_LK_H
#define GS_SIM_EXEC_LK_H

#include "exec.h"

struct regdecl {
	const char *prefix; /* in the text */
	size_t n;
	int count; /* %r<count>, or -1: one register named prefix */
	int base;
};

struct label {
	const char *name;
	size_t n;
	int pc;
};

struct fixup {
	int pc;
	const char *name;
	size_t n;
};

/* A linker's state while it decodes one entry and its callees. */
struct lk {
	struct gs__xmod *m;
	struct gs__xprog *p;
	int cap_code, cap_rows, cap_syms, cap_calls;
	/* the function being decoded */
	int fi;
	struct regdecl *regs;
	int n_regs, cap_regs;
	struct label *labels;
	int n_labels, cap_labels;
	struct fixup *fix;
	int n_fix, cap_fix;
	/* functions linked: index into m->funcs -> start pc (-1 queued) */
	int *start;
	int *queue, n_queue;
	int sink; /* row for '_' */
	bool oom;
};

#define MAXP 12
#define MAXO 8

struct stmt {
	const char *op;
	size_t op_n;
	const char *part[MAXP];
	size_t part_n[MAXP];
	int n_parts;
	const char *opd[MAXO];
	size_t opd_n[MAXO];
	int n_opds;
	int types[3];
	int n_types;
};

int gs__xd_new_row(struct lk *k, uint8_t kind, uint64_t val);
int gs__xd_const_row(struct lk *k, uint64_t bits);
int gs__xd_sym_add(struct lk *k, const char *name, size_t n, int kind,
                   uint64_t off);
int gs__xd_sym_row(struct lk *k, int sym);
/* function-local symbols: name -> symbol (the latest wins) */
bool gs__xd_lsym_add(struct lk *k, const char *name, size_t n, int sym);
void gs__xd_locals_clear(void);
void gs__xd_locals_free(void);
/* a name's symbol: function-local, module variable, function; or -1 */
int gs__xd_find_sym(struct lk *k, const char *name, size_t n);
int gs__xd_find_reg(struct lk *k, const char *name, size_t n);
int gs__xd_operand(struct lk *k, const char *s, size_t n, int t, bool *neg);
int gs__xd_dst_row(struct lk *k, const char *s, size_t n);
bool gs__xd_has(const struct stmt *s, const char *lit);
/* splits "a, {b, c}, [d+4]" at top-level commas */
void gs__xd_split_opds(struct stmt *s, const char *p, const char *end);
/* one instruction into `in`; false: outside the subset */
bool gs__xd_decode(struct lk *k, struct stmt *s, struct gs__xins *in);

#endif
