/* nandlab firmware: the FTL's shell commands (sw/firmware/ftl on every online die of the channel
 * controllers, through ftl_port.c). Its tables and an I/O buffer live in the heap (main RAM after
 * the image); the last result's counters print as `name value` lines for the host. */
#include <stdio.h>
#include <string.h>

#include "ftl/ftl.h"
#include "ftl/mpnfm.h"
#include "ftl_port.h"
#include "ftl_replay.h"
#include "ftl_workload.h"
#include "hal.h"
#include "nandctl.h"
#include "sched_nand.h"
#include "shell.h"

extern uint8_t _fheap[], _eheap[];    /* linker.ld: main RAM after the image */

static struct ftl_nand nand, port;
static struct ftl *ftl;
/* The multi-plane scheduler between the FTL and the port ('ftl config sched <depth>|off'): 0 is off. */
static unsigned int sched_depth;
/* Block groups per plane a superblock spans ('ftl config span <n>|auto'; 0 = auto: 4 on dies with
 * SDW-NFM's subplane registers where the superblock's members fit, else 1). */
static unsigned int span_cfg;
/* Pages by which each plane's write point trails the previous plane's ('ftl config stagger <pages>';
 * struct ftl_geo.stagger): 0, the default, keeps a superblock row's planes on one page address. */
static unsigned int stagger_cfg;
/* MPNFM ('ftl config mpnfm on'): the large pages' FTL is `ftl`, the small pages' `ftl_small`, the
 * layer over them `mp` (sw/firmware/ftl/mpnfm.h); theta 0 = one small page, theta_le: "<=" not "<". */
static int mpnfm_cfg;
static unsigned int theta_cfg, theta_le;
static struct ftl *ftl_small;
static struct mpnfm *mp;
static struct mpnfm_views views MAIN_BSS;
static uint8_t *mp_ram;
static size_t mp_bytes;
/* The device the shell's I/O and the replay use: the FTL, or MPNFM's layer. */
static struct ftl_dev dev;
static struct ftl_config cfg;
static int have_cfg, mounted;
static uint8_t *io_buf;               /* FTL_MAX_SECTORS_BYTES, after the FTL's RAM */

/* Sector `sector`'s contents under `seed`: a pattern no other sector or seed repeats (buf word aligned). */
static void pattern(uint8_t *buf, uint32_t bytes, uint32_t seed, uint32_t sector)
{
	uint32_t x = (seed * 2654435761u) ^ (sector * 40503u + 1), *w = (uint32_t *)buf;
	for (uint32_t i = 0; i < bytes / 4; i++) {
		x = x * 1664525u + 1013904223u;
		w[i] = x;
	}
}

/* Sectors of buf that differ from seed's pattern (the first few named). */
static unsigned int verify(const uint8_t *buf, uint32_t sector, uint32_t count, uint32_t sb, uint32_t seed)
{
	static uint8_t want[4096] __attribute__((aligned(4), section(".dma")));
	unsigned int bad = 0;
	for (uint32_t i = 0; i < count; i++) {
		pattern(want, sb, seed, sector + i);
		if (memcmp(buf + i * sb, want, sb) && bad++ < 8)
			printf("mismatch: sector %u differs from seed %u's pattern\n", (unsigned int)(sector + i),
			       (unsigned int)seed);
	}
	return bad;
}

static int report(const char *what, int res)
{
	if (res)
		printf("error: ftl %s: %s%s%s\n", what, ftl_result_name(res), ftl && *ftl_error(ftl) ? ": " : "",
		       ftl ? ftl_error(ftl) : "");
	return res ? -1 : 0;
}

/* The span the FTL's superblocks take (see span_cfg). */
static uint32_t span_of(const struct ftl_geo *g)
{
	uint32_t sub = SCHED_SUBPLANES;
	if (span_cfg)
		return span_cfg;
	return hal_die_registers() >= (int)(g->planes * sub) && g->dies * g->planes * sub <= 32 &&
	       !(g->blocks % (g->planes * sub)) ? sub : 1;
}

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

/* The layer's configuration from 'ftl config' (theta, theta_rule). */
static void mpnfm_config_of(struct mpnfm_config *mc)
{
	mpnfm_default_config(mc);
	mc->theta_bytes = theta_cfg;
	mc->theta_inclusive = (uint8_t)theta_le;
}

/* MPNFM: the dies' plane 1 in small pages, an FTL on each plane's view, the layer's RAM after them
 * (the layer itself starts at format: its region table is not kept across a mount). */
