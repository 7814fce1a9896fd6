/* Multi-plane scheduling (the DW/SDW-NFM paper, Kim et al., TVLSI 2019, Sec. III-B and Fig. 4): page
 * operations wait in a queue of `depth` entries and leave it in groups that one multi-plane operation of
 * a die can carry under the die's plane architecture:
 *   CNFM     one page address on the mated planes (page-address-aware pairing),
 *   DW-NFM   one page type (LSB/MSB) on the planes, any page address (page-type-aware pairing),
 *   SDW-NFM  as DW-NFM over the subplanes' registers (up to planes x 4 pages),
 * and erases of blocks on distinct registers under any of them. A register is a plane (CNFM, DW-NFM,
 * or SDW-NFM on dies built without subplane registers) or a subplane (planes x 4).
 *
 * Order: each register keeps its operations first in, first out, and a group takes the register's
 * oldest (its head) - NAND programs a block's pages in order, and an erase, a program and a read of
 * one block must not pass each other. Reads alone may pass reads: a read partner may be the first
 * matching read before the register's first non-read. The group's anchor is the die's oldest
 * operation, so nothing waits behind younger work for ever. A decision looks at the registers'
 * heads only: O(registers), never the whole queue.
 *
 * Pure C, no hardware: the firmware and the host build (tests/test_sched.py) compile the same file. */
#ifndef NANDLAB_SCHED_H
#define NANDLAB_SCHED_H

#include <stdint.h>

#define SCHED_MAX_DEPTH   256
#define SCHED_MAX_DIES    32
#define SCHED_SUBPLANES   4
#define SCHED_MAX_REGS    8                  /* 2 planes x 4 subplanes */
#define SCHED_READ_SCAN   8                  /* reads looked at past a register's head, at most */

enum sched_arch { SCHED_CNFM, SCHED_DW, SCHED_SDW };     /* the dies' `arch` values (NANDLAB_DIE_ARCHS) */
/* SCHED_OTHER: an operation that never joins a group (a read of the tag or the bad-block marker alone),
 * kept in order with its register's others like a program. */
enum sched_kind { SCHED_READ, SCHED_PROGRAM, SCHED_ERASE, SCHED_OTHER };

struct sched_geo {
	uint32_t dies, planes, blocks, pages;    /* blocks per die, pages per block */
	uint32_t bits_per_cell;                  /* > 1: even pages LSB, odd pages MSB */
	uint32_t subplane_registers;             /* the dies have SDW-NFM's subplane registers */
};

/* One page operation; `ctx` is the caller's (returned with the group). */
struct sched_op {
	uint8_t  kind;
	uint32_t die, block, page;
	void    *ctx;
};

struct sched_stats {
	uint32_t decisions;                      /* groups picked */
	uint32_t groups[SCHED_MAX_REGS + 1];     /* by pages in the group (1 = single-plane) */
	uint32_t max_queued;                     /* deepest the queue has been */
};

/* The layout is the decision's cost. Firmware flushes the whole data cache at every read completion (the
 * controller's DMA writes behind it), so a decision starts cold and each 32-byte line it touches is a
 * miss that may wait behind a page's DMA on the shared bus. Hence: an entry is 16 bytes (two to a line),
 * a die's register heads and count share one line, and the fields a decision updates sit together. */
struct sched_entry {
	void    *ctx;                            /* the caller's, returned by sched_pick */
	uint32_t seq;                            /* arrival order */
	uint16_t block, page;
	uint16_t next;                           /* in its register's FIFO, or the free list */
	uint8_t  kind;
	uint8_t  type;                           /* page type (LSB 0, MSB 1) */
} __attribute__((aligned(16)));

struct sched_die {
	uint16_t head[SCHED_MAX_REGS];           /* each register's oldest entry */
	uint16_t queued;
} __attribute__((aligned(32)));

struct sched {
	/* what a decision reads and updates */
	uint8_t  arch, registers;
	uint16_t free_head;
	uint32_t queued;
	struct sched_stats stats;
	/* the rest */
	struct sched_geo geo;
	uint32_t depth, seq;
	struct sched_die die[SCHED_MAX_DIES];
	uint16_t tail[SCHED_MAX_DIES][SCHED_MAX_REGS];
	struct sched_entry e[SCHED_MAX_DEPTH];
};

/* 0, or -1 when the geometry (up to 65 536 blocks per die and pages per block) or the depth
 * (1 .. SCHED_MAX_DEPTH) is out of range. */
int  sched_init(struct sched *s, const struct sched_geo *g, int arch, uint32_t depth);
/* The architecture the dies now enforce (only with an empty queue: -1 otherwise). */
int  sched_set_arch(struct sched *s, int arch);
/* Pages one operation can take under the current architecture. */
int  sched_registers(const struct sched *s);
/* The register and the page type of (block, page), as the die computes them. */
int  sched_register_of(const struct sched *s, uint32_t block);
int  sched_page_type(const struct sched *s, uint32_t page);
/* Queue an operation: 0, or -1 when the queue is full or the operation is out of range. */
int  sched_push(struct sched *s, const struct sched_op *op);
/* Take the next group of die `die`: the operations' `ctx` into out[0..n-1] (the anchor first, the registers
 * in increasing order after it; at most `max`). Returns n, 0 when nothing of that die waits. */
int  sched_pick(struct sched *s, uint32_t die, void **out, int max);
uint32_t sched_queued(const struct sched *s, uint32_t die);

#endif
