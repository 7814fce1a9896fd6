/* Host NAND model: pages stored only once programmed, completions in random order, faults and
 * power cuts that leave interrupted programs and erases in an undefined state, as real NAND does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nand_model.h"

#define QUEUE 64
#define CW_BYTES 512
#define ECC_T 8

enum { PG_ERASED, PG_PROGRAMMED, PG_GARBLED };

struct page { uint8_t state; uint8_t tag[FTL_TAG_BYTES]; uint8_t *data; };

struct nand_model {
	struct ftl_nand nand;
	struct ftl_geo g;
	struct nand_model_faults fx;
	struct page *pages;
	uint8_t *bad, *factory;
	struct ftl_nand_op *queue[QUEUE];
	int nq, powered, cut_opcode;
	uint64_t rng, ops, time_us, cut_programs, cut_erases;
	uint32_t small_bytes;              /* MPNFM: odd blocks (plane 1) have pages of this many bytes (0: none) */
};

static uint64_t rnd(struct nand_model *m)
{
	m->rng ^= m->rng << 13; m->rng ^= m->rng >> 7; m->rng ^= m->rng << 17;
	return m->rng;
}

static double unit(struct nand_model *m) { return (rnd(m) >> 11) * (1.0 / 9007199254740992.0); }

static struct page *page_of(struct nand_model *m, uint32_t die, uint32_t block, uint32_t page)
{
	return &m->pages[((uint64_t)die * m->g.blocks + block) * m->g.pages + page];
}

/* Data bytes of a block's pages: plane 1's small pages on an MPNFM model. (Page buffers are allocated
 * at the large size either way.) */
static uint32_t bytes_of(const struct nand_model *m, uint32_t block)
{
	return m->small_bytes && (block & 1) ? m->small_bytes : m->g.page_bytes;
}

static void garble(struct nand_model *m, struct page *p, uint32_t bytes, int keep_tag)
{
	if (!p->data)
		p->data = malloc(m->g.page_bytes);
	for (uint32_t i = 0; i < bytes; i++)
		p->data[i] = rnd(m);
	if (!keep_tag)
		for (int i = 0; i < FTL_TAG_BYTES; i++)
			p->tag[i] = rnd(m);
	p->state = PG_GARBLED;
}

static void erase_page(struct page *p)
{
	free(p->data);
	p->data = NULL;
	memset(p->tag, 0xFF, FTL_TAG_BYTES);
	p->state = PG_ERASED;
}

static void do_read(struct nand_model *m, struct ftl_nand_op *op, struct page *p)
{
	int tag_only = op->opcode == FTL_NAND_READ_TAG;
	const uint32_t pb = bytes_of(m, op->block);
	memcpy(op->tag, p->tag, FTL_TAG_BYTES);
	if (p->state == PG_ERASED) {
		if (!tag_only)
			memset(op->data, 0xFF, pb);
		op->status = FTL_NAND_ERASED;
		return;
	}
	if (m->fx.tag_flip && unit(m) < m->fx.tag_flip)
		op->tag[rnd(m) % FTL_TAG_BYTES] ^= 1 << (rnd(m) % 8);
	if (tag_only)
		return;
	memcpy(op->data, p->data, pb);
	if (p->state == PG_GARBLED || (m->fx.uncorrectable && unit(m) < m->fx.uncorrectable)) {
		op->data[rnd(m) % pb] ^= 0x5A;
		op->status = FTL_NAND_UNCORRECTABLE;
		return;
	}
	for (uint32_t cw = 0; cw < pb / CW_BYTES; cw++)
		if (m->fx.flip && unit(m) < m->fx.flip)
			op->corrected += 1 + rnd(m) % ECC_T;   /* corrected: the data comes out right */
}

static void do_program(struct nand_model *m, struct ftl_nand_op *op, struct page *p, uint8_t bad)
{
	if (bad || (m->fx.program_fail && unit(m) < m->fx.program_fail)) {
		m->bad[op->die * m->g.blocks + op->block] = 1;
		garble(m, p, bytes_of(m, op->block), 0);
		op->status = FTL_NAND_FAIL;
		return;
	}
	if (p->state != PG_ERASED && getenv("NAND_MODEL_STRICT")) {
		fprintf(stderr, "nand_model: die %u block %u page %u programmed twice\n", op->die, op->block, op->page);
		abort();
	}
	if (!p->data) {
		p->data = malloc(m->g.page_bytes);
		memset(p->data, 0xFF, m->g.page_bytes);
	}
	for (uint32_t i = 0; i < bytes_of(m, op->block); i++)
		p->data[i] &= op->data[i];
	for (int i = 0; i < FTL_TAG_BYTES; i++)
		p->tag[i] &= op->tag[i];
	if (p->state == PG_ERASED)
		p->state = PG_PROGRAMMED;
}

