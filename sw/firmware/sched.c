/* Multi-plane scheduling: see sched.h. */
#include <string.h>

#include "sched.h"

#define NONE 0xffffu

static int rule_registers(const struct sched_geo *g, int arch)
{
	return (int)g->planes * (arch == SCHED_SDW && g->subplane_registers ? SCHED_SUBPLANES : 1);
}

int sched_registers(const struct sched *s) { return s->registers; }

int sched_register_of(const struct sched *s, uint32_t block)
{
	uint32_t planes = s->geo.planes, plane = block & (planes - 1), per_plane = s->geo.blocks / planes;
	uint32_t sub;
	if (s->registers == (int)planes)
		return (int)plane;
	sub = (block / planes) * SCHED_SUBPLANES / (per_plane ? per_plane : 1);
	if (sub > SCHED_SUBPLANES - 1)
		sub = SCHED_SUBPLANES - 1;
	return (int)(plane * SCHED_SUBPLANES + sub);
}

int sched_page_type(const struct sched *s, uint32_t page)
{
	return s->geo.bits_per_cell > 1 ? (int)(page & 1) : 0;
}

int sched_init(struct sched *s, const struct sched_geo *g, int arch, uint32_t depth)
{
	uint32_t i;
	if (g->dies == 0 || g->dies > SCHED_MAX_DIES || (g->planes != 1 && g->planes != 2) ||
	    g->blocks < g->planes * (g->subplane_registers ? SCHED_SUBPLANES : 1) || g->blocks > 65536 ||
	    g->pages == 0 || g->pages > 65536 || depth == 0 || depth > SCHED_MAX_DEPTH || arch < SCHED_CNFM ||
	    arch > SCHED_SDW)
		return -1;
	memset(s, 0, sizeof(*s));
	s->geo = *g;
	s->arch = (uint8_t)arch;
	s->registers = (uint8_t)rule_registers(g, arch);
	s->depth = depth;
	memset(s->die, 0xff, sizeof(s->die));             /* NONE */
	for (i = 0; i < SCHED_MAX_DIES; i++)
		s->die[i].queued = 0;
	memset(s->tail, 0xff, sizeof(s->tail));
	for (i = 0; i < depth; i++)
		s->e[i].next = (uint16_t)(i + 1 < depth ? i + 1 : NONE);
	s->free_head = 0;
	return 0;
}

int sched_set_arch(struct sched *s, int arch)
{
	if (s->queued || arch < SCHED_CNFM || arch > SCHED_SDW)
		return -1;
	s->arch = (uint8_t)arch;
	s->registers = (uint8_t)rule_registers(&s->geo, arch);
	return 0;
}

uint32_t sched_queued(const struct sched *s, uint32_t die)
{
	return die < s->geo.dies ? s->die[die].queued : 0;
}

int sched_push(struct sched *s, const struct sched_op *op)
{
	struct sched_entry *e;
	struct sched_die *d;
	uint16_t i;
	int r;
	if (s->free_head == NONE || op->die >= s->geo.dies || op->block >= s->geo.blocks || op->page >= s->geo.pages ||
	    op->kind > SCHED_OTHER)
		return -1;
	i = s->free_head;
	e = &s->e[i];
	s->free_head = e->next;
	e->ctx = op->ctx;
	e->seq = s->seq++;
	e->block = (uint16_t)op->block;
	e->page = (uint16_t)op->page;
	e->next = NONE;
	e->kind = op->kind;
	e->type = (uint8_t)sched_page_type(s, op->page);
	r = sched_register_of(s, op->block);
	d = &s->die[op->die];
	if (s->tail[op->die][r] == NONE)
		d->head[r] = i;
	else
		s->e[s->tail[op->die][r]].next = i;
	s->tail[op->die][r] = i;
	d->queued++;
	if (++s->queued > s->stats.max_queued)
		s->stats.max_queued = s->queued;
	return 0;
}

/* Whether entry b may join a group anchored by a. */
static inline int fits(int arch, const struct sched_entry *a, const struct sched_entry *b)
{
	if (b->kind != a->kind || a->kind == SCHED_OTHER)
		return 0;
	if (a->kind == SCHED_ERASE)
		return 1;
	if (arch == SCHED_CNFM)
		return b->page == a->page;
	return b->type == a->type;
}

/* Unlink entry i (after prev, or the head when prev is NONE) from die d's register r; free it. An entry
 * is its register's tail exactly when nothing follows it, so the tail is read only by sched_push. */
static inline void take(struct sched *s, uint32_t d, int r, uint16_t prev, uint16_t i)
{
	struct sched_entry *e = &s->e[i];
	uint16_t next = e->next;
	if (prev == NONE)
		s->die[d].head[r] = next;
	else
		s->e[prev].next = next;
	if (next == NONE)
		s->tail[d][r] = prev;
	e->next = s->free_head;
	s->free_head = i;
}

int sched_pick(struct sched *s, uint32_t die, void **out, int max)
{
	struct sched_die *d = &s->die[die];
	struct sched_entry *a = NULL;
	int r, ra = -1, n = 0, scan, regs = s->registers, arch = s->arch;
	uint16_t i, prev;
	if (die >= s->geo.dies || max < 1 || d->queued == 0)
		return 0;
	/* The anchor: the die's oldest operation, the head of its register. */
	for (r = 0; r < regs; r++) {
		i = d->head[r];
		if (i != NONE && (a == NULL || (int32_t)(s->e[i].seq - a->seq) < 0)) {
			a = &s->e[i];
			ra = r;
		}
	}
	out[n++] = a->ctx;
	for (r = 0; r < regs && n < max; r++) {
		if (r == ra)
			continue;
		prev = NONE;
		for (i = d->head[r], scan = 0; i != NONE && scan <= SCHED_READ_SCAN; prev = i, i = s->e[i].next, scan++) {
			if (fits(arch, a, &s->e[i])) {
				out[n++] = s->e[i].ctx;
				take(s, die, r, prev, i);
				break;
			}
			/* Only reads pass reads; anything else stops at the head. */
			if (a->kind != SCHED_READ || s->e[i].kind != SCHED_READ)
				break;
		}
	}
	take(s, die, ra, NONE, (uint16_t)(a - s->e));
	d->queued = (uint16_t)(d->queued - n);
	s->queued -= (uint32_t)n;
	s->stats.decisions++;
	s->stats.groups[n]++;
	return n;
}
