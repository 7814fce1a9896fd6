/* DCC, dynamic current capping (L.-P. Chang, C.-H. Cheng, K.-H. Lin, ASP-DAC 2017): a corner-based
 * current model per kind of flash operation and a scheduler that starts each operation at the
 * earliest cycle at which the sum of the models of all scheduled operations stays under the cap.
 *
 * A model is a staircase: pieces of `cycles` at `level` (units of I_max / 4096), the first piece
 * starting in the cycle the operation is started; the corners of the slides are the ends of the
 * pieces. nandlab.dcc builds the models from the die's waveform tables (the same tables the
 * emulator plays), so the model bounds the die's current from above at every cycle.
 *
 * The scheduler keeps the summed staircase of the reserved operations from one decision to the next
 * (dcc.c says how) and works in 32-bit time relative to a base: see DCC_SPAN.
 *
 * Portable C without libc: the firmware links it and the power experiment's Verilator harness
 * compiles the same file. */
#ifndef NANDLAB_DCC_H
#define NANDLAB_DCC_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef DCC_MAX_PIECES          /* pieces per model */
#define DCC_MAX_PIECES 64
#endif
#ifndef DCC_MAX_MODELS          /* kinds of operation */
#define DCC_MAX_MODELS 4
#endif
#ifndef DCC_MAX_RES             /* operations scheduled and not over yet */
#define DCC_MAX_RES 16
#endif
#ifndef DCC_FEW_PIECES          /* models of at most this many active pieces are searched piece by piece (dcc.c) */
#define DCC_FEW_PIECES 32
#endif
/* Every edge of the summed staircase is a corner of a reserved operation (n pieces: n + 1 corners). */
#define DCC_MAX_EDGES (DCC_MAX_RES * (DCC_MAX_PIECES + 1) + 1)
/* Times are kept as 32-bit offsets from a base (struct dcc's base), each below DCC_SPAN. A model may
 * last at most DCC_SPAN / 2 cycles (dcc_init checks). The base is moved when `now` falls below it
 * or runs DCC_SPAN / 2 past it; a decision whose reservations, from the earliest one not over to
 * the end of the new operation, do not fit in DCC_SPAN cycles returns DCC_ERR_RANGE. At 200 MHz
 * DCC_SPAN is 10.7 s: no queue of DCC_MAX_RES flash operations comes near it. */
#define DCC_SPAN 0x80000000u

enum {
	DCC_OK = 0,
	DCC_ERR_TOO_MANY_MODELS = -1,   /* more kinds than DCC_MAX_MODELS */
	DCC_ERR_TOO_MANY_PIECES = -2,   /* a model longer than DCC_MAX_PIECES */
	DCC_ERR_OVER_CAP = -3,          /* a model piece above the cap: that operation could never start */
	DCC_ERR_FULL = -4,              /* DCC_MAX_RES operations scheduled and not over */
	DCC_ERR_BAD_OP = -5,
	DCC_ERR_RANGE = -6,             /* the reservations span DCC_SPAN cycles or more (see DCC_SPAN) */
	DCC_ERR_TOO_LONG = -7,          /* a model lasting DCC_SPAN / 2 cycles or more */
	DCC_ERR_STATE = -8,             /* the kept staircase contradicts itself (a bug): reset */
};

struct dcc_piece {
	uint32_t cycles;
	uint32_t level;
};

struct dcc_model {
	const struct dcc_piece *piece;
	uint32_t n;
};

struct dcc {
	uint32_t cap;
	unsigned n_models;
	const struct dcc_model *model;
	uint64_t length[DCC_MAX_MODELS];
	uint64_t offset[DCC_MAX_MODELS][DCC_MAX_PIECES + 1];   /* piece k: [offset[k], offset[k + 1]) */
	/* The pieces a start can collide with (level > 0, cycles > 0): offsets and room under the cap. */
	unsigned n_active[DCC_MAX_MODELS];
	struct { uint32_t from, to, room; } active[DCC_MAX_MODELS][DCC_MAX_PIECES];
	uint32_t peak[DCC_MAX_MODELS];  /* the highest active piece */
	unsigned n_res;
	struct { uint64_t start, end; unsigned op; } res[DCC_MAX_RES];
	/* The summed staircase of the reservations: edges [head, n_edges), times relative to `base`;
	 * interval j = [t[j], t[j + 1]) at level[j], zero before the first edge and from the last one.
	 * corners[j]: how many corners of reserved operations lie at t[j] (never 0). */
	uint64_t base;
	unsigned head, n_edges;
	uint32_t t[DCC_MAX_EDGES];
	uint32_t level[DCC_MAX_EDGES];
	uint32_t corners[DCC_MAX_EDGES];
	/* Search scratch. A model of at most DCC_FEW_PIECES active pieces: per piece, an edge index at or
	 * before its start and the time up to which it is known to fit. Other models: the hot intervals
	 * (dcc.c) found so far, and the edge the next one is looked for from. */
	uint32_t cursor[DCC_FEW_PIECES ? DCC_FEW_PIECES : 1];
	uint32_t clear[DCC_FEW_PIECES ? DCC_FEW_PIECES : 1];
	unsigned scan;
	uint32_t hot[DCC_MAX_EDGES];
};

/* Checks the models against the cap and the limits; DCC_OK or a DCC_ERR_ code. */
int dcc_init(struct dcc *d, uint32_t cap, const struct dcc_model *models, unsigned n_models);
/* Schedules an operation of kind `op` that may start at `now` or later: returns its start cycle
 * (>= now), or a negative DCC_ERR_ code. The operation is reserved from then on. */
int64_t dcc_schedule(struct dcc *d, unsigned op, uint64_t now);
/* The summed model at cycle t (checks and telemetry). */
uint32_t dcc_model_at(const struct dcc *d, uint64_t t);
/* Forgets every reservation. */
void dcc_reset(struct dcc *d);

#ifdef __cplusplus
}
#endif

#endif
