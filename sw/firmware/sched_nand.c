/* The FTL's NAND through the multi-plane scheduler (see sched_nand.h). */
#include <stdio.h>
#include <string.h>

#include <generated/csr.h>

#include "ftl_port.h"
#include "hal.h"
#include "sched_nand.h"

/* submit and poll (with dispatch, which times each decision) run at every page: laid out with the decision's
 * code (sched.c's sched_push_n and sched_pick) in one stretch, `.text.sched_hot` (linker.ld). */
#define SCHED_PATH __attribute__((section(".text.sched_hot")))

/* The timebase's low word, latched, inline: a decision's cycles (far below 2^32) as a 32-bit difference,
 * one CSR read and no call (hal_timestamp's line would be one more miss inside the timed window). */
static inline uint32_t stamp(void)
{
	timebase_latch_write(1);
	return csr_read_simple(CSR_TIMEBASE_TIMESTAMP_ADDR + 4);
}

static struct sched sched __attribute__((section(".main_bss.sched_data")));    /* (sched_init clears it) */
static struct ftl_nand port;
static uint16_t die_out[SCHED_MAX_DIES];    /* ops of each die in the port (a group in flight) */
static uint64_t cycles;
static uint32_t max_cycles, timer_cycles;
static int dirty;                           /* something was queued or completed since the last dispatch */
#ifdef SCHED_TRACE
static uint32_t trace[256], trace_n;
#ifdef SCHED_PERF
static uint32_t trace_perf[256];                /* ibus words << 16 | dbus words, each decision */
#endif
#endif
#ifdef SCHED_PERF
/* Diagnosis, off by default (#define SCHED_PERF above the includes): the CPU's bus counters summed over the
 * timed decisions, read just outside the timed window, printed by `ftl stats` (sched_perf_*; `nandlab
 * replay` takes the measured run's share of them as it does sched_cycles). */
static struct hal_cpu_perf perf_sum;
#endif
#ifdef SCHED_PROBE
#include "sched_probe.h"
#endif

static int kind_of(const struct ftl_nand_op *op)
{
	switch (op->opcode) {
	case FTL_NAND_READ:    return SCHED_READ;
	case FTL_NAND_PROGRAM: return SCHED_PROGRAM;
	case FTL_NAND_ERASE:   return SCHED_ERASE;
	default:               return SCHED_OTHER;       /* tag and marker reads: alone, in order */
	}
}

/* The FTL's operations, in order, until a die takes a group: then sched_push_n queues them all at once,
 * timed with that decision (the scheduler's code runs once for both). Here only the hand-over: the copy,
 * and sched_push's refusals (full, out of range), which the FTL must have at once. */
static struct sched_op pend[SCHED_MAX_DEPTH] __attribute__((section(".main_bss.sched_pend")));
static uint32_t pend_n, pend_dies;           /* (a bit per die with something in pend) */

SCHED_PATH static int submit(void *dev, struct ftl_nand_op *op)
{
	(void)dev;
	if (pend_n >= sched_free(&sched) || op->die >= port.geo.dies || op->block >= port.geo.blocks ||
	    op->page >= port.geo.pages)
		return -1;
	pend[pend_n++] = (struct sched_op){(uint8_t)kind_of(op), op->die, op->block, op->page, op};
	pend_dies |= 1u << op->die;
	dirty = 1;
	return 0;
}

/* Completions taken from the port while it had no room for a group, handed to the FTL by poll. */
#define BACK 128
static struct ftl_nand_op *back[BACK] MAIN_BSS;
static int back_head, back_n;

/* Every die with nothing in the port and something queued or submitted gets its next group. The cycles
 * counted are the scheduler's: each decision with the pushes of the operations submitted before it. */
