/* FTL garbage collection (greedy or cost-benefit victim) and static wear levelling: valid pages of a
 * superblock moved into the write stream, trim records carried forward while they still matter. */
#include <string.h>

#include "ftl_int.h"

#define GC_BATCH 32

static uint32_t pick_victim(struct ftl *f)
{
	uint32_t best = FTL_UNMAPPED;
	uint64_t best_score = 0;
	for (uint32_t s = f->reserved_sb; s < f->nsb; s++) {
		if (f->sb[s].state != SB_CLOSED || f->sb[s].moving)
			continue;
		uint32_t cap = ftl_sb_capacity(f, s), v = f->sb[s].valid;
		if (v >= cap)
			continue;
		uint64_t score;
		if (f->cfg.gc_policy == FTL_GC_COST_BENEFIT) {
			/* Rosenblum and Ousterhout's benefit/cost = age * (1 - u) / (1 + u), u = valid fraction
			 * (the read and the write back of the valid pages cost 1 + u), age in superblocks opened since. */
			uint64_t age = f->seq - f->sb[s].seq + 1;
			score = age * (uint64_t)(cap - v) * 1024 / (cap + v);
		} else {
			score = cap - v;
		}
		if (best == FTL_UNMAPPED || score > best_score) {
			best = s;
			best_score = score;
		}
	}
	return best;
}

/* The LPNs of the trim record at ppn `at` that still name it, as a new record (0: it is dead). */
static uint32_t filter_trim(struct ftl *f, const uint8_t *old, uint32_t nranges, uint32_t at, uint8_t *out)
{
	uint32_t n = 0, max = f->g.page_bytes / 8;
	memset(out, 0xFF, f->g.page_bytes);
	for (uint32_t i = 0; i < nranges; i++) {
		uint32_t lo, cnt;
		memcpy(&lo, old + 8 * i, 4);
		memcpy(&cnt, old + 8 * i + 4, 4);
		uint32_t run = 0;
		for (uint32_t l = lo; l <= lo + cnt; l++) {
			if (l < lo + cnt && l < f->lpns && ftl_map_get(f, l) == (FTL_TRIMMED | at)) {
				run++;
				continue;
			}
			if (run && n < max) {
				uint32_t start = l - run;
				memcpy(out + 8 * n, &start, 4);
				memcpy(out + 8 * n + 4, &run, 4);
				n++;
			}
			run = 0;
		}
	}
	return n;
}

/* The pages of a trim record (nranges ranges in `rec`) that name `from` name `to` instead. */
static void retarget_trim(struct ftl *f, const uint8_t *rec, uint32_t nranges, uint32_t from, uint32_t to)
{
	for (uint32_t i = 0; i < nranges && i < f->g.page_bytes / 8; i++) {
		uint32_t lo, cnt;
		memcpy(&lo, rec + 8 * i, 4);
		memcpy(&cnt, rec + 8 * i + 4, 4);
		for (uint32_t l = lo; l < lo + cnt && l < f->lpns; l++)
			if (ftl_map_get(f, l) == from)
				ftl_map_set(f, l, to);
	}
}

/* Program `data` with a tag (arg, kind) at a newly allocated page, retrying on program failures;
 * returns the new page or FTL_UNMAPPED (r set) when the device gave out. */
static int evacuate(struct ftl *f, uint32_t sb, uint64_t *moved);

static uint32_t rewrite(struct ftl *f, uint8_t *data, uint32_t arg, int kind, int *r)
{
	for (;;) {
		uint32_t ppn, die, block, page;
		if ((*r = ftl_alloc(f, &ppn)))
			return FTL_UNMAPPED;
		struct ftl_nand_op *op = ftl_op_at(f, FTL_NAND_PROGRAM, ppn, data);
		ftl_tag_pack(op->tag, arg, kind, ppn);
		f->st.nand_programs++;
		int s = ftl_sync(f, op);
		if (s == FTL_NAND_OK)
			return ppn;
		if (s == FTL_NAND_POWER) {
			*r = FTL_E_POWER;
			return FTL_UNMAPPED;
		}
		ftl_ppn_split(f, ppn, &die, &block, &page);
		ftl_retire_member(f, die, block);
		if ((*r = ftl_anchor_write(f)) || (*r = ftl_relocate_retired(f, die, block)))
			return FTL_UNMAPPED;
	}
}

