/*
 * state.c - creating, mapping, checking, locking and repairing the sim's
 * node state file (layout and rules in state.h).
 *
 * Invariants kept under the lock (gs_sim_state_check verifies them):
 *   - engine.mem_used == sum of mem_used of the live slots on it;
 *   - a live slot names an existing GPU and a live engine;
 *   - ring_harvest <= ring_head <= ring_tail <= ring_harvest + GS_SIM_RING.
 * A holder that dies can break the first (it updates the slot and the
 * engine one after the other); gs_sim_state_repair recomputes it.
 */
#include "gs_sim/state.h"

#include "gs/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gs/catalog.h"

struct gs_sim_map {
	int fd;
	struct gs_sim_state *st;
	uint64_t size;
	char path[GS_SIM_PATH_LEN + 32];
};

uint64_t gs_sim_now_ns(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static bool str_terminated(const char *s, size_t len)
{
	return memchr(s, '\0', len) != NULL;
}

static void copy_str(char *dst, size_t len, const char *src)
{
	size_t n = strlen(src);

	if (n >= len)
		n = len - 1;
	memcpy(dst, src, n);
	memset(dst + n, 0, len - n);
}

/* ---- directory and GPU list ---------------------------------------- */

gs_err gs_sim_dir_resolve(const char *explicit_dir, char *out, uint32_t len,
                          struct gs_errbuf *eb)
{
	const char *env;
	int n;

	if (explicit_dir != NULL && explicit_dir[0] != '\0')
		n = snprintf(out, len, "%s", explicit_dir);
	else if ((env = getenv("GPUSLICE_SIM_DIR")) != NULL && env[0] != '\0')
		n = snprintf(out, len, "%s", env);
	else if ((env = getenv("XDG_RUNTIME_DIR")) != NULL && env[0] != '\0')
		n = snprintf(out, len, "%s/gpuslice-sim", env);
	else
		n = snprintf(out, len, "/tmp/gpuslice-sim-%u",
		             (unsigned)getuid());
	if (n < 0 || (uint32_t)n >= len || (uint32_t)n > GS_SIM_PATH_LEN - 16)
		return gs_fail(eb, GS_ERR_RANGE, "sim directory path too long");
	return GS_OK;
}

gs_err gs_sim_gpus_parse(const char *spec, struct gs_sim_gpu_init *out, int max,
                         int *n, struct gs_errbuf *eb)
{
	const char *p = spec;
	int total = 0;

	if (spec == NULL || spec[0] == '\0')
		return gs_fail(eb, GS_ERR_PARSE, "empty GPU list");
	while (*p != '\0') {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char item[GS_SIM_MODEL_LEN + 16];
		const char *model = item;
		const struct gs_gpu_model *m;
		long count = 1;
		char *x;

		if (len == 0 || len >= sizeof(item))
			return gs_fail(eb, GS_ERR_PARSE,
			               "malformed GPU list item in '%s'", spec);
		memcpy(item, p, len);
		item[len] = '\0';
		x = strchr(item, 'x');
		if (x != NULL && x != item) {
			bool digits = true;

			for (char *d = item; d < x; d++)
				if (*d < '0' || *d > '9')
					digits = false;
			if (digits) {
				*x = '\0';
				count = strtol(item, NULL, 10);
				model = x + 1;
				if (count < 1 || count > GS_SIM_MAX_GPUS)
					return gs_fail(
					    eb, GS_ERR_RANGE,
					    "GPU count %ld out of range 1..%d",
					    count, GS_SIM_MAX_GPUS);
			}
		}
		if (model[0] == '\0')
			return gs_fail(eb, GS_ERR_PARSE,
			               "missing model in GPU list '%s'", spec);
		m = gs_catalog_find(model);
		if (m == NULL)
			return gs_fail(eb, GS_ERR_UNKNOWN_MODEL,
			               "unknown GPU model '%s'", model);
		if (total + count > max)
			return gs_fail(eb, GS_ERR_RANGE,
			               "too many GPUs (at most %d)", max);
		for (long i = 0; i < count; i++) {
			struct gs_sim_gpu_init *g = &out[total++];

			memset(g, 0, sizeof(*g));
			copy_str(g->model, sizeof(g->model), m->name);
			copy_str(g->name, sizeof(g->name),
			         m->nvml_name ? m->nvml_name : m->name);
			g->sm_count = (uint32_t)m->sm_count;
			g->memory_total = m->memory_mib << 20;
			g->cc_major = (uint32_t)m->cc_major;
			g->cc_minor = (uint32_t)m->cc_minor;
		}
		if (end == NULL)
			break;
		p = end + 1;
		if (*p == '\0')
			return gs_fail(eb, GS_ERR_PARSE,
			               "trailing comma in GPU list '%s'", spec);
	}
	*n = total;
	return GS_OK;
}

/* ---- identity checksum --------------------------------------------- */

static uint32_t crc32_update(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	crc = ~crc;
	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
	}
	return ~crc;
}

