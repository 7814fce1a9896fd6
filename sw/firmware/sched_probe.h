/* sched_nand.c's cache-set probe (SCHED_PROBE), included there only: private to that file. */
#ifndef NANDLAB_SCHED_PROBE_H
#define NANDLAB_SCHED_PROBE_H

/* Diagnosis, off by default (#define SCHED_PROBE above the includes): which of the data cache's 128 sets keep
 * their line from one decision to the next. After each decision a 4 KiB probe fills the cache; before the
 * next, each probe line's load is timed (a hit or a miss): `ftl stats` prints sched_probe_<set> (hits) and
 * sched_probe_n (samples). Where the scheduler's data should go (linker.ld, .sched_data). */
/* The probe's code and its page go to sections that linker.ld's .text patterns do not match, so that the linker
 * puts them after all of .text: a probe build keeps the default build's layout (poll grows by two calls, and the
 * code after the scheduler's stretch moves by that much). Inside .text (as before) the 4 KiB-aligned page and the
 * probe's functions moved the code after them (the interrupt handler, the replay loop, the UART) by kilobytes, onto
 * other sets, so the map was not the default build's. */
#define PROBE_CODE __attribute__((noinline, section(".sched_probe_text")))
static uint32_t probe[1024] __attribute__((aligned(4096))) MAIN_BSS;
static uint32_t probe_hits[128], probe_n, probe_thr, probe_th, probe_tm, probe_armed;
/* The instruction cache's sets alike: 128 one-line functions (a `ret` each) in a 4 KiB page, each call timed
 * (sched_iprobe_<set>: hits; the sets of poll's own code read as misses). */
__asm__(".pushsection .sched_probe_page,\"ax\",@progbits\n.balign 4096\n.globl sched_iprobe\nsched_iprobe:\n"
        ".rept 128\nret\n.balign 32\n.endr\n.popsection");
extern char sched_iprobe[];
static uint32_t iprobe_hits[128], iprobe_thr, iprobe_th, iprobe_tm;

PROBE_CODE static uint32_t iprobe_time(uint32_t j)
{
	uint32_t t0 = stamp();
	((void (*)(void))(sched_iprobe + j * 32))();
	return stamp() - t0;
}

PROBE_CODE static uint32_t probe_time(uint32_t j)
{
	uint32_t t0 = stamp();
	(void)*(volatile uint32_t *)&probe[j * 8];
	return stamp() - t0;
}

/* One hit count per set: each of the 128 lines timed, a hit under `thr`. The 128 timings are taken first
 * (as bits), then counted, so that the counting's own loads do not evict lines not yet timed. */
PROBE_CODE static void probe_count(uint32_t (*time)(uint32_t), uint32_t thr, uint32_t *hits)
{
	uint32_t m[4];
	for (uint32_t k = 0; k < 4; k++) {
		uint32_t mk = 0;
		for (uint32_t j = 0; j < 32; j++)
			if (time(k * 32 + j) < thr)
				mk |= 1u << j;
		m[k] = mk;
	}
	for (uint32_t j = 0; j < 128; j++)
		hits[j] += m[j >> 5] >> (j & 31) & 1;
}

PROBE_CODE static void probe_check(void)
{
	if (!probe_armed)
		return;
	probe_count(probe_time, probe_thr, probe_hits);
	probe_count(iprobe_time, iprobe_thr, iprobe_hits);
	probe_n++;
}

PROBE_CODE static void probe_fill(void)
{
	for (uint32_t j = 0; j < 128; j++)
		(void)*(volatile uint32_t *)&probe[j * 8];
	for (uint32_t j = 0; j < 128; j++)
		((void (*)(void))(sched_iprobe + j * 32))();
	probe_armed = 1;
}

/* The least time of a few hits (a line just loaded) and of a few misses (a line's first load). */
PROBE_CODE static void probe_extremes(uint32_t (*time)(uint32_t), uint32_t *hit, uint32_t *miss)
{
	uint32_t th = ~0u, tm = ~0u;
	for (int i = 0; i < 4; i++) {
		time(0);
		uint32_t t = time(0), u = time(64 + i * 8);
		th = t < th ? t : th;
		tm = u < tm ? u : tm;
	}
	*hit = th;
	*miss = tm;
}

PROBE_CODE static void probe_calibrate(void)
{
	probe_extremes(probe_time, &probe_th, &probe_tm);
	probe_thr = (probe_th + probe_tm + 1) / 2;
	probe_extremes(iprobe_time, &iprobe_th, &iprobe_tm);
	iprobe_thr = (iprobe_th + iprobe_tm + 1) / 2;
	memset(probe_hits, 0, sizeof(probe_hits));
	memset(iprobe_hits, 0, sizeof(iprobe_hits));
	probe_n = probe_armed = 0;
}

PROBE_CODE static void probe_print(void)
{
	printf("sched_probe_n %lu\nsched_probe_hit %lu\nsched_probe_miss %lu\n", (unsigned long)probe_n,
	       (unsigned long)probe_th, (unsigned long)probe_tm);
	printf("sched_iprobe_hit %lu\nsched_iprobe_miss %lu\n", (unsigned long)iprobe_th, (unsigned long)iprobe_tm);
	for (int j = 0; j < 128; j++)
		printf("sched_probe_%03x %lu\nsched_iprobe_%03x %lu\n", j * 32, (unsigned long)probe_hits[j], j * 32,
		       (unsigned long)iprobe_hits[j]);
}

#endif
