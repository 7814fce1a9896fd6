/* Host NAND model for the FTL's tests: the die emulator's semantics (erased FFh, program ANDs,
 * factory bad-block markers) with ECC outcomes, injected faults and power cuts at any operation. */
#ifndef NANDLAB_FTL_NAND_MODEL_H
#define NANDLAB_FTL_NAND_MODEL_H

#include <stdint.h>

#include "../ftl_nand.h"

struct nand_model_faults {
	double program_fail, erase_fail;   /* per operation: the block goes bad */
	double flip;                       /* per codeword read: 1..t bit errors (corrected, counted) */
	double uncorrectable;              /* per page read: more than t errors */
	double tag_flip;                   /* per tag read: one flipped bit in the tag (outside the ECC) */
	double factory_bad;                /* fraction of blocks with a factory marker */
	double refuse;                     /* per submission: the queue takes it not now (full, as a controller's) */
	uint64_t cut_at;                   /* power cut when this many operations have completed (0: never) */
};

struct nand_model;
struct nand_model *nand_model_new(const struct ftl_geo *g, const struct nand_model_faults *faults, uint64_t seed);
void nand_model_free(struct nand_model *m);
struct ftl_nand *nand_model_nand(struct nand_model *m);
/* MPNFM (two page sizes in one die): plane 1's blocks (the odd ones) hold pages of small_bytes (a
 * multiple of 512, at most the large page); 0, or -1 on a model without 2 planes. */
int nand_model_set_small(struct nand_model *m, uint32_t small_bytes);
/* Power back on after a cut (the array keeps what it held; operations in flight were interrupted). */
void nand_model_power_on(struct nand_model *m, uint64_t next_cut_at);
/* The next cut waits, from next_cut_at on, for an operation with this opcode (-1: any). */
void nand_model_cut_on(struct nand_model *m, int opcode);
int  nand_model_powered(const struct nand_model *m);
uint64_t nand_model_ops(const struct nand_model *m);
/* Interrupted operations at the last cut: programs, erases. */
void nand_model_cut_stats(const struct nand_model *m, uint64_t *programs, uint64_t *erases);
/* Damage a programmed page as if it had rotted: mode 0 its data unreadable (ECC fails, tag kept),
 * mode 1 one data byte changed with the ECC none the wiser (a silent corruption). 0, or -1 when the
 * page is erased. */
int  nand_model_corrupt(struct nand_model *m, uint32_t die, uint32_t block, uint32_t page, int mode);
/* A block's state in the array: 0 good, 1 factory bad (marked), 2 gone bad since (program or erase FAIL). */
int  nand_model_block_state(const struct nand_model *m, uint32_t die, uint32_t block);
/* A copy of the array as it is (no faults, no cut pending): another FTL may mount it. */
struct nand_model *nand_model_clone(const struct nand_model *m);
/* Page ppn's data as stored, without a read (no counters, no faults): NULL when erased; *state 0
 * erased, 1 programmed, 2 garbled. */
const uint8_t *nand_model_peek(const struct nand_model *m, uint32_t ppn, int *state);
/* Overwrite n stored bytes of programmed page ppn at offset, as if another firmware had programmed
 * them (no counters, no faults): 0, or -1 when the page is erased or the range is outside it. */
int  nand_model_poke(struct nand_model *m, uint32_t ppn, uint32_t offset, const uint8_t *bytes, uint32_t n);
/* Pages in the array (every die, block and page). */
uint64_t nand_model_pages(const struct nand_model *m);

#endif