static int setup_mpnfm(void)
{
	uint32_t small;
	int res;
	if (sched_depth) {
		printf("error: ftl: MPNFM runs without the multi-plane scheduler ('ftl config sched off')\n");
		return -1;
	}
	if (ftl_port_mpnfm(1, &small))
		return -1;
	if (mpnfm_views_open(&views, &port, small)) {
		printf("error: ftl: MPNFM needs 2 planes with large pages a multiple of the small (%u B pages, %u B small)\n",
		       (unsigned int)port.geo.page_bytes, (unsigned int)small);
		return -1;
	}
	size_t heap = (size_t)(_eheap - _fheap), need_l = align64(ftl_ram_bytes(&views.view[0].geo, &cfg));
	size_t need_s = align64(ftl_ram_bytes(&views.view[1].geo, &cfg));
	if (need_l + need_s + FTL_MAX_SECTORS_BYTES > heap) {
		printf("error: MPNFM's two FTLs need %lu + %lu bytes of RAM and %u for I/O, main RAM has %lu free\n",
		       (unsigned long)need_l, (unsigned long)need_s, FTL_MAX_SECTORS_BYTES, (unsigned long)heap);
		return -1;
	}
	ftl = ftl_init(_fheap, need_l, &views.view[0], &cfg, &res);
	if (report("init (large pages)", res))
		return -1;
	ftl_small = ftl_init(_fheap + need_l, need_s, &views.view[1], &cfg, &res);
	if (res) {
		printf("error: ftl init (small pages): %s: %s\n", ftl_result_name(res), ftl_error(ftl_small));
		return -1;
	}
	struct mpnfm_config mc;
	mpnfm_config_of(&mc);
	mp_ram = _fheap + need_l + need_s;
	mp_bytes = align64(mpnfm_ram_bytes(ftl, ftl_small, &mc));
	if (need_l + need_s + mp_bytes + FTL_MAX_SECTORS_BYTES > heap) {
		printf("error: MPNFM needs %lu bytes of RAM for its two FTLs, %lu for its layer and %u for I/O, main RAM has "
		       "%lu free\n", (unsigned long)(need_l + need_s), (unsigned long)mp_bytes, FTL_MAX_SECTORS_BYTES,
		       (unsigned long)heap);
		return -1;
	}
	io_buf = mp_ram + mp_bytes;
	return 0;
}

/* MPNFM after both FTLs formatted: the layer over them, every unit in the large pages. */
static int start_mpnfm(void)
{
	struct mpnfm_config mc;
	int res;
	mpnfm_config_of(&mc);
	mp = mpnfm_init(mp_ram, mp_bytes, ftl, ftl_small, &mc, &res);
	if (!mp) {
		printf("error: ftl: MPNFM: %s\n", mpnfm_why());
		return -1;
	}
	return 0;
}

/* One request on the device, waited for (the shell has nothing else in flight). */
static int dev_sync(int op, uint32_t sector, uint32_t count, uint8_t *buf)
{
	struct ftl_req r;
	memset(&r, 0, sizeof(r));
	r.op = (uint8_t)op;
	r.sector = sector;
	r.count = count;
	r.buf = buf;
	int res = dev.submit(dev.ctx, &r);
	if (res)
		return res;
	while (dev.poll(dev.ctx) != &r)
		;
	return r.result;
}

/* Port and FTL set up in the heap with the configuration chosen (ftl config); nothing mounted. */
static int setup(void)
{
	int res;
	if (!have_cfg) {
		ftl_default_config(&cfg);
		have_cfg = 1;
	}
	mounted = 0;
	if (ftl_port_open(&port))
		return -1;
	port.geo.span = span_of(&port.geo);
	port.geo.stagger = stagger_cfg;
	nand = port;
	mp = NULL;
	ftl_small = NULL;
	if (mpnfm_cfg)
		return setup_mpnfm();
	if (sched_depth) {
		/* The rules the dies enforce now ('die arch'), their registers and page types. */
		int arch = hal_die_arch(0);
		if (sched_nand_open(&nand, &port, arch < 0 ? SCHED_CNFM : arch, sched_depth,
		                    hal_die_registers() >= 2 * SCHED_SUBPLANES, nandctl[0].g.bits_per_cell))
			return -1;
	}
	size_t heap = (size_t)(_eheap - _fheap), need = ftl_ram_bytes(&nand.geo, &cfg);
	if (need + FTL_MAX_SECTORS_BYTES > heap) {
		printf("error: the FTL needs %lu bytes of RAM and %u for I/O, main RAM has %lu free\n", (unsigned long)need,
		       FTL_MAX_SECTORS_BYTES, (unsigned long)heap);
		return -1;
	}
	ftl = ftl_init(_fheap, heap - FTL_MAX_SECTORS_BYTES, &nand, &cfg, &res);
	io_buf = _fheap + ((need + 63) & ~(size_t)63);
	return report("init", res);
}

static int parse_range(int argc, char **argv, unsigned int *sector, unsigned int *count)
{
	if (argc < 4) {
		return shell_usage(strcmp(argv[1], "trim") ? "ftl write|read <sector> <count> [seed]" : "ftl trim <sector> <count>");
	}
	if (shell_parse_u32(argv[2], "sector", sector) || shell_parse_u32(argv[3], "count", count))
		return -1;
	if (!*count || *sector >= dev.sectors || *count > dev.sectors - *sector) {
		printf("error: sectors %u + %u: the device has 0..%u\n", *sector, *count, (unsigned int)dev.sectors - 1);
		return -1;
	}
	if (strcmp(argv[1], "trim") && *count * dev.sector_bytes > FTL_MAX_SECTORS_BYTES) {
		printf("error: %u sectors: one command moves at most %u bytes\n", *count, FTL_MAX_SECTORS_BYTES);
		return -1;
	}
	return 0;
}

