/* FTL mount: power-loss recovery from the anchor log, the newest valid checkpoint and a replay of the
 * superblocks written after it in stream order (the newest copy of a logical page wins; trim records
 * unmap); every superblock when no checkpoint is valid. */
#include <string.h>

#include "ftl_int.h"

#define VERIFY_NEWEST 2   /* superblocks read whole (data through the ECC), not only their tags */

static int read_op(struct ftl *f, int opcode, uint32_t ppn, uint8_t *buf, uint32_t *arg, int *kind)
{
	return ftl_read_sync(f, opcode, ppn, buf, arg, kind);
}

static void apply_trim(struct ftl *f, const uint8_t *page, uint32_t nranges, uint32_t ppn)
{
	for (uint32_t i = 0; i < nranges && i < f->g.page_bytes / 8; i++) {
		uint32_t lo, n;
		memcpy(&lo, page + 8 * i, 4);
		memcpy(&n, page + 8 * i + 4, 4);
		ftl_map_trim(f, lo, n, ppn);
	}
}

/* Replay one superblock's pages in slot order; reads in parallel, applied in order. The members
 * replayed are those good when it was opened (its header's mask): one retired since may still hold
 * pages that could not be moved. */
static int replay_sb(struct ftl *f, uint32_t sb, uint32_t header_slot, int verify)
{
	enum { BATCH = 32 };
	struct ftl_nand_op *ops[BATCH];
	int bufs[BATCH];
	uint32_t ppns[BATCH];
	for (uint32_t slot = header_slot + 1; slot < f->slots; ) {
		uint32_t n = 0;
		for (; slot < f->slots && n < BATCH; slot++) {
			if (f->sb[sb].open_bad & (1u << (slot % f->members)))
				continue;
			uint32_t ppn = ftl_slot_ppn_any(f, sb, slot);
			if (ppn == FTL_UNMAPPED)          /* (past a staggered member's last page) */
				continue;
			bufs[n] = verify ? ftl_buf_get(f) : -1;
			ops[n] = ftl_op_at(f, verify ? FTL_NAND_READ : FTL_NAND_READ_TAG, ppn, verify ? ftl_buf(f, bufs[n]) : NULL);
			ops[n]->owner = OWN_SYNC;
			ppns[n] = ppn;
			if (ftl_op_submit(f, ops[n++]))
				break;
		}
		ftl_drain(f);
		int power = 0;
		for (uint32_t i = 0; i < n; i++) {
			uint32_t arg = 0;
			int kind = ops[i]->status == FTL_NAND_OK ? ftl_tag_unpack(ops[i]->tag, ppns[i], &arg) : 0;
			uint32_t a3;
			if (verify && ops[i]->status == FTL_NAND_UNCORRECTABLE && ftl_tag_unpack(ops[i]->tag, ppns[i], &a3) == TAG_DATA &&
			    a3 < f->lpns && f->nrefresh < 2 * f->slots)
				f->refresh[f->nrefresh++] = a3;
			power |= ops[i]->status == FTL_NAND_POWER;
			f->since_ckpt += ops[i]->status != FTL_NAND_ERASED;
			f->st.ecc_corrected += ops[i]->corrected;
			f->st.nand_reads++;
			ftl_op_put(f, ops[i]);
			if (kind == TAG_DATA && arg < f->lpns) {
				ftl_map_set(f, arg, ppns[i]);
			} else if (kind == TAG_TRIM) {
				int b = bufs[i] >= 0 ? bufs[i] : ftl_buf_get(f), k2;
				uint32_t a2;
				if (bufs[i] >= 0 || read_op(f, FTL_NAND_READ, ppns[i], ftl_buf(f, b), &a2, &k2) == FTL_NAND_OK)
					apply_trim(f, ftl_buf(f, b), arg, ppns[i]);
				if (bufs[i] < 0)
					ftl_buf_put(f, b);
			}
			ftl_buf_put(f, bufs[i]);
		}
		if (power || f->power_lost)
			return FTL_E_POWER;
	}
	return FTL_OK;
}

