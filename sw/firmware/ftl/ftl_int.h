/* FTL internals shared by its files: the state, the on-flash formats, the helpers each file offers.
 *
 * Layout on flash. Superblock s is block (s + q * nsb) * planes + p of every die, plane p and block
 * group q < span (its members, die-major, then group, then plane: member = (die * span + q) * planes
 * + p; with span 1, block s * planes + p); every page goes into one write stream that fills superblocks slot by slot,
 * slot = page * members + member (bad members skipped), so the stream's order is the order in which
 * pages were allocated. A superblock's first slot is its header {seq, erase count}; the other
 * slots carry data, trim records or are left erased. Each page's spare carries a 6-byte tag
 * {argument (LPN) 24 bits, kind, CRC-16 of the tag and the page's address}. The newest copy of a
 * logical page is the one latest in (superblock seq, slot) order: recovery replays pages in that
 * order. Superblocks are erased when they are opened, not when collected, so that a power cut in
 * an erase leaves a superblock whose header still says what it held.
 *
 * The first superblocks (enough to hold FTL_ANCHOR_BLOCKS good blocks) are reserved: their first
 * FTL_ANCHOR_BLOCKS good blocks (factory markers) are the anchor log's candidates. The log is a
 * sequence of records {format, geometry, bad-block table, erase counts, checkpoint pointer, seq floor}
 * written at format, on every grown bad block, on flush and after each checkpoint, in the first two
 * candidates not retired, in turn; the others are spares. A candidate that fails an erase or a program
 * is retired (the next record's bad-block table says so) and the record goes whole into the next one;
 * the block holding the newest complete record is never erased before a newer record is complete.
 * Mount reads every candidate: the newest valid record wins, wherever it is.
 *
 * Format: the superblocks keep what they held (they are erased when next opened); the anchor record
 * names a seq floor, one above the highest seq any header held at format, and mount takes superblocks
 * below it for free, so nothing written before a format comes back (data, trim records, checkpoints).
 *
 * Trims: the map entry of a trimmed logical page names the trim record that unmapped it
 * (FTL_TRIMMED | its ppn); a record is alive while an entry names it, and GC carries forward only
 * those entries. A superblock holding no live page is free at mount.
 *
 * Checkpoints (ftl_ckpt.c): every cfg.ckpt_pages pages of the stream (and on flush with
 * cfg.ckpt_flush) the map is written into superblocks taken from the free pool (a header, then the
 * map in slot order; tag TAG_CKPT), and the next anchor record points to them. The previous
 * checkpoint's superblocks go back to the pool only after that record is on the flash, so a cut at
 * any point leaves one valid checkpoint or none. Mount loads the newest valid one and replays only
 * the superblocks whose seq is at least the stream's seq when it was taken; without one (none,
 * torn, corrupt) it replays every superblock. Logical capacity leaves room for two checkpoints. */
#ifndef NANDLAB_FTL_INT_H
#define NANDLAB_FTL_INT_H

/* Functions on the per-page path. On the SoC they go together (linker.ld places them first): the
 * VexRiscv's instruction cache is 4 KiB and direct-mapped, and the path scattered over the image evicted
 * itself on every page. ftl_poll issues pages until the device refuses one, then takes the completions:
 * the sections follow those two phases, so that each phase's code (issuing writes: FTL_HOT_W, the
 * shared FTL_HOT_ISSUE, FTL_HOT; issuing reads: FTL_HOT_ISSUE, FTL_HOT, FTL_HOT_ISSUE_R;
 * completing: FTL_HOT, FTL_HOT_REAP, reads FTL_HOT_REAP_R) is one stretch that the cache holds whole,
 * each of them beside the port's parts (linker.ld gives the order). ftl_poll itself (with what it inlines,
 * FTL_HOT's finish and issue) is FTL_DRV_HOT5, below. Nothing on the host. */
