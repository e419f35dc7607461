/*
 * plugin_versions.h - the DRA node service and the health stream for one
 * API version, written once and included by plugin.c once per version
 * (v1 and v1beta1 of DRAPlugin, v1 and v1alpha1 of DRAResourceHealth):
 * the versions' messages have the same shape but distinct protobuf-c
 * types. Not a header of its own: no include guard on purpose.
 *
 * Parameters (#defined by the includer, #undef'd at the end):
 *   DRA_T(x)   protobuf-c type name of DRA message x
 *   DRA_F(x)   protobuf-c function name prefix for DRA message x
 *   DRA_V(x)   x with this version's suffix (function names here)
 *   DRA_SHARE  1 if Device has share_id (v1 only)
 *   HL_T, HL_F, HL_V, HL_STATUS(x): same for the health API
 * Either group may be left undefined to include only the other.
 */

#ifdef DRA_T

static void DRA_V(prepare_reply)(struct batch *b)
{
	size_t n = b->n;
	DRA_T(NodePrepareResourcesResponse) resp;
	DRA_F(node_prepare_resources_response__init)(&resp);
	DRA_T(NodePrepareResourcesResponse__ClaimsEntry) *entries =
		calloc(n ? n : 1, sizeof(*entries));
	DRA_T(NodePrepareResourcesResponse__ClaimsEntry) **eptr =
		calloc(n ? n : 1, sizeof(*eptr));
	DRA_T(NodePrepareResourceResponse) *vals = calloc(n ? n : 1,
	                                                  sizeof(*vals));
	DRA_T(Device) **devs = calloc(n ? n : 1, sizeof(*devs));
	DRA_T(Device) ***dptr = calloc(n ? n : 1, sizeof(*dptr));
	bool ok = entries && eptr && vals && devs && dptr;
	for (size_t i = 0; ok && i < n; i++) {
		struct gs_kdra_prepared *r = &b->prepared[i];
		DRA_F(node_prepare_resources_response__claims_entry__init)(
			&entries[i]);
		DRA_F(node_prepare_resource_response__init)(&vals[i]);
		entries[i].key = (char *)b->claims[i].uid; /* only read */
		entries[i].value = &vals[i];
		eptr[i] = &entries[i];
		if (r->error) {
			vals[i].error = r->error;
			continue;
		}
		size_t nd = r->n_devices;
		devs[i] = calloc(nd ? nd : 1, sizeof(*devs[i]));
		dptr[i] = calloc(nd ? nd : 1, sizeof(*dptr[i]));
		if (!devs[i] || !dptr[i]) {
			ok = false;
			break;
		}
		for (size_t k = 0; k < nd; k++) {
			struct gs_kdra_device *g = &r->devices[k];
			DRA_T(Device) *d = &devs[i][k];
			DRA_F(device__init)(d);
			d->n_request_names = g->n_request_names;
			d->request_names = g->request_names;
			d->pool_name = g->pool_name ? g->pool_name : (char *)"";
			d->device_name = g->device_name ? g->device_name
			                                : (char *)"";
			d->n_cdi_device_ids = g->n_cdi_device_ids;
			d->cdi_device_ids = g->cdi_device_ids;
#if DRA_SHARE
			if (g->share_id) {
				d->_share_id_case = DRA_SHARE_CASE;
				d->share_id = g->share_id;
			}
#endif
			dptr[i][k] = d;
		}
		vals[i].n_devices = nd;
		vals[i].devices = dptr[i];
	}
	if (ok) {
		resp.n_claims = n;
		resp.claims = eptr;
		size_t len = DRA_F(node_prepare_resources_response__get_packed_size)(
			&resp);
		uint8_t *buf = malloc(len ? len : 1);
		if (buf) {
			DRA_F(node_prepare_resources_response__pack)(&resp, buf);
			gs_grpc_call_reply(b->call, buf, len);
			free(buf);
		} else {
			ok = false;
		}
	}
	if (!ok)
		gs_grpc_call_fail(b->call, GS_GRPC_RESOURCE_EXHAUSTED,
		                  "out of memory building the response");
	for (size_t i = 0; devs && dptr && i < n; i++) {
		free(devs[i]);
		free(dptr[i]);
	}
	free(entries);
	free(eptr);
	free(vals);
	free(devs);
	free(dptr);
}

