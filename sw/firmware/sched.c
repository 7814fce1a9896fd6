/* Multi-plane scheduling: see sched.h (the layout, and why the code is small). */
#include <string.h>

#include "sched.h"

#define KIND(sum)  ((sum) >> SCHED_KIND_SHIFT & 3)
/* The decision's code from a line's start: each line of it is a miss (see sched.h). */
#define HOT        __attribute__((aligned(32)))

static void set_rule(struct sched *s, int arch)
{
	const struct sched_geo *g = &s->geo;
	uint32_t b = g->blocks << (g->blocks < 5);
	s->arch = (uint8_t)arch;
	s->rshift = 0;
	s->submul = 0;
	s->qshift = g->blocks < 5;
	if (arch == SCHED_SDW && g->subplane_registers) {
		/* The subplane of block = plane + planes * q is floor(4 q / per_plane) = floor(4 (block - plane) /
		 * blocks) = mulhu((block - plane) << qshift, ceil(2^34 / (blocks << qshift))): exact for all of
		 * them up to 65 536 blocks (checked), and no division per push. */
		s->rshift = 2;
		s->submul = (uint32_t)(((1ull << 34) + b - 1) / b);
	}
	s->xbits = arch == SCHED_CNFM ? 16 : g->bits_per_cell > 1 ? 1 : 0;
}

int sched_registers(const struct sched *s) { return (s->pmask + 1) << s->rshift; }

static inline uint32_t reg_of(uint32_t block, uint32_t pmask, uint32_t rshift, uint32_t qshift, uint32_t submul)
{
	uint32_t plane = block & pmask;
	return plane << rshift | (uint32_t)((uint64_t)((block - plane) << qshift) * submul >> 32);
}

int sched_register_of(const struct sched *s, uint32_t block)
{
	return (int)reg_of(block, s->pmask, s->rshift, s->qshift, s->submul);
}

int sched_page_type(const struct sched *s, uint32_t page)
{
	return s->geo.bits_per_cell > 1 ? (int)(page & 1) : 0;
}

int sched_init(struct sched *s, const struct sched_geo *g, int arch, uint32_t depth)
{
	uint32_t i;
	if (g->dies == 0 || g->dies > SCHED_MAX_DIES || (g->planes != 1 && g->planes != 2) || g->blocks % g->planes ||
	    g->blocks < g->planes * (g->subplane_registers ? SCHED_SUBPLANES : 1) || g->blocks > 65536 ||
	    g->pages == 0 || g->pages > 65536 || depth == 0 || depth > SCHED_MAX_DEPTH || arch < SCHED_CNFM ||
	    arch > SCHED_SDW)
		return -1;
	memset(s, 0, sizeof(*s));
	s->geo = *g;
	s->dies = (uint8_t)g->dies;
	s->pmask = (uint8_t)(g->planes - 1);
	set_rule(s, arch);
	s->depth = (uint16_t)depth;
	for (i = 0; i < depth; i++)
		s->fstack[i] = (uint8_t)i;
	return 0;
}

int sched_set_arch(struct sched *s, int arch)
{
	if (s->queued || arch < SCHED_CNFM || arch > SCHED_SDW)
		return -1;
	set_rule(s, arch);
	return 0;
}

uint32_t sched_queued(const struct sched *s, uint32_t die)
{
	return die < s->dies ? s->die[die].count & 0xffff : 0;
}

static inline int finish(struct sched *s, struct sched_die *d, void **out, void **o)
{
	uint32_t n = (uint32_t)(o - out);
	d->count -= n;
	s->stats.decisions++;
	s->stats.groups[n]++;
	return (int)n;
}

/* Take register r's head into *slot: its successor (if any) becomes the head, with the summary its entry
 * keeps; the entry goes back on the free stack (its top: *queued). */
static inline __attribute__((always_inline)) void take_head(struct sched *s, struct sched_die *d, uint32_t r,
                                                            void **slot, uint32_t *queued)
{
	uint32_t i = d->head[r];
	if (i == d->tail[r])
		d->mask = (uint8_t)(d->mask & ~(1u << r));
	else {
		d->head[r] = s->e[i].next;
		d->sum[r] = s->e[i].nsum;
	}
	*slot = s->e[i].ctx;
	s->fstack[--*queued] = (uint8_t)i;
}

/* The decision from register r on, where a read anchor (key: its key shifted up) meets a read of another
 * key with more behind it: reads pass reads, so a partner may be the first of the key among the
 * SCHED_READ_SCAN reads behind the head, before any non-read. Rare, so out of the decision's code. */
