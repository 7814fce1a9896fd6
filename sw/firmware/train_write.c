/* The write side of NV-DDR training (issue 21). In NV-DDR data input the die takes DQ at the edges of the DQS
 * the controller drives and needs it stable tDS before and tDH after each edge. The pin PHY drives DQS a quarter
 * cycle late, so the controller's edge falls half a phase into the byte's middle phase; in bytes of an even
 * number of phases (modes 2-4 at 100 MHz) that is half a phase off the centre, early, or with `dqs_late` a phase
 * later, late (gateware/onfi/controller/common.py, din_dqs_phases). Which side leaves the die its margins depends
 * on the board's skew: program a page with each, read it back (the read side trained), count the bit errors per
 * DQ lane, keep the first that wrote right. */
#include <stdio.h>
#include <string.h>

#include <generated/soc.h>

#include "hal.h"
#include "nandctl.h"
#include "train.h"

/* Every lane toggles between the bytes of each pair (55h/AAh), random bytes between the pairs. */
static void write_pattern(uint8_t *p, uint32_t n, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 12345u, i;
	for (i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = (i & 2) ? (uint8_t)(x >> 8) : ((i & 1) ? 0xaa : 0x55);
	}
}

/* Program page `page` of `block` with the pattern and read it back: bit errors per DQ lane in `lane`, the total
 * returned (every bit wrong when the program or the read failed). */
static uint32_t write_read(struct nandctl *nc, int die, uint32_t block, uint32_t page, uint32_t n, uint32_t *lane)
{
	uint8_t status;
	uint32_t i, total = 0;
	int b, res;
	memset(lane, 0, 8 * sizeof(*lane));
	write_pattern(nandctl_buf[0], n, page + 1);
	res = nandctl_program(nc, die, nandctl_row(nc, block, page), nandctl_buf[0], n, &status);
	if (!res && !(status & NANDLAB_ONFI_STATUS_FAIL))
		res = nandctl_read(nc, die, nandctl_row(nc, block, page), nandctl_buf[1], n);
	else
		res = -1;
	for (i = 0; i < n; i++) {
		uint8_t diff = res ? 0xff : (uint8_t)(nandctl_buf[0][i] ^ nandctl_buf[1][i]);
		for (b = 0; b < 8; b++)
			if (diff >> b & 1) {
				lane[b]++;
				total++;
			}
	}
	return total;
}

int train_write(struct nandctl *nc, int die, uint32_t block)
{
	uint32_t lane[2][8], total[2], n = nc->g.page_bytes;
	uint8_t status;
	int late, b, choice = -1;
	if (nc->interface != NANDLAB_ONFI_IF_NVDDR) {
		printf("error: train write: the dies are not in NV-DDR (run 'ctl mode nvddr N' first)\n");
		return -1;
	}
	if (block >= nc->g.blocks_per_lun || nc->g.pages_per_block < 2) {
		printf("error: train write: block %lu out of range 0..%lu\n", (unsigned long)block,
		       (unsigned long)nc->g.blocks_per_lun - 1);
		return -1;
	}
	if (n > NANDCTL_PAGE_MAX)
		n = NANDCTL_PAGE_MAX;
	if (nandctl_erase(nc, die, block, &status) || (status & NANDLAB_ONFI_STATUS_FAIL)) {
		printf("error: train write: %s: erase of block %lu failed\n", nandctl_die_name(nc, die), (unsigned long)block);
		return -1;
	}
	for (late = 0; late < 2; late++) {
		hal_ctrl_dqs_late(nc->ch, late);
		total[late] = write_read(nc, die, block, (uint32_t)late, n, lane[late]);
		if (!total[late] && choice < 0)
			choice = late;
	}
	hal_ctrl_dqs_late(nc->ch, choice < 0 ? 0 : choice);
	printf("train write %s NV-DDR mode %d:", nandctl_die_name(nc, die), nc->mode);
	for (late = 0; late < 2; late++) {
		printf(" DQS %s %lu bit errors", late ? "late" : "early", (unsigned long)total[late]);
		for (b = 0; b < 8; b++)
			if (lane[late][b])
				printf(" DQ%d:%lu", b, (unsigned long)lane[late][b]);
		printf(late ? ";" : ",");
	}
	if (choice < 0)
		printf(" FAILED: no DQS placement writes right (check the board's DQ/DQS trace lengths, or use a slower mode)\n");
	else
		printf(" using DQS %s\n", choice ? "late" : "early");
	return choice < 0 ? -1 : 0;
}
