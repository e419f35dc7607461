/*
 * exec_text.c - the PTX interpreter's text helpers (exec.h): words,
 * brackets, declarations' shapes, comments, and the names of types,
 * comparisons, roundings, atomic operations, state spaces and special
 * registers, and immediates' bits. Pure functions over the text, shared
 * by exec_mod.c and exec_parse.c.
 */
#include "exec.h"
#include "halloc.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

char *gs__x_dupn(const char *s, size_t n)
{
	char *p = gs__malloc(n + 1);

	if (p != NULL) {
		memcpy(p, s, n);
		p[n] = 0;
	}
	return p;
}

bool gs__x_idc(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '$' || c == '.' ||
	       c == '%';
}

const char *gs__x_skip_ws(const char *p)
{
	while (*p && isspace((unsigned char)*p))
		p++;
	return p;
}

/* The word at p (identifier chars); *n its length. */
const char *gs__x_word(const char *p, size_t *n)
{
	const char *s;

	p = gs__x_skip_ws(p);
	s = p;
	while (gs__x_idc(*p))
		p++;
	*n = (size_t)(p - s);
	return s;
}

bool gs__x_is(const char *w, size_t n, const char *lit)
{
	return strlen(lit) == n && memcmp(w, lit, n) == 0;
}

/* Matching close of the bracket at p (same kind), or NULL. */
const char *gs__x_match(const char *p)
{
	char o = *p, c = o == '(' ? ')' : o == '{' ? '}' : ']';
	int depth = 0;

	for (; *p; p++) {
		if (*p == o)
			depth++;
		else if (*p == c && --depth == 0)
			return p;
	}
	return NULL;
}

int gs__x_type_bytes(const char *w, size_t n)
{
	if (gs__x_is(w, n, ".pred"))
		return 1;
	if (n >= 3 && w[0] == '.' && strchr("usbf", w[1]) != NULL &&
	    isdigit((unsigned char)w[2])) {
		int bits = atoi(w + 2);
		return bits >= 8 ? bits / 8 : 1;
	}
	return 0;
}

/* Reads "[.align A] .type name[N][M]" declarations' size and alignment.
 * p is after the state space; stops at end. OUT: name span. */
void gs__x_decl_shape(const char *p, const char *end, const char **name,
                      size_t *name_n, uint64_t *size, uint64_t *align,
                      bool *dyn)
{
	uint64_t elem = 0, count = 1;
	size_t n;

	*align = 0;
	*dyn = false;
	*name = NULL;
	*name_n = 0;
	while (p < end) {
		const char *w = gs__x_word(p, &n);

		if (n == 0) {
			p = w + 1;
			continue;
		}
		p = w + n;
		if (gs__x_is(w, n, ".align")) {
			*align = strtoull(p, (char **)&p, 0);
		} else if (w[0] == '.' && gs__x_type_bytes(w, n) > 0) {
			elem = (uint64_t)gs__x_type_bytes(w, n);
		} else if (w[0] == '.') {
			continue; /* .v4, .ptr, ... */
		} else {
			*name = w;
			*name_n = n;
			break;
		}
	}
	if (*name != NULL && strncmp(*name, "", 0) == 0)
		(void)0;
	/* vector variables: .v2/.v4 multiply */
	for (const char *q = *name ? *name : end;
	     q < end && *q != '=' && *q != ';' && *q != ','; q++) {
		if (*q == '[') {
			const char *c = strchr(q, ']');
			if (c == NULL || c > end)
				break;
			if (c == q + 1 || !isdigit((unsigned char)q[1]))
				*dyn = true;
			else
				count *= strtoull(q + 1, NULL, 0);
			q = c;
		}
	}
	*size = elem * count;
	if (*align == 0)
		*align = elem ? elem : 1;
}

void gs__x_blank_comments(char *t)
{
	for (char *p = t; *p; p++) {
		if (*p == '"') {
			for (p++; *p && *p != '"'; p++)
				;
			if (!*p)
				return;
		} else if (p[0] == '/' && p[1] == '/') {
			while (*p && *p != '\n')
				*p++ = ' ';
			if (!*p)
				return;
		} else if (p[0] == '/' && p[1] == '*') {
			while (*p && !(p[0] == '*' && p[1] == '/'))
				*p++ = ' ';
			if (!*p)
				return;
			p[0] = p[1] = ' ';
			p++;
		}
	}
}

uint64_t gs__x_align_up(uint64_t v, uint64_t a)
{
	return a > 1 ? (v + a - 1) / a * a : v;
}

