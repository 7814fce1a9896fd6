/* MPNFM's request distributor, region table and merge into large pages (see mpnfm.h). */
#include <stdio.h>
#include <string.h>

#include "mpnfm.h"

#define NONE 0xFFFFFFFFu

#define WOKEN_WORDS ((MPNFM_JOBS + 31) / 32)
/* Start-advance-poll rounds in one mpnfm_poll at most (the tests build with 1 too: one phase step a call,
 * the pace at which merges fall behind and small writes wait for slots). */
#ifndef MPNFM_POLL_ROUNDS
#define MPNFM_POLL_ROUNDS 4
#endif
#define IDLE_POLLS  64            /* an idle FTL is polled once in this many calls */

enum { J_FREE, J_WAIT, J_RUN };
enum { K_READ, K_WSMALL, K_WLARGE, K_TRIM, K_FLUSH, K_MERGE };
enum { LARGE, SMALL };
static const uint8_t phases[] = { 1, 2, 2, 1, 1, 3 };

struct job {
	uint8_t  state, kind, phase, issued, waited;
	int8_t   result;
	uint16_t pending;             /* requests to the FTLs in flight */
	uint32_t cursor;              /* where the phase's issuing stands */
	uint32_t lp0, lp1;            /* large pages held, [lp0, lp1] */
	uint32_t sector, count;       /* the request's sectors (a merge: its large page's) */
	uint8_t *buf, *stage;
	struct ftl_req *r;            /* the host's request; NULL for a merge */
};

struct sub {
	struct ftl_req req;
	int16_t job, next_free;
	uint32_t unit;                /* a unit this write gives a new slot (undone if it fails), or NONE */
	uint8_t fm;
};

/* The numbers of a pair of FTLs. */
struct shape {
	struct mpnfm_config cfg;
	uint32_t sb, spu, upl, spl;   /* sector bytes; sectors a unit, units a large page, sectors a large page */
	uint32_t unit_bytes, theta, small_units;
	uint32_t sectors, units, lpages, slots, low;
};

struct mpnfm {
	struct ftl *f[2];
	struct shape g;
	uint32_t *slot_of;            /* per unit: its slot (S) or NONE (L) */
	uint32_t *unit_of, *prev, *next;   /* per slot: its unit (NONE: free); assigned slots oldest first */
	uint32_t *free_slots, nfree, head, tail;
	uint32_t *locked;             /* a bit per large page */
	struct job jobs[MPNFM_JOBS];  /* FTL_MAX_REQUESTS for the host's requests, then the merges */
	struct sub subs[MPNFM_SUBS];
	int sub_free;
	int waitq[MPNFM_JOBS], nwait; /* host jobs not started, in arrival order */
	uint32_t host_in_flight, merges, running;
	int dirty;                    /* a lock was released or a request arrived since the last start pass */
	int stall;                    /* the last merge's failure (FTL_E_FULL: the large FTL has no room), until a
	                               * large write or trim completes: no merge starts meanwhile, and a small
	                               * write that needs a slot when none is free fails with it instead of
	                               * waiting for ever */
	int merge_dirty;              /* a slot was assigned or a job ended since the last merge walk */
	uint32_t woken[WOKEN_WORDS];  /* a bit per running job with something to do (see advance_woken) */
	uint32_t subs_in[2];          /* sub-requests in each FTL */
	uint8_t idle[2];              /* the FTL was polled with nothing in it since the layer last submitted */
	uint32_t skipped[2];          /* polls of it skipped while idle */
	struct ftl_req *done[FTL_MAX_REQUESTS];
	int done_h, done_n;
	struct mpnfm_stats st;
};

static char why[160];
const char *mpnfm_why(void) { return why; }

static uint32_t min32(uint32_t a, uint32_t b) { return a < b ? a : b; }
static uint32_t max32(uint32_t a, uint32_t b) { return a > b ? a : b; }

void mpnfm_default_config(struct mpnfm_config *c)
{
	c->theta_bytes = 0;
	c->theta_inclusive = 0;
	c->low_permille = 125;
}