#if defined(__riscv)
#define FTL_HOT         __attribute__((section(".text.hot_io")))
#define FTL_HOT_W       __attribute__((section(".text.hot_io_w")))
#define FTL_HOT_ISSUE   __attribute__((section(".text.hot_issue")))
#define FTL_HOT_ISSUE_R __attribute__((section(".text.hot_issue_r")))
#define FTL_HOT_REAP    __attribute__((section(".text.hot_reap")))
#define FTL_HOT_REAP_R  __attribute__((section(".text.hot_reap_r")))
#else
#define FTL_HOT
#define FTL_HOT_W
#define FTL_HOT_ISSUE
#define FTL_HOT_ISSUE_R
#define FTL_HOT_REAP
#define FTL_HOT_REAP_R
#endif
/* The request's entry and what ftl_poll runs once a request (not a page): with the driver's code that runs
 * between two scheduler decisions (hal.h's DRV_HOT2, linker.ld's .text.drv_hot2). ftl_poll itself, which every
 * phase runs, in .text.drv_hot5: in the I/O path it sat on the sets of sched_push_n and sched_pick's start, the
 * one FTL function every phase between two decisions ran there (issue 17, wip/sdw9). */
#if defined(__riscv)
#define FTL_DRV_HOT2    __attribute__((section(".text.drv_hot2")))
#define FTL_DRV_HOT5    __attribute__((section(".text.drv_hot5")))
#else
#define FTL_DRV_HOT2
#define FTL_DRV_HOT5
#endif

#include "ftl.h"

#define FTL_UNMAPPED   0xFFFFFFFFu
#define FTL_LOST       0xFFFFFFFEu     /* the page's data could not be moved: reads report it */
#define FTL_TRIMMED    0x80000000u     /* | ppn of the trim record that unmapped the page (reads zeros) */
#define FTL_PPN_LIMIT  0x7FFFFFF0u     /* physical pages addressable with the flag free */
#define FTL_CKPT_MAX_SB 16             /* superblocks one checkpoint may take */
#define FTL_GC_FREE_MIN 2              /* free superblocks kept for GC's own writes */
#define FTL_LPN_LIMIT  0x00FFFFFEu     /* 24-bit tag argument */
#define FTL_OPS        64              /* NAND operations in flight */
#define FTL_BUFS       (FTL_OPS + 4)   /* page buffers (RMW, GC, trim records, metadata) */
#define FTL_MAX_MEMBERS 32
#define FTL_MAX_SPAN   8               /* block groups per plane a superblock spans (struct ftl_geo.span) */
#define FTL_MIN_PAGE_BYTES 64          /* the anchor record's header fills 64 bytes of its first page */
#define FTL_MAX_PAGE_BYTES 65536
#define FTL_ANCHOR_BLOCKS 4            /* anchor log candidates: its two blocks and two spares */
#define ANCHOR_MAGIC 0x4e414c4eu       /* "NLAN": an anchor record's first word; its second is FTL_VERSION */
#define ANCHOR_HDR   64                /* the record's header: 15 words, then the CRC of those 60 bytes */

enum tag_kind { TAG_DATA = 1, TAG_HEADER = 2, TAG_TRIM = 3, TAG_ANCHOR = 4, TAG_CKPT = 5 };
enum sb_state { SB_FREE, SB_DIRTY, SB_OPEN, SB_CLOSED, SB_RESERVED, SB_DEAD, SB_CKPT };
/* Who an operation is for (op->owner): the request slot is in op->arg's upper bits. */
enum op_owner { OWN_REQ_WRITE = 1, OWN_REQ_READ, OWN_RMW_READ, OWN_TRIM_PROG, OWN_GC_READ, OWN_GC_PROG, OWN_SYNC };

struct ftl_sb {
	uint32_t seq;                 /* when it was opened (0: never) */
	uint32_t erases;
	uint32_t valid;               /* valid pages */
	uint32_t bad;                 /* bad member mask */
	uint32_t open_bad;            /* mount: the mask when it was opened (its header's): members replayed */
	uint8_t  state;
	uint8_t  hslot;               /* member holding the header */
	uint8_t  moving;              /* being evacuated: GC, WL and relocations nested in the moves leave it alone */
};


/* What the anchor record says of the newest checkpoint: a whole value, so that a checkpoint whose
 * anchor write fails can put the previous one back in one assignment. */
