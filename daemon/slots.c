/*
 * slots.c - each slice's entry (slot) in the shared region: the limits
 * its spec gives, written, updated, found again and deleted, and the GPU
 * table the shims read. Owns nothing but the mapping from the model's
 * slices to their region slots (gs__nslice.ref, has_ref); the region
 * file itself is region/'s.
 *
 * Writes need no node lock: the only lock they wait on is the region
 * writers' lock, which no tenant can open, and that wait has a deadline.
 */
#include "slots.h"

#include <stdio.h>
#include <string.h>

#include "gs/faultinj.h"
#include "gs/log.h"
#include "gs/region_swap.h"
#include "node_int.h"

static bool swap_on;

void gs__slot_swap_enable(bool on)
{
	swap_on = on;
}

void gs__slot_swap_fill(struct gs_node *node, const struct gs__nslice *ns,
                        struct gs_slice *out)
{
	struct gs_swap_rec rec;

	if (node->region == NULL || !ns->has_ref ||
	    gs_region_swap_read(node->region, &ns->ref, &rec) != GS_OK)
		return;
	out->swap.swapped_bytes = rec.swapped_bytes;
	gs__slot_swap_merge(&ns->s.swap, &rec, &out->swap);
	(void)snprintf(out->swap.pinned, sizeof(out->swap.pinned), "%s",
	               gs_swap_pin_reason(rec.pinned));
}

void gs__slot_swap_merge(const struct gs_slice_swap *sw,
                         const struct gs_swap_rec *rec,
                         struct gs_slice_swap *out)
{
	bool same =
	    rec->swap_outs >= sw->rec_outs && rec->swap_ins >= sw->rec_ins;
	uint64_t outs = sw->swap_outs, ins = sw->swap_ins;

	if (same) {
		outs -= sw->rec_outs < outs ? sw->rec_outs : outs;
		ins -= sw->rec_ins < ins ? sw->rec_ins : ins;
	}
	out->swap_outs = outs + rec->swap_outs;
	out->swap_ins = ins + rec->swap_ins;
	out->last_out_ns =
	    rec->last_out_ns ? (int64_t)rec->last_out_ns : sw->last_out_ns;
	out->last_in_ns =
	    rec->last_in_ns ? (int64_t)rec->last_in_ns : sw->last_in_ns;
	out->rec_outs = rec->swap_outs;
	out->rec_ins = rec->swap_ins;
}

bool gs__slot_swap_note(struct gs__nslice *ns, const struct gs_swap_rec *rec)
{
	struct gs_slice_swap *sw = &ns->s.swap, m = *sw;

	gs__slot_swap_merge(sw, rec, &m);
	if (m.swap_outs == sw->swap_outs && m.swap_ins == sw->swap_ins &&
	    m.last_out_ns == sw->last_out_ns &&
	    m.last_in_ns == sw->last_in_ns && m.rec_outs == sw->rec_outs &&
	    m.rec_ins == sw->rec_ins)
		return false;
	*sw = m;
	return true;
}

void gs__slot_limits(const struct gs_slice *s, struct gs_slice_limits *lim)
{
	/* The spec was validated when the slice was made: the conversion
	 * cannot fail here; if it did, the slice gets no limits entry at
	 * all (gs__slot_put refuses an empty name), never wrong ones. */
	if (gs_spec_limits(&s->spec, lim, NULL) != GS_OK) {
		memset(lim, 0, sizeof(*lim));
		return;
	}
	(void)snprintf(lim->name, sizeof(lim->name), "%s", s->name);
	/* Only the owner's processes (and root's) may join it. */
	lim->owner_uid = s->owner_uid;
	if (swap_on && s->spec.swap == GS_SWAP_ALLOW)
		lim->flags |= GS_SLICE_SWAP;
	if (s->state == GS_SLICE_PARKED)
		lim->flags |= GS_SLICE_IS_PARKED;
}

/*
 * Makes `region` hold slice `s` with its limits; OUT: *ref, *has_ref
 * (whether *ref names its entry, set even when a later update failed).
 * Needs no node lock: the only lock this waits on is the region's
 * writers' lock, which no tenant can open, and that wait has a deadline.
 * slice_create calls it off the node lock for a PENDING slice (nothing
 * else writes a pending slice's entry); on failure (logged, in *eb when
 * given) a shim cannot join the slice, so it never runs without limits.
 */
