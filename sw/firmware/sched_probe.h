/* sched_nand.c's cache-set probe (SCHED_PROBE), included there only: private to that file. */
#ifndef NANDLAB_SCHED_PROBE_H
#define NANDLAB_SCHED_PROBE_H

/* Diagnosis, off by default (#define SCHED_PROBE above the includes): which of the data cache's 128 sets keep
 * their line from one decision to the next. After each decision a 4 KiB probe fills the cache; before the
 * next, each probe line's load is timed (a hit or a miss): `ftl stats` prints sched_probe_<set> (hits) and
 * sched_probe_n (samples). Where the scheduler's data should go (linker.ld, .sched_data). */
static uint32_t probe[1024] __attribute__((aligned(4096))) MAIN_BSS;
static uint32_t probe_hits[128], probe_n, probe_thr, probe_th, probe_tm, probe_armed;
/* The instruction cache's sets alike: 128 one-line functions (a `ret` each) in a 4 KiB page, each call timed
 * (sched_iprobe_<set>: hits; the sets of poll's own code read as misses). */
__asm__(".pushsection .text.iprobe,\"ax\",@progbits\n.balign 4096\n.globl sched_iprobe\nsched_iprobe:\n"
        ".rept 128\nret\n.balign 32\n.endr\n.popsection");
extern char sched_iprobe[];
static uint32_t iprobe_hits[128], iprobe_thr, iprobe_th, iprobe_tm;

static inline uint32_t iprobe_time(uint32_t j)
{
	uint32_t t0 = stamp();
	((void (*)(void))(sched_iprobe + j * 32))();
	return stamp() - t0;
}

static inline uint32_t probe_time(uint32_t j)
{
	uint32_t t0 = stamp();
	(void)*(volatile uint32_t *)&probe[j * 8];
	return stamp() - t0;
}

static void probe_check(void)
{
	uint32_t m[4];
	if (!probe_armed)
		return;
	for (uint32_t k = 0; k < 4; k++) {
		uint32_t mk = 0;
		for (uint32_t j = 0; j < 32; j++)
			if (probe_time(k * 32 + j) < probe_thr)
				mk |= 1u << j;
		m[k] = mk;
	}
	for (uint32_t j = 0; j < 128; j++)
		probe_hits[j] += m[j >> 5] >> (j & 31) & 1;
	for (uint32_t k = 0; k < 4; k++) {
		uint32_t mk = 0;
		for (uint32_t j = 0; j < 32; j++)
			if (iprobe_time(k * 32 + j) < iprobe_thr)
				mk |= 1u << j;
		m[k] = mk;
	}
	for (uint32_t j = 0; j < 128; j++)
		iprobe_hits[j] += m[j >> 5] >> (j & 31) & 1;
	probe_n++;
}

static void probe_fill(void)
{
	for (uint32_t j = 0; j < 128; j++)
		(void)*(volatile uint32_t *)&probe[j * 8];
	for (uint32_t j = 0; j < 128; j++)
		((void (*)(void))(sched_iprobe + j * 32))();
	probe_armed = 1;
}

/* A hit's time (a line just loaded) and a miss's (a line's first load), the least of a few */
static void probe_calibrate(void)
{
	uint32_t th = ~0u, tm = ~0u;
	for (int i = 0; i < 4; i++) {
		probe_time(0);
		uint32_t t = probe_time(0), u = probe_time(64 + i * 8);
		th = t < th ? t : th;
		tm = u < tm ? u : tm;
	}
	probe_thr = (th + tm + 1) / 2;
	uint32_t ih = ~0u, im = ~0u;
	for (int i = 0; i < 4; i++) {
		iprobe_time(0);
		uint32_t t = iprobe_time(0), u = iprobe_time(64 + i * 8);
		ih = t < ih ? t : ih;
		im = u < im ? u : im;
	}
	iprobe_thr = (ih + im + 1) / 2;
	iprobe_th = ih;
	iprobe_tm = im;
	memset(iprobe_hits, 0, sizeof(iprobe_hits));
	probe_th = th;
	probe_tm = tm;
	memset(probe_hits, 0, sizeof(probe_hits));
	probe_n = probe_armed = 0;
}

static void probe_print(void)
{
	printf("sched_probe_n %lu\nsched_probe_hit %lu\nsched_probe_miss %lu\n", (unsigned long)probe_n,
	       (unsigned long)probe_th, (unsigned long)probe_tm);
	printf("sched_iprobe_hit %lu\nsched_iprobe_miss %lu\n", (unsigned long)iprobe_th, (unsigned long)iprobe_tm);
	for (int j = 0; j < 128; j++)
		printf("sched_probe_%03x %lu\nsched_iprobe_%03x %lu\n", j * 32, (unsigned long)probe_hits[j], j * 32,
		       (unsigned long)iprobe_hits[j]);
}

#endif
