/* nandlab firmware: `dcc bench`, what a DCC scheduling decision (dcc.c's dcc_schedule) costs this CPU.
 *
 * The power harness runs dcc.c between its clock ticks; policy dcc_fw charges each decision the cycles
 * measured here instead (nandlab.dcc_fw). The bench schedules `ops` operations of 8 dies one after
 * another as the harness's DCC does (a die asks when it is free; its operation is reserved from the
 * start DCC gives it), with the harness's models: the MTPM-MLC part at 200 MHz, one piece per atomic
 * operation (the default) or per waveform segment (dcc_bench_models.h, generated from nandlab.dcc.models;
 * tests/test_dcc_fw.py checks it), the cap alpha x 4096 less one bus transfer's current, a page transfer before each program's array
 * and after each read's. Each call is timed with the SoC's time base (sys clock cycles), interrupts off,
 * less the cost of reading the time base itself. */
#include <stdio.h>
#include <string.h>
#include <stdint.h>

#include <irq.h>

#include "dcc.h"
#include "hal.h"
#include "shell.h"

#include "dcc_bench_models.h"

#define BENCH_DIES 8
#define BUS_CURRENT 328u        /* one NV-DDR 5 transfer, I_max / 4096 (docs/power_waveforms.md) */
#define PAGE_CYCLES 18336u      /* a 16 KiB + spare page at 200 MB/s, 200 MHz cycles */

/* ~90 KiB with the segment models' 320 pieces (DCC_MAX_PIECES, Makefile): main RAM, not the SRAM. */
static struct dcc sched __attribute__((section(".dma")));

static uint32_t lcg(uint32_t *s)
{
	*s = *s * 1664525u + 1013904223u;
	return *s >> 8;
}

static int cmd_dcc(int argc, char **argv)
{
	unsigned int ops = 2000, reads = 50, alpha = 4, seed = 1;
	const struct dcc_model *models = bench_atomic;
	if (argc < 2 || strcmp(argv[1], "bench") || argc > 7)
		return shell_usage("dcc bench [ops] [read %] [alpha] [seed] [atomic|segment]");
	if (argc > 6) {
		if (!strcmp(argv[6], "segment"))
			models = bench_segment;
		else if (strcmp(argv[6], "atomic")) {
			printf("error: dcc bench: model '%s' is not atomic or segment\n", argv[6]);
			return -1;
		}
	}
	if ((argc > 2 && shell_parse_u32(argv[2], "ops", &ops)) || (argc > 3 && shell_parse_u32(argv[3], "read %", &reads)) ||
	    (argc > 4 && shell_parse_u32(argv[4], "alpha", &alpha)) || (argc > 5 && shell_parse_u32(argv[5], "seed", &seed)))
		return -1;
	if (ops < 1 || reads > 100 || alpha < 1 || alpha > 8) {
		printf("error: dcc bench: ops >= 1, read %% 0..100, alpha 1..8\n");
		return -1;
	}
	int rc = dcc_init(&sched, (alpha << 12) - BUS_CURRENT, models, 4);
	if (rc) {
		printf("error: dcc bench: the models do not fit the cap (%d)\n", rc);
		return -1;
	}
	/* The cost of reading the time base, the least of a few tries. */
	uint64_t overhead = UINT64_MAX;
	for (int k = 0; k < 16; k++) {
		uint64_t a = hal_timestamp(), b = hal_timestamp();
		if (b - a < overhead)
			overhead = b - a;
	}
	uint64_t free_at[BENCH_DIES] = {0}, sum = 0, min = UINT64_MAX, max = 0;
	int msb[BENCH_DIES] = {0};
	uint32_t s = seed, programs = 0;
	unsigned int ie = irq_getie();
	irq_setie(0);
	for (unsigned int n = 0; n < ops; n++) {
		int die = 0;
		for (int i = 1; i < BENCH_DIES; i++)
			if (free_at[i] < free_at[die])
				die = i;
		unsigned int op;
		if (lcg(&s) % 100 < reads)
			op = 0;
		else if (++programs % 500 == 0)
			op = 3;
		else {
			op = msb[die] ? 2 : 1;
			msb[die] = !msb[die];
		}
		/* A program's data input comes before DCC sees it; a read's data output after its array. */
		uint64_t now = free_at[die] + (op == 1 || op == 2 ? PAGE_CYCLES : 0);
		uint64_t t0 = hal_timestamp();
		int64_t start = dcc_schedule(&sched, op, now);
		uint64_t c = hal_timestamp() - t0;
		if (start < 0) {
			irq_setie(ie);
			printf("error: dcc bench: the scheduler failed (%ld) at decision %u\n", (long)start, n);
			return -1;
		}
		c = c > overhead ? c - overhead : 0;
		sum += c;
		if (c < min)
			min = c;
		if (c > max)
			max = c;
		free_at[die] = (uint64_t)start + sched.length[op] + (op == 0 ? PAGE_CYCLES : 0);
	}
	irq_setie(ie);
	printf("dcc bench: %u decisions, %u %% reads, alpha %u, %s models: cycles per decision mean %lu, min %lu, "
	       "max %lu (time base read %lu, subtracted)\n", ops, reads, alpha,
	       models == bench_segment ? "segment" : "atomic", (unsigned long)(sum / ops), (unsigned long)min,
	       (unsigned long)max, (unsigned long)overhead);
	return 0;
}

SHELL_COMMAND("dcc", "bench [ops] [read %] [alpha] [seed] [atomic|segment]", "DCC scheduler's cost per decision on this CPU", cmd_dcc);