/* The geometry both FTLs give, or -1 with why[] set. */
static int shape(struct ftl *large, struct ftl *small, const struct mpnfm_config *c, struct shape *m)
{
	const struct ftl_config *lc = ftl_get_config(large), *sc = ftl_get_config(small);
	const struct ftl_geo *lg = ftl_geometry(large), *sg = ftl_geometry(small);
	memset(m, 0, sizeof(*m));
	if (!ftl_sectors(large) || !ftl_sectors(small)) {
		snprintf(why, sizeof(why), "both FTLs must be set up (ftl_init accepted them)");
		return -1;
	}
	if (lc->sector_bytes != sc->sector_bytes || sg->page_bytes % sc->sector_bytes || lg->page_bytes % sg->page_bytes) {
		snprintf(why, sizeof(why), "sectors of %u B (large) and %u B (small) must be equal, the small page (%u B) "
		         "a whole number of them and the large page (%u B) of small pages", (unsigned)lc->sector_bytes,
		         (unsigned)sc->sector_bytes, (unsigned)sg->page_bytes, (unsigned)lg->page_bytes);
		return -1;
	}
	m->sb = lc->sector_bytes;
	m->unit_bytes = sg->page_bytes;
	m->spu = sg->page_bytes / m->sb;
	m->upl = lg->page_bytes / sg->page_bytes;
	m->spl = m->spu * m->upl;
	m->theta = c->theta_bytes ? c->theta_bytes : m->unit_bytes;
	if (m->theta % m->sb || m->theta > FTL_MAX_SECTORS_BYTES) {
		snprintf(why, sizeof(why), "theta of %u B: a whole number of %u-byte sectors, at most %u B",
		         (unsigned)m->theta, (unsigned)m->sb, FTL_MAX_SECTORS_BYTES);
		return -1;
	}
	/* The most units a small write touches: n sectors from any offset in a unit. */
	uint32_t n = m->theta / m->sb - (c->theta_inclusive ? 0 : 1);
	m->small_units = max32(2, (n + m->spu - 2) / m->spu + 1);
	m->sectors = ftl_sectors(large) / m->spl * m->spl;
	m->units = m->sectors / m->spu;
	m->lpages = m->sectors / m->spl;
	m->slots = ftl_sectors(small) / m->spu;
	/* Every held large page may hold S units that no merge can take while it is held: more slots than
	 * that, or a small write could wait for a slot for ever. */
	if (m->slots <= (uint32_t)MPNFM_JOBS * m->upl) {
		snprintf(why, sizeof(why), "the small-page FTL holds %u small pages; MPNFM needs more than %u (%u requests "
		         "in flight x %u small pages a large page)", (unsigned)m->slots, (unsigned)(MPNFM_JOBS * m->upl),
		         (unsigned)MPNFM_JOBS, (unsigned)m->upl);
		return -1;
	}
	m->low = max32(c->low_permille * (uint64_t)m->slots / 1000, 2 * m->small_units * MPNFM_MERGES);
	if (m->low >= m->slots)
		m->low = m->slots - 1;
	m->cfg = *c;
	m->cfg.theta_bytes = m->theta;
	return 0;
}

static size_t align8(size_t n) { return (n + 7) & ~(size_t)7; }

static size_t layout(const struct shape *m, size_t *stage_at)
{
	size_t n = align8(sizeof(struct mpnfm));
	n += align8((size_t)m->units * 4);
	n += align8((size_t)m->slots * 4) * 4;
	n += align8(((size_t)m->lpages + 31) / 32 * 4);
	*stage_at = n;
	n += (size_t)FTL_MAX_REQUESTS * m->small_units * m->unit_bytes + (size_t)MPNFM_MERGES * m->spl * m->sb;
	return n;
}

size_t mpnfm_ram_bytes(struct ftl *large, struct ftl *small, const struct mpnfm_config *c)
{
	struct shape g;
	size_t stage;
	if (shape(large, small, c, &g))
		return sizeof(struct mpnfm);
	return layout(&g, &stage);
}