static void do_erase(struct nand_model *m, struct ftl_nand_op *op, uint8_t bad)
{
	if (bad || (m->fx.erase_fail && unit(m) < m->fx.erase_fail)) {
		m->bad[op->die * m->g.blocks + op->block] = 1;
		op->status = FTL_NAND_FAIL;
		return;
	}
	for (uint32_t pg = 0; pg < m->g.pages; pg++)
		erase_page(page_of(m, op->die, op->block, pg));
}

static void execute(struct nand_model *m, struct ftl_nand_op *op)
{
	uint32_t blk = op->die * m->g.blocks + op->block;
	struct page *p = page_of(m, op->die, op->block, op->page);
	op->status = FTL_NAND_OK;
	op->corrected = 0;
	switch (op->opcode) {
	case FTL_NAND_READ:
	case FTL_NAND_READ_TAG: do_read(m, op, p); m->time_us += 25; break;
	case FTL_NAND_READ_BBM: op->tag[0] = m->factory[blk] ? 0x00 : 0xFF; m->time_us += 25; break;
	case FTL_NAND_PROGRAM:  do_program(m, op, p, m->bad[blk]); m->time_us += 200; break;
	case FTL_NAND_ERASE:    do_erase(m, op, m->bad[blk]); m->time_us += 2000; break;
	}
}

/* Interrupted by the power cut: an undefined state, one of the outcomes real NAND shows. */
static void interrupt(struct nand_model *m, struct ftl_nand_op *op)
{
	if (op->opcode == FTL_NAND_PROGRAM) {
		struct page *p = page_of(m, op->die, op->block, op->page);
		switch (rnd(m) % 4) {
		case 0: break;                               /* not started */
		case 1: execute(m, op); break;               /* finished just before */
		case 2: garble(m, p, bytes_of(m, op->block), 0); break;              /* half-programmed cells */
		case 3: execute(m, op); garble(m, p, bytes_of(m, op->block), 1); break; /* tag through, data not (ECC catches it) */
		}
		m->cut_programs++;
	} else if (op->opcode == FTL_NAND_ERASE) {
		for (uint32_t pg = 0; pg < m->g.pages; pg++) {
			struct page *p = page_of(m, op->die, op->block, pg);
			uint64_t r = rnd(m) % 3;
			if (r == 0)
				erase_page(p);
			else if (r == 1 && p->state != PG_ERASED)
				garble(m, p, bytes_of(m, op->block), 1);
		}
		m->cut_erases++;
	}
	op->status = FTL_NAND_POWER;
}

static int submit(void *dev, struct ftl_nand_op *op)
{
	struct nand_model *m = dev;
	if (m->nq == QUEUE || (m->fx.refuse && m->nq && unit(m) < m->fx.refuse))
		return -1;
	m->queue[m->nq++] = op;
	return 0;
}

static struct ftl_nand_op *poll(void *dev)
{
	struct nand_model *m = dev;
	if (!m->nq)
		return NULL;
	int i = rnd(m) % m->nq;             /* completions out of order, as over several dies */
	struct ftl_nand_op *op = m->queue[i];
	m->queue[i] = m->queue[--m->nq];
	if (!m->powered) {
		op->status = FTL_NAND_POWER;
		return op;
	}
	if (m->fx.cut_at && m->ops + 1 >= m->fx.cut_at && (m->cut_opcode < 0 || op->opcode == m->cut_opcode)) {
		/* The cut: this operation and every other in flight are interrupted. */
		m->powered = 0;
		m->cut_programs = m->cut_erases = 0;
		interrupt(m, op);
		for (int k = 0; k < m->nq; k++)
			interrupt(m, m->queue[k]);
		return op;
	}
	m->ops++;
	execute(m, op);
	return op;
}

static uint64_t now_us(void *dev) { return ((struct nand_model *)dev)->time_us; }