static uint32_t identity_crc(const struct gs_sim_state *st)
{
	uint32_t crc = 0;
	uint32_t n = st->n_gpus;

	if (n > GS_SIM_MAX_GPUS)
		n = GS_SIM_MAX_GPUS;
	crc = crc32_update(crc, &st->n_gpus, sizeof(st->n_gpus));
	for (uint32_t i = 0; i < n; i++)
		crc =
		    crc32_update(crc, &st->gpus[i],
		                 offsetof(struct gs_sim_gpu, timeslice_level));
	return crc;
}

/* ---- uuid, pids ----------------------------------------------------- */

void gs_sim_uuid_make(const char *prefix, char out[GS_SIM_UUID_LEN])
{
	uint8_t b[16];
	ssize_t got = getrandom(b, sizeof(b), GRND_NONBLOCK);

	if (got != (ssize_t)sizeof(b)) {
		/* No entropy yet: time and pid still make it unique enough. */
		uint64_t t = gs_sim_now_ns() ^ ((uint64_t)getpid() << 32);

		for (int i = 0; i < 16; i++) {
			t = t * 6364136223846793005ULL + 1442695040888963407ULL;
			b[i] = (uint8_t)(t >> 56);
		}
	}
	snprintf(out, GS_SIM_UUID_LEN,
	         "%s-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
	         prefix, b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8],
	         b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

/* Field 3 (state) and 22 (start time) of /proc/<pid>/stat (gs/proc.h). */
static bool read_proc_stat(int32_t pid, char *state, uint64_t *start)
{
	return gs_proc_stat(pid, state, NULL, start);
}

uint64_t gs_sim_pid_start_time(int32_t pid)
{
	char state;
	uint64_t start;

	if (pid <= 0 || !read_proc_stat(pid, &state, &start))
		return 0;
	return start;
}

bool gs_sim_pid_alive(int32_t pid, uint64_t start_time)
{
	char state;
	uint64_t start;

	if (pid <= 0)
		return false;
	if (kill(pid, 0) != 0 && errno == ESRCH)
		return false;
	if (!read_proc_stat(pid, &state, &start))
		return false;
	/* A zombie has given everything back: it holds no GPU context. */
	if (state == 'Z' || state == 'X' || state == 'x')
		return false;
	return start == start_time;
}

/* ---- engines, slots ------------------------------------------------- */

void gs_sim_engine_init(struct gs_sim_engine *e, uint32_t sm, uint64_t mem,
                        uint64_t now_ns)
{
	memset(e, 0, sizeof(*e));
	e->live = 1;
	e->sm_count = sm;
	e->mem_total = mem;
	e->t_sim = now_ns;
	e->slice_owner = GS_SIM_OWNER_NONE;
	e->mps.state = GS_SIM_MPS_OFF;
}

static void exited_record(struct gs_sim_state *st, const struct gs_sim_proc *p,
                          uint64_t now_ns, bool reaped)
{
	struct gs_sim_exited *x =
	    &st->exited[st->exited_seq % GS_SIM_EXITED_RING];

	x->pid = p->pid;
	x->gpu = p->gpu;
	x->engine = p->engine;
	x->start_time = p->start_time;
	x->end_ns = now_ns;
	x->busy_ns = p->busy_ns;
	x->sm_busy_ns = p->sm_busy_ns;
	x->reaped = reaped ? 1 : 0;
	st->exited_seq++;
}

static struct gs_sim_engine *proc_engine(struct gs_sim_state *st,
                                         const struct gs_sim_proc *p)
{
	if (p->gpu >= st->n_gpus || p->gpu >= GS_SIM_MAX_GPUS ||
	    p->engine >= GS_SIM_ENGINES)
		return NULL;
	return &st->gpus[p->gpu].engine[p->engine];
}

void gs_sim_proc_release(struct gs_sim_state *st, int i, uint64_t now_ns,
                         bool reaped)
{
	struct gs_sim_proc *p = &st->procs[i];
	struct gs_sim_engine *e;

	if (p->state != GS_SIM_PROC_LIVE)
		return;
	e = proc_engine(st, p);
	if (e != NULL) {
		e->slot_mask[i / 64] &= ~(1ULL << (i % 64));
		e->mem_used =
		    e->mem_used >= p->mem_used ? e->mem_used - p->mem_used : 0;
		if (e->slice_owner == i)
			e->slice_owner = GS_SIM_OWNER_NONE;
		/*
		 * An MPS server in FAULT recovers once every client it had
		 * when it faulted is gone.
		 */
		if ((p->flags & GS_SIM_PROC_MPS_CLIENT) &&
		    e->mps.state == GS_SIM_MPS_FAULT) {
			bool others = false;

			for (int j = 0; j < GS_SIM_MAX_PROCS; j++) {
				const struct gs_sim_proc *q = &st->procs[j];

				if (j != i && q->state == GS_SIM_PROC_LIVE &&
				    q->gpu == p->gpu &&
				    q->engine == p->engine &&
				    (q->flags & GS_SIM_PROC_MPS_CLIENT))
					others = true;
			}
			if (!others)
				e->mps.state = GS_SIM_MPS_ACTIVE;
		}
	}
	exited_record(st, p, now_ns, reaped);
	if (reaped)
		st->reaped_total++;
	uint64_t gen = p->generation;
	memset(p, 0, offsetof(struct gs_sim_proc, ring));
	p->generation = gen + 1;
	p->state = GS_SIM_PROC_FREE;
}

int gs_sim_proc_acquire(struct gs_sim_state *st, int32_t pid,
                        uint64_t start_time, uint32_t gpu, uint32_t engine,
                        uint64_t now_ns)
{
	int free_i = -1;

	for (int i = 0; i < GS_SIM_MAX_PROCS; i++) {
		struct gs_sim_proc *p = &st->procs[i];

		if (p->state == GS_SIM_PROC_LIVE) {
			if (p->pid == pid && p->start_time == start_time &&
			    p->gpu == gpu && p->engine == engine)
				return i;
		} else if (free_i < 0) {
			free_i = i;
		}
	}
	if (free_i < 0)
		return -1;
	struct gs_sim_proc *p = &st->procs[free_i];
	uint64_t gen = p->generation;

	memset(p, 0, offsetof(struct gs_sim_proc, ring));
	p->generation = gen + 1;
	p->state = GS_SIM_PROC_LIVE;
	p->pid = pid;
	p->start_time = start_time;
	p->gpu = gpu;
	p->engine = engine;
	p->created_ns = now_ns;
	p->sm_limit = st->gpus[gpu].engine[engine].sm_count;
	st->gpus[gpu].engine[engine].slot_mask[free_i / 64] |= 1ULL
	                                                       << (free_i % 64);
	return free_i;
}

int gs_sim_reap(struct gs_sim_state *st, uint64_t now_ns)
{
	int n = 0;

	for (int i = 0; i < GS_SIM_MAX_PROCS; i++) {
		struct gs_sim_proc *p = &st->procs[i];

		if (p->state != GS_SIM_PROC_LIVE)
			continue;
		if (gs_sim_pid_alive(p->pid, p->start_time))
			continue;
		gs_sim_proc_release(st, i, now_ns, true);
		n++;
	}
	st->last_reap_ns = now_ns;
	return n;
}

int gs_sim_reap_maybe(struct gs_sim_state *st, uint64_t now_ns, bool force)
{
	if (!force && now_ns >= st->last_reap_ns &&
	    now_ns - st->last_reap_ns < GS_SIM_REAP_INTERVAL_NS)
		return 0;
	return gs_sim_reap(st, now_ns);
}

void gs_sim_xid_post(struct gs_sim_state *st, uint32_t gpu, uint32_t xid,
                     uint32_t engine, int32_t pid, uint64_t now_ns)
{
	struct gs_sim_gpu *g;
	struct gs_sim_xid *x;

	if (gpu >= st->n_gpus)
		return;
	g = &st->gpus[gpu];
	x = &g->xid[g->xid_seq % GS_SIM_XID_RING];
	memset(x, 0, sizeof(*x));
	x->seq = g->xid_seq + 1;
	x->time_ns = now_ns;
	x->xid = xid;
	x->engine = engine;
	x->pid = pid;
	if (engine > 0 && engine <= GS_SIM_MAX_MIG &&
	    g->mig[engine - 1].in_use) {
		x->gi_id = g->mig[engine - 1].gi_id;
		x->ci_id = g->mig[engine - 1].ci_id;
	} else {
		x->gi_id = 0xFFFFFFFFu;
		x->ci_id = 0xFFFFFFFFu;
	}
	g->xid_seq++;
}

/* ---- repair and reset ---------------------------------------------- */

int gs_sim_state_repair(struct gs_sim_state *st)
{
	uint32_t n = st->n_gpus <= GS_SIM_MAX_GPUS ? st->n_gpus : 0;

	for (uint32_t g = 0; g < n; g++)
		for (int e = 0; e < GS_SIM_ENGINES; e++) {
			st->gpus[g].engine[e].mem_used = 0;
			memset(st->gpus[g].engine[e].slot_mask, 0,
			       sizeof(st->gpus[g].engine[e].slot_mask));
		}
	for (int i = 0; i < GS_SIM_MAX_PROCS; i++) {
		struct gs_sim_proc *p = &st->procs[i];
		struct gs_sim_engine *e;

		if (p->state != GS_SIM_PROC_LIVE) {
			p->state = GS_SIM_PROC_FREE;
			continue;
		}
		e = p->gpu < n ? proc_engine(st, p) : NULL;
		if (e == NULL || !e->live) {
			uint64_t gen = p->generation;

			memset(p, 0, offsetof(struct gs_sim_proc, ring));
			p->generation = gen + 1;
			continue;
		}
		if (p->ring_head > p->ring_tail)
			p->ring_head = p->ring_tail;
		if (p->ring_harvest > p->ring_head)
			p->ring_harvest = p->ring_head;
		if (p->ring_tail - p->ring_harvest > GS_SIM_RING)
			p->ring_harvest = p->ring_tail - GS_SIM_RING;
		if (p->ring_head < p->ring_harvest)
			p->ring_head = p->ring_harvest;
		e->mem_used += p->mem_used;
		e->slot_mask[i / 64] |= 1ULL << (i % 64);
	}
	return gs_sim_reap(st, gs_sim_now_ns());
}

void gs_sim_state_reset(struct gs_sim_state *st)
{
	uint64_t now = gs_sim_now_ns();

	for (int i = 0; i < GS_SIM_MAX_PROCS; i++) {
		uint64_t gen = st->procs[i].generation;

		memset(&st->procs[i], 0, offsetof(struct gs_sim_proc, ring));
		st->procs[i].generation = gen + 1;
	}
	for (uint32_t g = 0; g < st->n_gpus && g < GS_SIM_MAX_GPUS; g++) {
		struct gs_sim_gpu *gpu = &st->gpus[g];

		gpu->timeslice_level = 0;
		gpu->compute_mode = 0;
		/* the whole NVML/MIG section, whatever fields it holds */
		memset(&gpu->mig_mode, 0,
		       offsetof(struct gs_sim_gpu, xid_seq) -
		           offsetof(struct gs_sim_gpu, mig_mode));
		gpu->persistence_mode = 1;
		gpu->xid_seq = 0;
		memset(gpu->xid, 0, sizeof(gpu->xid));
		gs_sim_engine_init(&gpu->engine[0], gpu->sm_count,
		                   gpu->memory_total, now);
		for (int e = 1; e < GS_SIM_ENGINES; e++)
			memset(&gpu->engine[e], 0, sizeof(gpu->engine[e]));
	}
	memset(st->exited, 0, sizeof(st->exited));
	st->exited_seq = 0;
	st->epoch++;
}

/* ---- create, open, validate ---------------------------------------- */

static gs_err mkdir_p(const char *dir, struct gs_errbuf *eb)
{
	char tmp[GS_SIM_PATH_LEN + 32];
	size_t len = strlen(dir);

	if (len == 0 || len >= sizeof(tmp))
		return gs_fail(eb, GS_ERR_RANGE, "bad directory '%s'", dir);
	memcpy(tmp, dir, len + 1);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0700) != 0 && errno != EEXIST) {
			int err = errno;
			return gs_fail(eb, GS_ERR_IO, "mkdir %s: %s", tmp,
			               strerror(err));
		}
		*p = '/';
	}
	if (mkdir(tmp, 0700) != 0 && errno != EEXIST) {
		int err = errno;
		return gs_fail(eb, GS_ERR_IO, "mkdir %s: %s", tmp,
		               strerror(err));
	}
	return GS_OK;
}