struct mpnfm *mpnfm_init(void *ram, size_t bytes, struct ftl *large, struct ftl *small, const struct mpnfm_config *c,
                         int *result)
{
	struct shape g;
	size_t stage;
	*result = FTL_E_CONFIG;
	if (((uintptr_t)ram & 7) || shape(large, small, c, &g)) {
		if ((uintptr_t)ram & 7)
			snprintf(why, sizeof(why), "RAM at %p: 8-byte alignment needed", ram);
		return NULL;
	}
	size_t need = layout(&g, &stage);
	if (bytes < need) {
		snprintf(why, sizeof(why), "%lu B of RAM given, %lu needed", (unsigned long)bytes, (unsigned long)need);
		*result = FTL_E_MEMORY;
		return NULL;
	}
	struct mpnfm *m = ram;
	uint8_t *p = (uint8_t *)ram + align8(sizeof(*m));
	memset(m, 0, sizeof(*m));
	m->g = g;
	m->f[LARGE] = large;
	m->f[SMALL] = small;
	m->slot_of = (uint32_t *)p;     p += align8((size_t)m->g.units * 4);
	m->unit_of = (uint32_t *)p;     p += align8((size_t)m->g.slots * 4);
	m->prev = (uint32_t *)p;        p += align8((size_t)m->g.slots * 4);
	m->next = (uint32_t *)p;        p += align8((size_t)m->g.slots * 4);
	m->free_slots = (uint32_t *)p;  p += align8((size_t)m->g.slots * 4);
	m->locked = (uint32_t *)p;
	memset(m->slot_of, 0xFF, (size_t)m->g.units * 4);
	memset(m->unit_of, 0xFF, (size_t)m->g.slots * 4);
	memset(m->locked, 0, ((size_t)m->g.lpages + 31) / 32 * 4);
	for (uint32_t s = 0; s < m->g.slots; s++)
		m->free_slots[s] = m->g.slots - 1 - s;     /* slot 0 on top */
	m->nfree = m->g.slots;
	m->head = m->tail = NONE;
	uint8_t *st = (uint8_t *)ram + stage;
	for (int i = 0; i < MPNFM_JOBS; i++) {
		m->jobs[i].state = J_FREE;
		m->jobs[i].stage = st;
		st += i < FTL_MAX_REQUESTS ? (size_t)m->g.small_units * m->g.unit_bytes : (size_t)m->g.spl * m->g.sb;
	}
	for (int i = 0; i < MPNFM_SUBS; i++)
		m->subs[i].next_free = (int16_t)(i + 1 < MPNFM_SUBS ? i + 1 : -1);
	m->sub_free = 0;
	m->st.slots = m->g.slots;
	*result = FTL_OK;
	return m;
}

uint32_t mpnfm_sectors(const struct mpnfm *m) { return m->g.sectors; }
uint32_t mpnfm_sector_bytes(const struct mpnfm *m) { return m->g.sb; }
uint32_t mpnfm_in_flight(const struct mpnfm *m) { return m->host_in_flight; }

int64_t mpnfm_slot_of(const struct mpnfm *m, uint32_t unit)
{
	return unit < m->g.units && m->slot_of[unit] != NONE ? (int64_t)m->slot_of[unit] : -1;
}

void mpnfm_get_stats(const struct mpnfm *m, struct mpnfm_stats *s)
{
	*s = m->st;
	s->free_slots = m->nfree;
	s->units_s = m->g.slots - m->nfree;
}

/* Slots: assigned ones in a list, oldest first; free ones on a stack. */
static void assign(struct mpnfm *m, uint32_t unit, uint32_t slot)
{
	m->nfree--;
	m->merge_dirty = 1;
	m->slot_of[unit] = slot;
	m->unit_of[slot] = unit;
	m->prev[slot] = m->tail;
	m->next[slot] = NONE;
	if (m->tail == NONE)
		m->head = slot;
	else
		m->next[m->tail] = slot;
	m->tail = slot;
	if (m->g.slots - m->nfree > m->st.max_used_slots)
		m->st.max_used_slots = m->g.slots - m->nfree;
}

/* Unit `unit` back to L: its slot forgotten by the small FTL (in RAM: the region table is the record)
 * and freed. */
static void release(struct mpnfm *m, uint32_t unit)
{
	uint32_t slot = m->slot_of[unit];
	ftl_discard(m->f[SMALL], slot * m->g.spu, m->g.spu);
	m->slot_of[unit] = NONE;
	m->unit_of[slot] = NONE;
	if (m->prev[slot] == NONE)
		m->head = m->next[slot];
	else
		m->next[m->prev[slot]] = m->next[slot];
	if (m->next[slot] == NONE)
		m->tail = m->prev[slot];
	else
		m->prev[m->next[slot]] = m->prev[slot];
	m->free_slots[m->nfree++] = slot;
}

static int held(const struct mpnfm *m, uint32_t lp0, uint32_t lp1)
{
	for (uint32_t p = lp0; p <= lp1; p++)
		if (m->locked[p >> 5] >> (p & 31) & 1)
			return 1;
	return 0;
}

static void hold(struct mpnfm *m, uint32_t lp0, uint32_t lp1, int on)
{
	for (uint32_t p = lp0; p <= lp1; p++) {
		if (on)
			m->locked[p >> 5] |= 1u << (p & 31);
		else
			m->locked[p >> 5] &= ~(1u << (p & 31));
	}
}

static void fail(struct job *j, int result)
{
	if (j->result == FTL_OK)
		j->result = (int8_t)result;
}

/* One request to FTL fm for job j: 0 issued (or failed into the job's result), 1 no room now. `sub`
 * (may be NULL) gets the submitted request's index, -1 when it was not submitted. */
