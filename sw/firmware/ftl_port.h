/* The FTL's NAND (ftl/ftl_nand.h) on the SoC: every online die of every channel controller as one
 * array of dies, page operations as descriptors queued on their channel (asynchronous: the FTL keeps
 * many in flight, each channel's queue and ways busy), data by DMA straight to and from the FTL's
 * buffers, the FTL's page tag in the spare's bytes outside the ECC (PROGRAM_ECC and READ_ECC_FREE
 * with the tag's address in the descriptor's parameter word). */
#ifndef NANDLAB_FTL_PORT_H
#define NANDLAB_FTL_PORT_H

#include <stdint.h>

#include "ftl/ftl_nand.h"

struct ftl_port_stats {
	uint32_t submitted, completed;
	uint32_t queue_full;          /* submissions a channel's queue refused for now (retried by the FTL) */
	uint32_t in_flight, max_in_flight;
	uint32_t erased;              /* reads of erased pages (ECC uncorrectable, every bit 1 but a few per codeword) */
	uint32_t uncorrectable, failed, refused;   /* refused: the controller's BAD_* results (driver bugs) */
	uint32_t late;                /* completions with a tag the port does not own (given up on by others) */
	uint32_t lost;                /* operations failed by the watchdog: no completion in nandctl_run_limit_us() */
	uint32_t channels, dies;
	uint32_t polls;               /* calls of poll (with or without a completion) */
	uint32_t idle_polls;          /* of them, with operations in flight but no completion waiting */
	uint64_t idle_cycles;         /* SoC cycles spent in those: the CPU waiting for the NAND */
	uint32_t groups, group_pages; /* multi-plane groups submitted (ftl_port_submit_group), their pages */
};

/* Bring the channels up when they are not (as 'ctl bringup' does), then describe every online die
 * to `nand`. 0, or -1 with the reason printed (no controller, no ECC, dies of unequal geometry). */
int ftl_port_open(struct ftl_nand *nand);
/* MPNFM mode after ftl_port_open: the dies' plane 1 switched to the part's small pages and the port's
 * plane-1 operations moved in their layout (on), or everything back to large pages (off). 0 with the
 * small page's data bytes in *small, or -1 (said why: no small pages or no SMALL layout in this build). */
int ftl_port_mpnfm(int on, uint32_t *small);
void ftl_port_get_stats(struct ftl_port_stats *s);
/* One multi-plane operation: n ops (2 .. NANDCTL_PLANES_MAX; 1: as submit) of one die and one kind (READ,
 * PROGRAM or ERASE) that the die's plane architecture takes together (sched.c decides that). Queued planes
 * go as the *_MULTIPLANE descriptors, the last op as its usual one; a read's other planes come out with
 * READ_ECC_ENH_FREE after READ STATUS has shown the die took the group. The ops complete (poll) once the
 * whole group has: a failure of the final program or erase, or a refused read, fails every op of the
 * group. 0, or -1 when the port has no room for the group now (poll, then try again). */
int ftl_port_submit_group(struct ftl_nand_op **ops, int n);
/* Channel and way of FTL die d (channel-major over the online dies). */
void ftl_port_die(uint32_t d, int *ch, int *way);

#endif
