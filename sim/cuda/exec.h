/*
 * exec.h - the sim's PTX interpreter, private to sim/cuda: kernels that
 * are not the workload kit's run for their results (timing stays the
 * cost model's). exec_parse.c reads a module's PTX text once into
 * functions of pre-decoded instructions and links one program per entry
 * (the entry plus every .func it calls, registers and state-space
 * offsets resolved); exec_run.c runs a launch block by block, a warp's
 * 32 lanes in lock step; exec_alu.c evaluates the arithmetic.
 *
 * Registers are rows of 32 lanes of 64 bits in a warp's register file.
 * Immediates, symbols (their addresses) and special registers are rows
 * too, filled when a warp starts, so every operand is a row index.
 */
#ifndef GS_SIM_EXEC_H
#define GS_SIM_EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cuda_int.h"

/* A register's bits as a float / double and back (the low 32 bits for
 * f32), as exec_alu.c's arithmetic and exec_warp.c's atomics read them. */
static inline float gs__x_f32(uint64_t v)
{
	float f;
	uint32_t u = (uint32_t)v;

	memcpy(&f, &u, 4);
	return f;
}

static inline uint64_t gs__x_bf32(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return u;
}

static inline double gs__x_f64(uint64_t v)
{
	double d;

	memcpy(&d, &v, 8);
	return d;
}

static inline uint64_t gs__x_bf64(double d)
{
	uint64_t u;

	memcpy(&u, &d, 8);
	return u;
}

/* Operand and instruction types. */
enum gs__xt {
	XT_NONE,
	XT_B8,
	XT_B16,
	XT_B32,
	XT_B64,
	XT_U8,
	XT_U16,
	XT_U32,
	XT_U64,
	XT_S8,
	XT_S16,
	XT_S32,
	XT_S64,
	XT_F16,
	XT_F32,
	XT_F64,
	XT_BF16,
	XT_F16X2,
	XT_BF16X2,
	XT_B128,
	XT_PRED,
};

enum gs__xop {
	XO_BAD,
	XO_NOP,
	/* arithmetic (exec_alu.c) */
	XO_ADD,
	XO_SUB,
	XO_MUL,
	XO_MAD,
	XO_MUL24,
	XO_MAD24,
	XO_DIV,
	XO_REM,
	XO_ABS,
	XO_NEG,
	XO_MIN,
	XO_MAX,
	XO_AND,
	XO_OR,
	XO_XOR,
	XO_NOT,
	XO_CNOT,
	XO_SHL,
	XO_SHR,
	XO_POPC,
	XO_CLZ,
	XO_BREV,
	XO_BFE,
	XO_BFI,
	XO_BFIND,
	XO_PRMT,
	XO_LOP3,
	XO_SHF,
	XO_FMA,
	XO_RCP,
	XO_SQRT,
	XO_RSQRT,
	XO_EX2,
	XO_LG2,
	XO_SIN,
	XO_COS,
	XO_TANH,
	XO_COPYSIGN,
	XO_TESTP,
	XO_SETP,
	XO_SET,
	XO_SELP,
	XO_SLCT,
	XO_CVT,
	XO_MOV,
	XO_PACK,
	XO_UNPACK,
	XO_ADDC,
	XO_SUBC,
	XO_SAD,
	XO_BMSK,
	XO_DP4A,
	XO_DP2A,
	XO_MADC,
	/* memory, control and warp ops (exec_run.c) */
	XO_CVTA,
	XO_LD,
	XO_ST,
	XO_ATOM,
	XO_RED,
	XO_BRA,
	XO_BAR,
	XO_BARRED,
	XO_RET,
	XO_EXIT,
	XO_CALL,
	XO_SHFL,
	XO_VOTE,
	XO_ACTIVEMASK,
	XO_MATCH,
	XO_CLOCK,
	XO_TRAP,
	XO_MAPA,
	XO_REDUX,
	XO_GLOBALTIMER,
	XO_ELECT,
	XO_PRINTF,
	XO_ASSERT,
	XO_ISSPACEP,
	XO_CPASYNC,
	XO_MBAR,
};