/* Heap sort of superblock numbers by their seq (the CPU has thousands to order). */
static void sift(struct ftl *f, uint32_t *a, uint32_t i, uint32_t n)
{
	for (;;) {
		uint32_t c = 2 * i + 1;
		if (c >= n)
			return;
		if (c + 1 < n && f->sb[a[c + 1]].seq > f->sb[a[c]].seq)
			c++;
		if (f->sb[a[i]].seq >= f->sb[a[c]].seq)
			return;
		uint32_t t = a[i]; a[i] = a[c]; a[c] = t;
		i = c;
	}
}

static void sort_by_seq(struct ftl *f, uint32_t *a, uint32_t n)
{
	for (uint32_t i = n / 2; i-- > 0; )
		sift(f, a, i, n);
	for (uint32_t end = n; end-- > 1; ) {
		uint32_t t = a[0]; a[0] = a[end]; a[end] = t;
		sift(f, a, 0, end);
	}
}

/* Each superblock's header: its seq (0 when it holds none: free), header slot and bad members when
 * it was opened. The header is in the first member good then: the first good one now, or one retired
 * since before it (the newest header among those: a member that went bad earlier keeps an older one).
 * A superblock whose members have all gone bad since it was written is read too: pages that could not
 * be moved off them (a device out of spare) are still its logical pages' newest copies. */
int ftl_read_headers(struct ftl *f)
{
	int b = ftl_buf_get(f);
	for (uint32_t s = f->reserved_sb; s < f->nsb; s++) {
		f->sb[s].seq = 0;
		for (uint32_t m = 0; m < f->members; m++) {
			uint32_t die, block = ftl_member_block(f, s, m, &die), arg, seq, erases, bad;
			int kind, st = read_op(f, FTL_NAND_READ, ftl_ppn(f, die, block, 0), ftl_buf(f, b), &arg, &kind);
			if (st == FTL_NAND_POWER) {
				ftl_buf_put(f, b);
				return FTL_E_POWER;
			}
			/* (Below the seq floor: written before the last format, dead.) */
			if (kind == TAG_HEADER && ftl_header_unpack(f, ftl_buf(f, b), s, &seq, &erases, &bad) && seq > f->sb[s].seq &&
			    seq >= f->seq_floor) {
				f->sb[s].seq = seq;
				f->sb[s].hslot = m;
				f->sb[s].open_bad = bad;
				if (erases > f->sb[s].erases)
					f->sb[s].erases = erases;
			}
			if (!(f->sb[s].bad & (1u << m)))
				break;
		}
	}
	ftl_buf_put(f, b);
	return FTL_OK;
}

static int is_ckpt_sb(const struct ftl *f, uint32_t s)
{
	for (uint32_t i = 0; i < f->ckpt.nsb; i++)
		if (f->ckpt.sb[i] == s)
			return 1;
	return 0;
}

/* A checkpoint's map entries that name pages of superblocks opened since (or erased: no header) are
 * stale: their pages were moved first, and the replay finds the copies. */
static void drop_stale(struct ftl *f, uint32_t from_seq)
{
	for (uint32_t l = 0; l < f->lpns; l++) {
		uint32_t v = f->l2p[l];
		if (!ftl_is_ppn(v) && !ftl_is_trim_ref(v))
			continue;
		uint32_t sb = ftl_ppn_sb(f, v & ~FTL_TRIMMED);
		if (!f->sb[sb].seq || f->sb[sb].seq > from_seq)
			f->l2p[l] = FTL_UNMAPPED;
	}
}