static gs_err init_mutex(union gs_sim_mutex *mu, struct gs_errbuf *eb)
{
	pthread_mutexattr_t a;
	int rc;

	memset(mu, 0, sizeof(*mu));
	if ((rc = pthread_mutexattr_init(&a)) != 0)
		return gs_fail(eb, GS_ERR_INTERNAL, "mutexattr: %s",
		               strerror(rc));
	rc = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	if (rc == 0)
		rc = pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	if (rc == 0)
		rc = pthread_mutex_init(&mu->m, &a);
	(void)pthread_mutexattr_destroy(&a);
	if (rc != 0)
		return gs_fail(eb, GS_ERR_INTERNAL, "robust mutex: %s",
		               strerror(rc));
	return GS_OK;
}

gs_err gs_sim_state_create(const char *dir, const struct gs_sim_gpu_init *gpus,
                           int n, bool force, struct gs_errbuf *eb)
{
	char path[GS_SIM_PATH_LEN + 32], tmp[GS_SIM_PATH_LEN + 64];
	struct gs_sim_state *st;
	uint64_t now = gs_sim_now_ns();
	struct timespec rt;
	gs_err err;
	int fd, rc;

	if (n < 1 || n > GS_SIM_MAX_GPUS)
		return gs_fail(eb, GS_ERR_RANGE,
		               "GPU count %d out of range 1..%d", n,
		               GS_SIM_MAX_GPUS);
	err = mkdir_p(dir, eb);
	if (err != GS_OK)
		return err;
	snprintf(path, sizeof(path), "%s/%s", dir, GS_SIM_STATE_FILE);
	if (!force && access(path, F_OK) == 0)
		return gs_fail(eb, GS_ERR_EXISTS,
		               "%s exists (use --force to replace it)", path);
	snprintf(tmp, sizeof(tmp), "%s/.%s.%d", dir, GS_SIM_STATE_FILE,
	         (int)getpid());
	st = calloc(1, sizeof(*st));
	if (st == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "no memory for the state");
	st->magic = GS_SIM_STATE_MAGIC;
	st->version = GS_SIM_STATE_VERSION;
	st->header_size = (uint32_t)offsetof(struct gs_sim_state, exited);
	st->size = sizeof(*st);
	st->n_gpus = (uint32_t)n;
	(void)clock_gettime(CLOCK_REALTIME, &rt);
	st->created_ns =
	    (uint64_t)rt.tv_sec * 1000000000ULL + (uint64_t)rt.tv_nsec;
	st->epoch = 1;
	st->last_reap_ns = now;
	err = init_mutex(&st->lock, eb);
	if (err != GS_OK)
		goto out_free;
	for (int i = 0; i < n; i++) {
		struct gs_sim_gpu *g = &st->gpus[i];

		copy_str(g->model, sizeof(g->model), gpus[i].model);
		copy_str(g->name, sizeof(g->name), gpus[i].name);
		gs_sim_uuid_make("GPU", g->uuid);
		g->index = (uint32_t)i;
		g->sm_count = gpus[i].sm_count;
		g->memory_total = gpus[i].memory_total;
		g->cc_major = gpus[i].cc_major;
		g->cc_minor = gpus[i].cc_minor;
		g->persistence_mode = 1;
		gs_sim_engine_init(&g->engine[0], g->sm_count, g->memory_total,
		                   now);
	}
	st->identity_crc = identity_crc(st);

	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		int e = errno;
		err = gs_fail(eb, GS_ERR_IO, "create %s: %s", tmp, strerror(e));
		goto out_free;
	}
	const char *p = (const char *)st;
	size_t left = sizeof(*st);
	while (left > 0) {
		ssize_t w = write(fd, p, left);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int e = errno;
			err = gs_fail(eb, GS_ERR_IO, "write %s: %s", tmp,
			              strerror(e));
			goto out_unlink;
		}
		p += w;
		left -= (size_t)w;
	}
	if (fsync(fd) != 0) {
		int e = errno;
		err = gs_fail(eb, GS_ERR_IO, "fsync %s: %s", tmp, strerror(e));
		goto out_unlink;
	}
	rc = close(fd);
	fd = -1;
	if (rc != 0 || rename(tmp, path) != 0) {
		int e = errno;
		err =
		    gs_fail(eb, GS_ERR_IO, "install %s: %s", path, strerror(e));
		goto out_unlink;
	}
	free(st);
	return GS_OK;