/* Pages moved at once by a move nested in another (a program failure in GC's writes relocates the
 * failed block; that relocation's writes may need GC): fewer at each depth, so that the nested
 * batches' page buffers fit the pool. */
static uint32_t batch_size(const struct ftl *f)
{
	int sh = 2 * f->move_depth;
	return sh >= 5 ? 1 : GC_BATCH >> sh;
}

/* Move every valid page of the pages listed; reads in parallel, then each written back (the
 * operations released first: the writes back may nest further moves). */
static int move_batch(struct ftl *f, const uint32_t *ppns, uint32_t n, uint64_t *moved)
{
	struct ftl_nand_op *ops[GC_BATCH];
	int bufs[GC_BATCH], kinds[GC_BATCH], oks[GC_BATCH], r = FTL_OK;
	uint32_t args[GC_BATCH];
	for (uint32_t i = 0; i < n; i++) {
		bufs[i] = ftl_buf_get(f);
		ops[i] = ftl_op_at(f, FTL_NAND_READ, ppns[i], ftl_buf(f, bufs[i]));
		ops[i]->owner = OWN_SYNC;
		if (ftl_op_submit(f, ops[i]))
			r = FTL_E_POWER;
	}
	ftl_drain(f);
	for (uint32_t i = 0; i < n; i++) {
		struct ftl_nand_op *op = ops[i];
		args[i] = 0;
		/* The tag is outside the ECC: it names the page's LPN even when its data is uncorrectable. */
		kinds[i] = op->status == FTL_NAND_OK || op->status == FTL_NAND_UNCORRECTABLE ?
		           ftl_tag_unpack(op->tag, ppns[i], &args[i]) : 0;
		oks[i] = op->status == FTL_NAND_OK;
		f->st.nand_reads++;
		f->st.ecc_corrected += op->corrected;
		if (op->status == FTL_NAND_POWER)
			r = FTL_E_POWER;
		ftl_op_put(f, op);
	}
	f->move_depth++;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t arg = args[i], old = ppns[i];
		int kind = kinds[i], op_ok = oks[i];
		if (r == FTL_OK && ftl_valid(f, old)) {
			uint8_t *data = ftl_buf(f, bufs[i]);
			if (kind == TAG_DATA && op_ok && arg < f->lpns && ftl_map_get(f, arg) == old) {
				uint32_t to = rewrite(f, data, arg, TAG_DATA, &r);
				if (to != FTL_UNMAPPED && ftl_map_get(f, arg) == old) {
					ftl_map_set(f, arg, to);
					(*moved)++;
				}
			} else if (kind == TAG_TRIM && op_ok) {
				int b = ftl_buf_get(f);
				uint32_t left = filter_trim(f, data, arg, old, ftl_buf(f, b));
				ftl_valid_set(f, old, 0);
				if (left) {
					uint32_t to = rewrite(f, ftl_buf(f, b), left, TAG_TRIM, &r);
					if (to != FTL_UNMAPPED) {
						retarget_trim(f, ftl_buf(f, b), left, FTL_TRIMMED | old, FTL_TRIMMED | to);
						ftl_valid_set(f, to, 1);
					}
				}
				ftl_buf_put(f, b);
			} else if (op_ok && kind == TAG_DATA) {
				ftl_valid_set(f, old, 0);     /* a stale copy (its logical page was written since) */
			} else {
				/* Unreadable: the logical page is lost; its reads say so (never silent). */
				f->st.uncorrectable++;
				f->st.lost_pages++;
				/* The logical pages naming it, by the map (rare): a data page's, or a trim record's
				 * (they lose the record: unmapped now, their older copies may come back at a mount). */
				ftl_valid_set(f, old, 0);
				for (uint32_t l = 0; l < f->lpns; l++) {
					if (ftl_map_get(f, l) == old)
						ftl_map_set(f, l, FTL_LOST);
					else if (ftl_map_get(f, l) == (FTL_TRIMMED | old))
						ftl_map_set(f, l, FTL_UNMAPPED);
				}
			}
		}
		ftl_buf_put(f, bufs[i]);
	}
	f->move_depth--;
	return r;
}