static int issue_sub(struct mpnfm *m, struct job *j, int fm, int op, uint32_t sector, uint32_t count, uint8_t *buf,
                     int *sub)
{
	if (sub)
		*sub = -1;
	if (m->sub_free < 0)
		return 1;
	int i = m->sub_free;
	struct sub *s = &m->subs[i];
	memset(&s->req, 0, sizeof(s->req));
	s->req.op = (uint8_t)op;
	s->req.sector = sector;
	s->req.count = count;
	s->req.buf = buf;
	s->req.id = (uint32_t)i;
	s->unit = NONE;
	int r = ftl_submit(m->f[fm], &s->req);
	if (r == FTL_E_BUSY)
		return 1;
	if (r != FTL_OK) {
		fail(j, r);
		return 0;
	}
	if (sub)
		*sub = i;
	m->sub_free = s->next_free;
	s->job = (int16_t)(j - m->jobs);
	s->fm = (uint8_t)fm;
	j->pending++;
	m->subs_in[fm]++;
	m->idle[fm] = 0;
	return 0;
}

static int issue(struct mpnfm *m, struct job *j, int fm, int op, uint32_t sector, uint32_t count, uint8_t *buf)
{
	return issue_sub(m, j, fm, op, sector, count, buf, NULL);
}

/* The sectors of unit u that job j's request covers: [*lo, *hi). */
static void cover(const struct mpnfm *m, const struct job *j, uint32_t u, uint32_t *lo, uint32_t *hi)
{
	*lo = max32(j->sector, u * m->g.spu);
	*hi = min32(j->sector + j->count, (u + 1) * m->g.spu);
}

/* The edge unit k (0 first, 1 last) of a large write when the write covers it in part and it is S:
 * its number, or NONE. */
static uint32_t edge_s(const struct mpnfm *m, const struct job *j, int k)
{
	uint32_t u0 = j->sector / m->g.spu, u1 = (j->sector + j->count - 1) / m->g.spu, u = k ? u1 : u0, lo, hi;
	if (k && u1 == u0)
		return NONE;
	cover(m, j, u, &lo, &hi);
	return hi - lo < m->g.spu && m->slot_of[u] != NONE ? u : NONE;
}