/* Modifier values (ins->m): compare ops, roundings, atomic ops, modes. */
enum {
	XC_EQ = 1,
	XC_NE,
	XC_LT,
	XC_LE,
	XC_GT,
	XC_GE,
	XC_LO,
	XC_LS,
	XC_HI,
	XC_HS,
	XC_EQU,
	XC_NEU,
	XC_LTU,
	XC_LEU,
	XC_GTU,
	XC_GEU,
	XC_NUM,
	XC_NAN,
};
enum {
	XR_NONE,
	XR_RN,
	XR_RZ,
	XR_RM,
	XR_RP,
	XR_RNI,
	XR_RZI,
	XR_RMI,
	XR_RPI,
	XR_RNA
};
enum {
	XA_ADD = 1,
	XA_MIN,
	XA_MAX,
	XA_INC,
	XA_DEC,
	XA_AND,
	XA_OR,
	XA_XOR,
	XA_EXCH,
	XA_CAS
};
enum { XS_UP = 1, XS_DOWN, XS_BFLY, XS_IDX };
enum { XV_ALL = 1, XV_ANY, XV_UNI, XV_BALLOT };
enum { XB_NONE, XB_AND, XB_OR, XB_XOR }; /* setp's combining op (ins->m2) */

/* ins->f flags */
#define XF_FTZ    0x01
#define XF_SAT    0x02
#define XF_HI     0x04 /* mul.hi, shf.r (right) */
#define XF_WIDE   0x08
#define XF_NEGG   0x10 /* guard negated (@!%p) */
#define XF_NEGC   0x20 /* c (predicate) operand negated */
#define XF_TO     0x40 /* cvta.to.* ; shf .clamp */
#define XF_APPROX 0x80

/* State spaces (ins->sp). */
enum {
	XSP_GENERIC,
	XSP_GLOBAL,
	XSP_SHARED,
	XSP_LOCAL,
	XSP_PARAM,
	XSP_CONST,
	XSP_CLUSTER
};

/* One pre-decoded instruction; operands are rows (-1: none). */
struct gs__xins {
	uint16_t op;
	uint8_t t, t2; /* type; cvt's source / setp's compare type */
	uint8_t m, m2; /* modifier (XC_/XR_/XA_/XS_/XV_), second one */
	uint8_t f;     /* XF_ flags */
	uint8_t sp;    /* XSP_ */
	uint8_t nv;    /* vector width 1, 2, 4 */
	int32_t g;     /* guard predicate row, -1 none */
	int32_t d, d2; /* destinations */
	int32_t a, b, c, e;
	int32_t v[4]; /* ld/st vector rows; pack/unpack parts */
	int64_t imm;  /* address offset, branch target, call target */
	uint32_t src; /* offset of the instruction in the PTX text */
};

/* What fills a row that is not a register (gs__xrow.kind). */
enum { XK_REG, XK_CONST, XK_SYM, XK_SPECIAL };

/* Special registers (gs__xrow.val for XK_SPECIAL). */
enum {
	XSR_TID_X,
	XSR_TID_Y,
	XSR_TID_Z,
	XSR_NTID_X,
	XSR_NTID_Y,
	XSR_NTID_Z,
	XSR_CTAID_X,
	XSR_CTAID_Y,
	XSR_CTAID_Z,
	XSR_NCTAID_X,
	XSR_NCTAID_Y,
	XSR_NCTAID_Z,
	XSR_LANEID,
	XSR_WARPID,
	XSR_NWARPID,
	XSR_SMID,
	XSR_NSMID,
	XSR_GRIDID,
	XSR_LANEMASK_EQ,
	XSR_LANEMASK_LT,
	XSR_LANEMASK_LE,
	XSR_LANEMASK_GT,
	XSR_LANEMASK_GE,
	XSR_DYN_SMEM,
	XSR_TOTAL_SMEM,
	XSR_CLUSTER_CTARANK,
	XSR_CLUSTER_NCTARANK,
	XSR_CLUSTERID_X,
	XSR_CLUSTERID_Y,
	XSR_CLUSTERID_Z,
	XSR_NCLUSTERID_X,
	XSR_NCLUSTERID_Y,
	XSR_NCLUSTERID_Z,
	XSR_CLUSTER_CTAID_X,
	XSR_CLUSTER_CTAID_Y,
	XSR_CLUSTER_CTAID_Z,
	XSR_CLUSTER_NCTAID_X,
	XSR_CLUSTER_NCTAID_Y,
	XSR_CLUSTER_NCTAID_Z,
	XSR_IS_EXPLICIT_CLUSTER,
	XSR_ZERO,
	XSR_ENVREG,
	XSR_N
};