out_unlink:
	if (fd >= 0)
		(void)close(fd);
	(void)unlink(tmp);
out_free:
	free(st);
	return err;
}

gs_err gs_sim_state_validate(const struct gs_sim_state *st, uint64_t file_size,
                             struct gs_errbuf *eb)
{
	if (file_size < offsetof(struct gs_sim_state, lock))
		return gs_fail(eb, GS_ERR_CORRUPT,
		               "state file is truncated (%" PRIu64 " bytes)",
		               file_size);
	if (st->magic != GS_SIM_STATE_MAGIC)
		return gs_fail(eb, GS_ERR_CORRUPT,
		               "not a gpuslice sim state file (bad magic)");
	if (st->version != GS_SIM_STATE_VERSION)
		return gs_fail(eb, GS_ERR_VERSION,
		               "state file has version %u, this build reads version %u (run `gpuslice sim init --force`)",
		               st->version, GS_SIM_STATE_VERSION);
	if (st->size != sizeof(*st) || file_size != sizeof(*st) ||
	    st->header_size != offsetof(struct gs_sim_state, exited))
		return gs_fail(eb, GS_ERR_CORRUPT,
		               "state file size %" PRIu64
		               " does not match its layout (%zu bytes)",
		               file_size, sizeof(*st));
	if (st->n_gpus < 1 || st->n_gpus > GS_SIM_MAX_GPUS)
		return gs_fail(eb, GS_ERR_CORRUPT,
		               "state file holds %u GPUs (1..%d allowed)",
		               st->n_gpus, GS_SIM_MAX_GPUS);
	if (st->identity_crc != identity_crc(st))
		return gs_fail(eb, GS_ERR_CORRUPT,
		               "state file GPU identity checksum mismatch");
	for (uint32_t i = 0; i < st->n_gpus; i++) {
		const struct gs_sim_gpu *g = &st->gpus[i];

		if (!str_terminated(g->model, sizeof(g->model)) ||
		    !str_terminated(g->name, sizeof(g->name)) ||
		    !str_terminated(g->uuid, sizeof(g->uuid)) ||
		    strncmp(g->uuid, "GPU-", 4) != 0 || g->index != i ||
		    g->sm_count == 0 || g->memory_total == 0)
			return gs_fail(eb, GS_ERR_CORRUPT,
			               "state file GPU %u has a bad identity",
			               i);
	}
	return GS_OK;
}