/* write, read and trim of a sector range; only the FTL's call is timed (not the pattern). */
static int ftl_io(int argc, char **argv)
{
	unsigned int sector, count, seed = 1, bad = 0;
	uint32_t sb = dev.sector_bytes;
	int res, check = argc > 4 && !strcmp(argv[1], "read");
	if (parse_range(argc, argv, &sector, &count) || (argc > 4 && shell_parse_u32(argv[4], "seed", &seed)))
		return -1;
	if (!strcmp(argv[1], "write"))
		for (uint32_t i = 0; i < count; i++)
			pattern(io_buf + i * sb, sb, seed, sector + i);
	uint64_t t0 = hal_timestamp();
	if (!strcmp(argv[1], "write"))
		res = dev_sync(FTL_REQ_WRITE, sector, count, io_buf);
	else if (!strcmp(argv[1], "trim"))
		res = dev_sync(FTL_REQ_TRIM, sector, count, NULL);
	else
		res = dev_sync(FTL_REQ_READ, sector, count, io_buf);
	uint64_t cycles = hal_timestamp() - t0, us = cycles / (hal_clock_hz() / 1000000u);
	if (report(argv[1], res))
		return -1;
	if (check)
		bad = verify(io_buf, sector, count, sb, seed);
	printf("ftl %s: sectors %u..%u, %lu us", argv[1], sector, sector + count - 1, (unsigned long)us);
	if (strcmp(argv[1], "trim") && us)
		printf(", %lu KB/s", (unsigned long)((uint64_t)count * sb * 1000u / us));
	if (check)
		printf(", %u of %u sectors differ from seed %u's pattern", bad, count, seed);
	printf("\n");
	return bad ? -1 : 0;
}

/* A seed argument of `ftl check`: a number, or "zero" for the zeros of a sector never written. */
#define ZERO_SEED 0xFFFFFFFFu
static int parse_seed(const char *arg, unsigned int *seed)
{
	if (!strcmp(arg, "zero")) {
		*seed = ZERO_SEED;
		return 0;
	}
	if (shell_parse_u32(arg, "seed", seed))
		return -1;
	if (*seed == ZERO_SEED) {
		printf("error: seed %u is reserved (it stands for 'zero')\n", *seed);
		return -1;
	}
	return 0;
}

static int holds(const uint8_t *got, uint8_t *want, uint32_t sb, uint32_t seed, uint32_t sector)
{
	if (seed == ZERO_SEED)
		memset(want, 0, sb);
	else
		pattern(want, sb, seed, sector);
	return !memcmp(got, want, sb);
}

/* ftl check <sector> <count> <seed>|zero [<seed>|zero]: read the range and count the sectors that hold
 * the first seed's pattern, the second's, and neither (after a power cut, a write in flight leaves
 * each sector old or new: never anything else). The first few of neither are named. */
static int ftl_check(int argc, char **argv)
{
	static uint8_t want[4096] __attribute__((aligned(4), section(".dma")));
	unsigned int sector, count, first, second = ZERO_SEED, n1 = 0, n2 = 0, neither = 0;
	uint32_t sb = dev.sector_bytes;
	if (argc < 5)
		return shell_usage("ftl check <sector> <count> <seed>|zero [<seed>|zero]");
	if (parse_range(argc, argv, &sector, &count) || parse_seed(argv[4], &first) ||
	    (argc > 5 && parse_seed(argv[5], &second)))
		return -1;
	if (report("read", dev_sync(FTL_REQ_READ, sector, count, io_buf)))
		return -1;
	for (uint32_t i = 0; i < count; i++) {
		const uint8_t *got = io_buf + i * sb;
		if (holds(got, want, sb, first, sector + i))
			n1++;
		else if (argc > 5 && holds(got, want, sb, second, sector + i))
			n2++;
		else if (neither++ < 8)
			printf("mismatch: sector %u holds neither pattern\n", (unsigned int)(sector + i));
	}
	printf("check sector=%u count=%u first=%u second=%u neither=%u\n", sector, count, n1, n2, neither);
	return neither ? -1 : 0;
}

/* Where a bench phase's SoC cycles went: in all, waiting for the NAND (the port's idle polls), and
 * the CPU's instruction- and data-bus waits (cache refills, stores, CSRs; gateware/common/busperf.py). */
struct phase {
	uint64_t t0, idle0, cycles, idle;
	struct hal_cpu_perf p0;
	uint32_t ibus, dbus;
};

DRV_HOT2 static uint64_t port_idle(void)
{
	struct ftl_port_stats p;
	ftl_port_get_stats(&p);
	return p.idle_cycles;
}

static void phase_start(struct phase *m)
{
	m->idle0 = port_idle();
	hal_cpu_perf(&m->p0);
	m->t0 = hal_timestamp();
}

static void phase_end(struct phase *m)
{
	struct hal_cpu_perf p;
	m->cycles = hal_timestamp() - m->t0;
	hal_cpu_perf(&p);
	m->idle = port_idle() - m->idle0;
	m->ibus = p.ibus_busy - m->p0.ibus_busy;
	m->dbus = p.dbus_busy - m->p0.dbus_busy;
}

