/* FTL allocation: physical addresses, superblocks and their bad members, the write stream and
 * dynamic wear levelling (the least-erased free superblock is opened next). */
#include <stdlib.h>

#include "ftl_int.h"


FTL_HOT_ISSUE_R uint32_t ftl_ppn(const struct ftl *f, uint32_t die, uint32_t block, uint32_t page)
{
	return (die * f->g.blocks + block) * f->g.pages + page;
}

/* a / d and a % d, by a shift and a mask when d is a power of two (sh >= 0: the soft CPU divides
 * in about 35 cycles, and the per-page path divides a dozen times). */
static inline uint32_t qdiv(uint32_t a, uint32_t d, int sh) { return sh >= 0 ? a >> sh : a / d; }
static inline uint32_t qmod(uint32_t a, uint32_t d, int sh) { return sh >= 0 ? a & (d - 1) : a % d; }

int ftl_log2(uint32_t d)
{
	int sh = 0;
	while (sh < 31 && (1u << sh) < d)
		sh++;
	return d && (1u << sh) == d ? sh : -1;
}

FTL_HOT_ISSUE void ftl_ppn_split(const struct ftl *f, uint32_t ppn, uint32_t *die, uint32_t *block, uint32_t *page)
{
	*page = qmod(ppn, f->g.pages, f->sh_pages);
	ppn = qdiv(ppn, f->g.pages, f->sh_pages);
	*block = qmod(ppn, f->g.blocks, f->sh_blocks);
	*die = qdiv(ppn, f->g.blocks, f->sh_blocks);
}

FTL_HOT_W uint32_t ftl_ppn_sb(const struct ftl *f, uint32_t ppn)
{
	uint32_t block = qmod(qdiv(ppn, f->g.pages, f->sh_pages), f->g.blocks, f->sh_blocks);
	uint32_t i = qdiv(block, f->g.planes, f->sh_planes);
	return f->groups == f->g.planes ? i : qmod(i, f->nsb, f->sh_nsb);     /* (span 1: i < nsb) */
}

/* Member m of superblock sb: its die, and its block (ftl_int.h's layout). */
uint32_t ftl_member_block(const struct ftl *f, uint32_t sb, uint32_t m, uint32_t *die)
{
	uint32_t r = qmod(m, f->groups, f->sh_groups);
	*die = qdiv(m, f->groups, f->sh_groups);
	return (sb + qdiv(r, f->g.planes, f->sh_planes) * f->nsb) * f->g.planes + qmod(r, f->g.planes, f->sh_planes);
}

/* The superblock of a die's block, and its member index there (*m, unless NULL). */
uint32_t ftl_block_sb(const struct ftl *f, uint32_t die, uint32_t block, uint32_t *m)
{
	uint32_t i = qdiv(block, f->g.planes, f->sh_planes);
	if (m)
		*m = die * f->groups + qdiv(i, f->nsb, f->sh_nsb) * f->g.planes + qmod(block, f->g.planes, f->sh_planes);
	return qmod(i, f->nsb, f->sh_nsb);
}

int ftl_is_bad(const struct ftl *f, uint32_t die, uint32_t block)
{
	uint32_t i = die * f->g.blocks + block;
	return (f->bbt[i >> 5] >> (i & 31)) & 1;
}

void ftl_mark_bad(struct ftl *f, uint32_t die, uint32_t block)
{
	uint32_t i = die * f->g.blocks + block;
	f->bbt[i >> 5] |= 1u << (i & 31);
	uint32_t m, sb = ftl_block_sb(f, die, block, &m);
	f->sb[sb].bad |= 1u << m;
}

/* Member m's page offset: its plane's stagger (struct ftl_geo.stagger). */
static inline uint32_t member_offset(const struct ftl *f, uint32_t m)
{
	return f->g.stagger ? f->g.stagger * qmod(m, f->g.planes, f->sh_planes) : 0;
}

/* The page of a slot of sb: FTL_UNMAPPED when its member is bad, or its row is past the member's
 * last page (a staggered plane's). */