/* Symbols a linked program refers to, resolved when it launches. */
enum { XY_GLOBAL, XY_SHARED, XY_LOCAL, XY_KPARAM, XY_FPARAM, XY_FUNC };
struct gs__xsym {
	char *name;   /* owned */
	int kind;     /* XY_ */
	uint64_t off; /* shared/local/param offset, or function index */
};

struct gs__xrow {
	uint8_t kind; /* XK_ */
	uint64_t val; /* constant bits, symbol index or special (XSR_) */
};

/* A call site: the callee's first instruction and the parameter bytes
 * copied in (caller's .param variables to the callee's) and back. */
#define GS__XCALL_ARGS 24
struct gs__xcall {
	int pc;   /* callee's first instruction */
	int site; /* the call instruction's */
	int n_args;
	uint32_t src[GS__XCALL_ARGS], dst[GS__XCALL_ARGS], size[GS__XCALL_ARGS];
	uint32_t ret_src, ret_dst, ret_size; /* ret_size 0: none */
};

/* One entry linked with the functions it calls: ready to run. */
struct gs__xprog {
	struct gs__xcall *calls;
	int n_calls;
	char *entry; /* owned */
	struct gs__xins *code;
	int n_code;
	struct gs__xrow *rows;
	int n_rows;
	struct gs__xsym *syms;
	int n_syms;
	uint32_t shared_static; /* bytes of static .shared */
	uint32_t local_size;    /* per thread */
	uint32_t fparam_size;   /* per thread: .func parameters */
	char err[200];          /* why it cannot run ("" when it can) */
	CUresult err_code;      /* and the launch's error then */
	struct gs__xprog *next;
};

/* A module's functions and variables (exec_mod.c), cached in the
 * module with the programs linked from it. */
struct xfunc {
	char *name;
	bool entry;
	const char *ret, *ret_end;       /* return parameter list, or NULL */
	const char *params, *params_end; /* parameter list */
	const char *body, *body_end;     /* between the braces, or NULL */
	const char *dirs, *dirs_end;     /* performance directives */
};

struct xvar {
	char *name;
	int space; /* XSP_SHARED, XSP_GLOBAL (.global and .const) */
	uint64_t size, align;
	bool dynamic; /* extern .shared x[] */
};

struct gs__xmod {
	char *text; /* comments blanked */
	struct xfunc *funcs;
	int n_funcs;
	struct xvar *vars;
	int n_vars;
	struct gs__xprog *progs;
};

struct gs__xmod *gs__xmod_read(const char *text);
void gs__xprog_free(struct gs__xprog *p);

/* ---- text helpers (exec_text.c) ---- */
char *gs__x_dupn(const char *s, size_t n);
bool gs__x_idc(char c);
const char *gs__x_skip_ws(const char *p);
/* the word (identifier characters) at p, *n its length */
const char *gs__x_word(const char *p, size_t *n);
bool gs__x_is(const char *w, size_t n, const char *lit);
/* the bracket closing the one at p, or NULL */
const char *gs__x_match(const char *p);
int gs__x_type_bytes(const char *w, size_t n);
/* "[.align A] .type name[N]" -> name, size, alignment, dynamic ([]) */
void gs__x_decl_shape(const char *p, const char *end, const char **name,
                      size_t *name_n, uint64_t *size, uint64_t *align,
                      bool *dyn);