/* Issue what the job's phase still has to: 0 all issued, 1 to be continued at the next poll. */
static int run_phase(struct mpnfm *m, struct job *j)
{
	const uint32_t spu = m->g.spu, end = j->sector + j->count, u0 = j->sector / spu, u1 = (end - 1) / spu;
	uint32_t u, lo, hi, slot;
	switch (j->kind * 4 + j->phase) {
	case K_READ * 4:
		while (j->cursor < j->count) {
			uint32_t s = j->sector + j->cursor, n, e;
			u = s / spu;
			slot = m->slot_of[u];
			if (slot != NONE) {
				n = min32((u + 1) * spu, end) - s;
				if (issue(m, j, SMALL, FTL_REQ_READ, slot * spu + s % spu, n, j->buf + j->cursor * m->g.sb))
					return 1;
			} else {
				for (e = (u + 1) * spu; e < end && m->slot_of[e / spu] == NONE; e += spu)
					;
				n = min32(e, end) - s;
				if (issue(m, j, LARGE, FTL_REQ_READ, s, n, j->buf + j->cursor * m->g.sb))
					return 1;
			}
			j->cursor += n;
		}
		return 0;
	case K_WSMALL * 4:                /* fill: L units written in part, read from the large FTL */
		for (; j->cursor <= u1 - u0; j->cursor++) {
			u = u0 + j->cursor;
			cover(m, j, u, &lo, &hi);
			if (m->slot_of[u] != NONE || hi - lo == spu)
				continue;
			if (issue(m, j, LARGE, FTL_REQ_READ, u * spu, spu, j->stage + j->cursor * m->g.unit_bytes))
				return 1;
			m->st.fills++;
		}
		return 0;
	case K_WSMALL * 4 + 1:            /* write: into the units' slots, a new slot for an L unit */
		if (j->cursor == 0 && m->stall && !m->merges) {
			/* Refused whole, before any of it is written, when its new slots are not free. */
			uint32_t need = 0;
			for (u = u0; u <= u1; u++)
				need += m->slot_of[u] == NONE;
			if (need > m->nfree) {
				fail(j, m->stall);
				j->cursor = u1 - u0 + 1;
				return 0;
			}
		}
		for (; j->cursor <= u1 - u0; j->cursor++) {
			u = u0 + j->cursor;
			cover(m, j, u, &lo, &hi);
			uint8_t *src = j->buf + (lo - j->sector) * m->g.sb, *whole = src;
			slot = m->slot_of[u];
			if (slot != NONE) {
				if (issue(m, j, SMALL, FTL_REQ_WRITE, slot * spu + lo - u * spu, hi - lo, src))
					return 1;
				continue;
			}
			if (!m->nfree) {
				if (m->stall && !m->merges) {
					fail(j, m->stall);    /* no merge can free a slot: the rest of the write fails */
					j->cursor = u1 - u0;
					continue;
				}
				if (!j->waited)
					m->st.slot_waits++;
				j->waited = 1;
				return 1;
			}
			if (hi - lo < spu) {
				whole = j->stage + j->cursor * m->g.unit_bytes;
				memcpy(whole + (lo - u * spu) * m->g.sb, src, (size_t)(hi - lo) * m->g.sb);
			}
			slot = m->free_slots[m->nfree - 1];
			int sub;
			if (issue_sub(m, j, SMALL, FTL_REQ_WRITE, slot * spu, spu, whole, &sub))
				return 1;
			if (sub >= 0) {
				assign(m, u, slot);
				m->subs[sub].unit = u;
			}
		}
		return 0;
	case K_WLARGE * 4:                /* S units at the edges written in part: read them whole */
		for (; j->cursor < 2; j->cursor++) {
			u = edge_s(m, j, (int)j->cursor);
			if (u == NONE)
				continue;
			if (issue(m, j, SMALL, FTL_REQ_READ, m->slot_of[u] * spu, spu, j->stage + j->cursor * m->g.unit_bytes))
				return 1;
			m->st.edge_moves++;
		}
		return 0;
	case K_WLARGE * 4 + 1:            /* the write, and the edge units' other sectors beside it */
		for (; j->cursor < 5; j->cursor++) {
			uint32_t c = j->cursor, g0, g1;
			if (c == 0) {
				if (issue(m, j, LARGE, FTL_REQ_WRITE, j->sector, j->count, j->buf))
					return 1;
				continue;
			}
			u = edge_s(m, j, (int)(c - 1) / 2);
			if (u == NONE)
				continue;
			cover(m, j, u, &lo, &hi);
			g0 = (c - 1) % 2 ? hi : u * spu;
			g1 = (c - 1) % 2 ? (u + 1) * spu : lo;
			if (g1 > g0 && issue(m, j, LARGE, FTL_REQ_WRITE, g0, g1 - g0,
			                     j->stage + (c - 1) / 2 * m->g.unit_bytes + (g0 - u * spu) * m->g.sb))
				return 1;
		}
		return 0;
	case K_TRIM * 4:                  /* the large FTL's sectors, and S units trimmed in part */
		for (; j->cursor <= u1 - u0 + 1; j->cursor++) {
			if (j->cursor == 0) {
				if (issue(m, j, LARGE, FTL_REQ_TRIM, j->sector, j->count, NULL))
					return 1;
				continue;
			}
			u = u0 + j->cursor - 1;
			cover(m, j, u, &lo, &hi);
			slot = m->slot_of[u];
			if (slot != NONE && hi - lo < spu &&
			    issue(m, j, SMALL, FTL_REQ_TRIM, slot * spu + lo - u * spu, hi - lo, NULL))
				return 1;
		}
		return 0;
	case K_FLUSH * 4:
		for (; j->cursor < 2; j->cursor++)
			if (issue(m, j, (int)j->cursor, FTL_REQ_FLUSH, 0, 0, NULL))
				return 1;
		return 0;
	case K_MERGE * 4:                 /* the large page, when some of it is L */
		if (j->cursor == 0) {
			for (u = u0; u <= u1 && m->slot_of[u] != NONE; u++)
				;
			if (u <= u1) {
				if (issue(m, j, LARGE, FTL_REQ_READ, j->sector, j->count, j->stage))
					return 1;
				m->st.merge_large_reads++;
			}
			j->cursor = 1;
		}
		return 0;
	case K_MERGE * 4 + 1:             /* its S units over it */
		for (; j->cursor <= u1 - u0; j->cursor++) {
			u = u0 + j->cursor;
			if (m->slot_of[u] != NONE &&
			    issue(m, j, SMALL, FTL_REQ_READ, m->slot_of[u] * spu, spu, j->stage + j->cursor * m->g.unit_bytes))
				return 1;
		}
		return 0;
	case K_MERGE * 4 + 2:             /* one large page written whole */
		if (j->cursor == 0) {
			if (issue(m, j, LARGE, FTL_REQ_WRITE, j->sector, j->count, j->stage))
				return 1;
			j->cursor = 1;
		}
		return 0;
	}
	return 0;
}

