/* FTL map checkpoints: the map written into superblocks from the free pool, named by the anchor log,
 * loaded at mount so that only the superblocks written since are replayed.
 *
 * A checkpoint is a header page {magic, version, checkpoint seq, stream seq, logical pages, pages,
 * header CRC} and the map (4 bytes per logical page, little-endian) in the data slots of its
 * superblocks, slot order, every page tagged TAG_CKPT {checkpoint seq mod 256, page index}. The
 * anchor record written after its last page names it {seq, stream seq, pages, superblocks and their
 * seqs, CRC-32 of the map}; the previous checkpoint's superblocks return to the pool only then. A cut
 * in the middle leaves the previous one named and intact; the new one's superblocks hold nothing
 * live and are free at the next mount. Superblocks are opened for it as for the stream (least-erased
 * first, header with a seq), so checkpoints wear the flash as evenly as data does. */
#include <string.h>

#include "ftl_int.h"

#define CKPT_MAGIC 0x4b434c4eu   /* "NLCK" */
#define BATCH 32

static void put32(uint8_t *p, uint32_t v) { p[0] = v; p[1] = v >> 8; p[2] = v >> 16; p[3] = v >> 24; }
static uint32_t get32(const uint8_t *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }

uint32_t ftl_ckpt_pages_needed(const struct ftl *f)
{
	return 1 + (4 * f->lpns + f->g.page_bytes - 1) / f->g.page_bytes;
}

static void header_pack(struct ftl *f, uint8_t *page, uint32_t seq, uint32_t stream_seq)
{
	memset(page, 0xFF, f->g.page_bytes);
	uint32_t v[6] = { CKPT_MAGIC, FTL_VERSION, seq, stream_seq, f->lpns, ftl_ckpt_pages_needed(f) };
	for (int i = 0; i < 6; i++)
		put32(page + 4 * i, v[i]);
	put32(page + 24, ftl_crc32(page, 24, 0));
}

static int header_check(struct ftl *f, const uint8_t *page)
{
	return get32(page) == CKPT_MAGIC && get32(page + 4) == FTL_VERSION && get32(page + 8) == f->ckpt.seq &&
	       get32(page + 12) == f->ckpt.stream_seq && get32(page + 16) == f->lpns &&
	       get32(page + 20) == ftl_ckpt_pages_needed(f) && get32(page + 24) == ftl_crc32(page, 24, 0);
}

/* Page k of the map part (k >= 1) from the map in RAM: bytes [(k - 1) P, k P) of it. */
static void map_page(struct ftl *f, uint32_t k, uint8_t *page)
{
	uint32_t P = f->g.page_bytes, off = (k - 1) * P, total = 4 * f->lpns;
	uint32_t n = total - off < P ? total - off : P;
	memcpy(page, (const uint8_t *)f->l2p + off, n);
	memset(page + n, 0xFF, P - n);
}

/* The ppn of checkpoint page k: the data slots of its superblocks in order, members skipped that
 * were bad when the superblock was opened (`mask` of each: at write time the current mask). */
struct cursor { uint32_t i, slot; };

static uint32_t next_ppn(struct ftl *f, struct cursor *c, const uint32_t *sbs, uint32_t nsb, int at_mount)
{
	while (c->i < nsb) {
		uint32_t sb = sbs[c->i];
		uint32_t mask = at_mount ? f->sb[sb].open_bad : f->sb[sb].bad;
		while (c->slot < f->slots) {
			uint32_t slot = c->slot++;
			if (slot <= f->sb[sb].hslot || (mask & (1u << (slot % f->members))))
				continue;
			uint32_t ppn = ftl_slot_ppn_any(f, sb, slot);
			if (ppn != FTL_UNMAPPED)          /* (past a staggered member's last page: none) */
				return ppn;
		}
		c->i++;
		c->slot = 0;
	}
	return FTL_UNMAPPED;
}

static void release(struct ftl *f, const uint32_t *sbs, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (f->sb[sbs[i]].state == SB_CKPT) {
			f->sb[sbs[i]].state = SB_DIRTY;
			f->free_count++;
		}
}