int ftl_mount(struct ftl *f)
{
	int r;
	if (!f->ready)
		return ftl_set_error(f, FTL_E_CONFIG, "not set up: ftl_init refused the configuration");
	f->mounted = 0;
	ftl_drain(f);
	ftl_stats_zero(f);
	uint64_t t0 = f->nand->now_us(f->nand->dev);
	for (uint32_t s = 0; s < f->nsb; s++)
		memset(&f->sb[s], 0, sizeof(f->sb[s]));
	memset(f->bbt, 0, 4 * ((f->g.dies * f->g.blocks + 31) / 32));
	if ((r = ftl_anchor_find(f)) || (r = ftl_anchor_load(f)))
		return r;
	/* The bad-block table into the superblocks' member masks. */
	for (uint32_t d = 0; d < f->g.dies; d++)
		for (uint32_t b = 0; b < f->g.blocks; b++)
			if (ftl_is_bad(f, d, b)) {
				ftl_mark_bad(f, d, b);
				if (f->sb[ftl_block_sb(f, d, b, NULL)].state == SB_FREE)
					f->st.bad_factory++;
			}
	ftl_map_reset(f);
	uint32_t all = f->members == 32 ? 0xFFFFFFFFu : (1u << f->members) - 1;
	for (uint32_t s = 0; s < f->nsb; s++)
		f->sb[s].state = s < f->reserved_sb ? SB_RESERVED : f->sb[s].bad == all ? SB_DEAD : SB_DIRTY;
	/* Headers; the checkpoint (when the anchor names one and it checks); then the superblocks that
	 * have a header, from the stream's seq at the checkpoint (every one without), oldest first. */
	uint32_t *order = f->sb_order, n = 0, from_seq = 0;
	if ((r = ftl_read_headers(f)))
		return r;
	int loaded = 0;
	if (f->scan_only)
		f->ckpt.nsb = 0;
	if (f->ckpt.nsb) {
		if ((loaded = ftl_ckpt_load(f)) < 0)
			return loaded;
		if (loaded) {
			from_seq = f->ckpt.stream_seq;
			drop_stale(f, from_seq);
		} else {
			ftl_map_reset(f);
			f->ckpt.nsb = 0;
			f->st.recovery_ckpt_failed = 1;
		}
	}
	/* New superblocks' seqs go on from the floor at least (those below it were read as free). */
	f->seq = f->seq_floor ? f->seq_floor - 1 : 0;
	for (uint32_t s = f->reserved_sb; s < f->nsb; s++) {
		f->seq = f->sb[s].seq > f->seq ? f->sb[s].seq : f->seq;
		if (f->sb[s].seq && f->sb[s].seq >= from_seq && !(loaded && is_ckpt_sb(f, s)))
			order[n++] = s;
	}
	sort_by_seq(f, order, n);
	f->nrefresh = 0;
	f->since_ckpt = 0;
	for (uint32_t i = 0; i < n && r == FTL_OK; i++) {
		uint32_t s = order[i];
		r = replay_sb(f, s, f->sb[s].hslot, i + VERIFY_NEWEST >= n);
	}
	if (r)
		return r;
	f->st.recovery_sb_replayed = n;
	/* Pages are valid when the map names them; a superblock with none is free (collected before the
	 * cut, or holding only stale copies and dead trim records), the checkpoint's are kept. */
	ftl_valid_rebuild(f);
	f->free_count = 0;
	for (uint32_t s = f->reserved_sb; s < f->nsb; s++) {
		if (f->sb[s].state == SB_DEAD)
			continue;
		f->sb[s].state = loaded && is_ckpt_sb(f, s) ? SB_CKPT : f->sb[s].valid ? SB_CLOSED : SB_DIRTY;
		f->free_count += f->sb[s].state == SB_DIRTY;
	}
	f->open_sb = FTL_UNMAPPED;
	/* Refreshes need room: a full device mounts without them (the map in RAM is right meanwhile). */
	for (uint32_t i = 0; i < f->nrefresh && r == FTL_OK; i++)
		if ((r = ftl_refresh_lpn(f, f->refresh[i])) == FTL_E_FULL)
			r = FTL_OK;
	if (r || (r = ftl_anchor_write(f)))
		return r;
	f->mounted = 1;
	f->st.recovery_kind = loaded ? 3 : 2;
	f->st.recovery_pages_read = f->st.nand_reads;     /* every read of the mount (counters start at it) */
	f->st.recovery_us = f->nand->now_us(f->nand->dev) - t0;
	/* Pages replayed count towards the next checkpoint (so the next mount replays no more than a
	 * period's); after a full scan one is due at once. */
	f->ckpt_due = f->cfg.ckpt_pages && (!loaded || f->since_ckpt >= f->cfg.ckpt_pages);
	ftl_erase_stats(f);
	return FTL_OK;
}