gs_err gs_sim_state_check(const struct gs_sim_state *st, struct gs_errbuf *eb)
{
	uint64_t used[GS_SIM_MAX_GPUS][GS_SIM_ENGINES];
	uint64_t mask[GS_SIM_MAX_GPUS][GS_SIM_ENGINES][4];

	memset(used, 0, sizeof(used));
	memset(mask, 0, sizeof(mask));
	for (uint32_t i = 0; i < st->n_gpus; i++) {
		const struct gs_sim_gpu *g = &st->gpus[i];

		if (g->timeslice_level >= GS_SIM_TIMESLICE_LEVELS ||
		    g->mig_mode > 1 || g->mig_pending > 1)
			return gs_fail(
			    eb, GS_ERR_CORRUPT,
			    "state file GPU %u settings out of range", i);
		for (int m = 0; m < GS_SIM_MAX_MIG; m++)
			if (!str_terminated(g->mig[m].uuid,
			                    sizeof(g->mig[m].uuid)) ||
			    !str_terminated(g->mig[m].profile_name,
			                    sizeof(g->mig[m].profile_name)))
				return gs_fail(
				    eb, GS_ERR_CORRUPT,
				    "state file GPU %u MIG slot %d is damaged",
				    i, m);
		for (int e = 0; e < GS_SIM_ENGINES; e++) {
			const struct gs_sim_engine *en = &g->engine[e];

			if (!en->live)
				continue;
			if (en->sm_count == 0 || en->sm_count > g->sm_count ||
			    en->mem_total > g->memory_total ||
			    en->mps.state > GS_SIM_MPS_FAULT ||
			    !str_terminated(en->mps.pipe_dir,
			                    sizeof(en->mps.pipe_dir)))
				return gs_fail(
				    eb, GS_ERR_CORRUPT,
				    "state file GPU %u engine %d is damaged", i,
				    e);
		}
	}
	for (int i = 0; i < GS_SIM_MAX_PROCS; i++) {
		const struct gs_sim_proc *p = &st->procs[i];

		if (p->state == GS_SIM_PROC_FREE)
			continue;
		if (p->state != GS_SIM_PROC_LIVE || p->gpu >= st->n_gpus ||
		    p->engine >= GS_SIM_ENGINES ||
		    !st->gpus[p->gpu].engine[p->engine].live ||
		    p->ring_harvest > p->ring_head ||
		    p->ring_head > p->ring_tail ||
		    p->ring_tail - p->ring_harvest > GS_SIM_RING ||
		    !str_terminated(p->comm, sizeof(p->comm)))
			return gs_fail(eb, GS_ERR_CORRUPT,
			               "state file process slot %d is damaged",
			               i);
		used[p->gpu][p->engine] += p->mem_used;
		mask[p->gpu][p->engine][i / 64] |= 1ULL << (i % 64);
	}
	for (uint32_t i = 0; i < st->n_gpus; i++)
		for (int e = 0; e < GS_SIM_ENGINES; e++)
			if (st->gpus[i].engine[e].live &&
			    (st->gpus[i].engine[e].mem_used != used[i][e] ||
			     memcmp(st->gpus[i].engine[e].slot_mask, mask[i][e],
			            sizeof(mask[i][e])) != 0))
				return gs_fail(eb, GS_ERR_CORRUPT,
				               "state file GPU %u engine %d disagrees with its processes",
				               i, e);
	return GS_OK;
}