struct ftl_ckpt_name {
	uint32_t seq, stream_seq;       /* its sequence number, and the stream's at the time */
	uint32_t pages, nsb, crc;       /* map pages, superblocks holding them, CRC over the pages */
	uint32_t sb[FTL_CKPT_MAX_SB], sb_seq[FTL_CKPT_MAX_SB];
};

struct ftl {
	/* What every page's issue and completion touch, together in the first cache lines (the SoC's data
	 * cache is emptied at every read's completion, and each line is a refill behind the DMA). */
	/* (nand's poll, submit and dev copied here at init: no refill of the nand's line per completion) */
	struct ftl_nand_op *(*poll)(void *dev);
	void    *dev;
	uint32_t in_flight;
	int      programs_in_flight;    /* programs submitted, not yet completed */
	int      power_lost;
	/* Per-page counts in 32 bits on these lines, added to st by ftl_stats_fold (ftl_poll, ftl_get_stats). */
	uint32_t hot_reads, hot_corrected;
	int      op_next;               /* where ftl_op_get looks for a free op first */
	int      (*submit)(void *dev, struct ftl_nand_op *op);
	uint32_t hot_programs;
	uint32_t hot_max;               /* most operations in flight (st.max_in_flight is this, folded) */
	int      refused;               /* the device refused a submission since ftl_poll began issuing */
	int      pow2;                  /* pages, blocks, planes, members, groups powers of two, no stagger (ftl_alloc) */
	uint32_t open_sb, open_slot;    /* the write stream's next slot */
	int      req_end;               /* 1 + the highest slot of reqs in use (scans stop there) */
	struct ftl_nand *nand;
	uint32_t *l2p;                 /* logical page -> physical page (ppn) */
	uint32_t *valid;               /* bitmap over ppn */
	struct ftl_sb *sb;
	struct ftl_geo g;
	struct ftl_config cfg;
	char err[160];
	/* derived */
	uint32_t members, nsb, slots;  /* members per superblock, superblocks, slots per superblock */
	uint32_t groups;               /* members per die: planes x span */
	uint32_t lpns, secs_per_lpn, lpns_per_sec, sectors;
	uint32_t reserved_sb;          /* superblocks 0 .. reserved_sb-1 hold the anchor log */
	/* tables */
	uint32_t *bbt;                 /* bitmap over die * blocks + block: bad */
	uint32_t *sb_order;            /* recovery: superblocks by seq */
	uint32_t *refresh;             /* recovery: logical pages whose newest copy is broken */
	uint32_t nrefresh;
	uint8_t *bufs;                 /* FTL_BUFS page buffers */
	uint8_t  buf_used[FTL_BUFS];
	/* the write stream */
	uint32_t seq;
	uint32_t free_count;
	int      in_gc;
	int      wl_moving;             /* static WL's moves under way: new superblocks the most worn (ftl_gc.c) */
	int      move_depth;            /* GC moves nested in moves (ftl_gc.c) */
	/* operations and requests */
	struct ftl_nand_op ops[FTL_OPS];
	/* Each op's state and buffer side by side: one line refilled per completion, one store per take. */
	struct ftl_op_state {
		uint8_t used;               /* 1 taken, 2 submitted, 3 completed */
		int8_t  buf;                /* page buffer released with the op, -1 none */
	} ost[FTL_OPS];
	uint32_t order;
	uint32_t retry_lpn[FTL_OPS], retry_req[FTL_OPS], nretry;   /* host pages to program again */
	uint32_t retry_from[FTL_OPS];   /* the failed page (a trim record's: FTL_TRIMMED | it) */
	uint32_t op_prev[FTL_OPS], op_prev_seq[FTL_OPS];         /* the same for each host program in flight */
	int16_t  retry_buf[FTL_OPS];
	uint32_t retire_die[8], retire_block[8], nretire;
	struct ftl_req *reqs[FTL_MAX_REQUESTS];
	int      sh_pages, sh_blocks, sh_planes, sh_members, sh_groups, sh_nsb;   /* log2 of those counts, -1 if not a power of two */
	struct ftl_req *done[FTL_MAX_REQUESTS];
	uint32_t ndone;
	/* anchor log */
	uint32_t anchor_die[FTL_ANCHOR_BLOCKS], anchor_block[FTL_ANCHOR_BLOCKS];
	uint32_t anchor_cur, anchor_page, anchor_seq;
	uint32_t anchor_home;           /* the candidate holding the newest complete record (FTL_ANCHOR_BLOCKS: none) */
	uint32_t seq_floor;             /* superblocks with a lower seq were written before the last format: dead */
	/* checkpoints: the newest (the one the anchor record names), the stream's pages since, superblocks reserved */
	struct ftl_ckpt_name ckpt;
	uint32_t ckpt_region;           /* superblocks a checkpoint needs (two are left out of capacity) */
	uint32_t since_ckpt;            /* stream pages programmed since the last checkpoint */
	int      ckpt_due;
	int      ckpt_writing;          /* a checkpoint is being written (a cut's test driver counts them) */
	int      ready;                 /* ftl_init accepted the configuration (every other call checks) */
	int      mounted;
	int      scan_only;             /* mount ignores the checkpoint (the host tests compare both paths) */
	struct ftl_stats st;
};

