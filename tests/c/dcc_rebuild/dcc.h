/* DCC, dynamic current capping (L.-P. Chang, C.-H. Cheng, K.-H. Lin, ASP-DAC 2017): a corner-based
 * current model per kind of flash operation and a scheduler that starts each operation at the
 * earliest cycle at which the sum of the models of all scheduled operations stays under the cap.
 *
 * A model is a staircase: pieces of `cycles` at `level` (units of I_max / 4096), the first piece
 * starting in the cycle the operation is started; the corners of the slides are the ends of the
 * pieces. nandlab.dcc builds the models from the die's waveform tables (the same tables the
 * emulator plays), so the model bounds the die's current from above at every cycle.
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
#define DCC_MAX_EDGES (DCC_MAX_RES * DCC_MAX_PIECES + 2)

enum {
	DCC_OK = 0,
	DCC_ERR_TOO_MANY_MODELS = -1,   /* more kinds than DCC_MAX_MODELS */
	DCC_ERR_TOO_MANY_PIECES = -2,   /* a model longer than DCC_MAX_PIECES */
	DCC_ERR_OVER_CAP = -3,          /* a model piece above the cap: that operation could never start */
	DCC_ERR_FULL = -4,              /* DCC_MAX_RES operations scheduled and not over */
	DCC_ERR_BAD_OP = -5,
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
	unsigned n_res;
	struct { uint64_t start; unsigned op; } res[DCC_MAX_RES];
	/* Scratch: the summed staircase of the scheduled operations, interval j = [edge[j], edge[j + 1]). */
	unsigned n_edges;
	uint64_t edge[DCC_MAX_EDGES];
	uint32_t level[DCC_MAX_EDGES];
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