static void DRA_V(unprepare_reply)(struct batch *b)
{
	size_t n = b->n;
	DRA_T(NodeUnprepareResourcesResponse) resp;
	DRA_F(node_unprepare_resources_response__init)(&resp);
	DRA_T(NodeUnprepareResourcesResponse__ClaimsEntry) *entries =
		calloc(n ? n : 1, sizeof(*entries));
	DRA_T(NodeUnprepareResourcesResponse__ClaimsEntry) **eptr =
		calloc(n ? n : 1, sizeof(*eptr));
	DRA_T(NodeUnprepareResourceResponse) *vals = calloc(n ? n : 1,
	                                                    sizeof(*vals));
	uint8_t *buf = NULL;
	size_t len = 0;
	if (entries && eptr && vals) {
		for (size_t i = 0; i < n; i++) {
			DRA_F(node_unprepare_resources_response__claims_entry__init)(
				&entries[i]);
			DRA_F(node_unprepare_resource_response__init)(&vals[i]);
			entries[i].key = (char *)b->claims[i].uid; /* only read */
			entries[i].value = &vals[i];
			if (b->unprepare_errors[i])
				vals[i].error = b->unprepare_errors[i];
			eptr[i] = &entries[i];
		}
		resp.n_claims = n;
		resp.claims = eptr;
		len = DRA_F(node_unprepare_resources_response__get_packed_size)(
			&resp);
		buf = malloc(len ? len : 1);
		if (buf)
			DRA_F(node_unprepare_resources_response__pack)(&resp, buf);
	}
	if (buf)
		gs_grpc_call_reply(b->call, buf, len);
	else
		gs_grpc_call_fail(b->call, GS_GRPC_RESOURCE_EXHAUSTED,
		                  "out of memory building the response");
	free(buf);
	free(entries);
	free(eptr);
	free(vals);
}

/* Copies the request's claims into a batch and queues one task each. */
static void DRA_V(handle)(struct gs_grpc_call *call, const uint8_t *req,
                          size_t len, struct plugin *p, bool unprepare)
{
	/* NodePrepareResourcesRequest and NodeUnprepareResourcesRequest have
	 * the same shape; each is decoded with its own type. */
	DRA_T(NodePrepareResourcesRequest) *preq = NULL;
	DRA_T(NodeUnprepareResourcesRequest) *ureq = NULL;
	size_t n;
	DRA_T(Claim) **claims;
	if (unprepare) {
		ureq = DRA_F(node_unprepare_resources_request__unpack)(NULL, len,
		                                                        req);
		if (!ureq) {
			gs_grpc_call_fail(call, GS_GRPC_INVALID_ARGUMENT,
			                  "undecodable NodeUnprepareResourcesRequest");
			return;
		}
		n = ureq->n_claims;
		claims = ureq->claims;
	} else {
		preq = DRA_F(node_prepare_resources_request__unpack)(NULL, len,
		                                                      req);
		if (!preq) {
			gs_grpc_call_fail(call, GS_GRPC_INVALID_ARGUMENT,
			                  "undecodable NodePrepareResourcesRequest");
			return;
		}
		n = preq->n_claims;
		claims = preq->claims;
	}
	struct batch *b = batch_new(p, call, n, unprepare,
	                            unprepare ? DRA_V(unprepare_reply)
	                                      : DRA_V(prepare_reply));
	for (size_t i = 0; b && i < n; i++) {
		if (batch_set_claim(b, i, claims[i]->namespace_, claims[i]->uid,
		                    claims[i]->name) != GS_OK) {
			batch_free(b);
			b = NULL;
		}
	}
	if (ureq)
		DRA_F(node_unprepare_resources_request__free_unpacked)(ureq, NULL);
	if (preq)
		DRA_F(node_prepare_resources_request__free_unpacked)(preq, NULL);
	if (!b) {
		gs_grpc_call_fail(call, GS_GRPC_RESOURCE_EXHAUSTED,
		                  "out of memory queueing the claims");
		return;
	}
	batch_start(b);
}