uint32_t ftl_slot_ppn(const struct ftl *f, uint32_t sb, uint32_t slot)
{
	uint32_t m = qmod(slot, f->members, f->sh_members);
	if (f->sb[sb].bad & (1u << m))
		return FTL_UNMAPPED;
	return ftl_slot_ppn_any(f, sb, slot);
}

/* The same, bad members too (GC moves valid pages off members retired since, when they could not be
 * moved at once, the device being full). */
uint32_t ftl_slot_ppn_any(const struct ftl *f, uint32_t sb, uint32_t slot)
{
	uint32_t m = qmod(slot, f->members, f->sh_members), die, block = ftl_member_block(f, sb, m, &die);
	uint32_t page = qdiv(slot, f->members, f->sh_members) + member_offset(f, m);
	return page < f->g.pages ? ftl_ppn(f, die, block, page) : FTL_UNMAPPED;
}

uint32_t ftl_sb_capacity(const struct ftl *f, uint32_t sb)
{
	uint32_t n = 0;
	for (uint32_t m = 0; m < f->members; m++)
		n += f->sb[sb].bad & (1u << m) ? 0 : f->g.pages - member_offset(f, m);
	return n ? n - 1 : 0;
}

static uint32_t good_members(const struct ftl *f, uint32_t sb)
{
	uint32_t n = 0;
	for (uint32_t m = 0; m < f->members; m++)
		n += !(f->sb[sb].bad & (1u << m));
	return n;
}

void ftl_erase_stats(struct ftl *f)
{
	uint32_t lo = 0xFFFFFFFFu, hi = 0, n = 0, nfree = 0;
	uint64_t sum = 0;
	for (uint32_t s = f->reserved_sb; s < f->nsb; s++) {
		if (f->sb[s].state == SB_DEAD)
			continue;
		n++;
		sum += f->sb[s].erases;
		lo = f->sb[s].erases < lo ? f->sb[s].erases : lo;
		hi = f->sb[s].erases > hi ? f->sb[s].erases : hi;
		nfree += f->sb[s].state == SB_FREE || f->sb[s].state == SB_DIRTY;
	}
	f->st.erase_min = n ? lo : 0;
	f->st.erase_max = hi;
	f->st.erase_sum = sum;
	f->st.superblocks = n;
	f->st.free_superblocks = nfree;
}

/* A member block went bad (program or erase FAIL): out of the stream and the bad-block table,
 * persisted at once. Its valid pages stay readable and are moved by the caller's relocation. */
void ftl_retire_member(struct ftl *f, uint32_t die, uint32_t block)
{
	if (ftl_is_bad(f, die, block))
		return;
	ftl_mark_bad(f, die, block);
	f->st.bad_grown++;
	uint32_t sb = ftl_block_sb(f, die, block, NULL);
	if (!good_members(f, sb)) {
		if (f->sb[sb].state == SB_FREE || f->sb[sb].state == SB_DIRTY)
			f->free_count--;
		f->sb[sb].state = SB_DEAD;
	}
}

/* The superblock accounting checked against itself: the free counter against the superblocks' states,
 * no superblock without a good member in the free pool, each superblock's valid count against the
 * valid bitmap. NULL when it holds, else what does not (for tests and the shell; O(pages)). */
const char *ftl_audit(struct ftl *f)
{
	uint32_t nfree = 0;
	for (uint32_t s = f->reserved_sb; s < f->nsb; s++) {
		int pool = f->sb[s].state == SB_FREE || f->sb[s].state == SB_DIRTY;
		nfree += pool;
		if (pool && !good_members(f, s)) {
			ftl_set_error(f, FTL_E_IO, "superblock %u is in the free pool with no good block", s);
			return f->err;
		}
		uint32_t v = 0;
		for (uint32_t slot = 0; slot < f->slots; slot++) {
			uint32_t p = ftl_slot_ppn_any(f, s, slot);
			v += p != FTL_UNMAPPED && ftl_valid(f, p);
		}
		if (v != f->sb[s].valid) {
			ftl_set_error(f, FTL_E_IO, "superblock %u counts %u valid pages, its bitmap %u", s, f->sb[s].valid, v);
			return f->err;
		}
	}
	if (nfree != f->free_count) {
		ftl_set_error(f, FTL_E_IO, "free superblocks counted %u, %u in the pool", f->free_count, nfree);
		return f->err;
	}
	return NULL;
}