/* The bench's raw pass: `pages` pages of block `blk` of every die and plane, in the FTL's stripe
 * order (a page on every member, then the next page), programmed (or read) through the port as the
 * FTL does, at most FTL_MAX_REQUESTS / 2 in flight, no FTL. 0, or -1 on a failure. */
__attribute__((section(".text.hot_raw"))) static int raw_pass(int opcode, uint32_t pages, uint32_t blk, struct phase *m)
{
	static struct ftl_nand_op ops[FTL_MAX_REQUESTS / 2];
	const struct ftl_geo *g = &nand.geo;
	uint32_t members = g->dies * g->planes, next = 0, done = 0, free_ops = FTL_MAX_REQUESTS / 2;
	struct ftl_nand_op *idle[FTL_MAX_REQUESTS / 2];
	for (uint32_t i = 0; i < free_ops; i++)
		idle[i] = &ops[i];
	phase_start(m);
	while (done < pages) {
		while (next < pages && free_ops) {
			struct ftl_nand_op *op = idle[--free_ops];
			uint32_t k = next % members;
			/* Every field FFh (the tag programmed), as memset did, without a call on the timed path. */
			op->status = 0xff;
			op->corrected = 0xffff;
			for (int b = 0; b < FTL_TAG_BYTES; b++)
				op->tag[b] = 0xff;
			op->owner = 0xffff;
			op->arg = 0xffffffffu;
			op->opcode = (uint8_t)opcode;
			op->die = k / g->planes;
			op->block = blk * g->planes + k % g->planes;
			op->page = opcode == FTL_NAND_ERASE ? 0 : next / members;
			op->data = io_buf + (size_t)next * g->page_bytes;
			if (nand.submit(nand.dev, op)) {
				idle[free_ops++] = op;
				break;
			}
			next++;
		}
		/* Every completion waiting, then submissions again (as ftl_poll does): each path then runs many
		 * times in a row in the CPU's instruction cache. */
		struct ftl_nand_op *op;
		while ((op = nand.poll(nand.dev)) != NULL) {
			if (op->status != FTL_NAND_OK) {
				printf("error: ftl bench: raw operation %u on die %u block %u page %u: status %u\n", op->opcode,
				       (unsigned int)op->die, (unsigned int)op->block, (unsigned int)op->page, op->status);
				return -1;
			}
			idle[free_ops++] = op;
			done++;
		}
	}
	phase_end(m);
	return 0;
}

static unsigned long kbps(uint64_t bytes, uint64_t cycles)
{
	return cycles ? (unsigned long)(bytes * (hal_clock_hz() / 1000u) / cycles) : 0;
}

/* ftl bench [KiB]: sequential write and read of KiB through the port alone (raw) and through a freshly
 * formatted FTL, same pages and in-flight limit; the FTL's share of the raw rate, and per page where
 * the cycles went. Destroys the FTL. */
