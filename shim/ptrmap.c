/*
 * ptrmap.c - the allocations this process made through the shim: device
 * pointer, VMM handle, array or context -> (bytes, device slot, context).
 * A free looks its key up here; a key that is not here was not charged
 * and passes through to the driver untouched.
 *
 * An open-addressing hash table (linear probing, backward-shift delete)
 * keyed by (kind, key), grown by doubling at 50 % load, capped at
 * GS__PTRMAP_MAX entries (past that, or when it cannot grow for want of
 * host memory, an allocation stays charged until its process exits: the
 * books err on the side of the cap). One mutex; the
 * allocation path is not hot enough to need more.
 */
#include "shim_int.h"

#include "gs/faultinj.h"

#include <stdlib.h>
#include <string.h>

#define GS__PTRMAP_MIN 1024u
#define GS__PTRMAP_MAX (1u << 24)

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct gs__alloc *tab; /* kind == 0: empty */
static uint32_t cap, used;

static uint32_t hash(uint8_t kind, uint64_t key)
{
	uint64_t h = key ^ ((uint64_t)kind << 56);

	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return (uint32_t)h;
}

static bool grow(void)
{
	uint32_t ncap = cap ? cap * 2 : GS__PTRMAP_MIN;
	struct gs__alloc *nt, *old = tab;
	uint32_t ocap = cap;

	if (ncap > GS__PTRMAP_MAX)
		return false;
	/* "shim.malloc" (tests): out of host memory. */
	nt = gs_fault_calloc("shim.malloc", ncap, sizeof(*nt));
	if (nt == NULL)
		return false;
	tab = nt;
	cap = ncap;
	used = 0;
	for (uint32_t i = 0; i < ocap; i++) {
		uint32_t j;

		if (old[i].kind == 0)
			continue;
		j = hash(old[i].kind, old[i].key) & (cap - 1);
		while (tab[j].kind != 0)
			j = (j + 1) & (cap - 1);
		tab[j] = old[i];
		used++;
	}
	free(old);
	return true;
}

bool gs__ptrmap_put(const struct gs__alloc *a)
{
	uint32_t j;
	bool ok = true;

	(void)pthread_mutex_lock(&mu);
	if ((used + 1) * 2 > cap && !grow()) {
		ok = false;
		goto out;
	}
	j = hash(a->kind, a->key) & (cap - 1);
	while (tab[j].kind != 0 &&
	       !(tab[j].kind == a->kind && tab[j].key == a->key))
		j = (j + 1) & (cap - 1);
	if (tab[j].kind == 0)
		used++;
	tab[j] = *a;
out:
	(void)pthread_mutex_unlock(&mu);
	return ok;
}

/* Lock held: removes slot j, shifting the probe chain back. */
static void del(uint32_t j)
{
	uint32_t i = j;

	tab[j].kind = 0;
	used--;
	for (;;) {
		uint32_t h;

		i = (i + 1) & (cap - 1);
		if (tab[i].kind == 0)
			return;
		h = hash(tab[i].kind, tab[i].key) & (cap - 1);
		/* Move i back to j when its home is not in (j, i]. */
		if ((j < i) ? (h <= j || h > i) : (h <= j && h > i)) {
			tab[j] = tab[i];
			tab[i].kind = 0;
			j = i;
		}
	}
}

bool gs__ptrmap_take(uint8_t kind, uint64_t key, struct gs__alloc *out)
{
	bool found = false;

	(void)pthread_mutex_lock(&mu);
	if (cap != 0) {
		uint32_t j = hash(kind, key) & (cap - 1);

		while (tab[j].kind != 0) {
			if (tab[j].kind == kind && tab[j].key == key) {
				*out = tab[j];
				del(j);
				found = true;
				break;
			}
			j = (j + 1) & (cap - 1);
		}
	}
	(void)pthread_mutex_unlock(&mu);
	return found;
}

void gs__ptrmap_drain_ctx(CUcontext ctx,
                          void (*fn)(const struct gs__alloc *a, void *arg),
                          void *arg)
{
	(void)pthread_mutex_lock(&mu);
	for (uint32_t j = 0; j < cap;) {
		struct gs__alloc a = tab[j];

		/* Stream-ordered and VMM memory outlive their context. */
		if (a.kind != 0 && a.ctx == ctx && a.kind != GS__ALLOC_ASYNC &&
		    a.kind != GS__ALLOC_VMM) {
			del(j);
			fn(&a, arg);
			continue; /* slot j now holds a shifted entry */
		}
		j++;
	}
	(void)pthread_mutex_unlock(&mu);
}

void gs__ptrmap_reset(void)
{
	(void)pthread_mutex_init(&mu, NULL);
	free(tab);
	tab = NULL;
	cap = used = 0;
}