/* Move out every valid page of sb; it becomes free (erased when it is next opened). The moves may
 * nest (a program failure relocates its block; that relocation's writes may need GC): while sb is
 * being emptied, no nested GC, WL or relocation takes it, or it would be freed, reopened and filled
 * under this loop, which would then free it again full of live pages. */
static int evacuate(struct ftl *f, uint32_t sb, uint64_t *moved)
{
	uint32_t batch[GC_BATCH], n = 0, size = batch_size(f);
	int r = FTL_OK;
	f->sb[sb].moving = 1;
	for (uint32_t slot = 0; slot < f->slots && r == FTL_OK; slot++) {
		uint32_t ppn = ftl_slot_ppn_any(f, sb, slot);
		if (ppn == FTL_UNMAPPED || !ftl_valid(f, ppn))
			continue;
		batch[n++] = ppn;
		if (n == size) {
			r = move_batch(f, batch, n, moved);
			n = 0;
		}
	}
	if (r == FTL_OK && n)
		r = move_batch(f, batch, n, moved);
	f->sb[sb].moving = 0;
	if (r == FTL_OK && f->sb[sb].state == SB_CLOSED) {
		f->sb[sb].state = SB_DIRTY;
		f->free_count++;
	}
	return r;
}

/* A member block just retired (a program failed in it): mount's replay and GC skip bad members, so
 * its valid pages are moved out now; if it held its superblock's header (mount finds a superblock by
 * its header), every valid page of the superblock is moved out too, and the superblock is closed. */
int ftl_relocate_retired(struct ftl *f, uint32_t die, uint32_t block)
{
	uint32_t m, sb = ftl_block_sb(f, die, block, &m), batch[GC_BATCH], n = 0;
	uint32_t size = batch_size(f);
	int r = FTL_OK;
	if (sb < f->reserved_sb || f->sb[sb].state == SB_FREE || f->sb[sb].state == SB_DIRTY || f->sb[sb].state == SB_CKPT)
		return FTL_OK;
	if (f->sb[sb].moving)
		return FTL_OK;    /* an evacuation of the whole superblock is under way: it moves these pages too */
	/* Programs still in flight (a host write's into this block) complete first: a read of a page
	 * before its program has run would find it erased and take its logical page for lost. */
	ftl_drain(f);
	if (sb == f->open_sb) {
		/* The moves must not land here: a new superblock takes them. */
		ftl_close_sb(f, sb);
		f->open_sb = FTL_UNMAPPED;
	}
	for (uint32_t p = 0; p < f->g.pages && r == FTL_OK; p++) {
		uint32_t ppn = ftl_ppn(f, die, block, p);
		if (!ftl_valid(f, ppn))
			continue;
		batch[n++] = ppn;
		if (n == size) {
			r = move_batch(f, batch, n, &f->st.gc_moves);
			n = 0;
		}
	}
	if (r == FTL_OK && n)
		r = move_batch(f, batch, n, &f->st.gc_moves);
	if (r == FTL_OK && m == f->sb[sb].hslot && f->sb[sb].state == SB_CLOSED)
		r = evacuate(f, sb, &f->st.gc_moves);
	return r;
}

