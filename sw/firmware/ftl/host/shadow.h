/* The torture drivers' random numbers and sector contents (torture.c, mpnfm_torture.c): a sector's
 * pattern follows from (sector, write version), so a shadow model keeps only the version. */
#ifndef NANDLAB_FTL_HOST_SHADOW_H
#define NANDLAB_FTL_HOST_SHADOW_H

#include <stdint.h>
#include <string.h>

static uint64_t rng;

static inline uint64_t rnd(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }
static inline double unit(void) { return (rnd() >> 11) * (1.0 / 9007199254740992.0); }

/* Contents of a sector at a version: 0 is zeros (never written or trimmed). */
static inline void pattern(uint8_t *p, uint32_t bytes, uint32_t sector, uint32_t version)
{
	uint64_t x = ((uint64_t)sector << 32 | version) * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
	for (uint32_t i = 0; i < bytes; i += 8) {
		uint64_t v = version ? (x ^= x << 13, x ^= x >> 7, x ^= x << 17, x) : 0;
		memcpy(p + i, &v, 8);
	}
}

#endif