/* The job's last phase is done: what it changes in the region table, then its end. */
static void complete(struct mpnfm *m, struct job *j)
{
	const uint32_t spu = m->g.spu, u0 = j->sector / spu, u1 = (j->sector + j->count - 1) / spu;
	uint32_t lo, hi, n = 0;
	/* A large write or a merge leaves every S unit it touched L (an edge's other sectors were moved beside
	 * it); a trim those it covers whole. */
	if (j->result == FTL_OK && (j->kind == K_WLARGE || j->kind == K_MERGE || j->kind == K_TRIM)) {
		for (uint32_t u = u0; u <= u1; u++) {
			cover(m, j, u, &lo, &hi);
			if (m->slot_of[u] != NONE && (j->kind != K_TRIM || hi - lo == spu)) {
				release(m, u);
				n++;
			}
		}
	}
	if (j->kind == K_MERGE) {
		m->merges--;
		if (j->result == FTL_OK) {
			m->st.merges++;
			m->st.merged_units += n;
		} else {
			m->st.merge_failures++;
			m->stall = j->result;
		}
	} else if (j->result == FTL_OK && (j->kind == K_WLARGE || j->kind == K_TRIM)) {
		m->stall = FTL_OK;            /* the large FTL's contents changed: a merge may find room again */
	}
	if (j->kind != K_FLUSH)
		hold(m, j->lp0, j->lp1, 0);
	m->running--;
	m->dirty = 1;
	m->merge_dirty = 1;
	j->state = J_FREE;
	if (j->r) {
		j->r->result = j->result;
		m->done[(m->done_h + m->done_n++) % FTL_MAX_REQUESTS] = j->r;
	}
}

static void wake(struct mpnfm *m, const struct job *j)
{
	int i = (int)(j - m->jobs);
	m->woken[i >> 5] |= 1u << (i & 31);
}

/* A job's phases as far as they go now; a phase that could not issue everything (no sub-request, no
 * slot, an FTL busy) wakes the job again, to go on at the next round. */
static void advance(struct mpnfm *m, struct job *j)
{
	for (;;) {
		if (!j->issued) {
			if (run_phase(m, j)) {
				wake(m, j);
				return;
			}
			j->issued = 1;
		}
		if (j->pending)
			return;
		if (++j->phase == phases[j->kind]) {
			complete(m, j);
			return;
		}
		j->issued = 0;
		j->cursor = 0;
	}
}

/* Host requests in arrival order: one starts when the large pages it touches are free and no earlier
 * waiting request touches them; a flush when nothing else runs, and nothing passes a waiting flush. */
static void start_waiting(struct mpnfm *m)
{
	if (!m->dirty)
		return;
	m->dirty = 0;
	for (int k = 0; k < m->nwait; k++) {
		struct job *j = &m->jobs[m->waitq[k]];
		int blocked = 0;
		if (j->kind == K_FLUSH)
			blocked = k > 0 || m->running;
		else if (held(m, j->lp0, j->lp1))
			blocked = 1;
		else
			for (int e = 0; e < k && !blocked; e++) {
				const struct job *o = &m->jobs[m->waitq[e]];
				blocked = o->kind == K_FLUSH || (o->lp0 <= j->lp1 && j->lp0 <= o->lp1);
			}
		if (blocked) {
			if (j->kind == K_FLUSH)
				return;
			continue;
		}
		if (j->kind != K_FLUSH)
			hold(m, j->lp0, j->lp1, 1);
		j->state = J_RUN;
		wake(m, j);
		m->running++;
		memmove(&m->waitq[k], &m->waitq[k + 1], (size_t)(m->nwait - k - 1) * sizeof(int));
		m->nwait--;
		k--;
	}
}

/* Merges while free slots are under the low-water mark: the large page of the oldest slot whose page
 * no request holds. */
static void start_merges(struct mpnfm *m)
{
	int looked = 0;
	if (m->stall)
		return;
	/* (the walk's outcome depends on the free slots, the list, the locks and the merges running: unchanged
	 * since the last walk, it would start nothing again) */
	if (!m->merge_dirty || m->nfree >= m->g.low || m->merges >= MPNFM_MERGES)
		return;
	m->merge_dirty = 0;
	for (uint32_t s = m->head; m->nfree < m->g.low && m->merges < MPNFM_MERGES && s != NONE && looked < 256;
	     s = m->next[s], looked++) {
		uint32_t lp = m->unit_of[s] / m->g.upl;
		if (held(m, lp, lp))
			continue;
		struct job *j = NULL;
		for (int i = FTL_MAX_REQUESTS; i < MPNFM_JOBS && !j; i++)
			if (m->jobs[i].state == J_FREE)
				j = &m->jobs[i];
		uint8_t *stage = j->stage;
		memset(j, 0, sizeof(*j));
		j->stage = stage;
		j->kind = K_MERGE;
		j->state = J_RUN;
		j->lp0 = j->lp1 = lp;
		j->sector = lp * m->g.spl;
		j->count = m->g.spl;
		hold(m, lp, lp, 1);
		wake(m, j);
		m->merges++;
		m->running++;
		/* (the merge's units stay in the list until it completes: the walk goes on past them) */
	}
}

