/* DCC scheduler: see dcc.h.
 *
 * The summed staircase E of the reserved operations is kept between decisions: scheduling an operation
 * merges its corners into E (levels added), and an operation over by `now` is subtracted from E when it
 * expires (its corners are dropped where no other operation has one, so E holds only the corners of
 * reservations not over and stays within DCC_MAX_EDGES). E is the exact sum of every reservation not
 * over at every cycle, so `now` may also go back: the start of a decision is found where E's
 * intervals at `now` are (a binary search), nothing is rebuilt.
 *
 * The start is the earliest s >= now at which every piece k of the new model (level M_k, cycles
 * [s + from_k, s + to_k)) meets no interval of E above cap - M_k. When piece k meets a run of such
 * intervals ending at e, every start before e - from_k keeps that overlap (the slides' "delay the
 * operation after the violation"), so s moves there. Each move skips only starts that violate, so s is
 * the earliest feasible start: the start the first dcc.c (which rebuilt E from the reservations at each
 * decision and re-checked from the first piece) returned, which the tests check start by start. Two
 * ways find the moves (search()):
 *  - a model of few pieces (the flat, atomic, ones): the pieces in turn, round robin, from s = now, each
 *    going on until it fits, until every piece fits at one s; each piece remembers how far past its
 *    start it is known to fit (`clear`) and where in E it is (`cursor`), so a re-check scans only what
 *    is new;
 *  - a model of many pieces (the segment ones, hundreds): only E's hot intervals, those above cap less
 *    the model's highest piece, can meet a piece above its room; they are collected once, and at each s
 *    taken in time order against the pieces each covers, from the first not wholly before s.
 *
 * Times are 32-bit offsets from d->base (dcc.h's DCC_SPAN): the range is checked before each
 * decision, so no sum below can wrap. */
#include "dcc.h"

void dcc_reset(struct dcc *d)
{
	d->n_res = 0;
	d->base = 0;
	d->head = 0;
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
		unsigned n = 0;
		uint32_t peak = 0;
		if (models[op].n > DCC_MAX_PIECES)
			return DCC_ERR_TOO_MANY_PIECES;
		for (k = 0; k < models[op].n; k++) {
			const struct dcc_piece *p = &models[op].piece[k];
			if (p->level > cap)
				return DCC_ERR_OVER_CAP;
			d->offset[op][k] = t;
			if (p->level && p->cycles) {
				d->active[op][n].from = (uint32_t)t;
				d->active[op][n].to = (uint32_t)(t + p->cycles);
				d->active[op][n].room = cap - p->level;
				if (p->level > peak)
					peak = p->level;
				n++;
			}
			t += p->cycles;
			if (t >= DCC_SPAN / 2)
				return DCC_ERR_TOO_LONG;
		}
		d->offset[op][k] = t;
		d->length[op] = t;
		d->n_active[op] = n;
		d->peak[op] = peak;
	}
	dcc_reset(d);
	return DCC_OK;
}

