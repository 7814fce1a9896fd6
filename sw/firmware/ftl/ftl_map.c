/* FTL mapping: a flat logical-to-physical table and a valid-page bitmap (4.125 B per page). An entry
 * is a ppn, FTL_UNMAPPED, FTL_LOST or FTL_TRIMMED | the ppn of the trim record that unmapped it. */
#include <stdlib.h>

#include "ftl_int.h"

FTL_HOT_ISSUE uint32_t ftl_map_get(struct ftl *f, uint32_t lpn)
{
	return f->l2p[lpn];
}

int ftl_valid(struct ftl *f, uint32_t ppn)
{
	return (f->valid[ppn >> 5] >> (ppn & 31)) & 1;
}

/* ppn's valid bit, in superblock sb (ppn's), and that superblock's count of valid pages. */
static inline __attribute__((always_inline)) void valid_bit(struct ftl *f, uint32_t ppn, uint32_t sb, int on)
{
	uint32_t bit = 1u << (ppn & 31), *w = &f->valid[ppn >> 5];
	if (on && !(*w & bit)) {
		*w |= bit;
		f->sb[sb].valid++;
	} else if (!on && (*w & bit)) {
		*w &= ~bit;
		f->sb[sb].valid--;
	}
}

void ftl_valid_set(struct ftl *f, uint32_t ppn, int on)
{
	valid_bit(f, ppn, ftl_ppn_sb(f, ppn), on);
}

/* (One look-up of the old page's superblock for both its seq and its count, none for the new page's.) */
FTL_HOT_W void ftl_map_program(struct ftl *f, uint32_t lpn, uint32_t ppn, uint32_t *prev, uint32_t *prev_seq)
{
	uint32_t old = f->l2p[lpn], seq = 0;
	if (ftl_is_ppn(old) || ftl_is_trim_ref(old)) {
		/* (ftl_ppn_sb's, by shifts where it can: no call, so no registers saved on the stack) */
		uint32_t p = old & ~FTL_TRIMMED;
		uint32_t sb = f->pow2 && f->groups == f->g.planes ? (p >> f->sh_pages & (f->g.blocks - 1)) >> f->sh_planes
		                                                  : ftl_ppn_sb(f, p);
#if !defined(__riscv)
		if (sb != ftl_ppn_sb(f, p))
			abort();                 /* (host builds: the shortcut agrees with ftl_ppn_sb) */
#endif
		seq = f->sb[sb].seq;
		if (ftl_is_ppn(old))
			valid_bit(f, old, sb, 0);
	}
	*prev = old;
	*prev_seq = seq;
	f->l2p[lpn] = ppn;
#if !defined(__riscv)
	if (ftl_ppn_sb(f, ppn) != f->open_sb)
		abort();                     /* (host builds: the new page is in the open superblock) */
#endif
	valid_bit(f, ppn, f->open_sb, 1);
}

void ftl_map_set(struct ftl *f, uint32_t lpn, uint32_t ppn)
{
	uint32_t old = f->l2p[lpn];
	if (ftl_is_ppn(old))
		ftl_valid_set(f, old, 0);
	f->l2p[lpn] = ppn;
	if (ftl_is_ppn(ppn))
		ftl_valid_set(f, ppn, 1);
}

/* Logical pages [lo, lo + n) unmapped by the trim record at ppn `record` (which is alive from now). */
void ftl_map_trim(struct ftl *f, uint32_t lo, uint32_t n, uint32_t record)
{
	for (uint32_t l = lo; l < lo + n && l < f->lpns; l++)
		ftl_map_set(f, l, FTL_TRIMMED | record);
	ftl_valid_set(f, record, 1);
}

/* Every page named by the map is valid, nothing else: data pages, and the trim records that still
 * unmap a logical page (a record superseded by data or a newer record is dead). */
void ftl_valid_rebuild(struct ftl *f)
{
	uint32_t pages = f->g.dies * f->g.blocks * f->g.pages;
	for (uint32_t i = 0; i < (pages + 31) / 32; i++)
		f->valid[i] = 0;
	for (uint32_t s = 0; s < f->nsb; s++)
		f->sb[s].valid = 0;
	for (uint32_t l = 0; l < f->lpns; l++) {
		uint32_t v = f->l2p[l];
		if (ftl_is_ppn(v) || ftl_is_trim_ref(v))
			ftl_valid_set(f, v & ~FTL_TRIMMED, 1);
	}
}

void ftl_map_reset(struct ftl *f)
{
	uint32_t pages = f->g.dies * f->g.blocks * f->g.pages;
	for (uint32_t i = 0; i < f->lpns; i++)
		f->l2p[i] = FTL_UNMAPPED;
	for (uint32_t i = 0; i < (pages + 31) / 32; i++)
		f->valid[i] = 0;
	for (uint32_t s = 0; s < f->nsb; s++)
		f->sb[s].valid = 0;
}