bool gs__x_grow(void **arr, int *cap, int need, size_t elem)
{
	if (need <= *cap)
		return true;
	int nc = *cap ? *cap * 2 : 64;
	while (nc < need)
		nc *= 2;
	void *n = gs__realloc(*arr, elem * (size_t)nc);
	if (n == NULL)
		return false;
	*arr = n;
	*cap = nc;
	return true;
}

int gs__x_type_of(const char *w, size_t n)
{
	static const struct {
		const char *s;
		int t;
	} tt[] = {
	    {"b8", XT_B8},     {"b16", XT_B16},     {"b32", XT_B32},
	    {"b64", XT_B64},   {"u8", XT_U8},       {"u16", XT_U16},
	    {"u32", XT_U32},   {"u64", XT_U64},     {"s8", XT_S8},
	    {"s16", XT_S16},   {"s32", XT_S32},     {"s64", XT_S64},
	    {"f16", XT_F16},   {"f32", XT_F32},     {"f64", XT_F64},
	    {"bf16", XT_BF16}, {"f16x2", XT_F16X2}, {"bf16x2", XT_BF16X2},
	    {"b128", XT_B128}, {"pred", XT_PRED},
	};
	for (size_t i = 0; i < sizeof(tt) / sizeof(tt[0]); i++)
		if (gs__x_is(w, n, tt[i].s))
			return tt[i].t;
	return XT_NONE;
}

int gs__x_cmp_of(const char *w, size_t n)
{
	static const char *c[] = {"eq",  "ne",  "lt",  "le",  "gt",  "ge",
	                          "lo",  "ls",  "hi",  "hs",  "equ", "neu",
	                          "ltu", "leu", "gtu", "geu", "num", "nan"};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		if (gs__x_is(w, n, c[i]))
			return (int)i + XC_EQ;
	return 0;
}

int gs__x_rnd_of(const char *w, size_t n)
{
	static const char *c[] = {"rn",  "rz",  "rm",  "rp", "rni",
	                          "rzi", "rmi", "rpi", "rna"};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		if (gs__x_is(w, n, c[i]))
			return (int)i + XR_RN;
	return 0;
}

int gs__x_atom_of(const char *w, size_t n)
{
	static const char *c[] = {"add", "min", "max", "inc",  "dec",
	                          "and", "or",  "xor", "exch", "cas"};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		if (gs__x_is(w, n, c[i]))
			return (int)i + XA_ADD;
	return 0;
}

int gs__x_space_of(const char *w, size_t n)
{
	if (gs__x_is(w, n, "global"))
		return XSP_GLOBAL;
	if (gs__x_is(w, n, "shared") || gs__x_is(w, n, "shared::cta"))
		return XSP_SHARED;
	if (gs__x_is(w, n, "shared::cluster"))
		return XSP_CLUSTER;
	if (gs__x_is(w, n, "local"))
		return XSP_LOCAL;
	if (gs__x_is(w, n, "param") || gs__x_is(w, n, "param::func") ||
	    gs__x_is(w, n, "param::entry"))
		return XSP_PARAM;
	if (gs__x_is(w, n, "const"))
		return XSP_CONST;
	return -1;
}

bool gs__x_is_float(int t)
{
	return t == XT_F32 || t == XT_F64 || t == XT_F16 || t == XT_BF16;
}

/* An immediate's bits for type t, or false when s is not a number. */
bool gs__x_imm_bits(const char *s, size_t n, int t, uint64_t *out)
{
	char buf[80];
	char *end;

	if (n == 0 || n >= sizeof(buf))
		return false;
	memcpy(buf, s, n);
	buf[n] = 0;
	if ((buf[0] == '0') && (buf[1] == 'f' || buf[1] == 'F') && n == 10) {
		uint32_t b = (uint32_t)strtoul(buf + 2, &end, 16);
		if (t == XT_F64) {
			float f;
			double d;
			memcpy(&f, &b, 4);
			d = f;
			memcpy(out, &d, 8);
		} else {
			*out = b;
		}
		return *end == 0;
	}
	if ((buf[0] == '0') && (buf[1] == 'd' || buf[1] == 'D') && n == 18) {
		uint64_t b = strtoull(buf + 2, &end, 16);
		if (t == XT_F32) {
			double d;
			float f;
			uint32_t u;
			memcpy(&d, &b, 8);
			f = (float)d;
			memcpy(&u, &f, 4);
			*out = u;
		} else {
			*out = b;
		}
		return *end == 0;
	}
	if (!(isdigit((unsigned char)buf[0]) || buf[0] == '-' || buf[0] == '+'))
		return false;
	if (gs__x_is_float(t) && (strchr(buf, '.') || strchr(buf, 'e'))) {
		double d = strtod(buf, &end);
		if (t == XT_F32) {
			float f = (float)d;
			uint32_t u;
			memcpy(&u, &f, 4);
			*out = u;
		} else {
			memcpy(out, &d, 8);
		}
		return *end == 0;
	}
	if (buf[0] == '-')
		*out = (uint64_t)strtoll(buf, &end, 0);
	else
		*out = strtoull(buf, &end, 0);
	if (*end == 'U' || *end == 'u')
		end++;
	if (*end != 0)
		return false;
	if (t == XT_F16 || t == XT_BF16)
		return true;     /* half immediates are their bits (0x3C00) */
	if (gs__x_is_float(t)) { /* an integer literal where a float goes */
		double d = (double)(int64_t)*out;
		if (t == XT_F32) {
			float f = (float)d;
			uint32_t u;
			memcpy(&u, &f, 4);
			*out = u;
		} else {
			memcpy(out, &d, 8);
		}
	}
	return true;
}

