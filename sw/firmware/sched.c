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
	    g->blocks < g->planes * (g->subplane_registers ? SCHED_SUBPLANES : 1) || g->pages == 0 ||
	    depth == 0 || depth > SCHED_MAX_DEPTH || arch < SCHED_CNFM || arch > SCHED_SDW)
		return -1;
	memset(s, 0, sizeof(*s));
	s->geo = *g;
	s->arch = arch;
	s->registers = rule_registers(g, arch);
	s->depth = depth;
	memset(s->head, 0xff, sizeof(s->head));           /* NONE */
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
	s->arch = arch;
	s->registers = rule_registers(&s->geo, arch);
	return 0;
}

uint32_t sched_queued(const struct sched *s, uint32_t die)
{
	return die < s->geo.dies ? s->die_queued[die] : 0;
}

int sched_push(struct sched *s, const struct sched_op *op)
{
	struct sched_entry *e;
	uint16_t i;
	if (s->free_head == NONE || op->die >= s->geo.dies || op->block >= s->geo.blocks || op->page >= s->geo.pages ||
	    op->kind > SCHED_OTHER)
		return -1;
	i = s->free_head;
	e = &s->e[i];
	s->free_head = e->next;
	e->op = *op;
	e->seq = s->seq++;
	e->next = NONE;
	e->reg = (uint8_t)sched_register_of(s, op->block);
	e->type = (uint8_t)sched_page_type(s, op->page);
	if (s->tail[op->die][e->reg] == NONE)
		s->head[op->die][e->reg] = i;
	else
		s->e[s->tail[op->die][e->reg]].next = i;
	s->tail[op->die][e->reg] = i;
	s->die_queued[op->die]++;
	if (++s->queued > s->stats.max_queued)
		s->stats.max_queued = s->queued;
	return 0;
}

/* Whether entry b may join a group anchored by a. */
static int fits(const struct sched *s, const struct sched_entry *a, const struct sched_entry *b)
{
	if (b->op.kind != a->op.kind || a->op.kind == SCHED_OTHER)
		return 0;
	if (a->op.kind == SCHED_ERASE)
		return 1;
	if (s->arch == SCHED_CNFM)
		return b->op.page == a->op.page;
	return b->type == a->type;
}

/* Unlink entry i (after prev, or the head when prev is NONE) from die d's register r; free it. */
static void take(struct sched *s, uint32_t d, int r, uint16_t prev, uint16_t i)
{
	struct sched_entry *e = &s->e[i];
	if (prev == NONE)
		s->head[d][r] = e->next;
	else
		s->e[prev].next = e->next;
	if (s->tail[d][r] == i)
		s->tail[d][r] = prev;
	e->next = s->free_head;
	s->free_head = i;
	s->die_queued[d]--;
	s->queued--;
}

int sched_pick(struct sched *s, uint32_t die, struct sched_op *out, int max)
{
	struct sched_entry *a = NULL;
	int r, ra = -1, n = 0, scan;
	uint16_t i, prev;
	if (die >= s->geo.dies || max < 1 || s->die_queued[die] == 0)
		return 0;
	/* The anchor: the die's oldest operation, the head of its register. */
	for (r = 0; r < s->registers; r++) {
		i = s->head[die][r];
		if (i != NONE && (a == NULL || (int32_t)(s->e[i].seq - a->seq) < 0)) {
			a = &s->e[i];
			ra = r;
		}
	}
	out[n++] = a->op;
	for (r = 0; r < s->registers && n < max; r++) {
		if (r == ra)
			continue;
		prev = NONE;
		for (i = s->head[die][r], scan = 0; i != NONE && scan <= SCHED_READ_SCAN; prev = i, i = s->e[i].next, scan++) {
			if (fits(s, a, &s->e[i])) {
				out[n++] = s->e[i].op;
				take(s, die, r, prev, i);
				break;
			}
			/* Only reads pass reads; anything else stops at the head. */
			if (a->op.kind != SCHED_READ || s->e[i].op.kind != SCHED_READ)
				break;
		}
	}
	take(s, die, ra, NONE, (uint16_t)(a - s->e));
	s->stats.decisions++;
	s->stats.groups[n]++;
	return n;
}