static int ftl_bench(int argc, char **argv)
{
	static const char *const names[4] = { "raw_write", "raw_read", "ftl_write", "ftl_read" };
	unsigned int kib = 128, seed = 5;
	if (argc > 2 && shell_parse_u32(argv[2], "KiB", &kib))
		return -1;
	if (setup())
		return -1;
	const struct ftl_geo *g = &nand.geo;
	uint32_t sb = ftl_get_config(ftl)->sector_bytes, count = kib * 1024u / sb, pages = kib * 1024u / g->page_bytes;
	uint32_t members = g->dies * g->planes, blk = g->blocks / g->planes - 1;
	if (!count || kib * 1024u > FTL_MAX_SECTORS_BYTES || pages > members * g->pages) {
		printf("error: ftl bench: %u KiB: from %u B to %u KiB (a superblock's pages and one request)\n", kib,
		       (unsigned int)sb, (unsigned int)(FTL_MAX_SECTORS_BYTES / 1024u));
		return -1;
	}
	for (uint32_t i = 0; i < count; i++)
		pattern(io_buf + i * sb, sb, seed, i);
	/* Raw: the last superblock's blocks, erased first (not timed). */
	struct phase erase, m[4], first;
	if (raw_pass(FTL_NAND_ERASE, members, blk, &erase) || raw_pass(FTL_NAND_PROGRAM, pages, blk, &m[0]) ||
	    raw_pass(FTL_NAND_READ, pages, blk, &m[1]))
		return -1;
	if (report("format", ftl_format(ftl)))
		return -1;
	mounted = 1;
	/* The first write opens a superblock (its erases and header): timed apart, as its share of a
	 * steady stream is one superblock's erase per members x pages pages. */
	phase_start(&first);
	if (report("write", ftl_write(ftl, 0, count, io_buf)))
		return -1;
	phase_end(&first);
	phase_start(&m[2]);
	if (report("write", ftl_write(ftl, 0, count, io_buf)))
		return -1;
	phase_end(&m[2]);
	phase_start(&m[3]);
	if (report("read", ftl_read(ftl, 0, count, io_buf)))
		return -1;
	phase_end(&m[3]);
	unsigned int bad = verify(io_buf, 0, count, sb, seed);
	uint64_t bytes = (uint64_t)kib * 1024u;
	printf("ftl bench: %u KiB sequential, %u dies x %u planes, KB/s raw / ftl (ftl %% of raw)\n", kib,
	       (unsigned int)g->dies, (unsigned int)g->planes);
	printf("  write  %lu / %lu (%lu %%); the FTL's first write, opening a superblock: %lu\n", kbps(bytes, m[0].cycles),
	       kbps(bytes, m[2].cycles), (unsigned long)(m[0].cycles * 100 / m[2].cycles), kbps(bytes, first.cycles));
	printf("  read   %lu / %lu (%lu %%)\n", kbps(bytes, m[1].cycles), kbps(bytes, m[3].cycles),
	       (unsigned long)(m[1].cycles * 100 / m[3].cycles));
	printf("  SoC cycles per page: all / CPU waiting for the NAND / CPU busy (of it: instruction-bus wait, data-bus wait)\n");
	for (int i = 0; i < 4; i++)
		printf("  %-9s %6lu / %6lu / %6lu (%lu, %lu)\n", names[i], (unsigned long)(m[i].cycles / pages),
		       (unsigned long)(m[i].idle / pages), (unsigned long)((m[i].cycles - m[i].idle) / pages),
		       (unsigned long)(m[i].ibus / pages), (unsigned long)(m[i].dbus / pages));
	printf("bench kib=%u dies=%u raw_write_kbps=%lu ftl_write_kbps=%lu ftl_first_write_kbps=%lu raw_read_kbps=%lu "
	       "ftl_read_kbps=%lu mismatches=%u", kib, (unsigned int)g->dies, kbps(bytes, m[0].cycles), kbps(bytes, m[2].cycles),
	       kbps(bytes, first.cycles), kbps(bytes, m[1].cycles), kbps(bytes, m[3].cycles), bad);
	/* Each FTL phase is one request of KiB: its cycles are the firmware's cost per request. */
	printf(" pages=%u", (unsigned int)pages);
	for (int i = 0; i < 4; i++)
		printf(" %s_cycles=%lu %s_cpu_cycles=%lu", names[i], (unsigned long)m[i].cycles, names[i],
		       (unsigned long)(m[i].cycles - m[i].idle));
	for (int i = 0; i < 4; i++)
		printf(" %s_cycles_per_page=%lu %s_cpu_cycles_per_page=%lu %s_ibus_wait_per_page=%lu %s_dbus_wait_per_page=%lu",
		       names[i], (unsigned long)(m[i].cycles / pages), names[i], (unsigned long)((m[i].cycles - m[i].idle) / pages),
		       names[i], (unsigned long)(m[i].ibus / pages), names[i], (unsigned long)(m[i].dbus / pages));
	printf("\n");
	return bad ? -1 : 0;
}

/* ftl workload <us> [read%] [qd] [seed]: random checked I/O through the mounted FTL for us of SoC time. */
static int ftl_run_workload(int argc, char **argv)
{
	unsigned int us, read_pct = 30, qd = 32, seed = 1;
	struct ftl_workload_result r;
	if (argc < 3) {
		return shell_usage("ftl workload <us> [read%] [qd 1-32] [seed]");
	}
	if (shell_parse_u32(argv[2], "us", &us) || (argc > 3 && shell_parse_u32(argv[3], "read%", &read_pct)) ||
	    (argc > 4 && shell_parse_u32(argv[4], "qd", &qd)) || (argc > 5 && shell_parse_u32(argv[5], "seed", &seed)))
		return -1;
	if (!us || read_pct > 100 || !qd || qd > 32) {
		printf("error: ftl workload: us >= 1, read%% 0..100, qd 1..32\n");
		return -1;
	}
	struct phase m;
	phase_start(&m);
	if (ftl_workload_run(ftl, io_buf, (size_t)(_eheap - io_buf), us, read_pct, (int)qd, seed, &r)) {
		printf("error: ftl workload: not enough RAM for %u sectors' versions and %u buffers\n",
		       (unsigned int)ftl_sectors(ftl), qd);
		return -1;
	}
	phase_end(&m);
	uint64_t t = r.us ? r.us : 1, n = r.reads + r.writes ? r.reads + r.writes : 1;
	printf("ftl workload: %lu us, %lu reads, %lu writes, %lu failed; read %lu KB/s, write %lu KB/s; "
	       "latency mean %lu us, max %lu us; %lu sectors differ from what was written\n",
	       (unsigned long)r.us, (unsigned long)r.reads, (unsigned long)r.writes, (unsigned long)r.errors,
	       (unsigned long)(r.read_bytes * 1000 / t), (unsigned long)(r.write_bytes * 1000 / t),
	       (unsigned long)r.mean_latency_us, (unsigned long)r.max_latency_us, (unsigned long)r.mismatches);
	printf("ftl workload: per request %lu SoC cycles: the CPU busy %lu (of it %lu in the workload's own pattern "
	       "fills and checks, %lu waiting on the instruction bus, %lu on the data bus), waiting for the NAND %lu\n",
	       (unsigned long)(m.cycles / n), (unsigned long)((m.cycles - m.idle) / n), (unsigned long)(r.pattern_cycles / n),
	       (unsigned long)(m.ibus / n), (unsigned long)(m.dbus / n), (unsigned long)(m.idle / n));
	return r.errors || r.mismatches ? -1 : 0;
}

