/*
 * handle.c - the table of live CUDA handles of this process: pointer ->
 * type, an open-addressing hash set with linear probing and tombstones.
 * Every handle the driver hands out is added here and checked before use,
 * so a destroyed or invented handle gives CUDA_ERROR_INVALID_HANDLE (or
 * _CONTEXT) rather than a crash. Guarded by gs__drv.mu.
 */
#include "cuda_int.h"
#include "halloc.h"

#include <stdlib.h>

#define TOMB ((uintptr_t)1)

struct slot {
	uintptr_t key; /* 0 empty, TOMB deleted */
	enum gs__htype type;
};

static struct slot *tab;
static size_t cap, used; /* used counts live + tombstones */

static size_t hash(uintptr_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return (size_t)k;
}

static bool grow(void)
{
	size_t ncap = cap ? cap * 2 : 256;
	struct slot *n = gs__calloc(ncap, sizeof(*n));

	if (n == NULL)
		return false;
	for (size_t i = 0; i < cap; i++) {
		if (tab[i].key == 0 || tab[i].key == TOMB)
			continue;
		size_t j = hash(tab[i].key) & (ncap - 1);
		while (n[j].key != 0)
			j = (j + 1) & (ncap - 1);
		n[j] = tab[i];
	}
	free(tab);
	tab = n;
	cap = ncap;
	used = 0;
	for (size_t i = 0; i < cap; i++)
		if (tab[i].key != 0)
			used++;
	return true;
}

bool gs__h_add(const void *p, enum gs__htype t)
{
	uintptr_t k = (uintptr_t)p;

	if (k == 0 || k == TOMB)
		return false;
	if ((used + 1) * 2 > cap && !grow())
		return false;
	size_t j = hash(k) & (cap - 1);
	while (tab[j].key != 0 && tab[j].key != TOMB && tab[j].key != k)
		j = (j + 1) & (cap - 1);
	if (tab[j].key == 0)
		used++;
	tab[j].key = k;
	tab[j].type = t;
	return true;
}

static struct slot *find(uintptr_t k)
{
	if (cap == 0 || k == 0 || k == TOMB)
		return NULL;
	size_t j = hash(k) & (cap - 1);
	for (size_t n = 0; n < cap; n++) {
		if (tab[j].key == 0)
			return NULL;
		if (tab[j].key == k)
			return &tab[j];
		j = (j + 1) & (cap - 1);
	}
	return NULL;
}

bool gs__h_is(const void *p, enum gs__htype t)
{
	struct slot *s = find((uintptr_t)p);

	return s != NULL && s->type == t;
}

void gs__h_del(const void *p)
{
	struct slot *s = find((uintptr_t)p);

	if (s != NULL)
		s->key = TOMB;
}

/*
 * Calls fn on every live handle of type t by walking the table in place,
 * starting over whenever fn made it rehash (an add). For gs__h_each when
 * its list cannot be allocated: fn is then called again on handles it
 * has seen, which the callbacks here allow (each one deletes what it
 * handles, or leaves alone what is not its concern).
 */
static void each_in_place(enum gs__htype t, void (*fn)(void *p, void *arg),
                          void *arg)
{
	const struct slot *at = tab;

	for (size_t i = 0; i < cap; i++) {
		if (tab[i].key == 0 || tab[i].key == TOMB || tab[i].type != t)
			continue;
		fn((void *)tab[i].key, arg);
		if (tab != at) {
			at = tab;
			i = (size_t)-1;
		}
	}
}

void gs__h_each(enum gs__htype t, void (*fn)(void *p, void *arg), void *arg)
{
	/* Collect first: fn may delete (turning slots into tombstones) or
	 * add (which may rehash the table). Teardown runs through here and
	 * must not stop for want of memory: a few handles are collected on
	 * the stack, and without memory for more the table is walked in
	 * place. */
	void *small[64], **list = small;
	size_t n = 0, k = 0;

	for (size_t i = 0; i < cap; i++)
		if (tab[i].key != 0 && tab[i].key != TOMB && tab[i].type == t)
			n++;
	if (n == 0)
		return;
	if (n > sizeof(small) / sizeof(small[0]))
		list = gs__malloc(n * sizeof(*list));
	if (list == NULL) {
		each_in_place(t, fn, arg);
		return;
	}
	for (size_t i = 0; i < cap; i++)
		if (tab[i].key != 0 && tab[i].key != TOMB && tab[i].type == t)
			list[k++] = (void *)tab[i].key;
	for (size_t i = 0; i < k; i++)
		if (gs__h_is(list[i], t))
			fn(list[i], arg);
	if (list != small)
		free(list);
}