gs_err gs_sim_state_open(const char *dir, struct gs_sim_map **out,
                         struct gs_errbuf *eb)
{
	struct gs_sim_map *map;
	struct stat sb;
	void *mem;
	gs_err err;

	map = calloc(1, sizeof(*map));
	if (map == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "no memory");
	snprintf(map->path, sizeof(map->path), "%s/%s", dir, GS_SIM_STATE_FILE);
	map->fd = open(map->path, O_RDWR | O_CLOEXEC);
	if (map->fd < 0) {
		int e = errno;
		err = gs_fail(eb, e == ENOENT ? GS_ERR_NOT_FOUND : GS_ERR_IO,
		              "%s: %s%s", map->path, strerror(e),
		              e == ENOENT ? " (run `gpuslice sim init`)" : "");
		goto out_free;
	}
	if (fstat(map->fd, &sb) != 0) {
		int e = errno;
		err = gs_fail(eb, GS_ERR_IO, "stat %s: %s", map->path,
		              strerror(e));
		goto out_close;
	}
	if ((uint64_t)sb.st_size < offsetof(struct gs_sim_state, lock)) {
		err =
		    gs_fail(eb, GS_ERR_CORRUPT, "%s is truncated (%lld bytes)",
		            map->path, (long long)sb.st_size);
		goto out_close;
	}
	mem = mmap(NULL, (size_t)sb.st_size, PROT_READ | PROT_WRITE, MAP_SHARED,
	           map->fd, 0);
	if (mem == MAP_FAILED) {
		int e = errno;
		err = gs_fail(eb, GS_ERR_IO, "mmap %s: %s", map->path,
		              strerror(e));
		goto out_close;
	}
	map->st = mem;
	map->size = (uint64_t)sb.st_size;
	err = gs_sim_state_validate(map->st, map->size, eb);
	if (err != GS_OK)
		goto out_unmap;
	*out = map;
	return GS_OK;

out_unmap:
	(void)munmap(map->st, (size_t)map->size);
out_close:
	(void)close(map->fd);
out_free:
	free(map);
	return err;
}

