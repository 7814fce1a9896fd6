/* The MPNFM device's two planes as two FTL devices (see mpnfm.h). */
#include <string.h>

#include "mpnfm.h"

static int view_submit(void *dev, struct ftl_nand_op *op)
{
	struct mpnfm_view_dev *d = dev;
	struct mpnfm_views *v = d->v;
	if (!v->nfree)
		return -1;
	int i = v->free_ops[--v->nfree];
	struct ftl_nand_op *c = &v->op[i];
	*c = *op;
	c->block = 2 * op->block + (uint32_t)d->plane;
	v->orig[i] = op;
	if (v->lower.submit(v->lower.dev, c)) {
		v->free_ops[v->nfree++] = (int16_t)i;
		return -1;
	}
	return 0;
}

/* The lower device's next completion, handed to its own view (the other view's are queued for it). */
static struct ftl_nand_op *view_poll(void *dev)
{
	struct mpnfm_view_dev *d = dev;
	struct mpnfm_views *v = d->v;
	int p = d->plane;
	for (;;) {
		if (v->qn[p]) {
			struct ftl_nand_op *op = v->q[p][v->qh[p]];
			v->qh[p] = (v->qh[p] + 1) % MPNFM_VIEW_OPS;
			v->qn[p]--;
			return op;
		}
		struct ftl_nand_op *c = v->lower.poll(v->lower.dev);
		if (!c)
			return NULL;
		int i = (int)(c - v->op), plane = (int)(c->block & 1);
		struct ftl_nand_op *op = v->orig[i];
		op->status = c->status;
		op->corrected = c->corrected;
		memcpy(op->tag, c->tag, sizeof(op->tag));
		v->free_ops[v->nfree++] = (int16_t)i;
		if (plane == p)
			return op;
		/* (at most MPNFM_VIEW_OPS in flight: the queue has room) */
		v->q[plane][(v->qh[plane] + v->qn[plane]++) % MPNFM_VIEW_OPS] = op;
	}
}

static uint64_t view_now_us(void *dev)
{
	struct mpnfm_view_dev *d = dev;
	return d->v->lower.now_us(d->v->lower.dev);
}

int mpnfm_views_open(struct mpnfm_views *v, const struct ftl_nand *lower, uint32_t small_bytes)
{
	if (lower->geo.planes != 2 || lower->geo.blocks < 2 || !small_bytes || small_bytes > lower->geo.page_bytes ||
	    lower->geo.page_bytes % small_bytes)
		return -1;
	memset(v, 0, sizeof(*v));
	v->lower = *lower;
	for (int i = 0; i < MPNFM_VIEW_OPS; i++)
		v->free_ops[i] = (int16_t)(MPNFM_VIEW_OPS - 1 - i);
	v->nfree = MPNFM_VIEW_OPS;
	for (int p = 0; p < 2; p++) {
		struct ftl_nand *n = &v->view[p];
		v->dev[p].v = v;
		v->dev[p].plane = p;
		n->geo = lower->geo;
		n->geo.planes = 1;
		n->geo.blocks = lower->geo.blocks / 2;
		n->geo.page_bytes = p ? small_bytes : lower->geo.page_bytes;
		n->geo.span = 0;
		n->geo.stagger = 0;
		n->dev = &v->dev[p];
		n->submit = view_submit;
		n->poll = view_poll;
		n->now_us = view_now_us;
		n->cpu_view = lower->cpu_view;
	}
	return 0;
}
