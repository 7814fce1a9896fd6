/* A timed, checked host workload through the FTL (ftl_workload.c; the shell's `ftl workload`). */
#ifndef NANDLAB_FTL_WORKLOAD_H
#define NANDLAB_FTL_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

struct ftl;

struct ftl_workload_result {
	uint64_t reads, writes, errors, mismatches, read_bytes, write_bytes;
	uint64_t us;                       /* SoC time from the first submission to the last completion */
	uint32_t mean_latency_us, max_latency_us;
	uint64_t pattern_cycles;           /* SoC cycles spent filling write buffers and checking reads */
};

/* Random reads (read_pct %) and writes of 1-8 sectors, qd (1-32) in flight, new ones started for
 * `us` microseconds of SoC time; `mem` (bytes) holds a version byte per sector and the buffers.
 * Returns 0, or -1 when qd or the memory do not fit. */
int ftl_workload_run(struct ftl *f, uint8_t *mem, size_t bytes, uint32_t us, uint32_t read_pct, int qd,
                     uint32_t seed, struct ftl_workload_result *res);

/* The checked sector contents both engines use (`ftl workload`, `ftl replay`): `words` 32-bit words of
 * sector `sector` at write version v (0: never written, zeros); ftl_pattern_same says whether `got`
 * holds exactly that. */
void ftl_pattern_fill(uint32_t *w, uint32_t words, uint32_t sector, uint8_t v);
int ftl_pattern_same(const uint32_t *got, uint32_t words, uint32_t sector, uint8_t v);

#endif