static int skipped(struct ftl *f, const uint32_t *sbs, uint32_t n)
{
	release(f, sbs, n);
	f->st.ckpt_skipped++;
	return FTL_OK;
}

int ftl_checkpoint(struct ftl *f)
{
	f->ckpt_due = 0;
	f->since_ckpt = 0;
	if (!f->cfg.ckpt_pages || !f->mounted)
		return FTL_OK;
	ftl_drain(f);
	if (f->power_lost)
		return FTL_E_POWER;
	uint32_t need = ftl_ckpt_pages_needed(f), sbs[FTL_CKPT_MAX_SB] = { 0 }, nsb = 0, cap = 0, crc = 0;
	int r = FTL_OK;
	/* Room: GC first when taking the checkpoint's superblocks would eat into GC's own reserve. */
	f->in_gc = 1;
	while (r == FTL_OK && f->free_count < f->ckpt_region + FTL_GC_FREE_MIN + 1)
		r = ftl_gc(f);
	if (r == FTL_OK && f->cfg.static_wl)
		r = ftl_wear_level(f);
	f->in_gc = 0;
	if (r == FTL_E_FULL)
		return skipped(f, sbs, 0);
	if (r)
		return r;
	/* The stream continues in its open superblock: the replay starts there (or at the next one). */
	uint32_t stream_seq = f->open_sb != FTL_UNMAPPED ? f->sb[f->open_sb].seq : f->seq + 1;
	while (cap < need) {
		uint32_t sb;
		if (nsb == FTL_CKPT_MAX_SB || f->free_count <= FTL_GC_FREE_MIN)
			return skipped(f, sbs, nsb);
		if ((r = ftl_take_sb(f, &sb)))
			return r == FTL_E_FULL ? skipped(f, sbs, nsb) : r;
		f->sb[sb].state = SB_CKPT;
		sbs[nsb++] = sb;
		cap += ftl_sb_capacity(f, sb);
	}
	uint32_t seq = f->ckpt.seq + 1;
	struct cursor c = { 0, 0 };
	int failed = 0;
	f->ckpt_writing = 1;
	for (uint32_t k = 0; k < need && !failed; ) {
		struct ftl_nand_op *ops[BATCH];
		uint32_t n = 0;
		for (; k < need && n < BATCH; k++) {
			uint32_t ppn = next_ppn(f, &c, sbs, nsb, 0);
			int b = ftl_buf_get(f);
			uint8_t *page = ftl_buf(f, b);
			if (k == 0) {
				header_pack(f, page, seq, stream_seq);
			} else {
				map_page(f, k, page);
				uint32_t total = 4 * f->lpns, off = (k - 1) * f->g.page_bytes;
				crc = ftl_crc32(page, total - off < f->g.page_bytes ? total - off : f->g.page_bytes, crc);
			}
			struct ftl_nand_op *op = ftl_op_at(f, FTL_NAND_PROGRAM, ppn, page);
			ftl_tag_pack(op->tag, (seq & 0xFF) << 16 | k, TAG_CKPT, ppn);
			op->owner = OWN_SYNC;
			f->ost[op - f->ops].buf = b;
			ops[n++] = op;
			f->st.meta_programs++;
			f->st.ckpt_programs++;
			if (ftl_op_submit(f, op))
				break;
		}
		ftl_drain(f);
		for (uint32_t i = 0; i < n; i++) {
			if (ops[i]->status == FTL_NAND_FAIL) {
				ftl_retire_member(f, ops[i]->die, ops[i]->block);
				failed = 1;
			}
			ftl_op_put(f, ops[i]);
		}
		if (f->power_lost)
			return FTL_E_POWER;
	}
	f->ckpt_writing = 0;
	if (failed) {
		/* A member went bad under it: this one is abandoned (the previous stays named). */
		release(f, sbs, nsb);
		f->st.ckpt_skipped++;
		return ftl_anchor_write(f);
	}
	struct ftl_ckpt_name was = f->ckpt;
	f->ckpt.seq = seq;
	f->ckpt.stream_seq = stream_seq;
	f->ckpt.pages = need;
	f->ckpt.nsb = nsb;
	f->ckpt.crc = crc;
	for (uint32_t i = 0; i < nsb; i++) {
		f->ckpt.sb[i] = sbs[i];
		f->ckpt.sb_seq[i] = f->sb[sbs[i]].seq;
	}
	if ((r = ftl_anchor_write(f))) {
		/* The record naming it is not on the flash: the previous checkpoint stays the one named (its
		 * superblocks kept), this one's superblocks go back to the pool. */
		f->ckpt = was;
		release(f, sbs, nsb);
		return r;
	}
	release(f, was.sb, was.nsb);
	f->st.ckpt_writes++;
	ftl_erase_stats(f);
	return FTL_OK;
}