/* The first edge at or after x (n_edges when none). */
static unsigned lower_bound(const struct dcc *d, uint32_t x)
{
	unsigned lo = d->head, hi = d->n_edges;

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;
		if (d->t[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Subtracts an operation of kind `op` started at s (relative) from E and drops the corners no
 * reservation has any more. Every corner of a reservation is an edge, so the walk meets them all. */
static int subtract(struct dcc *d, unsigned op, uint32_t s)
{
	const struct dcc_model *m = &d->model[op];
	unsigned i = lower_bound(d, s), k, r, w;
	uint32_t c = s;

	for (k = 0; k <= m->n; k++) {
		if (i >= d->n_edges || d->t[i] != c)
			return DCC_ERR_STATE;
		d->corners[i]--;
		if (k == m->n)
			break;
		c += m->piece[k].cycles;
		for (; i < d->n_edges && d->t[i] < c; i++)
			d->level[i] -= m->piece[k].level;
	}
	/* Drop the corners left with none, moving the edges before them up (they are few: the operation
	 * is over, so it lies near the head). */
	for (r = w = i + 1; r-- > d->head;) {
		if (!d->corners[r])
			continue;
		w--;
		d->t[w] = d->t[r];
		d->level[w] = d->level[r];
		d->corners[w] = d->corners[r];
	}
	d->head = w;
	return DCC_OK;
}

/* Drops the operations over by `now` (their end at or before it), from the list and from E. */
static int expire(struct dcc *d, uint64_t now)
{
	unsigned i, n = 0;

	for (i = 0; i < d->n_res; i++) {
		if (d->res[i].end > now) {
			d->res[n++] = d->res[i];
			continue;
		}
		int rc = subtract(d, d->res[i].op, (uint32_t)(d->res[i].start - d->base));
		if (rc)
			return rc;
	}
	d->n_res = n;
	return DCC_OK;
}

/* Moves the edges [head, n_edges) to the front of the arrays. */
static void compact(struct dcc *d)
{
	unsigned i, n = d->n_edges - d->head;

	for (i = 0; i < n; i++) {
		d->t[i] = d->t[d->head + i];
		d->level[i] = d->level[d->head + i];
		d->corners[i] = d->corners[d->head + i];
	}
	d->head = 0;
	d->n_edges = n;
}

/* Makes `now` and every time this decision can reach offsets below DCC_SPAN from the base: the start
 * is at most the later of now and E's last edge (E is 0 from there), its end that plus the length. The
 * base moves (to now, or to E's first edge if earlier) when now is below it, DCC_SPAN / 2 past it, or
 * that end too far from it. */
static int fit_range(struct dcc *d, uint64_t now, uint64_t length)
{
	uint64_t first, last, top, base;
	unsigned i;

	if (d->head == d->n_edges) {
		d->base = now;                  /* nothing reserved: any base will do */
		d->head = d->n_edges = 0;
		return DCC_OK;                  /* length < DCC_SPAN / 2 (dcc_init) */
	}
	first = d->base + d->t[d->head];
	last = d->base + d->t[d->n_edges - 1];
	top = (last > now ? last : now) + length;
	if (now >= d->base && now - d->base < DCC_SPAN / 2 && top - d->base < DCC_SPAN)
		return DCC_OK;
	base = now < first ? now : first;
	if (top - base >= DCC_SPAN)
		return DCC_ERR_RANGE;
	for (i = d->head; i < d->n_edges; i++)
		d->t[i] = (uint32_t)(d->base + d->t[i] - base);
	d->base = base;
	return DCC_OK;
}

/* The interval holding x (or the first edge, when x is before it; E is 0 there), from an edge j at
 * or before it: galloping, then a binary search, as a start can jump over many edges. */
static unsigned seek(const struct dcc *d, unsigned j, uint32_t x)
{
	unsigned step = 1, hi;

	while (j + step < d->n_edges && d->t[j + step] <= x) {
		j += step;
		step <<= 1;
	}
	/* t[j] <= x (or j is the first edge) and x < t[hi] (or hi is past the last edge). */
	hi = j + step < d->n_edges ? j + step : d->n_edges;
	while (hi - j > 1) {
		unsigned mid = j + (hi - j) / 2;
		if (d->t[mid] <= x)
			j = mid;
		else
			hi = mid;
	}
	return j;
}

/* The earliest start at or after s at which piece a of the new operation fits under E. */
static uint32_t fit_piece(struct dcc *d, unsigned op, unsigned a, uint32_t s)
{
	const uint32_t offset = d->active[op][a].from, length = d->active[op][a].to - offset;
	const uint32_t room = d->active[op][a].room;
	uint32_t from = s + offset, to = from + length, x = d->clear[a];
	unsigned j, q;

	if (to <= x)
		return s;
	j = seek(d, d->cursor[a], x < from ? from : x);
	for (q = j; q < d->n_edges && d->t[q] < to; q++) {
		if (d->level[q] <= room)
			continue;
		/* Every start that leaves the piece overlapping this run above its room violates: the
		 * piece starts where the run ends (an edge: the last interval is at 0) and goes on. */
		while (d->level[q + 1] > room)
			q++;
		from = d->t[q + 1];
		to = from + length;
	}
	d->cursor[a] = q > j ? q - 1 : j;
	d->clear[a] = to;
	return from - offset;
}

/* search() for a model of few pieces (DCC_FEW_PIECES): its pieces in turn, each moved to where it fits
 * (fit_piece), until all fit at one start. */
static uint32_t search_pieces(struct dcc *d, unsigned op, uint32_t now)
{
	const unsigned n = d->n_active[op];
	unsigned j = lower_bound(d, now), a, fits = 0;
	uint32_t s = now;

	/* The edge at or before now, as each piece's cursor. */
	if (j > d->head && (j == d->n_edges || d->t[j] > now))
		j--;
	for (a = 0; a < n; a++) {
		d->cursor[a] = j;
		d->clear[a] = 0;
	}
	for (a = 0; fits < n; a = a + 1 == n ? 0 : a + 1) {
		uint32_t next;
		/* The pieces follow each other: where the one before ended, this one starts at the earliest. */
		if (a && d->cursor[a] < d->cursor[a - 1])
			d->cursor[a] = d->cursor[a - 1];
		next = fit_piece(d, op, a, s);
		fits = next == s ? fits + 1 : 1;
		s = next;
	}
	return s;
}

/* The hot intervals of E: those above cap - (the model's highest piece), the only ones any piece can
 * meet above its room. Appended to d->hot from edge d->scan on, up to the first edge at or after
 * `until`; returns how many there are. */
static unsigned collect_hot(struct dcc *d, unsigned n_hot, uint32_t floor, uint32_t until)
{
	unsigned j = d->scan;

	for (; j < d->n_edges && d->t[j] < until; j++)
		if (d->level[j] > floor)
			d->hot[n_hot++] = j;
	d->scan = j;
	return n_hot;
}

/* The first active piece of kind op ending after offset x (n_active when none). */
static unsigned piece_after(const struct dcc *d, unsigned op, uint32_t x)
{
	unsigned lo = 0, hi = d->n_active[op];

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;
		if (d->active[op][mid].to <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* search() for a model of many pieces. Only E's hot
 * intervals (collect_hot) can meet a piece above its room; at a candidate start s they are taken in
 * order, each against the pieces its span covers. At the first piece k meeting an interval j above
 * its room, every start before e - from_k, e the end of the run of intervals above k's room from j,
 * keeps that overlap (the slides' "delay the operation after the violation"): s moves there and the
 * check starts again from the first hot interval not wholly before s. Each move skips only starts
 * that violate, so s is the earliest feasible start. */
static uint32_t search_hot(struct dcc *d, unsigned op, uint32_t now)
{
	const uint32_t length = (uint32_t)d->length[op], floor = d->cap - d->peak[op];
	const unsigned n = d->n_active[op];
	unsigned j = lower_bound(d, now), first = 0, h, n_hot, k = n + 1;
	uint32_t s = now;

	if (!n)
		return now;
	/* The edge at or before now: the interval holding now is the first that can be hot. */
	if (j > d->head && (j == d->n_edges || d->t[j] > now))
		j--;
	d->scan = j;
	n_hot = collect_hot(d, 0, floor, now + length);
	/* k: the first piece ending after the current hot interval's start, n + 1 when not known yet
	 * (after a move); hot intervals come in time order, so within one start it only grows. */
	for (h = first;;) {
		unsigned q;
		uint32_t lo, hi;
		if (h == n_hot) {
			if (d->scan >= d->n_edges || d->t[d->scan] >= s + length)
				return s;
			n_hot = collect_hot(d, n_hot, floor, s + length);
			continue;
		}
		q = d->hot[h];
		if (d->t[q] >= s + length)
			return s;
		/* The interval's span within the operation, in the model's offsets. */
		lo = d->t[q] > s ? d->t[q] - s : 0;
		hi = d->t[q + 1] - s;
		if (k > n)
			k = piece_after(d, op, lo);
		while (k < n && d->active[op][k].to <= lo)
			k++;
		{
			unsigned c = k;
			for (; c < n && d->active[op][c].from < hi; c++)
				if (d->level[q] > d->active[op][c].room)
					break;
			if (c == n || d->active[op][c].from >= hi) {
				h++;
				continue;
			}
			while (d->level[q + 1] > d->active[op][c].room)
				q++;
			s = d->t[q + 1] - d->active[op][c].from;
		}
		/* Hot intervals wholly before the new start never matter again. */
		while (first < n_hot && d->t[d->hot[first] + 1] <= s)
			first++;
		h = first;
		k = n + 1;
	}
}

/* The earliest start at or after now (relative) at which the operation of kind op fits under E. Both
 * ways give that start; the cheaper one depends on the model. Taking the pieces in turn costs each piece
 * a seek into E and a re-check at every move of the start: right for the few long pieces of the flat
 * (atomic) models, dear for the hundreds of the segment models, whose moves are better found from E's
 * few hot intervals. */
static uint32_t search(struct dcc *d, unsigned op, uint32_t now)
{
	return d->n_active[op] > DCC_FEW_PIECES ? search_hot(d, op, now) : search_pieces(d, op, now);
}

/* The edges merged into E for an operation of kind `op` started at s (relative): how many of its
 * corner times are not edges yet. */
static unsigned new_edges(const struct dcc *d, unsigned op, uint32_t s)
{
	const struct dcc_model *m = &d->model[op];
	unsigned i = lower_bound(d, s), k, n = 0;
	uint32_t c = s;

	for (k = 0; k <= m->n; k++) {
		if (k) {
			if (m->piece[k - 1].cycles == 0)
				continue;       /* the same corner again */
			c += m->piece[k - 1].cycles;
		}
		while (i < d->n_edges && d->t[i] < c)
			i++;
		if (i == d->n_edges || d->t[i] != c)
			n++;
	}
	return n;
}

/* Adds an operation of kind `op` started at s (relative) to E: one pass from the back, moving the
 * edges after each of its corners up by the number of corners still to insert before them. */
static int add(struct dcc *d, unsigned op, uint32_t s)
{
	const struct dcc_model *m = &d->model[op];
	unsigned extra = new_edges(d, op, s), k = m->n;
	uint32_t c = s + (uint32_t)d->length[op];
	int r, w;

	if (d->n_edges + extra > DCC_MAX_EDGES)
		compact(d);
	if (d->n_edges + extra > DCC_MAX_EDGES)
		return DCC_ERR_STATE;   /* cannot happen: every edge is a corner of a reservation */
	r = (int)d->n_edges - 1;
	w = r + (int)extra;
	d->n_edges += extra;
	for (;;) {
		/* Corner c, the last of its time (index k): the interval from it is piece k's. */
		uint32_t lift = k < m->n ? m->piece[k].level : 0, times = 1;
		for (; r >= (int)d->head && d->t[r] > c; r--, w--) {
			d->t[w] = d->t[r];
			d->level[w] = d->level[r] + lift;
			d->corners[w] = d->corners[r];
		}
		while (k > 0 && m->piece[k - 1].cycles == 0) {
			k--;
			times++;
		}
		if (r >= (int)d->head && d->t[r] == c) {
			d->t[w] = c;
			d->level[w] = d->level[r] + lift;
			d->corners[w] = d->corners[r] + times;
			r--;
		} else {
			d->t[w] = c;
			d->level[w] = (r >= (int)d->head ? d->level[r] : 0) + lift;
			d->corners[w] = times;
		}
		w--;
		if (k == 0)
			break;
		k--;
		c -= m->piece[k].cycles;
	}
	return w == r ? DCC_OK : DCC_ERR_STATE;
}

int64_t dcc_schedule(struct dcc *d, unsigned op, uint64_t now)
{
	uint64_t s;
	int rc;

	if (op >= d->n_models)
		return DCC_ERR_BAD_OP;
	rc = expire(d, now);
	if (rc)
		return rc;
	if (d->n_res >= DCC_MAX_RES)
		return DCC_ERR_FULL;
	rc = fit_range(d, now, d->length[op]);
	if (rc)
		return rc;
	s = d->base + search(d, op, (uint32_t)(now - d->base));
	rc = add(d, op, (uint32_t)(s - d->base));
	if (rc)
		return rc;
	d->res[d->n_res].start = s;
	d->res[d->n_res].end = s + d->length[op];
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
		if (t < s || t >= d->res[i].end)
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