void gs__x_blank_comments(char *t);
uint64_t gs__x_align_up(uint64_t v, uint64_t a);
bool gs__x_grow(void **arr, int *cap, int need, size_t elem);
int gs__x_type_of(const char *w, size_t n);
int gs__x_cmp_of(const char *w, size_t n);
int gs__x_rnd_of(const char *w, size_t n);
int gs__x_atom_of(const char *w, size_t n);
int gs__x_space_of(const char *w, size_t n);
bool gs__x_is_float(int t);
/* an immediate's bits for type t; false when s is not a number */
bool gs__x_imm_bits(const char *s, size_t n, int t, uint64_t *out);
/* a special register's XSR_ number, or -1 */
int gs__x_special(const char *s, size_t n);

/* Marks calls that can recurse XO_BAD (exec_link.c); the calls' pc still
 * hold callee indices into the module's functions, start[] their first
 * instruction (-2: not linked). false: out of memory. */
bool gs__xcalls_mark_recursion(struct gs__xprog *p, const int *start, int nf);

/* The program for entry `name` of PTX text `text` (parsed once per
 * module into *cache). NULL only when out of memory; a program that
 * cannot run has err set. Lock held. */
struct gs__xprog *gs__xprog_get(struct gs__xmod **cache, const char *text,
                                const char *name);
/* Frees a module's cache (module.c calls it when the module goes). */
void gs__xmod_free(struct gs__xmod *m);
/* The text of the instruction at src in the PTX text, for messages. */
void gs__xins_text(const char *text, uint32_t src, char *buf, size_t len);

/* Runs a launch of a kernel the workload kit does not know for its
 * results. Errors become the context's sticky error (as the GPU's would
 * be reported at the next synchronizing call) and one log line. */
void gs__exec_launch(const struct gs__launch *l, struct gs__ctx *ctx);

/* Where module m's global `name` lives in ctx (module.c). */
CUresult gs__module_global_addr(struct gs__module *m, struct gs__ctx *ctx,
                                const char *name, uint64_t *dptr);

/* Thread-instructions executed by this process so far (for the bench). */
uint64_t gs__exec_count(void);

/* ---- between exec_run.c and exec_alu.c ---- */
/* Evaluates an arithmetic instruction for the lanes in mask. false when
 * the op is not arithmetic. R: the warp's rows. */
bool gs__xalu(const struct gs__xins *in, uint64_t *R, uint32_t mask);

/* ---- warps (exec_warp.c, for exec_run.c) ---- */
#define GS__XCALL_DEPTH 32
struct warp {
	uint64_t *R;      /* rows * 32 */
	int32_t pc;       /* the running group's */
	uint32_t mask;    /* lanes in the running group */
	uint32_t live;    /* lanes not exited */
	bool div;         /* lanes outside the group have lane_pc */
	bool waiting;     /* at a barrier */
	int32_t next_min; /* lowest pc outside the group */
	int32_t lane_pc[32];
	uint8_t depth[32];
	uint32_t stack[32][GS__XCALL_DEPTH]; /* call index per frame */
};

/* for each lane l of mask em, in order */
#define LANES(em, ...)                                                         \
	for (uint32_t m_ = (em); m_; m_ &= m_ - 1) {                           \
		int l = __builtin_ctz(m_);                                     \
		__VA_ARGS__                                                    \
	}

int gs__xw_tsize(int t);
/* the value of type t at p, sign- or zero-extended to 64 bits */
uint64_t gs__xw_load(const uint8_t *p, int t);
void gs__xw_store(uint8_t *p, int t, uint64_t v);
/* picks the group of lanes to run next (see exec_run.c's comment) */
void gs__xw_reselect(const struct gs__xprog *p, struct warp *w);
/* sends lanes em of the group to pc `to`, the rest to pc + 1 */
void gs__xw_split(const struct gs__xprog *p, struct warp *w, uint32_t em,
                  int32_t to);
/* one atomic read-modify-write at p; returns the old value */
uint64_t gs__xw_atomic_op(uint8_t *p, const struct gs__xins *in, uint64_t b,
                          uint64_t c);
void gs__xw_shfl(struct warp *w, const struct gs__xins *in, uint32_t em);
void gs__xw_vote(struct warp *w, const struct gs__xins *in, uint32_t em);
void gs__xw_match(struct warp *w, const struct gs__xins *in, uint32_t em);
void gs__xw_redux(struct warp *w, const struct gs__xins *in, uint32_t em);

#endif