int ftl_gc(struct ftl *f)
{
	ftl_drain(f);
	uint32_t victim = pick_victim(f);
	if (victim == FTL_UNMAPPED) {
		/* A trim record keeps its valid bit until GC moves it, also once no logical page names it any
		 * more (nothing counts its references): every superblock may then look full while some hold only
		 * dead records, and a device without over-provisioning would refuse writes within its capacity.
		 * The bits again from the map, which names every live page and record, then another look. */
		ftl_valid_rebuild(f);
		victim = pick_victim(f);
	}
	if (victim == FTL_UNMAPPED)
		return ftl_set_error(f, FTL_E_FULL, "no superblock to collect: every one is full of valid pages");
	f->st.gc_runs++;
	return evacuate(f, victim, &f->st.gc_moves);
}

int ftl_wear_level(struct ftl *f)
{
	uint32_t lo = FTL_UNMAPPED, cold = FTL_UNMAPPED, hi = 0;
	for (uint32_t s = f->reserved_sb; s < f->nsb; s++) {
		if (f->sb[s].state == SB_DEAD)
			continue;
		hi = f->sb[s].erases > hi ? f->sb[s].erases : hi;
		if (lo == FTL_UNMAPPED || f->sb[s].erases < f->sb[lo].erases)
			lo = s;
		if (f->sb[s].state == SB_CLOSED && !f->sb[s].moving &&
		    (cold == FTL_UNMAPPED || f->sb[s].erases < f->sb[cold].erases))
			cold = s;
	}
	/* Act when the spread reaches the threshold (not only past it): the next erase of the hot ones
	 * would take it over. */
	if (lo == FTL_UNMAPPED || hi - f->sb[lo].erases < f->cfg.wl_threshold)
		return FTL_OK;
	/* The coldest holds the map's checkpoint: it comes free when the next checkpoint is written (and, the
	 * least-erased free superblock, is then opened next), so the next checkpoint is due now. A free one
	 * is opened next anyway (dynamic WL) - but a closed one as cold beside it would keep the spread: the
	 * coldest closed superblock is what static WL moves. */
	if (f->sb[lo].state == SB_CKPT && f->cfg.ckpt_pages)
		f->ckpt_due = 1;
	if (cold == FTL_UNMAPPED || hi - f->sb[cold].erases < f->cfg.wl_threshold)
		return FTL_OK;
	ftl_drain(f);
	f->wl_moving = 1;
	int r = evacuate(f, cold, &f->st.wl_moves);
	f->wl_moving = 0;
	return r;
}

/* Recovery found a newer copy of lpn whose data did not survive (a program cut short, its tag
 * intact): give the logical page a copy newer than that one (its current data rewritten, or a trim
 * record when it has none), or the next recovery would take the broken copy. */
int ftl_refresh_lpn(struct ftl *f, uint32_t lpn)
{
	uint32_t old = ftl_map_get(f, lpn);
	int r = FTL_OK, b = ftl_buf_get(f);
	uint8_t *data = ftl_buf(f, b);
	if (!ftl_is_ppn(old)) {
		memset(data, 0xFF, f->g.page_bytes);
		uint32_t one = 1;
		memcpy(data, &lpn, 4);
		memcpy(data + 4, &one, 4);
		uint32_t to = rewrite(f, data, 1, TAG_TRIM, &r);
		if (to != FTL_UNMAPPED) {
			if (ftl_reads_zero(ftl_map_get(f, lpn)))
				ftl_map_set(f, lpn, FTL_TRIMMED | to);
			ftl_valid_set(f, to, 1);
		}
	} else {
		int s = ftl_read_sync(f, FTL_NAND_READ, old, data, NULL, NULL);
		if (s == FTL_NAND_POWER) {
			r = FTL_E_POWER;
		} else if (s != FTL_NAND_OK) {
			f->st.lost_pages++;
			ftl_map_set(f, lpn, FTL_LOST);
		} else {
			uint32_t to = rewrite(f, data, lpn, TAG_DATA, &r);
			if (to != FTL_UNMAPPED)
				ftl_map_set(f, lpn, to);
		}
	}
	ftl_buf_put(f, b);
	return r;
}