static inline int ftl_is_ppn(uint32_t v) { return v < FTL_TRIMMED; }
static inline int ftl_is_trim_ref(uint32_t v) { return v >= FTL_TRIMMED && v < FTL_LOST; }
static inline int ftl_reads_zero(uint32_t v) { return v == FTL_UNMAPPED || ftl_is_trim_ref(v); }

/* ftl_io.c */
struct ftl_nand_op *ftl_op_get(struct ftl *f);
/* An operation on physical page ppn, from the pool, its data buffer set. */
struct ftl_nand_op *ftl_op_at(struct ftl *f, int opcode, uint32_t ppn, uint8_t *data);
/* Read ppn into buf now (counted): its NAND status; the tag's kind (0 unless read OK) and argument. */
int      ftl_read_sync(struct ftl *f, int opcode, uint32_t ppn, uint8_t *buf, uint32_t *arg, int *kind);
void     ftl_op_put(struct ftl *f, struct ftl_nand_op *op);
int      ftl_op_submit(struct ftl *f, struct ftl_nand_op *op);
void     ftl_drain(struct ftl *f);                 /* complete everything in flight */
void     ftl_stats_fold(struct ftl *f);   /* the per-page counts (hot_*) into st */
void     ftl_stats_zero(struct ftl *f);   /* st and the per-page counts to zero (format, mount) */
int      ftl_sync(struct ftl *f, struct ftl_nand_op *op); /* submit op, wait, release it: its status */
int      ftl_sync_keep(struct ftl *f, struct ftl_nand_op *op); /* the same, op kept for its tag */
int      ftl_log2(uint32_t d);     /* log2 of a power of two, else -1 */
int      ftl_reap(struct ftl *f);   /* take one completion (0: none now), as every wait does */
int      ftl_buf_get(struct ftl *f);
void     ftl_buf_put(struct ftl *f, int i);
uint8_t *ftl_buf(struct ftl *f, int i);
int      ftl_set_error(struct ftl *f, int result, const char *fmt, ...);

/* ftl_map.c: the flat map (a cached map could replace these five calls) */
uint32_t ftl_map_get(struct ftl *f, uint32_t lpn);
void     ftl_map_set(struct ftl *f, uint32_t lpn, uint32_t ppn);   /* invalidates the old page */
/* ftl_map_set of a host page's program to ppn, the stream's newest page (in the open superblock): also
 * the mapping it replaces and its superblock's seq (0 unless it names a page), for a failed program. */
void     ftl_map_program(struct ftl *f, uint32_t lpn, uint32_t ppn, uint32_t *prev, uint32_t *prev_seq);
void     ftl_map_reset(struct ftl *f);
void     ftl_map_trim(struct ftl *f, uint32_t lo, uint32_t n, uint32_t record);  /* pages named by a trim record */
void     ftl_valid_rebuild(struct ftl *f);   /* valid bitmap and counts from the map (mount) */
int      ftl_valid(struct ftl *f, uint32_t ppn);
void     ftl_valid_set(struct ftl *f, uint32_t ppn, int on);

