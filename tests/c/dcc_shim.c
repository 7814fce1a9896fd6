/* ctypes entry points to a DCC scheduler (sw/firmware/dcc.c or tests/c/dcc_rebuild) for tests/test_dcc*.py:
 * models as flat (cycles, level) arrays. Built by tests/tools/dcc_lib.py; with -DINCREMENTAL (dcc.c only)
 * it also checks the kept staircase against the reservations. */
#include "dcc.h"

static struct dcc d;
static struct dcc_piece pieces[DCC_MAX_MODELS][DCC_MAX_PIECES];
static struct dcc_model models[DCC_MAX_MODELS];

int shim_init(unsigned cap, unsigned n_models, const unsigned *n, const unsigned *flat)
{
	unsigned op, k, i = 0;

	for (op = 0; op < n_models && op < DCC_MAX_MODELS; op++) {
		for (k = 0; k < n[op] && k < DCC_MAX_PIECES; k++, i += 2) {
			pieces[op][k].cycles = flat[i];
			pieces[op][k].level = flat[i + 1];
		}
		models[op].piece = pieces[op];
		models[op].n = n[op];
	}
	return dcc_init(&d, cap, models, n_models);
}

long long shim_schedule(unsigned op, unsigned long long now) { return dcc_schedule(&d, op, now); }
unsigned shim_at(unsigned long long t) { return dcc_model_at(&d, t); }
unsigned long long shim_length(unsigned op) { return d.length[op]; }

#ifdef INCREMENTAL
/* The kept staircase against the reservations: 0, or 1 + the first edge that disagrees. */
long shim_check(void)
{
	unsigned j;

	for (j = d.head; j < d.n_edges; j++) {
		unsigned long long t = d.base + d.t[j];
		if (d.level[j] != dcc_model_at(&d, t) || d.level[j] > d.cap || !d.corners[j] ||
		    (j > d.head && d.t[j] <= d.t[j - 1]))
			return 1 + j;
		if (j > d.head && dcc_model_at(&d, t - 1) != d.level[j - 1])
			return 1 + j;
	}
	if (d.n_edges > d.head && d.level[d.n_edges - 1] != 0)
		return 1 + d.n_edges;
	return 0;
}
#endif
