/* Multi-plane scheduling: see sched.h (the layout, and why the code is small). */
#include <string.h>

#include "sched.h"

#define KIND(sum)  ((sum) >> SCHED_KIND_SHIFT & 3)
/* The decision's code from a line's start: each line of it is a miss (see sched.h). */
#define HOT        __attribute__((section(".text.sched_hot"), aligned(32)))
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
	s->xmask = arch == SCHED_CNFM ? 0xffff : g->bits_per_cell > 1 ? 1 : 0;
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
	for (i = 0; i + 1 < depth; i++)               /* (the free entries: 0, 1, .. depth - 1) */
		s->e[i].next = (uint8_t)(i + 1);
	for (i = 0; i < SCHED_MAX_DIES; i++)
		s->die[i].ep = s->e;
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
	const struct sched_die *d;
	uint32_t n = 0, r, i;
	if (die >= s->dies)
		return 0;
	d = &s->die[die];
	for (r = 0; r < SCHED_MAX_REGS; r++) {
		if (!(d->w >> r & 1))
			continue;
		n++;
		if (d->w >> SCHED_W_MORE >> r & 1)
			for (n++, i = d->head[r]; i != d->tail[r]; i = s->e[i].next)
				n++;
	}
	return n;
}

/* The summary of an operation of die word w. */
static inline uint32_t summary(const struct sched *s, const struct sched_op *op, uint32_t w)
{
	uint32_t kind = op->kind;
	return w >> SCHED_W_ARRIVALS << SCHED_SEQ_SHIFT | kind << SCHED_KIND_SHIFT |
	       (op->page & s->xmask & -(kind < SCHED_ERASE));
}

/* The operations go in order: a register's first to the die's head, the others to an entry at its end.
 * No stack frame: the header's fields are read again for each operation, from its line. */
HOT void sched_push_n(struct sched *s, const struct sched_op *op, uint32_t nops)
{
	const struct sched_op *last = op + nops;
	uint32_t queued = s->queued + nops;
	s->queued = (uint16_t)queued;
	if (queued > s->max_queued)
		s->max_queued = (uint16_t)queued;
	for (; op < last; op++) {
		struct sched_die *d = &s->die[op->die];
		uint32_t w, r, bit, sum, i;
		__asm__("" : "+r"(d));                  /* (one register for the die, not its parts) */
		w = d->w;
		r = reg_of(op->block, s->pmask, s->rshift, s->qshift, s->submul);
		bit = 1u << r;
		sum = summary(s, op, w);
		w += 1u << SCHED_W_ARRIVALS;
		if (!(w & bit)) {
			if (!(w & 0xff))                        /* the die's only operation: its oldest */
				d->anchor = r;
			d->reg[r].sum = sum;
			d->reg[r].ctx = op->ctx;
			w |= bit;
		} else {
			struct sched_entry *e = d->ep;
			i = s->free;
			s->free = e[i].next;
			e[i].ctx = op->ctx;
			e[i].sum = sum;
			if (w >> SCHED_W_MORE & bit)
				e[d->tail[r]].next = (uint8_t)i;
			else {
				d->head[r] = (uint8_t)i;
				w |= bit << SCHED_W_MORE;
			}
			d->tail[r] = (uint8_t)i;
		}
		d->w = w;
	}
}

/* Take register r's head into *slot: the entry behind it (if any) becomes the head and goes back on the
 * free stack; *w is the die's state word, stored by the caller. */
static inline __attribute__((always_inline)) void take_head(struct sched *s, struct sched_die *d, uint32_t r,
                                                            void **slot, uint32_t *w)
{
	struct sched_entry *e;
	uint32_t i, bit = 1u << r;
	*slot = d->reg[r].ctx;
	if (!(*w >> SCHED_W_MORE & bit)) {
		*w &= ~bit;
		return;
	}
	e = d->ep;
	i = d->head[r];
	d->reg[r].ctx = e[i].ctx;
	d->reg[r].sum = e[i].sum;
	if (i == d->tail[r])
		*w &= ~(bit << SCHED_W_MORE);
	else
		d->head[r] = e[i].next;
	e[i].next = s->free;
	s->free = (uint8_t)i;
}