static void DRA_V(prepare_handler)(struct gs_grpc_call *call,
                                   const uint8_t *req, size_t len, void *arg)
{
	DRA_V(handle)(call, req, len, arg, false);
}

static void DRA_V(unprepare_handler)(struct gs_grpc_call *call,
                                     const uint8_t *req, size_t len,
                                     void *arg)
{
	DRA_V(handle)(call, req, len, arg, true);
}

#undef DRA_T
#undef DRA_F
#undef DRA_V
#undef DRA_SHARE
#undef DRA_SHARE_CASE
#endif /* DRA_T */

#ifdef HL_T
/* Packs the complete health list. OUT: *buf (malloc'd), *len. */
static gs_err HL_V(pack_health)(const struct gs_kdra_health *list, size_t n,
                                uint8_t **buf, size_t *len)
{
	HL_T(NodeWatchResourcesResponse) resp;
	HL_F(node_watch_resources_response__init)(&resp);
	HL_T(DeviceHealth) *dh = calloc(n ? n : 1, sizeof(*dh));
	HL_T(DeviceHealth) **dp = calloc(n ? n : 1, sizeof(*dp));
	HL_T(DeviceIdentifier) *ids = calloc(n ? n : 1, sizeof(*ids));
	gs_err err = GS_ERR_NOMEM;
	*buf = NULL;
	if (!dh || !dp || !ids)
		goto out;
	for (size_t i = 0; i < n; i++) {
		HL_F(device_health__init)(&dh[i]);
		HL_F(device_identifier__init)(&ids[i]);
		ids[i].pool_name = list[i].pool_name ? list[i].pool_name
		                                     : (char *)"";
		ids[i].device_name = list[i].device_name ? list[i].device_name
		                                         : (char *)"";
		dh[i].device = &ids[i];
		switch (list[i].status) {
		case GS_KDRA_HEALTH_HEALTHY:
			dh[i].health = HL_STATUS(HEALTHY);
			break;
		case GS_KDRA_HEALTH_UNHEALTHY:
			dh[i].health = HL_STATUS(UNHEALTHY);
			break;
		default:
			dh[i].health = HL_STATUS(UNKNOWN);
			break;
		}
		dh[i].last_updated_time = list[i].updated_unix;
		if (list[i].message)
			dh[i].message = list[i].message;
		dp[i] = &dh[i];
	}
	resp.n_devices = n;
	resp.devices = dp;
	*len = HL_F(node_watch_resources_response__get_packed_size)(&resp);
	*buf = malloc(*len ? *len : 1);
	if (!*buf)
		goto out;
	HL_F(node_watch_resources_response__pack)(&resp, *buf);
	err = GS_OK;
out:
	free(dh);
	free(dp);
	free(ids);
	return err;
}

static void HL_V(watch_handler)(struct gs_grpc_call *call, const uint8_t *req,
                                size_t len, void *arg)
{
	HL_T(NodeWatchResourcesRequest) *r =
		HL_F(node_watch_resources_request__unpack)(NULL, len, req);
	if (!r) {
		gs_grpc_call_fail(call, GS_GRPC_INVALID_ARGUMENT,
		                  "undecodable NodeWatchResourcesRequest");
		return;
	}
	HL_F(node_watch_resources_request__free_unpacked)(r, NULL);
	watcher_add(arg, call, HL_V(pack_health));
}

#undef HL_T
#undef HL_F
#undef HL_V
#undef HL_STATUS
#endif /* HL_T */