int mpnfm_submit(struct mpnfm *m, struct ftl_req *r)
{
	if (r->op > FTL_REQ_FLUSH)
		return FTL_E_CONFIG;
	if (r->op != FTL_REQ_FLUSH) {
		if (r->sector >= m->g.sectors || r->count > m->g.sectors - r->sector || !r->count)
			return FTL_E_RANGE;
		if (r->op != FTL_REQ_TRIM && ((uintptr_t)r->buf & (FTL_BUF_ALIGN - 1)))
			return FTL_E_ALIGN;
		if ((uint64_t)r->count * m->g.sb > FTL_MAX_SECTORS_BYTES)
			return FTL_E_TOO_BIG;
	}
	struct job *j = NULL;
	for (int i = 0; i < FTL_MAX_REQUESTS && !j; i++)
		if (m->jobs[i].state == J_FREE)
			j = &m->jobs[i];
	if (!j)
		return FTL_E_BUSY;
	uint8_t *stage = j->stage;
	memset(j, 0, sizeof(*j));
	j->stage = stage;
	j->r = r;
	j->sector = r->sector;
	j->count = r->count;
	j->buf = r->buf;
	r->result = FTL_OK;
	uint64_t bytes = (uint64_t)r->count * m->g.sb;
	switch (r->op) {
	case FTL_REQ_READ:
		j->kind = K_READ;
		m->st.reads++;
		break;
	case FTL_REQ_WRITE:
		if (bytes < m->g.theta || (m->g.cfg.theta_inclusive && bytes == m->g.theta)) {
			j->kind = K_WSMALL;
			m->st.small_writes++;
			m->st.small_write_bytes += bytes;
		} else {
			j->kind = K_WLARGE;
			m->st.large_writes++;
			m->st.large_write_bytes += bytes;
		}
		break;
	case FTL_REQ_TRIM:
		j->kind = K_TRIM;
		m->st.trims++;
		break;
	default:
		j->kind = K_FLUSH;
		j->count = 1;                 /* (no sectors: its cursor arithmetic needs one) */
		m->st.flushes++;
		break;
	}
	j->lp0 = j->sector / m->g.spl;
	j->lp1 = (j->sector + j->count - 1) / m->g.spl;
	j->state = J_WAIT;
	m->waitq[m->nwait++] = (int)(j - m->jobs);
	m->host_in_flight++;
	m->dirty = 1;
	return FTL_OK;
}

/* The FTLs' completions of sub-requests: how many came back. An FTL is polled while it holds sub-requests
 * or NAND operations of its own. Idle (a poll left it neither), its poll has nothing to do: its
 * checkpoints and failure handling follow NAND operations, and it runs them in the poll that reaps those;
 * it is polled then once every IDLE_POLLS calls only (in case), until the layer submits to it again. In a
 * round it is not polled again once the last sub-request it held came back: nothing more can. */
static int reap(struct mpnfm *m)
{
	int got = 0;
	for (int fm = 0; fm < 2; fm++) {
		struct ftl *f = m->f[fm];
		if (m->idle[fm] && !ftl_in_flight(f) && ++m->skipped[fm] % IDLE_POLLS)
			continue;
		struct ftl_req *q;
		while ((q = ftl_poll(f))) {
			struct sub *s = &m->subs[q->id];
			struct job *j = &m->jobs[s->job];
			if (q->result != FTL_OK) {
				fail(j, q->result);
				/* A new slot's write failed: the unit is L again (its data there untouched), the slot free. */
				if (s->unit != NONE && m->slot_of[s->unit] == q->sector / m->g.spu)
					release(m, s->unit);
			}
			if (!--j->pending)
				wake(m, j);
			m->subs_in[s->fm]--;
			s->next_free = (int16_t)m->sub_free;
			m->sub_free = (int)(s - m->subs);
			got++;
			if (!m->subs_in[fm])
				break;
		}
		m->idle[fm] = !m->subs_in[fm] && !ftl_in_flight(f);
	}
	return got;
}

/* The running jobs woken (started, a phase's last sub-request back, or a phase waiting for room), in job
 * order as a scan of every job would take them; a job woken again meanwhile waits for the next round. */