static int ftl_configure(int argc, char **argv)
{
	unsigned int v;
	if (!have_cfg) {
		ftl_default_config(&cfg);
		have_cfg = 1;
	}
	for (int i = 2; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "gc") && (!strcmp(argv[i + 1], "greedy") || !strcmp(argv[i + 1], "cb"))) {
			cfg.gc_policy = !strcmp(argv[i + 1], "cb") ? FTL_GC_COST_BENEFIT : FTL_GC_GREEDY;
			continue;
		}
		if (!strcmp(argv[i], "wl") && !strcmp(argv[i + 1], "off")) {
			cfg.static_wl = 0;
			continue;
		}
		if (!strcmp(argv[i], "sched")) {
			if (!strcmp(argv[i + 1], "off"))
				v = 0;
			else if (shell_parse_u32(argv[i + 1], "sched", &v))
				return -1;
			else if (v < 1 || v > SCHED_MAX_DEPTH) {
				printf("error: ftl config: sched %u: the scheduler's queue takes 1..%u entries (or off)\n", v,
				       SCHED_MAX_DEPTH);
				return -1;
			}
			sched_depth = v;
			continue;
		}
		if (!strcmp(argv[i], "mpnfm") && (!strcmp(argv[i + 1], "on") || !strcmp(argv[i + 1], "off"))) {
			mpnfm_cfg = !strcmp(argv[i + 1], "on");
			continue;
		}
		if (!strcmp(argv[i], "theta_rule") && (!strcmp(argv[i + 1], "lt") || !strcmp(argv[i + 1], "le"))) {
			theta_le = !strcmp(argv[i + 1], "le");
			continue;
		}
		if (!strcmp(argv[i], "span")) {
			if (!strcmp(argv[i + 1], "auto"))
				v = 0;
			else if (shell_parse_u32(argv[i + 1], "span", &v))
				return -1;
			else if (v < 1 || v > 8) {
				printf("error: ftl config: span %u: a superblock spans 1..8 block groups per plane (or auto)\n", v);
				return -1;
			}
			span_cfg = v;
			continue;
		}
		if (shell_parse_u32(argv[i + 1], argv[i], &v))
			return -1;
		if (!strcmp(argv[i], "stagger") && v > 255) {
			printf("error: ftl config: stagger %u: 0..255 pages (format checks it against the blocks' pages)\n", v);
			return -1;
		}
		if (!strcmp(argv[i], "theta") && (v % 512 || v > FTL_MAX_SECTORS_BYTES)) {
			printf("error: ftl config: theta %u: a multiple of 512 bytes up to %u (0: one small page)\n", v,
			       FTL_MAX_SECTORS_BYTES);
			return -1;
		}
		if (!strcmp(argv[i], "theta"))
			theta_cfg = v;
		else if (!strcmp(argv[i], "stagger"))
			stagger_cfg = v;
		else if (!strcmp(argv[i], "sector"))
			cfg.sector_bytes = v;
		else if (!strcmp(argv[i], "op"))
			cfg.op_permille = v;
		else if (!strcmp(argv[i], "wl"))
			cfg.static_wl = 1, cfg.wl_threshold = v;
		else {
			printf("error: ftl config: '%s %s' unknown (sector 512|4096, op <per mille>, gc greedy|cb, wl <spread>|off, sched <depth>|off, span <n>|auto, stagger <pages>, mpnfm on|off, theta <bytes>, theta_rule lt|le)\n",
			       argv[i], argv[i + 1]);
			return -1;
		}
	}
	if ((argc - 2) % 2) {
		printf("error: ftl config: '%s' has no value\n", argv[argc - 1]);
		return -1;
	}
	printf("ftl config: sector %u, op %u per mille, gc %s, static wl %s (spread %u), sched ", (unsigned int)cfg.sector_bytes,
	       (unsigned int)cfg.op_permille, cfg.gc_policy == FTL_GC_COST_BENEFIT ? "cost-benefit" : "greedy",
	       cfg.static_wl ? "on" : "off", (unsigned int)cfg.wl_threshold);
	if (sched_depth)
		printf("%u", sched_depth);
	else
		printf("off");
	if (span_cfg)
		printf(", span %u", span_cfg);
	else
		printf(", span auto");
	printf(", stagger %u, mpnfm %s", stagger_cfg, mpnfm_cfg ? "on" : "off");
	if (mpnfm_cfg)
		printf(" (theta %u, writes %s it to the small pages)", theta_cfg, theta_le ? "up to" : "below");
	printf("\n");
	return 0;
}

static uint64_t mount_cycles;   /* the last format or mount, SoC cycles (setup included) */