static const struct {
	const char *name;
	int sr;
} specials[] = {
    {"%tid.x", XSR_TID_X},
    {"%tid.y", XSR_TID_Y},
    {"%tid.z", XSR_TID_Z},
    {"%ntid.x", XSR_NTID_X},
    {"%ntid.y", XSR_NTID_Y},
    {"%ntid.z", XSR_NTID_Z},
    {"%ctaid.x", XSR_CTAID_X},
    {"%ctaid.y", XSR_CTAID_Y},
    {"%ctaid.z", XSR_CTAID_Z},
    {"%nctaid.x", XSR_NCTAID_X},
    {"%nctaid.y", XSR_NCTAID_Y},
    {"%nctaid.z", XSR_NCTAID_Z},
    {"%laneid", XSR_LANEID},
    {"%warpid", XSR_WARPID},
    {"%nwarpid", XSR_NWARPID},
    {"%smid", XSR_SMID},
    {"%nsmid", XSR_NSMID},
    {"%gridid", XSR_GRIDID},
    {"%lanemask_eq", XSR_LANEMASK_EQ},
    {"%lanemask_lt", XSR_LANEMASK_LT},
    {"%lanemask_le", XSR_LANEMASK_LE},
    {"%lanemask_gt", XSR_LANEMASK_GT},
    {"%lanemask_ge", XSR_LANEMASK_GE},
    {"%dynamic_smem_size", XSR_DYN_SMEM},
    {"%total_smem_size", XSR_TOTAL_SMEM},
    {"%cluster_ctarank", XSR_CLUSTER_CTARANK},
    {"%cluster_nctarank", XSR_CLUSTER_NCTARANK},
    {"%clusterid.x", XSR_CLUSTERID_X},
    {"%clusterid.y", XSR_CLUSTERID_Y},
    {"%clusterid.z", XSR_CLUSTERID_Z},
    {"%nclusterid.x", XSR_NCLUSTERID_X},
    {"%nclusterid.y", XSR_NCLUSTERID_Y},
    {"%nclusterid.z", XSR_NCLUSTERID_Z},
    {"%cluster_ctaid.x", XSR_CLUSTER_CTAID_X},
    {"%cluster_ctaid.y", XSR_CLUSTER_CTAID_Y},
    {"%cluster_ctaid.z", XSR_CLUSTER_CTAID_Z},
    {"%cluster_nctaid.x", XSR_CLUSTER_NCTAID_X},
    {"%cluster_nctaid.y", XSR_CLUSTER_NCTAID_Y},
    {"%cluster_nctaid.z", XSR_CLUSTER_NCTAID_Z},
    {"%is_explicit_cluster", XSR_IS_EXPLICIT_CLUSTER},
    {"%envreg0", XSR_ENVREG + 0},
};

int gs__x_special(const char *s, size_t n)
{
	for (size_t i = 0; i < sizeof(specials) / sizeof(specials[0]); i++)
		if (gs__x_is(s, n, specials[i].name))
			return specials[i].sr;
	return -1;
}

void gs__xins_text(const char *text, uint32_t src, char *buf, size_t len)
{
	const char *p = text + src;
	size_t n = 0;
	bool space = false;

	/* up to the ';', whitespace runs (a call spans lines) as one space */
	for (; *p && *p != ';' && n + 1 < len; p++) {
		if (isspace((unsigned char)*p)) {
			space = n > 0;
			continue;
		}
		if (space && n + 2 < len)
			buf[n++] = ' ';
		space = false;
		buf[n++] = *p;
	}
	buf[n] = 0;
}