/* ftl_alloc.c: physical addresses, superblocks, the write stream */
uint32_t ftl_ppn(const struct ftl *f, uint32_t die, uint32_t block, uint32_t page);
void     ftl_ppn_split(const struct ftl *f, uint32_t ppn, uint32_t *die, uint32_t *block, uint32_t *page);
uint32_t ftl_ppn_sb(const struct ftl *f, uint32_t ppn);
uint32_t ftl_member_block(const struct ftl *f, uint32_t sb, uint32_t m, uint32_t *die);
uint32_t ftl_block_sb(const struct ftl *f, uint32_t die, uint32_t block, uint32_t *m);   /* the inverse (m may be NULL) */
int      ftl_is_bad(const struct ftl *f, uint32_t die, uint32_t block);
void     ftl_mark_bad(struct ftl *f, uint32_t die, uint32_t block);
uint32_t ftl_slot_ppn(const struct ftl *f, uint32_t sb, uint32_t slot);  /* FTL_UNMAPPED: bad member */
uint32_t ftl_slot_ppn_any(const struct ftl *f, uint32_t sb, uint32_t slot); /* bad members too */
uint32_t ftl_sb_capacity(const struct ftl *f, uint32_t sb);             /* data slots */
int      ftl_alloc(struct ftl *f, uint32_t *ppn);   /* next data slot of the stream (GC when needed) */
int      ftl_open_sb(struct ftl *f);
int      ftl_take_sb(struct ftl *f, uint32_t *out);   /* a free superblock erased, its header written */
int      ftl_pick_free(struct ftl *f, uint32_t *out);
uint32_t ftl_ckpt_region(const struct ftl_geo *g);  /* superblocks one checkpoint takes (capacity) */
void     ftl_retire_member(struct ftl *f, uint32_t die, uint32_t block);
void     ftl_erase_stats(struct ftl *f);

/* ftl_meta.c: tags, headers, anchor log, format */
uint16_t ftl_crc16(const uint8_t *p, uint32_t n, uint16_t crc);
uint32_t ftl_crc32(const uint8_t *p, uint32_t n, uint32_t crc);
void     ftl_tag_pack(uint8_t *tag, uint32_t arg, int kind, uint32_t ppn);
int      ftl_tag_unpack(const uint8_t *tag, uint32_t ppn, uint32_t *arg); /* kind, 0 invalid */
void     ftl_header_pack(struct ftl *f, uint8_t *page, uint32_t sb);
int      ftl_header_unpack(struct ftl *f, const uint8_t *page, uint32_t sb, uint32_t *seq, uint32_t *erases,
                           uint32_t *bad);
uint32_t ftl_anchor_pages(const struct ftl_geo *g);  /* pages of one anchor record */
int      ftl_anchor_find(struct ftl *f);            /* locate the anchor candidates (factory markers) */
int      ftl_anchor_write(struct ftl *f);
int      ftl_anchor_load(struct ftl *f);
int      ftl_program_meta(struct ftl *f, uint32_t die, uint32_t block, uint32_t page, uint8_t *data,
                          uint32_t arg, int kind);

/* ftl_gc.c */
void     ftl_close_sb(struct ftl *f, uint32_t sb);  /* closed, or dead if its last member went bad */
int      ftl_gc(struct ftl *f);                     /* free at least one superblock */
int      ftl_wear_level(struct ftl *f);             /* static WL: move the coldest superblock */
int      ftl_relocate_retired(struct ftl *f, uint32_t die, uint32_t block);   /* its data out, at once */
int      ftl_refresh_lpn(struct ftl *f, uint32_t lpn);  /* a copy newer than a broken one */

/* ftl_recover.c */
int      ftl_recover(struct ftl *f);
int      ftl_read_headers(struct ftl *f);

/* ftl_ckpt.c */
int      ftl_checkpoint(struct ftl *f);      /* write one now (FTL_OK also when skipped for lack of room) */
int      ftl_ckpt_load(struct ftl *f);       /* the anchor's checkpoint into the map: 1 loaded, 0 none valid */
uint32_t ftl_ckpt_pages_needed(const struct ftl *f);

#endif