/* The map of the checkpoint the anchor names, into f->l2p: 1 when it checks (every page read, tags,
 * header, CRC, entries in range), 0 when not (the map is then garbage: the caller resets it), or
 * FTL_E_POWER. Its superblocks' headers were read (seq, mask when opened). */
int ftl_ckpt_load(struct ftl *f)
{
	uint32_t need = ftl_ckpt_pages_needed(f), pages = f->g.dies * f->g.blocks * f->g.pages, crc = 0;
	if (!f->ckpt.nsb || f->ckpt.nsb > FTL_CKPT_MAX_SB || f->ckpt.pages != need)
		return 0;
	for (uint32_t i = 0; i < f->ckpt.nsb; i++) {
		uint32_t s = f->ckpt.sb[i];
		if (s < f->reserved_sb || s >= f->nsb || !f->sb[s].seq || f->sb[s].seq != f->ckpt.sb_seq[i])
			return 0;
	}
	struct cursor c = { 0, 0 };
	int ok = 1;
	for (uint32_t k = 0; k < need && ok; ) {
		struct ftl_nand_op *ops[BATCH];
		uint32_t n = 0, first = k;
		for (; k < need && n < BATCH; k++) {
			uint32_t ppn = next_ppn(f, &c, f->ckpt.sb, f->ckpt.nsb, 1);
			if (ppn == FTL_UNMAPPED) {
				ok = 0;
				break;
			}
			int b = ftl_buf_get(f);
			struct ftl_nand_op *op = ftl_op_at(f, FTL_NAND_READ, ppn, ftl_buf(f, b));
			op->owner = OWN_SYNC;
			op->arg = ppn;
			f->ost[op - f->ops].buf = b;
			ops[n++] = op;
			if (ftl_op_submit(f, op))
				break;
		}
		ftl_drain(f);
		for (uint32_t i = 0; i < n; i++) {
			struct ftl_nand_op *op = ops[i];
			uint32_t idx = first + i, arg = 0;
			int kind = op->status == FTL_NAND_OK ? ftl_tag_unpack(op->tag, op->arg, &arg) : 0;
			f->st.nand_reads++;
			f->st.ecc_corrected += op->corrected;
			if (kind != TAG_CKPT || arg != ((f->ckpt.seq & 0xFF) << 16 | idx))
				ok = 0;
			else if (idx == 0)
				ok &= header_check(f, op->data);
			else {
				uint32_t total = 4 * f->lpns, off = (idx - 1) * f->g.page_bytes;
				uint32_t len = total - off < f->g.page_bytes ? total - off : f->g.page_bytes;
				memcpy((uint8_t *)f->l2p + off, op->data, len);
				crc = ftl_crc32(op->data, len, crc);
			}
			ftl_op_put(f, op);
		}
		if (f->power_lost)
			return FTL_E_POWER;
	}
	if (!ok || crc != f->ckpt.crc)
		return 0;
	for (uint32_t l = 0; l < f->lpns; l++) {
		uint32_t v = f->l2p[l];
		if (v != FTL_UNMAPPED && v != FTL_LOST && (v & ~FTL_TRIMMED) >= pages)
			return 0;
	}
	return 1;
}