/* Erase every good member of sb (in parallel); members that fail are retired. */
static int erase_sb(struct ftl *f, uint32_t sb)
{
	struct ftl_nand_op *ops[FTL_MAX_MEMBERS];
	uint32_t n = 0;
	for (uint32_t m = 0; m < f->members; m++) {
		if (f->sb[sb].bad & (1u << m))
			continue;
		uint32_t die, block = ftl_member_block(f, sb, m, &die);
		struct ftl_nand_op *op = ftl_op_at(f, FTL_NAND_ERASE, ftl_ppn(f, die, block, 0), NULL);
		op->owner = OWN_SYNC;
		if (ftl_op_submit(f, op))
			return FTL_E_POWER;
		ops[n++] = op;
	}
	ftl_drain(f);
	int failed = 0, power = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (ops[i]->status == FTL_NAND_FAIL) {
			ftl_retire_member(f, ops[i]->die, ops[i]->block);
			failed = 1;
		}
		power |= ops[i]->status == FTL_NAND_POWER;
		ftl_op_put(f, ops[i]);
	}
	f->st.nand_erases += n;
	if (power)
		return FTL_E_POWER;
	if (failed)
		return ftl_anchor_write(f);
	return FTL_OK;
}

/* The least-erased free superblock (dynamic wear levelling); while static WL moves cold data, the
 * most-erased one (cold data in a worn block rests it; in the least-erased, the data would come back
 * as the next least-erased superblock to move). */
int ftl_pick_free(struct ftl *f, uint32_t *out)
{
	uint32_t best = 0xFFFFFFFFu;
	for (uint32_t s = f->reserved_sb; s < f->nsb; s++)
		if ((f->sb[s].state == SB_FREE || f->sb[s].state == SB_DIRTY) &&
		    (best == 0xFFFFFFFFu || (f->wl_moving ? f->sb[s].erases > f->sb[best].erases
		                                          : f->sb[s].erases < f->sb[best].erases)))
			best = s;
	if (best == 0xFFFFFFFFu)
		return ftl_set_error(f, FTL_E_FULL, "no free superblock left (%u bad blocks)", f->st.bad_factory + f->st.bad_grown);
	*out = best;
	return FTL_OK;
}

/* A free superblock erased, its seq the next and its header {seq, erase count, bad members} in the
 * first good member's page 0 (a member failing either is retired); its state SB_OPEN. */
int ftl_take_sb(struct ftl *f, uint32_t *out)
{
	int r;
	for (;;) {
		uint32_t sb = 0;
		if ((r = ftl_pick_free(f, &sb)))
			return r;
		f->free_count--;
		f->sb[sb].state = SB_OPEN;
		if ((r = erase_sb(f, sb)))
			return r;
		if (f->sb[sb].state == SB_DEAD)
			continue;
		f->sb[sb].erases++;
		f->sb[sb].seq = ++f->seq;
		f->sb[sb].valid = 0;
		for (uint32_t m = 0; m < f->members; m++) {
			if (f->sb[sb].bad & (1u << m))
				continue;
			uint32_t die, block = ftl_member_block(f, sb, m, &die);
			int b = ftl_buf_get(f);
			ftl_header_pack(f, ftl_buf(f, b), sb);
			r = ftl_program_meta(f, die, block, 0, ftl_buf(f, b), sb, TAG_HEADER);
			ftl_buf_put(f, b);
			if (r == FTL_OK) {
				f->sb[sb].hslot = (uint8_t)m;
				*out = sb;
				ftl_erase_stats(f);
				return FTL_OK;
			}
			if (r != FTL_NAND_FAIL)
				return FTL_E_POWER;
			ftl_retire_member(f, die, block);
			if ((r = ftl_anchor_write(f)))
				return r;
		}
		f->sb[sb].state = SB_DEAD;
	}
}