static void ftl_show_stats(void)
{
	struct ftl_stats s;
	struct ftl_port_stats p;
	ftl_get_stats(ftl, &s);
	ftl_port_get_stats(&p);
#define S(name) printf("%-20s %llu\n", #name, (unsigned long long)s.name)
#define P(name) printf("port_%-15s %lu\n", #name, (unsigned long)p.name)
	S(host_reads); S(host_writes); S(host_trims); S(host_read_sectors); S(host_write_sectors);
	S(host_page_writes); S(nand_reads); S(nand_programs); S(nand_erases); S(meta_programs); S(gc_runs);
	S(gc_moves); S(wl_moves); S(rmw_reads); S(ecc_corrected); S(uncorrectable); S(lost_pages); S(bad_factory);
	S(bad_grown); S(erase_min); S(erase_max); S(superblocks); S(free_superblocks); S(recovery_us);
	S(recovery_pages_read); S(recovery_kind); S(recovery_sb_replayed); S(recovery_ckpt_failed); S(ckpt_writes);
	S(ckpt_programs); S(ckpt_skipped); S(max_in_flight);
	printf("%-20s %llu\n", "recovery_cycles", (unsigned long long)mount_cycles);
	P(submitted); P(completed); P(queue_full); P(max_in_flight); P(erased); P(uncorrectable); P(failed);
	P(refused); P(late); P(lost); P(polls); P(groups); P(group_pages);
	if (sched_depth) {
		struct sched_nand_stats q;
		sched_nand_get_stats(&q);
		printf("%-20s %u\n", "sched_depth", (unsigned int)q.depth);
		printf("%-20s %u\n", "sched_arch", (unsigned int)q.arch);
		printf("%-20s %lu\n", "sched_decisions", (unsigned long)q.s.decisions);
		printf("%-20s %lu\n", "sched_cycles", (unsigned long)q.cycles);
		printf("%-20s %lu\n", "sched_max_cycles", (unsigned long)q.max_cycles);
		printf("%-20s %lu\n", "sched_timer_cycles", (unsigned long)q.timer_cycles);
		printf("%-20s %lu\n", "sched_max_queued", (unsigned long)q.s.max_queued);
		for (int n = 1; n <= SCHED_MAX_REGS; n++)
			if (q.s.groups[n])
				printf("sched_groups_%d       %lu\n", n, (unsigned long)q.s.groups[n]);
	}
#undef S
#undef P
	if (s.host_page_writes)
		printf("waf                  %lu.%03lu\n", (unsigned long)((s.nand_programs + s.meta_programs) / s.host_page_writes),
		       (unsigned long)((s.nand_programs + s.meta_programs) * 1000 / s.host_page_writes % 1000));
	if (s.superblocks)
		printf("erase_mean           %lu.%02lu\n", (unsigned long)(s.erase_sum / s.superblocks),
		       (unsigned long)(s.erase_sum * 100 / s.superblocks % 100));
	if (mp) {
		/* The lines above are the large pages' FTL; the small pages' and the layer's follow. */
		struct ftl_stats t;
		struct mpnfm_stats m;
		ftl_get_stats(ftl_small, &t);
		mpnfm_get_stats(mp, &m);
#define T(name) printf("small_%-14s %llu\n", #name, (unsigned long long)t.name)
#define M(name) printf("mpnfm_%-14s %llu\n", #name, (unsigned long long)m.name)
		T(host_writes); T(host_reads); T(nand_reads); T(nand_programs); T(nand_erases); T(meta_programs); T(gc_moves);
		T(rmw_reads); T(bad_grown);
		M(small_writes); M(large_writes); M(reads); M(fills); M(edge_moves); M(merges); M(merged_units);
		M(merge_large_reads); M(slot_waits); M(slots); M(free_slots); M(max_used_slots); M(units_s);
#undef T
#undef M
	}
}

static void ftl_show_info(void)
{
	const struct ftl_geo *g = ftl_geometry(ftl);
	const struct ftl_config *c = ftl_get_config(ftl);
	size_t ram = ftl_ram_bytes(g, c);
	uint64_t pages = (uint64_t)g->dies * g->blocks * g->pages;
	printf("geometry: %u dies x %u planes x %u blocks x %u pages of %u B (%u tag bytes)\n", (unsigned int)g->dies,
	       (unsigned int)g->planes, (unsigned int)(g->blocks / g->planes), (unsigned int)g->pages,
	       (unsigned int)g->page_bytes, (unsigned int)g->tag_bytes);
	printf("capacity: %u sectors of %u B (%lu MiB), op %u per mille, gc %s, static wl %s\n",
	       (unsigned int)ftl_sectors(ftl), (unsigned int)c->sector_bytes,
	       (unsigned long)((uint64_t)ftl_sectors(ftl) * c->sector_bytes >> 20), (unsigned int)c->op_permille,
	       c->gc_policy == FTL_GC_COST_BENEFIT ? "cost-benefit" : "greedy", c->static_wl ? "on" : "off");
	printf("superblocks: %u dies x %u planes x span %u = %u blocks each, planes staggered by %u pages\n",
	       (unsigned int)g->dies, (unsigned int)g->planes, (unsigned int)ftl_geo_span(g),
	       (unsigned int)(g->dies * ftl_geo_groups(g)), (unsigned int)g->stagger);
	printf("ram: %lu bytes, %lu.%02lu bytes per physical page (%lu pages)\n", (unsigned long)ram,
	       (unsigned long)(ram / pages), (unsigned long)(ram * 100 / pages % 100), (unsigned long)pages);
	if (mp)
		printf("mpnfm: small pages %u B on plane 1 (FTL of %u sectors), theta %u B (%s)\n",
		       (unsigned int)ftl_geometry(ftl_small)->page_bytes, (unsigned int)ftl_sectors(ftl_small),
		       theta_cfg ? theta_cfg : (unsigned int)ftl_geometry(ftl_small)->page_bytes, theta_le ? "<=" : "<");
	printf("state: %s\n", mounted ? "mounted" : "not mounted");
}