static __attribute__((noinline)) int pick_scan(struct sched *s, struct sched_die *d, void **out, void **o, void **end,
                                                uint32_t r, uint32_t ra, uint32_t key)
{
	uint32_t m = d->mask, queued = s->queued, sum, i, p, k;
	for (; m >> r; r++) {
		if (!(m >> r & 1))
			continue;
		if (r == ra) {
			take_head(s, d, r, out, &queued);
			continue;
		}
		if (o == end)
			continue;
		sum = d->sum[r] << (32 - SCHED_SEQ_SHIFT);
		if (sum == key) {
			take_head(s, d, r, o++, &queued);
			continue;
		}
		for (k = 0, p = d->head[r]; k < SCHED_READ_SCAN && !((sum | key) >> 30) && p != d->tail[r]; k++, p = i) {
			sum = s->e[p].nsum << (32 - SCHED_SEQ_SHIFT);
			i = s->e[p].next;
			if (sum == key) {
				s->e[p].next = s->e[i].next;
				s->e[p].nsum = s->e[i].nsum;
				if (i == d->tail[r])
					d->tail[r] = (uint8_t)p;
				*o++ = s->e[i].ctx;
				s->fstack[--queued] = (uint8_t)i;
				break;
			}
		}
	}
	s->queued = (uint16_t)queued;
	return finish(s, d, out, o);
}

HOT void sched_push_n(struct sched *s, const struct sched_op *op, uint32_t nops)
{
	/* The rule in locals: the byte stores below may alias anything, so the compiler would load it again
	 * for each operation. */
	uint32_t pmask = s->pmask, rshift = s->rshift, qshift = s->qshift, submul = s->submul;
	uint32_t xmask = (1u << s->xbits) - 1, queued = s->queued, kind, count, r, i, t, sum;
	struct sched_entry *e = s->e;
	struct sched_die *d, *dies = s->die;
	uint8_t *fstack = s->fstack;
	const struct sched_op *last = op + nops;
	for (; op < last; op++) {
		d = &dies[op->die];
		kind = op->kind;
		r = reg_of(op->block, pmask, rshift, qshift, submul);
		count = d->count;
		d->count = count + 0x10001;             /* one more arrival, one more queued */
		sum = count >> 16 << SCHED_SEQ_SHIFT | kind << SCHED_KIND_SHIFT | (op->page & xmask & -(kind < SCHED_ERASE));
		i = fstack[queued++];
		e[i].ctx = op->ctx;
		if (d->mask >> r & 1) {
			t = d->tail[r];
			e[t].next = (uint8_t)i;
			e[t].nsum = sum;
		} else {
			d->mask = (uint8_t)(d->mask | 1u << r);
			d->head[r] = (uint8_t)i;
			d->sum[r] = sum;
		}
		d->tail[r] = (uint8_t)i;
	}
	s->queued = (uint16_t)queued;
	if (queued > s->stats.max_queued)
		s->stats.max_queued = queued;
}

HOT int sched_pick(struct sched *s, uint32_t die, void **out, int max)
{
	struct sched_die *d = &s->die[die];
	void **o = out + 1, **end = out + max, **slot;
	uint32_t m, r, ra = 0, sa, key, sum, queued;
	if (die >= s->dies || max < 1 || !(m = d->mask))
		return 0;
	/* The anchor: the die's oldest, the least head summary in wrap-around order (starting from the next
	 * arrival's, younger than any queued). */
	sa = d->count >> 16 << SCHED_SEQ_SHIFT;
	for (r = 0; m >> r; r++)
		if ((m >> r & 1) && (int32_t)(d->sum[r] - sa) < 0) {
			ra = r;
			sa = d->sum[r];
		}
	key = sa << (32 - SCHED_SEQ_SHIFT);             /* (the key without the seq, shifted up) */
	if (KIND(sa) == SCHED_OTHER)
		m = 1u << ra;
	/* The anchor into out[0], the heads of its key into out[1..] in register order. */
	queued = s->queued;
	for (r = 0; m >> r; r++) {
		if (!(m >> r & 1))
			continue;
		slot = out;
		if (r != ra) {
			if (o == end)
				continue;
			sum = d->sum[r] << (32 - SCHED_SEQ_SHIFT);
			if (sum != key) {
				if (!((sum | key) >> 30) && d->head[r] != d->tail[r]) {
					s->queued = (uint16_t)queued;
					return pick_scan(s, d, out, o, end, r, ra, key);
				}
				continue;
			}
			slot = o++;
		}
		take_head(s, d, r, slot, &queued);
	}
	s->queued = (uint16_t)queued;
	return finish(s, d, out, o);
}

int sched_push(struct sched *s, const struct sched_op *op)
{
	if (s->queued == s->depth || op->die >= s->dies || op->block >= s->geo.blocks || op->page >= s->geo.pages ||
	    op->kind > SCHED_OTHER)
		return -1;
	sched_push_n(s, op, 1);
	return 0;
}