gs_err gs__slot_write(struct gs_region *region, const struct gs_slice *s,
                      struct gs_slice_ref *ref, bool *has_ref,
                      struct gs_errbuf *out_eb)
{
	struct gs_slice_limits lim, cur;
	struct gs_errbuf eb = {0};
	bool created = false;
	gs_err err;

	*has_ref = false;
	gs__slot_limits(s, &lim);
	if (gs_fault_hit("region.write"))
		err = gs_fail(&eb, GS_ERR_IO, "region write failed (injected)");
	else
		err = gs_region_slice_ensure(region, &lim, ref, &created, &eb);
	if (err) {
		gs_error("node", "slice=%s region write failed: %s", s->name,
		         gs_errbuf_msg(&eb, err));
		if (out_eb)
			(void)gs_fail(out_eb, err, "%s",
			              gs_errbuf_msg(&eb, err));
		return err;
	}
	*has_ref = true;
	if (!created && (gs_region_slice_limits(region, ref, &cur) != GS_OK ||
	                 memcmp(&cur, &lim, sizeof(lim)) != 0)) {
		err = gs_region_slice_update(region, ref, &lim, &eb);
		if (err) {
			gs_error("node", "slice=%s region update failed: %s",
			         s->name, gs_errbuf_msg(&eb, err));
			if (out_eb)
				(void)gs_fail(out_eb, err, "%s",
				              gs_errbuf_msg(&eb, err));
			return err;
		}
	}
	return GS_OK;
}

/* Records in `ns` where gs__slot_write put it (lock held). */
void gs__slot_took(struct gs__nslice *ns, const struct gs_slice_ref *ref,
                   bool has_ref)
{
	ns->has_ref = has_ref;
	if (!has_ref) {
		ns->s.region_slot = -1; /* shown as pending until written */
		return;
	}
	ns->ref = *ref;
	ns->s.region_slot = ref->slot;
	ns->s.region_gen = (uint32_t)ref->generation;
}

/*
 * Makes the region hold `ns` with its limits (lock held; see
 * gs__slot_write). On failure the slice may have no region entry
 * (has_ref false): housekeeping retries.
 */
gs_err gs__slot_put(struct gs_node *node, struct gs__nslice *ns,
                    struct gs_errbuf *out_eb)
{
	struct gs_slice_ref ref = ns->ref;
	bool has_ref;
	gs_err err;

	if (node->region == NULL)
		return GS_OK;
	err = gs__slot_write(node->region, &ns->s, &ref, &has_ref, out_eb);
	gs__slot_took(ns, &ref, has_ref);
	return err;
}

void gs__slot_del(struct gs_node *node, struct gs__nslice *ns)
{
	struct gs_slice_ref ref;
	struct gs_errbuf eb = {0};

	if (node->region == NULL)
		return;
	if (!ns->has_ref &&
	    gs_region_slice_find(node->region, ns->s.name, &ref) == GS_OK) {
		ns->ref = ref;
		ns->has_ref = true;
	}
	if (ns->has_ref &&
	    gs_region_slice_delete(node->region, &ns->ref, &eb) != GS_OK &&
	    eb.set)
		gs_warn("node", "slice=%s region delete: %s", ns->s.name,
		        eb.msg);
	ns->has_ref = false;
}

/* Whether a slice of the model holds region entry `ref`. Lock held. */
bool gs__slot_held(struct gs_node *node, const struct gs_slice_ref *ref)
{
	for (int i = 0; i < node->n; i++)
		if (node->v[i]->has_ref && node->v[i]->ref.slot == ref->slot &&
		    node->v[i]->ref.generation == ref->generation)
			return true;
	return false;
}

/*
 * Node lock held: every GPU and MIG instance of the inventory has its
 * entry in the region's GPU table. In the daemon's region tenants cannot
 * write that table (the shared file is the daemon's), so the daemon fills
 * it: at start and on every housekeeping pass.
 */
void gs__slot_register_devices(struct gs_node *node)
{
	const struct gs_gpus *g = node->gpus;

	if (node->region == NULL || g == NULL)
		return;
	for (int i = 0; i < g->n; i++) {
		const struct gs_gpu *u = &g->gpu[i];

		if (gs_region_device(node->region, u->uuid, u->memory_bytes) <
		    0)
			gs_warn("node",
			        "gpu=%s: no room in the region's GPU table",
			        u->uuid);
		for (int m = 0; m < u->n_mig; m++)
			(void)gs_region_device(node->region, u->mig[m].uuid,
			                       u->mig[m].memory_bytes);
	}
}