static int cmd_ftl(int argc, char **argv)
{
	if (argc < 2) {
		printf("  (format and mount bring the channels up when they are not; read with a seed checks the\n"
		       "   pattern write wrote with it; bench formats the device after its raw pass)\n");
		return shell_usage("ftl config [sector 512|4096] [op <per mille>] [gc greedy|cb] [wl <spread>|off] [sched <depth>|off] [span <n>|auto] [stagger <pages>] | ftl format | "
		                   "ftl mount | ftl info | ftl write <sector> <count> [seed] | ftl read <sector> <count> [seed] | "
		                   "ftl trim <sector> <count> | ftl check <sector> <count> <seed>|zero [<seed>|zero] | "
		                   "ftl flush | ftl stats | ftl bench [KiB] | "
		                   "ftl workload <us> [read%] [qd] [seed] | ftl replay ring | "
		                   "ftl replay run <n> <qd> [scale_permille] [keep]");
	}
	if (strcmp(argv[1], "replay") && strcmp(argv[1], "info") && strcmp(argv[1], "stats"))
		ftl_replay_forget();         /* the replay's versions no longer describe the device */
	if (!strcmp(argv[1], "config"))
		return ftl_configure(argc, argv);
	if (mpnfm_cfg && (!strcmp(argv[1], "bench") || !strcmp(argv[1], "workload"))) {
		printf("error: ftl %s runs on one FTL; under MPNFM use 'ftl replay' ('ftl config mpnfm off' for this)\n",
		       argv[1]);
		return -1;
	}
	if (!strcmp(argv[1], "bench"))
		return ftl_bench(argc, argv);
	if (!strcmp(argv[1], "format") || !strcmp(argv[1], "mount")) {
		int format = !strcmp(argv[1], "format");
		uint64_t t0 = hal_timestamp();
		mounted = 0;
		if (mpnfm_cfg && !format) {
			printf("error: ftl mount: MPNFM's region table lives in RAM only (as in the paper): 'ftl format'\n");
			return -1;
		}
		if (setup() || report(argv[1], format ? ftl_format(ftl) : ftl_mount(ftl)))
			return -1;
		if (mpnfm_cfg && (report("format (small pages)", ftl_format(ftl_small)) || start_mpnfm()))
			return -1;
		if (mp)
			mpnfm_as_dev(mp, &dev);
		else
			ftl_as_dev(ftl, &dev);
		mount_cycles = hal_timestamp() - t0;
		mounted = 1;
		printf("ftl %s: %u sectors\n", format ? "formatted" : "mounted", (unsigned int)dev.sectors);
		if (mp)
			printf("ftl mpnfm: %u sectors of %u B over %u B large pages (%u sectors) and %u B small pages (%u sectors)\n",
			       (unsigned int)dev.sectors, (unsigned int)dev.sector_bytes,
			       (unsigned int)ftl_geometry(ftl)->page_bytes, (unsigned int)ftl_sectors(ftl),
			       (unsigned int)ftl_geometry(ftl_small)->page_bytes, (unsigned int)ftl_sectors(ftl_small));
		return 0;
	}
	if (!mounted) {
		printf("error: no FTL mounted: 'ftl format' (a new device) or 'ftl mount' first\n");
		return -1;
	}
	if (!strcmp(argv[1], "info"))
		ftl_show_info();
	else if (!strcmp(argv[1], "stats"))
		ftl_show_stats();
	else if (!strcmp(argv[1], "flush"))
		return report("flush", dev_sync(FTL_REQ_FLUSH, 0, 0, NULL));
	else if (!strcmp(argv[1], "write") || !strcmp(argv[1], "read") || !strcmp(argv[1], "trim"))
		return ftl_io(argc, argv);
	else if (!strcmp(argv[1], "workload"))
		return ftl_run_workload(argc, argv);
	else if (!strcmp(argv[1], "check"))
		return ftl_check(argc, argv);
	else if (!strcmp(argv[1], "replay")) {
		ftl_replay_set_wait_clock(port_idle);    /* each request's NAND wait, beside its latency */
		return ftl_replay_cmd(&dev, io_buf, (size_t)(_eheap - io_buf), argc, argv);
	} else {
		printf("error: unknown ftl command '%s'\n", argv[1]);
		return -1;
	}
	return 0;
}
SHELL_COMMAND("ftl", "config|format|mount|info|write|read|trim|check|flush|stats|bench|workload|replay",
              "flash translation layer over every die", cmd_ftl);
