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
 * heads only (and, for a read anchor, at most SCHED_READ_SCAN reads past a head): O(registers), never the
 * whole queue.
 *
 * What is measured (sched_nand.c, `sched_cycles`): the pushes are part of the scheduler's work (they
 * classify each operation and keep the summaries a decision reads instead of the entries), so each
 * decision is timed together with sched_push_n of the operations submitted since the previous one: the
 * cost per decision is (push + pick cycles) / decisions, the timer's own read (~20 cycles) included. Not
 * in it: the port's hand-over (the copy of an operation into sched_nand.c's list, and sched_push's
 * refusals, answered at once).
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
	uint32_t max_queued;                     /* deepest the queue has been */
	uint32_t groups[SCHED_MAX_REGS + 1];     /* by pages in the group (1 = single-plane) */
};

/* The layout is the cost (measured with the CPU's bus counters, hal_cpu_perf). The firmware flushes the
 * whole data cache at every read completion (the controller's DMA writes behind it) and the FTL's I/O path
 * between two decisions evicts the 4 KiB direct-mapped instruction cache, so the scheduler starts cold:
 * each 32-byte line of code it runs or of data it reads is a miss of ~20 cycles (more behind a page's DMA
 * on the shared bus), and the data cache writes through (every store is a bus write). Hence small code
 * without stack frames where the compiler allows, the operations queued in one pass (sched_push_n) just
 * before the decision that needs them, and a decision that reads a die's summary, not its entries.
 *
 * A register's operations are a FIFO of entries linked by `next`, its end the tail (depth <= 256: an
 * index is a byte). The die keeps each register's head's summary `sum` (arrival order and pairing key,
 * below), so the anchor search and the fit test read the die alone; each entry keeps the summary of the
 * entry after it (written when that one is linked), so taking a head reads that head's entry only: its
 * ctx, its successor and the successor's summary, one line.
 *
 * sum = seq << 18 | kind << 16 | x: seq the die's arrival count (its low 14 bits); x the page address
 * (CNFM), the page type (DW-NFM, SDW-NFM) or 0 (erases, and the lone SCHED_OTHER). Two operations fit
 * when their low 18 bits are equal; the older is the lesser sum in wrap-around order ((int32_t)(a - b)
 * < 0), exact while a die's queued operations are less than 2^13 arrivals apart: an operation is the
 * anchor after at most depth - 1 decisions of its die, which take at most 8 each, so at most
 * 255 * 8 + 256 arrivals of its die pass while it waits. */
#define SCHED_SEQ_SHIFT   18
#define SCHED_KIND_SHIFT  16

struct sched_entry {
	void    *ctx;                            /* the caller's, returned by sched_pick */
	uint32_t nsum;                           /* the summary of the entry after it (unless it is the tail) */
	uint8_t  next;                           /* the entry after it in its register */
} __attribute__((aligned(16)));

/* A die of one or two registers (CNFM, DW-NFM) is its first line: sum[0..1] end it. */
struct sched_die {
	uint32_t count;                          /* arrivals << 16 | queued (one add for both) */
	uint8_t  mask;                           /* registers with something queued */
	uint8_t  head[SCHED_MAX_REGS];           /* each register's FIFO */
	uint8_t  tail[SCHED_MAX_REGS];
	uint32_t sum[SCHED_MAX_REGS];            /* each register's head's summary */
} __attribute__((aligned(64)));

struct sched {
	/* The first line: what the pushes and a decision of up to two pages read and update. */
	uint16_t queued;                         /* the free entries: fstack[queued .. depth - 1] */
	uint8_t  dies;
	uint8_t  pmask, rshift, qshift;          /* register = (block & pmask) << rshift | subplane, */
	uint8_t  xbits;                          /* x of a read or a program: the page's low xbits bits */
	uint32_t submul;                         /* subplane = mulhu((block - plane) << qshift, submul) */
	struct sched_stats stats;                /* (groups[3] on in the second line) */
	uint16_t depth;
	uint8_t  arch;
	/* the rest (the free stack and the dies first: offsets a load's 12 bits reach) */
	uint8_t  fstack[SCHED_MAX_DEPTH];
	struct sched_die die[SCHED_MAX_DIES];
	struct sched_entry e[SCHED_MAX_DEPTH];
	struct sched_geo geo;
};

/* 0, or -1 when the geometry (up to 65 536 blocks per die and pages per block, as many in each plane) or
 * the depth (1 .. SCHED_MAX_DEPTH) is out of range. */
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
/* Queue n operations, in order, that sched_push would not refuse (the caller checked them: in range,
 * and room for all): one pass over the code for all of them. */
void sched_push_n(struct sched *s, const struct sched_op *op, uint32_t n);
/* Operations it has room for. */
static inline uint32_t sched_free(const struct sched *s) { return (uint32_t)(s->depth - s->queued); }
/* Take the next group of die `die`: the operations' `ctx` into out[0..n-1] (the anchor first, the registers
 * in increasing order after it; at most `max`). Returns n, 0 when nothing of that die waits. */
int  sched_pick(struct sched *s, uint32_t die, void **out, int max);
uint32_t sched_queued(const struct sched *s, uint32_t die);

#endif