static void advance_woken(struct mpnfm *m)
{
	for (int w = 0; w < WOKEN_WORDS; w++) {
		uint32_t bits = m->woken[w];
		m->woken[w] = 0;
		for (int b = 0; bits; b++, bits >>= 1)
			if (bits & 1 && m->jobs[w * 32 + b].state == J_RUN)
				advance(m, &m->jobs[w * 32 + b]);
	}
}

/* Rounds of: merges and waiting requests started, woken jobs advanced (issuing their phases' sub-requests),
 * the FTLs polled. Another round while sub-requests came back or a job ended, so that phases whose
 * sub-requests complete without NAND (unmapped reads, fills of units never written) and the next phase's
 * issue happen in one call; bounded, a call returns after MPNFM_POLL_ROUNDS rounds even while completions keep coming. */
struct ftl_req *mpnfm_poll(struct mpnfm *m)
{
	for (int k = 0; k < MPNFM_POLL_ROUNDS; k++) {
		start_merges(m);
		start_waiting(m);
		advance_woken(m);
		if (!reap(m) && !m->dirty)
			break;
	}
	if (!m->done_n)
		return NULL;
	struct ftl_req *r = m->done[m->done_h];
	m->done_h = (m->done_h + 1) % FTL_MAX_REQUESTS;
	m->done_n--;
	m->host_in_flight--;
	return r;
}

static int dev_submit(void *m, struct ftl_req *r) { return mpnfm_submit(m, r); }
static struct ftl_req *dev_poll(void *m) { return mpnfm_poll(m); }
static uint32_t dev_in_flight(void *m) { return mpnfm_in_flight(m); }

/* FC over both FTLs: a large page's sectors never written or whose unit is S now, a small page's
 * (an assigned slot's) sectors never written. */
static uint64_t dev_unusable(void *ctx, const uint8_t *written)
{
	struct mpnfm *m = ctx;
	const uint32_t spu = m->g.spu, spl = m->g.spl;
	uint64_t n = 0;
	for (uint32_t lp = 0; lp < m->g.lpages; lp++)
		if (ftl_lpn_mapped(m->f[LARGE], lp))
			for (uint32_t s = lp * spl; s < (lp + 1) * spl; s++)
				n += !written[s] || m->slot_of[s / spu] != NONE;
	for (uint32_t slot = 0; slot < m->g.slots; slot++) {
		uint32_t u = m->unit_of[slot];
		if (u != NONE && ftl_lpn_mapped(m->f[SMALL], slot))
			for (uint32_t s = u * spu; s < (u + 1) * spu; s++)
				n += !written[s];
	}
	return n;
}

void mpnfm_as_dev(struct mpnfm *m, struct ftl_dev *d)
{
	d->unusable = dev_unusable;
	d->ctx = m;
	d->submit = dev_submit;
	d->poll = dev_poll;
	d->in_flight = dev_in_flight;
	d->sectors = m->g.sectors;
	d->sector_bytes = m->g.sb;
	d->ftls[0] = m->f[LARGE];
	d->ftls[1] = m->f[SMALL];
}

int mpnfm_check(const struct mpnfm *m)
{
	uint32_t listed = 0, s_units = 0;
	for (uint32_t s = m->head, prev = NONE; s != NONE; prev = s, s = m->next[s]) {
		if (++listed > m->g.slots || m->prev[s] != prev || m->unit_of[s] == NONE ||
		    m->slot_of[m->unit_of[s]] != s) {
			snprintf(why, sizeof(why), "slot %u in the assigned list is inconsistent", (unsigned)s);
			return -1;
		}
	}
	for (uint32_t u = 0; u < m->g.units; u++)
		if (m->slot_of[u] != NONE) {
			s_units++;
			if (m->slot_of[u] >= m->g.slots || m->unit_of[m->slot_of[u]] != u) {
				snprintf(why, sizeof(why), "unit %u names slot %u, which does not name it back", (unsigned)u,
				         (unsigned)m->slot_of[u]);
				return -1;
			}
		}
	for (uint32_t k = 0; k < m->nfree; k++)
		if (m->free_slots[k] >= m->g.slots || m->unit_of[m->free_slots[k]] != NONE) {
			snprintf(why, sizeof(why), "free slot %u is assigned", (unsigned)m->free_slots[k]);
			return -1;
		}
	if (listed != s_units || listed + m->nfree != m->g.slots) {
		snprintf(why, sizeof(why), "%u slots listed, %u S units, %u free, of %u", (unsigned)listed,
		         (unsigned)s_units, (unsigned)m->nfree, (unsigned)m->g.slots);
		return -1;
	}
	return 0;
}