static void dispatch(void)
{
	void *group[SCHED_MAX_REGS];
	struct ftl_nand_op *ops[SCHED_MAX_REGS];
	dirty = 0;
	for (uint32_t d = 0; d < port.geo.dies; d++) {
		if (die_out[d] || !((pend_dies >> d & 1) || sched_waiting(&sched, d)))
			continue;
#ifdef SCHED_PROBE
		probe_check();
#endif
#ifdef SCHED_PERF
		struct hal_cpu_perf p0, p1;
		hal_cpu_perf(&p0);
#endif
		uint32_t t0 = stamp();
		if (pend_n)
			sched_push_n(&sched, pend, pend_n);
		int n = sched_pick(&sched, d, group, SCHED_MAX_REGS);
		uint32_t t = stamp() - t0;
#ifdef SCHED_PERF
		hal_cpu_perf(&p1);
		perf_sum.ibus_busy += p1.ibus_busy - p0.ibus_busy;
		perf_sum.ibus_acks += p1.ibus_acks - p0.ibus_acks;
		perf_sum.dbus_busy += p1.dbus_busy - p0.dbus_busy;
		perf_sum.dbus_acks += p1.dbus_acks - p0.dbus_acks;
#endif
#ifdef SCHED_TRACE
		if (trace_n < 256) {
#ifdef SCHED_PERF
			trace_perf[trace_n] = (p1.ibus_acks - p0.ibus_acks) << 16 | (p1.dbus_acks - p0.dbus_acks);
#endif
			trace[trace_n++] = t << 16 | pend_n << 8 | (uint32_t)n;
		}
#endif
		pend_n = pend_dies = 0;
		cycles += t;
		if (t > max_cycles)
			max_cycles = t;
		for (int k = 0; k < n; k++)
			ops[k] = group[k];
#ifdef SCHED_PROBE
		probe_fill();
#endif
		/* The port takes the group once it has room: take its completions meanwhile (kept for poll). */
		while (ftl_port_submit_group(ops, n)) {
			struct ftl_nand_op *done = port.poll(port.dev);
			if (done && back_n < BACK)
				back[(back_head + back_n++) % BACK] = done;
		}
		die_out[d] += (uint16_t)n;
	}
}

SCHED_PATH static struct ftl_nand_op *poll(void *dev)
{
	struct ftl_nand_op *op;
	(void)dev;
	if (dirty)
		dispatch();
	if (back_n) {
		op = back[back_head];
		back_head = (back_head + 1) % BACK;
		back_n--;
	} else
		op = port.poll(port.dev);
	if (op) {
		die_out[op->die]--;
		dirty = 1;
	}
	return op;
}

DRV_HOT2 static uint64_t now_us(void *dev)
{
	(void)dev;
	return port.now_us(port.dev);
}

int sched_nand_open(struct ftl_nand *nand, const struct ftl_nand *lower, int arch, uint32_t depth, int subplanes,
                    uint32_t bits_per_cell)
{
	struct sched_geo g = {lower->geo.dies, lower->geo.planes, lower->geo.blocks, lower->geo.pages, bits_per_cell,
	                      (uint32_t)subplanes};
	if (sched_init(&sched, &g, arch, depth)) {
		printf("error: the scheduler takes 1..%u entries, up to %u dies of 1 or 2 planes (%lu dies, %lu planes, "
		       "depth %lu)\n", SCHED_MAX_DEPTH, SCHED_MAX_DIES, (unsigned long)g.dies, (unsigned long)g.planes,
		       (unsigned long)depth);
		return -1;
	}
	port = *lower;
	memset(die_out, 0, sizeof(die_out));
	back_head = back_n = 0;
	pend_n = pend_dies = 0;
	cycles = max_cycles = 0;
#ifdef SCHED_TRACE
	trace_n = 0;
#endif
#ifdef SCHED_PERF
	memset(&perf_sum, 0, sizeof(perf_sum));
#endif
	/* What reading the timer twice costs by itself (the least of a few tries): reported beside the
	 * decisions, which include it. */
	timer_cycles = ~0u;
	for (int i = 0; i < 8; i++) {
		uint32_t t0 = stamp(), t = stamp() - t0;
		if (t < timer_cycles)
			timer_cycles = t;
	}
#ifdef SCHED_PROBE
	probe_calibrate();
#endif
	dirty = 0;
	*nand = *lower;
	nand->dev = NULL;
	nand->submit = submit;
	nand->poll = poll;
	nand->now_us = now_us;
	return 0;
}

void sched_nand_get_stats(struct sched_nand_stats *st)
{
	sched_get_stats(&sched, &st->s);
	st->cycles = cycles;
	st->max_cycles = max_cycles;
	st->timer_cycles = timer_cycles;
	st->arch = sched.arch;
	st->depth = (int)sched.depth;
#ifdef SCHED_TRACE
	for (uint32_t i = 0; i < trace_n; i++) {
		printf("sched_trace_%03lu %lu\n", (unsigned long)i, (unsigned long)trace[i]);
#ifdef SCHED_PERF
		printf("sched_tracep_%03lu %lu\n", (unsigned long)i, (unsigned long)trace_perf[i]);
#endif
	}
#endif
#ifdef SCHED_PERF
	printf("sched_perf_ibus_busy %lu\nsched_perf_ibus_acks %lu\nsched_perf_dbus_busy %lu\nsched_perf_dbus_acks %lu\n",
	       (unsigned long)perf_sum.ibus_busy, (unsigned long)perf_sum.ibus_acks, (unsigned long)perf_sum.dbus_busy,
	       (unsigned long)perf_sum.dbus_acks);
#endif
#ifdef SCHED_PROBE
	probe_print();
#endif
}