void gs_sim_state_close(struct gs_sim_map *map)
{
	if (map == NULL)
		return;
	(void)munmap(map->st, (size_t)map->size);
	(void)close(map->fd);
	free(map);
}

struct gs_sim_state *gs_sim_state_get(struct gs_sim_map *map)
{
	return map->st;
}

const char *gs_sim_state_path(const struct gs_sim_map *map)
{
	return map->path;
}

/* ---- lock ----------------------------------------------------------- */

gs_err gs_sim_lock(struct gs_sim_state *st)
{
	struct timespec deadline;
	int rc;

	/* the common, uncontended case needs no clock reading */
	rc = pthread_mutex_trylock(&st->lock.m);
	if (rc == EBUSY) {
		(void)clock_gettime(CLOCK_MONOTONIC, &deadline);
		deadline.tv_sec += GS_SIM_LOCK_TIMEOUT_S;
		rc = pthread_mutex_clocklock(&st->lock.m, CLOCK_MONOTONIC,
		                             &deadline);
	}
	if (rc == EOWNERDEAD) {
		/*
		 * The holder died mid-update. Everything it could have left
		 * half-done is either recomputed or reaped here; only then is
		 * the lock marked consistent for the next taker.
		 */
		(void)gs_sim_state_repair(st);
		st->lock_recoveries++;
		rc = pthread_mutex_consistent(&st->lock.m);
	}
	if (rc == ETIMEDOUT)
		return GS_ERR_TIMEOUT;
	return rc == 0 ? GS_OK : GS_ERR_INTERNAL;
}

void gs_sim_unlock(struct gs_sim_state *st)
{
	(void)pthread_mutex_unlock(&st->lock.m);
}

uint32_t gs_sim_pci_bus(uint32_t gpu)
{
	return 0x18u + gpu * 0x12u;
}
