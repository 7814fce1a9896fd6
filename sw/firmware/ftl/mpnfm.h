/* MPNFM: one logical device over a die of two page sizes (the MPNFM paper, Kim et al., TVLSI 2016,
 * Sec. IV and Fig. 5). Plane 0's large pages and plane 1's small pages each get a page-level FTL of
 * their own (ftl.h, unchanged, each on a view of its plane: mpnfm_views_open); this layer in front
 * of them is the paper's two preprocessing modules:
 *
 *   the request distributor  a write of fewer than theta bytes (theta = one small page by default,
 *                            "smaller than" as the paper writes; <= selectable) goes to the small-page
 *                            FTL, every other write to the large-page FTL (which does read-modify-write
 *                            of its partial pages itself); reads go where the region table says;
 *   the region table         one entry per small-page-sized unit of the logical space: L (its data is
 *                            the large FTL's) or S (the small FTL's). The paper keeps one bit a unit
 *                            and indexes the small FTL by the same address; here the small FTL has
 *                            only plane 1's capacity, so an S unit names the small FTL's logical page
 *                            (a "slot") that holds it, and the bit is "slot assigned".
 *
 * Small-page GC that merges into large pages (the paper's one FTL change): when free slots fall
 * under a low-water mark, the layer merges the large page of the oldest assigned slot (slots in the
 * order they were assigned, oldest first: the data the small FTL's log holds longest, i.e. its next
 * GC victims) - the large page is read, every S unit of it read from the small FTL over it, the whole
 * page written to the large FTL, the S units' slots trimmed and freed. The small FTL's own GC then
 * finds its victims empty. This is the paper's "victim's valid pages written to large pages, with
 * all other data of the same LPN_Large" done from the layer, ahead of the small FTL's GC, instead of
 * from inside it; the region table is the record of the move (mp:166).
 *
 * Units and ordering: a write of fewer than theta bytes to an L unit it does not cover whole first
 * reads the unit from the large FTL (a cross-FTL read-modify-write; the paper leaves it unstated); a
 * large write over an S unit it covers in part moves the unit's other sectors to the large FTL. A
 * request holds the large pages it touches from start to completion (requests on other large pages
 * run beside it; one that overlaps an earlier waiting request waits behind it), a flush waits for
 * everything before it.
 *
 * Power loss: the region table lives in RAM only (as in the paper); this layer claims nothing across
 * a power cut. Pure C: the firmware and the host build compile the same file. */
#ifndef NANDLAB_MPNFM_H
#define NANDLAB_MPNFM_H

#include <stddef.h>
#include <stdint.h>

#include "ftl.h"

#define MPNFM_MERGES      2                       /* merges in flight at most */
#define MPNFM_JOBS        (FTL_MAX_REQUESTS + MPNFM_MERGES)
#define MPNFM_SUBS        192                     /* requests to the two FTLs in flight at most */

struct mpnfm_config {
	uint32_t theta_bytes;        /* writes below this go to the small FTL (0: one small page) */
	uint8_t  theta_inclusive;    /* 1: writes of exactly theta_bytes too */
	uint32_t low_permille;       /* merges start when free slots fall under this share of them */
};

struct mpnfm_stats {
	uint64_t small_writes, large_writes, reads, trims, flushes;
	uint64_t small_write_bytes, large_write_bytes;
	uint64_t fills;              /* L units read from the large FTL for a small write that covers them in part */
	uint64_t edge_moves;         /* S units a large write covered in part: their other sectors moved to large */
	uint64_t merges, merged_units, merge_large_reads;
	uint64_t slot_waits;         /* times a small write waited for a free slot */
	uint64_t merge_failures;     /* merges the large FTL refused (no room): small writes then fail instead of waiting */
	uint32_t slots, free_slots, max_used_slots;
	uint32_t units_s;            /* units whose data is the small FTL's now */
};

struct mpnfm;

void mpnfm_default_config(struct mpnfm_config *c);
/* RAM for the layer over these two FTLs (mounted or formatted: their capacities are read). */
size_t mpnfm_ram_bytes(struct ftl *large, struct ftl *small, const struct mpnfm_config *c);
/* Set up over two ready FTLs with equal sector sizes, the small FTL's page a whole number of sectors
 * and the large page a whole number of small pages. Every unit starts L (a fresh pair of formats). NULL
 * with *result FTL_E_CONFIG (mpnfm_why() says which limit) or FTL_E_MEMORY. */
struct mpnfm *mpnfm_init(void *ram, size_t bytes, struct ftl *large, struct ftl *small, const struct mpnfm_config *c,
                         int *result);
const char *mpnfm_why(void);

uint32_t mpnfm_sectors(const struct mpnfm *m);
uint32_t mpnfm_sector_bytes(const struct mpnfm *m);
/* As ftl_submit / ftl_poll / ftl_in_flight: the request is the layer's until polled back. */
int mpnfm_submit(struct mpnfm *m, struct ftl_req *r);
struct ftl_req *mpnfm_poll(struct mpnfm *m);
uint32_t mpnfm_in_flight(const struct mpnfm *m);
void mpnfm_get_stats(const struct mpnfm *m, struct mpnfm_stats *s);
void mpnfm_as_dev(struct mpnfm *m, struct ftl_dev *d);
/* Whether logical unit u (small-page sized) is S, and its slot; for tests. -1 when L. */
int64_t mpnfm_slot_of(const struct mpnfm *m, uint32_t unit);
/* Checks the region table against the slot list (each S unit's slot names it back, list and free stack
 * partition the slots): 0, or -1 with mpnfm_why() set. */
int mpnfm_check(const struct mpnfm *m);

/* The two FTLs' views of one MPNFM device: `lower` has 2 planes (a block's plane is its low address
 * bit, as ONFI multi-plane addressing) with large pages of lower->geo.page_bytes on plane 0 and small
 * pages of small_bytes on plane 1 (the lower device chooses the page layout by the plane). View p
 * sees plane p alone: 1 plane of blocks / 2 blocks; its block b is the lower's 2b + p. Completions are
 * handed to the view whose operation they are, whichever view polls. */
#define MPNFM_VIEW_OPS    (2 * 64)     /* two FTLs' operations in flight (FTL_OPS each) */
struct mpnfm_views {
	struct ftl_nand lower;
	struct ftl_nand view[2];
	struct mpnfm_view_dev { struct mpnfm_views *v; int plane; } dev[2];
	/* The lower device gets a copy of each operation with the lower's block number (an FTL looks at
	 * its own operations in flight by their addresses); the copy's outcome goes back at completion. */
	struct ftl_nand_op op[MPNFM_VIEW_OPS];
	struct ftl_nand_op *orig[MPNFM_VIEW_OPS];
	int16_t free_ops[MPNFM_VIEW_OPS];
	int nfree;
	struct ftl_nand_op *q[2][MPNFM_VIEW_OPS];   /* completions for each view, taken by the other's poll */
	int qh[2], qn[2];
};
int mpnfm_views_open(struct mpnfm_views *v, const struct ftl_nand *lower, uint32_t small_bytes);

#endif
