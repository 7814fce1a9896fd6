/* nandlab firmware: a sampling profiler. Timer 0 interrupts the CPU every `period` cycles and the
 * interrupted program counter (mepc) is counted in a histogram over the image's code; `prof dump`
 * prints the buckets, which the host (nandlab bench profile, nandlab/profile.py) names from the
 * firmware image's symbols. The interrupt costs a few hundred cycles a sample: at the default period
 * of 20000 cycles about 1 % of the CPU. */
#include <stdio.h>
#include <string.h>

#include <irq.h>
#include <generated/csr.h>
#include <generated/soc.h>

#include "shell.h"

#if defined(CSR_TIMER0_BASE) && defined(TIMER0_INTERRUPT)

#define BUCKETS 8192

extern char _ftext[], _etext[];
static uint32_t counts[BUCKETS] __attribute__((section(".dma")));   /* main RAM, not the small SRAM */
static uint32_t base, shift, samples, outside, period = 20000;
static int running;

static void prof_isr(void)
{
	uint32_t pc;
	__asm__ volatile("csrr %0, mepc" : "=r"(pc));
	timer0_ev_pending_write(1);
	samples++;
	uint32_t b = (pc - base) >> shift;
	if (pc >= base && b < BUCKETS)
		counts[b]++;
	else
		outside++;
}

static void prof_start(void)
{
	base = (uint32_t)(uintptr_t)_ftext;
	shift = 2;
	while ((((uint32_t)(uintptr_t)_etext - base) >> shift) >= BUCKETS)
		shift++;
	memset(counts, 0, sizeof(counts));
	samples = outside = 0;
	timer0_en_write(0);
	timer0_load_write(period);
	timer0_reload_write(period);
	timer0_ev_pending_write(1);
	timer0_ev_enable_write(1);
	irq_attach(TIMER0_INTERRUPT, prof_isr);
	irq_setmask(irq_getmask() | (1u << TIMER0_INTERRUPT));
	timer0_en_write(1);
	running = 1;
}

static void prof_stop(void)
{
	timer0_en_write(0);
	timer0_ev_enable_write(0);
	irq_setmask(irq_getmask() & ~(1u << TIMER0_INTERRUPT));
	running = 0;
}

static int cmd_prof(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "start")) {
		if (argc > 2 && (shell_parse_u32(argv[2], "period", (unsigned int *)&period) || period < 1000)) {
			if (period < 1000)
				printf("error: prof start: a period of at least 1000 cycles (the interrupt itself takes hundreds)\n");
			period = 20000;
			return -1;
		}
		prof_start();
		printf("prof: sampling every %lu cycles\n", (unsigned long)period);
		return 0;
	}
	if (argc >= 2 && !strcmp(argv[1], "stop")) {
		prof_stop();
		printf("prof: %lu samples\n", (unsigned long)samples);
		return 0;
	}
	if (argc >= 2 && !strcmp(argv[1], "dump")) {
		if (running)
			prof_stop();
		/* For the host: the text's base, the bucket width, then every non-empty bucket. */
		printf("prof base=0x%08lx shift=%lu period=%lu samples=%lu outside=%lu\n", (unsigned long)base,
		       (unsigned long)shift, (unsigned long)period, (unsigned long)samples, (unsigned long)outside);
		for (uint32_t b = 0; b < BUCKETS; b++)
			if (counts[b])
				printf("prof %lu %lu\n", (unsigned long)b, (unsigned long)counts[b]);
		printf("prof end\n");
		return 0;
	}
	return shell_usage("prof start [period cycles] | prof stop | prof dump");
}

#else

static int cmd_prof(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	printf("error: prof: this SoC has no timer interrupt\n");
	return -1;
}

#endif

SHELL_COMMAND("prof", "start [period] | stop | dump", "sampling profiler of the firmware (timer 0)", cmd_prof);