static inline int finish_n(struct sched *s, uint32_t n)
{
	s->queued = (uint16_t)(s->queued - n);
	if (!++s->groups_lo[n - 1])                     /* (the header's first line: 16 bits there) */
		s->groups_hi[n - 1]++;
	return (int)n;
}

static inline int finish(struct sched *s, void **out, void **o)
{
	return finish_n(s, (uint32_t)(o - out));
}

void sched_get_stats(const struct sched *s, struct sched_stats *st)
{
	uint32_t n;
	memset(st, 0, sizeof(*st));
	st->max_queued = s->max_queued;
	for (n = 1; n <= SCHED_MAX_REGS; n++) {
		st->groups[n] = (uint32_t)s->groups_hi[n - 1] << 16 | s->groups_lo[n - 1];
		st->decisions += st->groups[n];
	}
}

/* The heads of the registers in mt, taken, with an entry behind them: each gets its first entry as its
 * head and gives the entry back (in register order). Returns the die's word. */
static inline __attribute__((always_inline)) uint32_t refill(struct sched *s, struct sched_die *d, uint32_t w,
                                                             uint32_t mt)
{
	struct sched_entry *e = d->ep;
	uint32_t r, i;
	for (r = 0; mt >> r; r++) {
		if (!(mt >> r & 1))
			continue;
		i = d->head[r];
		d->reg[r].ctx = e[i].ctx;
		d->reg[r].sum = e[i].sum;
		if (i == d->tail[r])
			w &= ~(1u << SCHED_W_MORE << r);
		else
			d->head[r] = e[i].next;
		e[i].next = s->free;
		s->free = (uint8_t)i;
	}
	return w;
}

/* Take the heads of the registers in tk (their ctx already in the group): the others' entries move up. */
static inline __attribute__((always_inline)) uint32_t take_heads(struct sched *s, struct sched_die *d, uint32_t w,
                                                                 uint32_t tk)
{
	uint32_t mt = tk & w >> SCHED_W_MORE;
	w &= ~(tk & ~mt);
	if (mt)
		w = refill(s, d, w, mt);
	return w;
}

/* The register of the die's oldest head (w: its word; any when it has none). */
static inline __attribute__((always_inline)) uint32_t oldest(const struct sched_die *d, uint32_t w)
{
	uint32_t m = w & 0xff, r, ra = 0, sa = w >> SCHED_W_ARRIVALS << SCHED_SEQ_SHIFT;
	for (r = 0; m >> r; r++)
		if ((m >> r & 1) && (int32_t)(d->reg[r].sum - sa) < 0) {
			ra = r;
			sa = d->reg[r].sum;
		}
	return ra;
}

/* The decision from register r on (its bit rb; the heads of the registers in tk, before r, taken first), where a read anchor (key: its key shifted up) meets a read of another
 * key with more behind it: reads pass reads, so a partner may be the first of the key among the
 * SCHED_READ_SCAN reads behind the head, before any non-read. Rare, so out of the decision's code. */
static __attribute__((noinline)) int pick_scan(struct sched *s, struct sched_die *d, void **out, void **o, void **end,
                                                uint32_t rb, uint32_t key, uint32_t tk)
{
	uint32_t w = d->w, m, r, ra = d->anchor, sum, i, p, k, bit;
	for (r = 0; !(rb >> r & 1); r++)
		;
	w = take_heads(s, d, w, tk);
	m = w & 0xff;
	for (; m >> r; r++) {
		if (!(m >> r & 1))
			continue;
		if (r == ra) {
			take_head(s, d, r, out, &w);
			continue;
		}
		if (o == end)
			continue;
		sum = d->reg[r].sum << (32 - SCHED_SEQ_SHIFT);
		if (sum == key) {
			take_head(s, d, r, o++, &w);
			continue;
		}
		/* The entries behind the head: p the one before i (none: i is the first, head[r]). */
		bit = 1u << r;
		for (k = 0, p = 0, i = d->head[r]; k < SCHED_READ_SCAN && !((sum | key) >> 30) &&
		     (w >> SCHED_W_MORE & bit); k++, p = i, i = s->e[i].next) {
			sum = s->e[i].sum << (32 - SCHED_SEQ_SHIFT);
			if (sum == key) {
				if (i == d->tail[r]) {
					if (k)
						d->tail[r] = (uint8_t)p;
					else
						w &= ~(bit << SCHED_W_MORE);
				} else if (k)
					s->e[p].next = s->e[i].next;
				else
					d->head[r] = s->e[i].next;
				*o++ = s->e[i].ctx;
				s->e[i].next = s->free;
				s->free = (uint8_t)i;
				break;
			}
			if (i == d->tail[r])
				break;
		}
	}
	d->w = w;
	d->anchor = oldest(d, w);
	return finish(s, out, o);
}