struct nand_model *nand_model_new(const struct ftl_geo *g, const struct nand_model_faults *faults, uint64_t seed)
{
	struct nand_model *m = calloc(1, sizeof(*m));
	uint64_t npages = (uint64_t)g->dies * g->blocks * g->pages, nblocks = (uint64_t)g->dies * g->blocks;
	m->g = *g;
	m->fx = *faults;
	m->rng = seed * 0x9E3779B97F4A7C15ull + 1;
	m->pages = calloc(npages, sizeof(struct page));
	m->bad = calloc(nblocks, 1);
	m->factory = calloc(nblocks, 1);
	for (uint64_t i = 0; i < npages; i++)
		erase_page(&m->pages[i]);
	for (uint64_t b = 0; b < nblocks; b++)
		if (faults->factory_bad && unit(m) < faults->factory_bad)
			m->factory[b] = m->bad[b] = 1;
	m->powered = 1;
	m->cut_opcode = -1;
	m->nand.geo = *g;
	m->nand.dev = m;
	m->nand.submit = submit;
	m->nand.poll = poll;
	m->nand.now_us = now_us;
	return m;
}

void nand_model_free(struct nand_model *m)
{
	uint64_t npages = (uint64_t)m->g.dies * m->g.blocks * m->g.pages;
	for (uint64_t i = 0; i < npages; i++)
		free(m->pages[i].data);
	free(m->pages); free(m->bad); free(m->factory); free(m);
}

struct ftl_nand *nand_model_nand(struct nand_model *m) { return &m->nand; }

int nand_model_set_small(struct nand_model *m, uint32_t small_bytes)
{
	if (m->g.planes != 2 || small_bytes == 0 || small_bytes > m->g.page_bytes || small_bytes % 512)
		return -1;
	m->small_bytes = small_bytes;
	return 0;
}
int nand_model_powered(const struct nand_model *m) { return m->powered; }
uint64_t nand_model_ops(const struct nand_model *m) { return m->ops; }

void nand_model_power_on(struct nand_model *m, uint64_t next_cut_at)
{
	m->nq = 0;
	m->powered = 1;
	m->fx.cut_at = next_cut_at;
}

void nand_model_cut_on(struct nand_model *m, int opcode) { m->cut_opcode = opcode; }

void nand_model_cut_stats(const struct nand_model *m, uint64_t *programs, uint64_t *erases)
{
	*programs = m->cut_programs;
	*erases = m->cut_erases;
}

int nand_model_corrupt(struct nand_model *m, uint32_t die, uint32_t block, uint32_t page, int mode)
{
	struct page *p = page_of(m, die, block, page);
	if (p->state == PG_ERASED)
		return -1;
	if (mode == 0)
		garble(m, p, bytes_of(m, block), 1);
	else
		p->data[rnd(m) % bytes_of(m, block)] ^= 1 + rnd(m) % 255;
	return 0;
}

int nand_model_block_state(const struct nand_model *m, uint32_t die, uint32_t block)
{
	uint64_t b = (uint64_t)die * m->g.blocks + block;
	return m->factory[b] ? 1 : m->bad[b] ? 2 : 0;
}

/* A copy of the array (no faults, no cut pending, nothing in flight): a second FTL may mount it. */
struct nand_model *nand_model_clone(const struct nand_model *m)
{
	struct nand_model *c = malloc(sizeof(*c));
	uint64_t npages = (uint64_t)m->g.dies * m->g.blocks * m->g.pages, nblocks = (uint64_t)m->g.dies * m->g.blocks;
	*c = *m;
	memset(&c->fx, 0, sizeof(c->fx));
	c->pages = malloc(npages * sizeof(struct page));
	for (uint64_t i = 0; i < npages; i++) {
		c->pages[i] = m->pages[i];
		if (m->pages[i].data) {
			c->pages[i].data = malloc(m->g.page_bytes);
			memcpy(c->pages[i].data, m->pages[i].data, m->g.page_bytes);
		}
	}
	c->bad = malloc(nblocks); memcpy(c->bad, m->bad, nblocks);
	c->factory = malloc(nblocks); memcpy(c->factory, m->factory, nblocks);
	c->nq = 0;
	c->powered = 1;
	c->nand.dev = c;
	return c;
}

/* A page's data without a read (no counters, no faults): NULL when erased. */
const uint8_t *nand_model_peek(const struct nand_model *m, uint32_t ppn, int *state)
{
	const struct page *p = &m->pages[ppn];
	*state = p->state;
	return p->state == PG_ERASED ? NULL : p->data;
}

int nand_model_poke(struct nand_model *m, uint32_t ppn, uint32_t offset, const uint8_t *bytes, uint32_t n)
{
	struct page *p = &m->pages[ppn];
	if (p->state == PG_ERASED || !p->data || offset > m->g.page_bytes || n > m->g.page_bytes - offset)
		return -1;
	memcpy(p->data + offset, bytes, n);
	return 0;
}

uint64_t nand_model_pages(const struct nand_model *m)
{
	return (uint64_t)m->g.dies * m->g.blocks * m->g.pages;
}
