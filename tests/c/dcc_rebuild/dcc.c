/* The first DCC scheduler (sw/firmware/dcc.c before wip/dcc), kept verbatim as the tests' reference: it
 * rebuilds the summed staircase at every decision. See dcc.h.
 *
 * Scheduling an operation at the earliest feasible start s >= now:
 *  1. sum the scheduled operations that are not over into one staircase E (intervals from `now`);
 *  2. try s = now: walk the new model's pieces against E; at the first piece k overlapping an
 *     interval j of E with E_j + M_k > cap, every start before end_j - offset_k keeps that overlap
 *     (the slides' "delay the operation after the violation"), so s = end_j - offset_k; repeat.
 * Beyond E's last edge the level is 0 and every piece is under the cap, so the loop ends; the start
 * it returns is the earliest feasible one because each step skips only starts that violate. */
#include "dcc.h"

void dcc_reset(struct dcc *d)
{
	d->n_res = 0;
	d->n_edges = 0;
}

int dcc_init(struct dcc *d, uint32_t cap, const struct dcc_model *models, unsigned n_models)
{
	unsigned op, k;

	if (n_models > DCC_MAX_MODELS)
		return DCC_ERR_TOO_MANY_MODELS;
	d->cap = cap;
	d->model = models;
	d->n_models = n_models;
	for (op = 0; op < n_models; op++) {
		uint64_t t = 0;
		if (models[op].n > DCC_MAX_PIECES)
			return DCC_ERR_TOO_MANY_PIECES;
		for (k = 0; k < models[op].n; k++) {
			if (models[op].piece[k].level > cap)
				return DCC_ERR_OVER_CAP;
			d->offset[op][k] = t;
			t += models[op].piece[k].cycles;
		}
		d->offset[op][k] = t;
		d->length[op] = t;
	}
	dcc_reset(d);
	return DCC_OK;
}

/* Drops the operations over by `now`. */
static void expire(struct dcc *d, uint64_t now)
{
	unsigned i, n = 0;

	for (i = 0; i < d->n_res; i++)
		if (d->res[i].start + d->length[d->res[i].op] > now)
			d->res[n++] = d->res[i];
	d->n_res = n;
}

/* E from `now` on: a merge of the reservations' pieces, the next boundary found each step. */
static void sum_reservations(struct dcc *d, uint64_t now)
{
	unsigned i, k[DCC_MAX_RES];
	uint64_t t = now;

	for (i = 0; i < d->n_res; i++) {
		const uint64_t *off = d->offset[d->res[i].op];
		k[i] = 0;
		while (k[i] < d->model[d->res[i].op].n && d->res[i].start + off[k[i] + 1] <= now)
			k[i]++;
	}
	d->n_edges = 0;
	for (;;) {
		uint64_t next = UINT64_MAX;
		uint32_t level = 0;
		for (i = 0; i < d->n_res; i++) {
			unsigned op = d->res[i].op;
			uint64_t s = d->res[i].start;
			if (k[i] >= d->model[op].n)
				continue;
			if (s > t) {
				if (s < next)
					next = s;
				continue;
			}
			level += d->model[op].piece[k[i]].level;
			if (s + d->offset[op][k[i] + 1] < next)
				next = s + d->offset[op][k[i] + 1];
		}
		if (d->n_edges && d->edge[d->n_edges - 1] == t)
			d->n_edges--;           /* an empty interval (zero-cycle pieces): replaced */
		if (!d->n_edges || d->level[d->n_edges - 1] != level) {
			d->edge[d->n_edges] = t;
			d->level[d->n_edges] = level;
			d->n_edges++;
		}
		if (next == UINT64_MAX)
			break;
		t = next;
		for (i = 0; i < d->n_res; i++) {
			unsigned op = d->res[i].op;
			if (k[i] < d->model[op].n && d->res[i].start + d->offset[op][k[i] + 1] <= t)
				k[i]++;
		}
	}
}

/* 0 when the operation fits at s; otherwise the next start worth trying. */
static uint64_t first_conflict(const struct dcc *d, unsigned op, uint64_t s)
{
	const struct dcc_model *m = &d->model[op];
	const uint64_t *off = d->offset[op];
	unsigned j = 0, k;

	for (k = 0; k < m->n; k++) {
		uint64_t a = s + off[k], b = s + off[k + 1];
		uint32_t room = d->cap - m->piece[k].level;
		if (m->piece[k].level == 0 || a == b)
			continue;
		while (j + 1 < d->n_edges && d->edge[j + 1] <= a)
			j++;
		/* Intervals j, j+1, ... overlapping [a, b). */
		for (unsigned q = j; q < d->n_edges && d->edge[q] < b; q++) {
			if (d->level[q] > room) {
				if (q + 1 == d->n_edges)
					return 0;        /* cannot happen: the last interval is at 0 */
				return d->edge[q + 1] - off[k];
			}
		}
	}
	return 0;
}

int64_t dcc_schedule(struct dcc *d, unsigned op, uint64_t now)
{
	uint64_t s = now, next;

	if (op >= d->n_models)
		return DCC_ERR_BAD_OP;
	expire(d, now);
	if (d->n_res >= DCC_MAX_RES)
		return DCC_ERR_FULL;
	sum_reservations(d, now);
	while ((next = first_conflict(d, op, s)) != 0)
		s = next;
	d->res[d->n_res].start = s;
	d->res[d->n_res].op = op;
	d->n_res++;
	return (int64_t)s;
}

uint32_t dcc_model_at(const struct dcc *d, uint64_t t)
{
	uint32_t sum = 0;
	unsigned i;

	for (i = 0; i < d->n_res; i++) {
		unsigned op = d->res[i].op, lo = 0, hi = d->model[op].n;
		uint64_t s = d->res[i].start;
		if (t < s || t >= s + d->length[op])
			continue;
		/* The piece with offset[k] <= t - s < offset[k + 1]. */
		while (hi - lo > 1) {
			unsigned mid = (lo + hi) / 2;
			if (d->offset[op][mid] <= t - s)
				lo = mid;
			else
				hi = mid;
		}
		sum += d->model[op].piece[lo].level;
	}
	return sum;
}