/* The decision (see sched.h): the anchor (the die's oldest: d->anchor) into out[0] and the heads of its key
 * into out[1..] in register order. The heads are taken together at the end (tk: the registers taken); the
 * next anchor is the least of the heads left and the new ones in wrap-around order, starting from the next
 * arrival's (younger than any queued): a push only adds younger operations. No stack frame: the group's
 * size is taken before the moves (out and o free their registers), and no constant is kept in a register
 * across a loop (GCC's loop-invariant motion gave the moves' loop a saved register). */
__attribute__((optimize("no-move-loop-invariants"))) HOT int sched_pick(struct sched *s, uint32_t die, void **out, int max)
{
	struct sched_die *d = &s->die[die];
	const struct sched_head *h, *nh;
	void **o = out + 1, **end = out + max;
	uint32_t w, m, b, ra, key, sum, tk, na, ns, n;
	if (die >= s->dies || max < 1 || !(m = (w = d->w) & 0xff))
		return 0;
	__asm__("" : "+r"(d));                          /* (one register for the die, not its parts) */
	ra = d->anchor;
	h = &d->reg[ra];
	key = h->sum << (32 - SCHED_SEQ_SHIFT);         /* (the key without the seq, shifted up) */
	out[0] = h->ctx;
	if (key >> 30 == SCHED_OTHER)                   /* (alone) */
		end = o;
	tk = 1u << ra;
	m &= ~tk;
	nh = &d->reg[ra];
	ns = w >> SCHED_W_ARRIVALS << SCHED_SEQ_SHIFT;
	for (b = 1, h = d->reg; b <= m; b <<= 1, h++) {
		if (!(m & b))
			continue;
		sum = h->sum;
		if (o != end) {
			if (sum << (32 - SCHED_SEQ_SHIFT) == key) {
				*o++ = h->ctx;
				tk |= b;
				continue;
			}
			if (!((sum << (32 - SCHED_SEQ_SHIFT) | key) >> 30) && (w & b << SCHED_W_MORE))
				/* The registers before h taken there, the rest (the anchor too, if after h) by the scan. */
				return pick_scan(s, d, out, o, end, b, key, tk & (b - 1));
		}
		if ((int32_t)(sum - ns) < 0) {
			ns = sum;
			nh = h;
		}
	}
	/* (take_heads: the registers taken with more get their next operation as their head, each a candidate
	 * for the next anchor beside the least of the heads left) */
	__asm__("" : "+r"(d));
	na = (uint32_t)(nh - d->reg);
	n = (uint32_t)(o - out);
	m = tk & w >> SCHED_W_MORE;
	w &= ~(tk & ~m);
	if (m) {
		struct sched_entry *e = d->ep;
		uint32_t r, i;
		for (r = 0; m >> r; r++) {
			if (!(m >> r & 1))
				continue;
			i = d->head[r];
			sum = e[i].sum;
			d->reg[r].ctx = e[i].ctx;
			d->reg[r].sum = sum;
			if (i == d->tail[r])
				w &= ~(1u << SCHED_W_MORE << r);
			else
				d->head[r] = e[i].next;
			e[i].next = s->free;
			s->free = (uint8_t)i;
			if ((int32_t)(sum - ns) < 0) {
				ns = sum;
				na = r;
			}
		}
	}
	d->w = w;
	d->anchor = na;
	return finish_n(s, n);
}

int sched_push(struct sched *s, const struct sched_op *op)
{
	if (s->queued == s->depth || op->die >= s->dies || op->block >= s->geo.blocks || op->page >= s->geo.pages ||
	    op->kind > SCHED_OTHER)
		return -1;
	sched_push_n(s, op, 1);
	return 0;
}
