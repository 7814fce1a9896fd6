/* The FTL's NAND through the multi-plane scheduler (sched.h): the FTL's page operations wait in the
 * scheduler's queue and reach the port (ftl_port.h) as multi-plane groups under the dies' plane
 * architecture, one group per die at a time. */
#ifndef NANDLAB_SCHED_NAND_H
#define NANDLAB_SCHED_NAND_H

#include <stdint.h>

#include "ftl/ftl_nand.h"
#include "sched.h"

struct sched_nand_stats {
	struct sched_stats s;                    /* decisions, groups by pages, deepest queue */
	uint64_t cycles;                         /* SoC cycles in the decisions: each sched_pick with the sched_push_n queueing before it */
	uint32_t max_cycles;                     /* the longest decision */
	uint32_t timer_cycles;                   /* of each decision's cycles, the timer read's own */
	int      arch, depth;
};

/* `nand` takes the FTL's operations and passes them to `port` (ftl_port_open's) through a scheduler of
 * `depth` entries enforcing `arch` (the dies' own, 'die arch'); `subplanes`: the dies have SDW-NFM's
 * subplane registers; `bits_per_cell` decides the page types. 0, or -1 (printed) when out of range. */
int  sched_nand_open(struct ftl_nand *nand, const struct ftl_nand *port, int arch, uint32_t depth, int subplanes,
                     uint32_t bits_per_cell);
void sched_nand_get_stats(struct sched_nand_stats *st);

#endif