/* The open superblock closed: full, or one of its blocks went bad. A superblock whose last good member
 * was just retired stays dead: closed, GC would collect it back into the free pool, where it would
 * count as room that it is not (and a pool of such superblocks leaves GC nowhere to move to). */
void ftl_close_sb(struct ftl *f, uint32_t sb)
{
	if (f->sb[sb].state != SB_DEAD)
		f->sb[sb].state = SB_CLOSED;
}

/* Close the open superblock, erase the next and write its header (nothing in flight meanwhile:
 * no page of the new superblock is acknowledged before its header is on the flash). */
int ftl_open_sb(struct ftl *f)
{
	int r;
	if (!f->in_gc) {
		f->in_gc = 1;
		r = FTL_OK;
		while (r == FTL_OK && f->free_count <= FTL_GC_FREE_MIN) {
			r = ftl_gc(f);
			if (r == FTL_OK && f->cfg.static_wl)
				r = ftl_wear_level(f);
		}
		if (r == FTL_OK && f->cfg.static_wl)
			r = ftl_wear_level(f);
		f->in_gc = 0;
		if (r)
			return r;
		/* GC's writes may have opened a superblock with room left. */
		if (f->open_sb != FTL_UNMAPPED && f->open_slot < f->slots)
			return FTL_OK;
	}
	ftl_drain(f);
	if (f->power_lost)
		return FTL_E_POWER;
	if (f->open_sb != FTL_UNMAPPED)
		ftl_close_sb(f, f->open_sb);
	f->open_sb = FTL_UNMAPPED;
	uint32_t sb = 0;
	if ((r = ftl_take_sb(f, &sb)))
		return r;
	f->open_sb = sb;
	f->open_slot = f->sb[sb].hslot + 1u;
	return FTL_OK;
}

static int alloc_any(struct ftl *f, uint32_t *ppn);

/* The common case in a few shifts (every count a power of two, planes not staggered: f->pow2, the SoC's
 * geometries): the open superblock's next slot on a good member, as ftl_slot_ppn computes it; anything
 * else (a superblock to open, a bad member, other geometries) by the general path. */
FTL_HOT_W int ftl_alloc(struct ftl *f, uint32_t *ppn)
{
	uint32_t sb = f->open_sb, slot = f->open_slot, m = slot & (f->members - 1);
	if (f->pow2 && sb != FTL_UNMAPPED && slot < f->slots && !(f->sb[sb].bad & (1u << m))) {
		uint32_t r = m & (f->groups - 1), die = m >> f->sh_groups;
		uint32_t block = ((sb + (r >> f->sh_planes) * f->nsb) << f->sh_planes) + (r & (f->g.planes - 1));
		f->open_slot = slot + 1;
		*ppn = ((die << f->sh_blocks) + block) << f->sh_pages | slot >> f->sh_members;
#if !defined(__riscv)
		if (*ppn != ftl_slot_ppn(f, sb, slot))
			abort();                 /* (host builds: the shortcut agrees with the general computation) */
#endif
		if (++f->since_ckpt >= f->cfg.ckpt_pages && f->cfg.ckpt_pages)
			f->ckpt_due = 1;
		return FTL_OK;
	}
	return alloc_any(f, ppn);
}

__attribute__((noinline)) static int alloc_any(struct ftl *f, uint32_t *ppn)
{
	for (;;) {
		if (f->open_sb == FTL_UNMAPPED || f->open_slot >= f->slots) {
			int r = ftl_open_sb(f);
			if (r)
				return r;
			continue;
		}
		uint32_t p = ftl_slot_ppn(f, f->open_sb, f->open_slot++);
		if (p != FTL_UNMAPPED) {
			*ppn = p;
			if (++f->since_ckpt >= f->cfg.ckpt_pages && f->cfg.ckpt_pages)
				f->ckpt_due = 1;
			return FTL_OK;
		}
	}
}
