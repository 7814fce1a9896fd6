/* FTL mapping: a flat logical-to-physical table and a valid-page bitmap (4.125 B per page). */
#include "ftl_int.h"

FTL_HOT uint32_t ftl_map_get(struct ftl *f, uint32_t lpn)
{
	return f->l2p[lpn];
}

int ftl_valid(struct ftl *f, uint32_t ppn)
{
	return (f->valid[ppn >> 5] >> (ppn & 31)) & 1;
}

FTL_HOT void ftl_valid_set(struct ftl *f, uint32_t ppn, int on)
{
	uint32_t bit = 1u << (ppn & 31), sb = ftl_ppn_sb(f, ppn);
	if (on && !(f->valid[ppn >> 5] & bit)) {
		f->valid[ppn >> 5] |= bit;
		f->sb[sb].valid++;
	} else if (!on && (f->valid[ppn >> 5] & bit)) {
		f->valid[ppn >> 5] &= ~bit;
		f->sb[sb].valid--;
	}
}

FTL_HOT void ftl_map_set(struct ftl *f, uint32_t lpn, uint32_t ppn)
{
	uint32_t old = f->l2p[lpn];
	if (old < FTL_LOST)
		ftl_valid_set(f, old, 0);
	f->l2p[lpn] = ppn;
	if (ppn < FTL_LOST)
		ftl_valid_set(f, ppn, 1);
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
