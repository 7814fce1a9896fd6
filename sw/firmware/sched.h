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
 * cost per decision is (push + pick cycles) / decisions, the timer's own reads included (inline, the
 * latched low word: `sched_timer_cycles` in `ftl stats`). Not
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

/* One page operation; `ctx` is the caller's (returned with the group). The fields are as wide as
 * sched_init's ranges (up to 32 dies, 65 536 blocks and pages): 12 bytes, so that the operations a
 * decision queues first are few cache lines. */
struct sched_op {
	uint8_t  kind, die;
	uint16_t block, page;
	void    *ctx;
};

struct sched_stats {
	uint32_t decisions;                      /* groups picked */
	uint32_t max_queued;                     /* deepest the queue has been */
	uint32_t groups[SCHED_MAX_REGS + 1];     /* by pages in the group (1 = single-plane) */
};

/* The layout is the cost (measured with the CPU's bus counters, hal_cpu_perf). The FTL's I/O path between two
 * decisions evicts most of the 4 KiB direct-mapped instruction and data caches (no longer a whole data-cache flush
 * at each read completion: the port evicts the tag's line alone; where the scheduler's data falls now moves its
 * cost, docs/design_plane_papers.md Step 5), so the scheduler starts mostly cold:
 * each 32-byte line of code it runs or of data it reads is a miss of ~20 cycles (more behind a page's DMA
 * on the shared bus), and the data cache writes through without allocating (every store is a bus write,
 * and a line stored to and then read is still a miss). Hence small code placed together (.text.sched_hot,
 * with sched_nand.c's submit and poll, at the 4 KiB-page offset that keeps the most of it: linker.ld; the code that
 * runs between two decisions outside the FTL's phases - the replay loop, the port's group path, isr - has fixed
 * places off its sets, hal.h's DRV_HOT*, so that only the FTL's own path evicts it: SDW-NFM 876 -> 844 cycles at 1 way
 * Financial1, 766 -> 718 TPC_E, wip/sdw8; ftl_poll and memcpy there too, the stretch at 0xd40, on the sets neither
 * the write issue nor the completion code then runs: 844 -> 696, 718 -> 629, wip/sdw9),
 * little or no stack frame (a spilled register costs a store and a missed line; merging the queueing and
 * the pick in one function, or moving their rare paths out of it, measured worse), and a decision that
 * reads its die's lines, the header's first line and the operations it queues, and an entry only for a
 * register holding more than one operation. (Register pressure decides the frame: the die pointer is held
 * opaque, `__asm__("" : "+r"(d))`, so that GCC keeps one register for it instead of several of its parts.)
 *
 * A die keeps each register's head (its summary `sum` and its ctx) in its own lines, so the common case -
 * every register's queue holding one operation, taken at the next decision - reads and writes the die
 * alone. The operations behind a head are a FIFO of entries linked by `next` (depth <= 256: an index is a
 * byte), from `head` (the second of the register) to `tail`; `more` marks the registers that have them.
 * The free entries are a stack linked by the same `next` (the last freed, likely still cached, first), and
 * the entries' address sits beside head and tail, so a register's second operation reads no header line
 * but the first. The die also keeps its anchor (the register of its oldest operation): a push into an
 * empty die sets it, and a pick finds the next one among the heads it visits anyway and the entries it moves
 * up (each compared as it moves: no second search over the heads), so a decision has no search of its own.
 * The counters a decision updates (groups by pages) are 16 bits in the header's first line, with their
 * high halves in the second (touched once in 65 536): `decisions` is their sum (sched_get_stats).
 *
 * sum = seq << 18 | kind << 16 | x: seq the die's arrival count (its low 14 bits); x the page address
 * (CNFM), the page type (DW-NFM, SDW-NFM) or 0 (erases, and the lone SCHED_OTHER). Two operations fit
 * when their low 18 bits are equal; the older is the lesser sum in wrap-around order ((int32_t)(a - b)
 * < 0), exact while a die's queued operations are less than 2^13 arrivals apart: an operation is the
 * anchor after at most depth - 1 decisions of its die, which take at most 8 each, so at most
 * 255 * 8 + 256 arrivals of its die pass while it waits. */
#define SCHED_SEQ_SHIFT   18
#define SCHED_KIND_SHIFT  16

struct sched_entry {                         /* an operation behind its register's head */
	void    *ctx;                            /* the caller's, returned by the pick */
	uint32_t sum;
	uint8_t  next;                           /* the entry after it in its register (unless it is the tail) */
} __attribute__((aligned(16)));

struct sched_head {
	uint32_t sum;
	void    *ctx;
};

/* A die: its state word and registers 0..2's heads in the first line (all of a die of one or two
 * registers, CNFM and DW-NFM, in the common case), 3..6 in the second, 7 and the entries' ends in the
 * third. */
struct sched_die {
	uint32_t w;                              /* arrivals << 16 | more << 8 | mask (one store for all) */
	uint32_t anchor;                         /* the register of its oldest operation (valid in mask) */
	struct sched_head reg[SCHED_MAX_REGS];   /* each register's head (valid in mask) */
	uint8_t  head[SCHED_MAX_REGS];           /* the entry after the head (valid in more) */
	uint8_t  tail[SCHED_MAX_REGS];
	struct sched_entry *ep;                  /* = the entries (read from the line of head and tail, not a line
	                                          * of the header's) */
	uint8_t  pad2[40 - sizeof(void *)];      /* (128 bytes: a die's offset is a shift) */
} __attribute__((aligned(32)));

#define SCHED_W_MORE      8                  /* w: `more` (registers with entries behind the head) */
#define SCHED_W_ARRIVALS  16

struct sched {
	/* The first line: what the pushes and a decision read and update. */
	uint16_t queued;                         /* operations queued (all dies) */
	uint8_t  dies;
	uint8_t  pmask, rshift, qshift;          /* register = (block & pmask) << rshift | subplane, */
	uint16_t xmask;                          /* x of a read or a program: the page's bits under xmask */
	uint32_t submul;                         /* subplane = mulhu((block - plane) << qshift, submul) */
	uint16_t max_queued;                     /* deepest the queue has been */
	uint8_t  free;                           /* the first free entry (the others linked by `next`: a stack) */
	uint8_t  arch;
	uint16_t groups_lo[SCHED_MAX_REGS];      /* groups of n = 1..8 pages ([n - 1]): the low 16 bits, */
	/* the second line */
	uint16_t depth;
	uint16_t groups_hi[SCHED_MAX_REGS];      /* and the high 16 bits (sched_get_stats) */
	/* the rest */
	struct sched_die die[SCHED_MAX_DIES];
	/* die[] is 4 KiB, the data cache's size: the entries would start on the sets of die 0's lines. This
	 * puts the first entries (the free stack's, the ones in use) after the first four dies' lines instead. */
	uint8_t  skew[4 * sizeof(struct sched_die)];
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
/* The counters (decisions, deepest queue, groups by pages). */
void sched_get_stats(const struct sched *s, struct sched_stats *st);
/* Operations of die `die` queued (counts them), and whether there are any (reads one word). */
uint32_t sched_queued(const struct sched *s, uint32_t die);
static inline int sched_waiting(const struct sched *s, uint32_t die) { return (s->die[die].w & 0xff) != 0; }

#endif
