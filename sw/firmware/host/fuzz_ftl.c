/* libFuzzer target: the FTL's API (sw/firmware/ftl/ftl.h) with arbitrary geometry, configuration,
 * sectors, counts and buffers, on the host NAND model (ftl/host/nand_model.c, no faults but factory
 * bad blocks), every read checked against a shadow of every sector. The first byte picks the path:
 *   odd:  raw values (any 32-bit geometry and configuration) into ftl_ram_bytes and ftl_init only:
 *         a configuration accepted must be one the FTL can hold (checked independently here);
 *   even: a small device, then up to MAX_OPS requests: format, mount, write, read, trim, flush, a
 *         remount by a fresh FTL (every sector checked), batches of asynchronous requests.
 * Each request's result is checked: an error exactly when the request breaks a rule of ftl.h (not
 * mounted, out of range, unaligned buffer, too big), FTL_OK otherwise. Any abort is a crash.
 *
 * FTL bugs the fuzzer finds are kept out of the run by guards (KNOWN_BUG below), each naming its
 * report and its reproducer in seeds/ftl-bugs, so that fuzzing goes on past them; build with
 * -DFUZZ_FTL_UNGUARDED to reproduce them. None is open: the five found so far are fixed, their
 * reproducers are in seeds/ftl (bug*) and run with every fuzz run. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftl.h"
#include "host/nand_model.h"

#ifdef FUZZ_FTL_UNGUARDED
#define KNOWN_BUG(cond) 0
#else
#define KNOWN_BUG(cond) (cond)
#endif

#define MAX_OPS        48
static int verbose = -1;                 /* NANDLAB_FUZZ_VERBOSE: each step on stderr */
#define TRACE(...) do { if (verbose) fprintf(stderr, __VA_ARGS__); } while (0)
#define MAX_RAM        (8u << 20)        /* FTL RAM a device-path input may ask for */
#define MAX_NAND_PAGES 2048u            /* keeps one input under a millisecond or so */
#define RAW_RAM        (1u << 20)        /* RAM given on the raw path */

struct input { const uint8_t *p; size_t n; };

static uint32_t take(struct input *in, int bytes)
{
	uint32_t v = 0;
	for (int i = 0; i < bytes && in->n; i++, in->p++, in->n--)
		v |= (uint32_t)in->p[0] << (8 * i);
	return v;
}
#define U8(in)  take(in, 1)
#define U16(in) take(in, 2)
#define U32(in) take(in, 4)

static void fail(const char *fmt, const char *detail, long a, long b)
{
	fprintf(stderr, "fuzz-ftl: ");
	fprintf(stderr, fmt, detail, a, b);
	fprintf(stderr, "\n");
	abort();
}

/* The NAND of the raw path: ftl_init must not touch it. */
static int no_submit(void *dev, struct ftl_nand_op *op) { (void)dev; (void)op; fail("%s", "ftl_init submitted a NAND operation", 0, 0); return -1; }
static struct ftl_nand_op *no_poll(void *dev) { (void)dev; return NULL; }
static uint64_t no_time(void *dev) { (void)dev; return 0; }

/* The rules of ftl.h and ftl_int.h for a configuration, checked here without the FTL's arithmetic. */
static const char *impossible(const struct ftl_geo *g, const struct ftl_config *c)
{
	if (!g->dies || !g->planes || !g->blocks || !g->pages || !g->page_bytes)
		return "a zero geometry field";
	if ((uint64_t)g->dies * g->planes > 32)
		return "more than 32 dies x planes in a superblock";
	if (g->blocks % g->planes)
		return "blocks not a multiple of the planes";
	if (g->tag_bytes < FTL_TAG_BYTES)
		return "no room for the page tag";
	if (c->sector_bytes != 512 && c->sector_bytes != 4096)
		return "sector size neither 512 nor 4096";
	if (c->sector_bytes > g->page_bytes ? c->sector_bytes % g->page_bytes : g->page_bytes % c->sector_bytes)
		return "sector and page sizes not multiples";
	if (c->op_permille > 10000 || c->gc_policy > FTL_GC_COST_BENEFIT)
		return "over-provisioning over 10000 or an unknown GC policy";
	if ((uint64_t)g->dies * g->blocks * g->pages >= 0xFFFFFFFEull)
		return "more physical pages than 32 bits address";
	return NULL;
}

static void raw_path(struct input *in)
{
	struct ftl_geo g = { U32(in), U32(in), U32(in), U32(in), U32(in), U32(in) };
	struct ftl_config cfg = { U32(in), U32(in), (uint8_t)U8(in), (uint8_t)U8(in), U32(in), U32(in), (uint8_t)U8(in) };
	struct ftl_nand nand = { .geo = g, .submit = no_submit, .poll = no_poll, .now_us = no_time };
	size_t need = ftl_ram_bytes(&g, &cfg), give = need < RAW_RAM ? need : RAW_RAM;
	if (give < 64)
		give = 64;
	void *ram = malloc(give);
	int res = 12345;
	struct ftl *f = ftl_init(ram, give, &nand, &cfg, &res);
	const char *why = impossible(&g, &cfg);
	if (res == FTL_OK) {
		if (why)
			fail("ftl_init accepted an impossible configuration: %s (dies %ld)", why, (long)g.dies, 0);
		if (give < need)
			fail("%sftl_init accepted %ld bytes of RAM, ftl_ram_bytes says %ld", "", (long)give, (long)need);
		if (!f)
			fail("%sftl_init: FTL_OK and no FTL", "", 0, 0);
	} else if (res != FTL_E_CONFIG && res != FTL_E_MEMORY) {
		fail("ftl_init refused with %s (%ld)", ftl_result_name(res), res, 0);
	} else if (f && !ftl_error(f)[0] && give >= 64 * 4) {
		fail("%sftl_init refused (%ld) without saying why", "", res, 0);
	}
	free(ram);
}

/* Sector contents: version 0 is zeros (never written, or trimmed). Sectors are multiples of 8 bytes. */
static void pattern(uint8_t *p, uint32_t bytes, uint32_t sector, uint32_t version)
{
	uint64_t x = ((uint64_t)sector << 32 | version) * 0x9E3779B97F4A7C15ull + 1;
	if (!version) {
		memset(p, 0, bytes);
		return;
	}
	for (uint32_t i = 0; i + 8 <= bytes; i += 8) {
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		memcpy(p + i, &x, 8);
	}
}

struct dev {
	struct ftl_geo g;
	struct ftl_config cfg;
	struct nand_model *m;
	struct ftl *f;
	void *ram;
	size_t need;
	uint32_t sectors, S, version, *shadow;
	int mounted, formatted, factory_bad;
	uint8_t *scratch;
};

/* A sector number or count: small, near the end of the device, or any 32-bit value. */
static uint32_t pick(struct input *in, uint32_t sectors)
{
	uint8_t kind = (uint8_t)U8(in);
	switch (kind % 4) {
	case 0: return U8(in) % 16;
	case 1: return sectors ? U8(in) % sectors : 0;
	case 2: return sectors - U8(in) % 17;
	default: return U32(in);
	}
}

/* The result a request must have (FTL_OK when it breaks no rule); `alt` a second one it may have
 * when it breaks two rules (the FTL checks them in its own order). */
static int expected(struct dev *d, int op, uint32_t sector, uint32_t count, int misaligned, int *alt)
{
	int e[3], n = 0;
	*alt = 1;
	if (!d->mounted)
		return FTL_E_NOT_MOUNTED;
	if (op == FTL_REQ_FLUSH)
		return FTL_OK;
	if (sector >= d->sectors || count > d->sectors - sector)
		e[n++] = FTL_E_RANGE;
	if (op != FTL_REQ_TRIM && misaligned)
		e[n++] = FTL_E_ALIGN;
	if ((uint64_t)count * d->S > FTL_MAX_SECTORS_BYTES)
		e[n++] = FTL_E_TOO_BIG;
	if (!n)
		return FTL_OK;
	*alt = n > 1 ? e[1] : e[0];
	if (n > 2 && *alt != e[2])
		*alt = e[2] == FTL_E_TOO_BIG ? *alt : e[2];   /* (three rules broken: any of the three) */
	return e[0];
}

static int result_ok(int res, int want, int alt, int op, struct dev *d)
{
	if (res == want || res == alt)
		return 1;
	/* Three rules broken at once: any of them. */
	if (want != FTL_OK && (res == FTL_E_RANGE || res == FTL_E_ALIGN || res == FTL_E_TOO_BIG))
		return 1;
	/* Factory bad blocks can leave too little room: a write, trim or flush may then say so. (Without
	 * them, never: bug 4, trims that made a device without over-provisioning refuse writes, is fixed.) */
	return d->factory_bad && want == FTL_OK && op != FTL_REQ_READ && res == FTL_E_FULL;
}

static void check_read(struct dev *d, const uint8_t *buf, uint32_t sector, uint32_t count, const char *when)
{
	for (uint32_t k = 0; k < count; k++) {
		if (d->shadow[sector + k] == UINT32_MAX)
			continue;
		pattern(d->scratch, d->S, sector + k, d->shadow[sector + k]);
		if (memcmp(d->scratch, buf + (size_t)k * d->S, d->S))
			fail("read %s: sector %ld is not version %ld", when, (long)(sector + k), (long)d->shadow[sector + k]);
	}
}

/* One blocking request (ftl_write, ftl_read, ftl_trim, ftl_flush), its result and data checked. */
static void request(struct dev *d, struct input *in, int op)
{
	uint32_t sector = op == FTL_REQ_FLUSH ? 0 : pick(in, d->sectors);
	uint32_t count = op == FTL_REQ_FLUSH ? 0 : pick(in, d->sectors);
	uint8_t flags = (uint8_t)U8(in);
	int misaligned = op != FTL_REQ_FLUSH && op != FTL_REQ_TRIM && (flags & 3) && (flags & 0x80);
	uint64_t bytes = (uint64_t)count * d->S;
	/* A request the FTL must refuse gets a small buffer: any use of it is an overflow. */
	size_t size = bytes <= FTL_MAX_SECTORS_BYTES ? (size_t)bytes : 64;
	uint8_t *mem = malloc(size + 4), *buf = mem + (misaligned ? (flags & 3) : 0);
	int alt, want = expected(d, op, sector, count, misaligned, &alt), res;
	if (op == FTL_REQ_WRITE && want == FTL_OK) {
		d->version++;
		for (uint32_t k = 0; k < count; k++)
			pattern(buf + (size_t)k * d->S, d->S, sector + k, d->version);
	} else if (size) {
		memset(buf, 0xA5, size);
	}
	switch (op) {
	case FTL_REQ_WRITE: res = ftl_write(d->f, sector, count, buf); break;
	case FTL_REQ_READ:  res = ftl_read(d->f, sector, count, buf); break;
	case FTL_REQ_TRIM:  res = ftl_trim(d->f, sector, count); break;
	default:            res = ftl_flush(d->f); break;
	}
	TRACE("  %s sector %u count %u%s: %s\n", op == FTL_REQ_WRITE ? "write" : op == FTL_REQ_READ ? "read" :
	      op == FTL_REQ_TRIM ? "trim" : "flush", sector, count, misaligned ? " (unaligned buffer)" : "", ftl_result_name(res));
	if (!result_ok(res, want, alt, op, d)) {
		fprintf(stderr, "fuzz-ftl: op %d sector %u count %u misaligned %d: %s, expected %s (%s)\n", op, sector, count,
		        misaligned, ftl_result_name(res), ftl_result_name(want), ftl_error(d->f));
		abort();
	}
	/* A write or trim accepted but failed (FTL_E_FULL) may have done part of its sectors: unknown. */
	if (res != FTL_OK && want == FTL_OK && op != FTL_REQ_READ && op != FTL_REQ_FLUSH)
		for (uint32_t k = 0; k < count; k++)
			d->shadow[sector + k] = UINT32_MAX;
	if (res == FTL_OK && op == FTL_REQ_WRITE)
		for (uint32_t k = 0; k < count; k++)
			d->shadow[sector + k] = d->version;
	if (res == FTL_OK && op == FTL_REQ_TRIM)
		for (uint32_t k = 0; k < count; k++)
			d->shadow[sector + k] = 0;
	if (res == FTL_OK && op == FTL_REQ_READ)
		check_read(d, buf, sector, count, "after a write");
	free(mem);
}

/* Up to 8 requests in flight at once (none overlapping another), then polled to the end. */
static void batch(struct dev *d, struct input *in)
{
	struct ftl_req r[8];
	uint32_t version[8];
	int n = 1 + (int)(U8(in) % 8), live = 0;
	if (!d->mounted || d->sectors == 0)
		return;
	memset(r, 0, sizeof(r));
	for (int i = 0; i < n; i++) {
		uint32_t count = 1 + U8(in) % 8, sector;
		if (count > d->sectors)
			count = d->sectors;
		sector = U16(in) % (d->sectors - count + 1);
		int overlap = 0;
		for (int j = 0; j < i; j++)
			overlap |= r[j].buf && sector < r[j].sector + r[j].count && r[j].sector < sector + count;
		if (overlap)
			continue;
		r[i].op = (uint8_t)(U8(in) % 3);      /* write, read, trim */
		r[i].sector = sector;
		r[i].count = count;
		r[i].id = (uint32_t)i;
		r[i].buf = malloc((size_t)count * d->S);
		version[i] = r[i].op == FTL_REQ_WRITE ? ++d->version : 0;
		if (r[i].op == FTL_REQ_WRITE)
			for (uint32_t k = 0; k < count; k++)
				pattern(r[i].buf + (size_t)k * d->S, d->S, sector + k, version[i]);
		TRACE("  batch: submit %s sector %u count %u\n", r[i].op == FTL_REQ_WRITE ? "write" : r[i].op == FTL_REQ_READ ?
		      "read" : "trim", sector, count);
		int res = ftl_submit(d->f, &r[i]);
		if (res)
			fail("ftl_submit of a valid request: %s (%ld)", ftl_result_name(res), res, 0);
		live++;
	}
	for (long spins = 0; live; spins++) {
		struct ftl_req *done = ftl_poll(d->f);
		if (!done) {
			if (spins > 10000000)
				fail("%sbatch: requests never completed (%ld in flight)", "", live, 0);
			continue;
		}
		int i = (int)done->id;
		if (done != &r[i])
			fail("%sftl_poll returned a request not submitted (id %ld)", "", i, 0);
		if (!result_ok(done->result, FTL_OK, FTL_OK, done->op, d))
			fail("batch: request failed: %s (op %ld)", ftl_result_name(done->result), done->op, 0);
		if (done->result != FTL_OK && done->op != FTL_REQ_READ)
			for (uint32_t k = 0; k < done->count; k++)
				d->shadow[done->sector + k] = UINT32_MAX;
		if (done->result == FTL_OK)
			for (uint32_t k = 0; k < done->count; k++) {
				if (done->op == FTL_REQ_WRITE)
					d->shadow[done->sector + k] = version[i];
				else if (done->op == FTL_REQ_TRIM)
					d->shadow[done->sector + k] = 0;
			}
		if (done->result == FTL_OK && done->op == FTL_REQ_READ)
			check_read(d, done->buf, done->sector, done->count, "in a batch");
		live--;
	}
	for (int i = 0; i < 8; i++)
		free(r[i].buf);
}

/* A fresh FTL in fresh RAM mounts the device (as after a reset): every sector as acknowledged. */
static void remount(struct dev *d)
{
	int res;
	void *ram = malloc(d->need);
	TRACE("  remount (fresh FTL, every sector checked)\n");
	struct ftl *f = ftl_init(ram, d->need, nand_model_nand(d->m), &d->cfg, &res);
	if (res)
		fail("remount: ftl_init: %s (%ld)", ftl_result_name(res), res, 0);
	res = ftl_mount(f);
	free(d->ram);
	d->ram = ram;
	d->f = f;
	if (!d->formatted) {
		if (res != FTL_E_UNFORMATTED)
			fail("mount of a device never formatted: %s (%ld)", ftl_result_name(res), res, 0);
		d->mounted = 0;
		return;
	}
	if (res)
		fail("remount: %s (%ld)", ftl_result_name(res), res, 0);
	if (ftl_sectors(f) != d->sectors)
		fail("%sremount: %ld sectors, %ld before", "", ftl_sectors(f), d->sectors);
	d->mounted = 1;
	uint32_t chunk = (FTL_MAX_SECTORS_BYTES / 4) / d->S;
	uint8_t *buf = malloc((size_t)chunk * d->S);
	for (uint32_t lo = 0; lo < d->sectors; lo += chunk) {
		uint32_t n = d->sectors - lo < chunk ? d->sectors - lo : chunk;
		if ((res = ftl_read(f, lo, n, buf)))
			fail("remount: read: %s (%ld)", ftl_result_name(res), res, 0);
		check_read(d, buf, lo, n, "after a remount");
	}
	free(buf);
}

static void device_path(struct input *in)
{
	struct dev d;
	uint8_t flags = (uint8_t)U8(in);
	memset(&d, 0, sizeof(d));
	d.g.dies = 1 + U8(in) % 4;
	d.g.planes = flags & 1 ? 1 + U8(in) % 4 : 1u << (U8(in) % 3);
	d.g.blocks = flags & 2 ? 1 + U8(in) % 64 : d.g.planes * (2 + U8(in) % 24);
	d.g.pages = flags & 4 ? 1 + U8(in) % 64 : 2u << (U8(in) % 6);
	d.g.page_bytes = flags & 8 ? 1 + U16(in) % 16384 : 512u << (U8(in) % 6);
	d.g.tag_bytes = flags & 16 ? U8(in) % 8 : FTL_TAG_BYTES + U8(in) % 4;
	ftl_default_config(&d.cfg);
	d.cfg.sector_bytes = flags & 32 ? U16(in) : U8(in) & 1 ? 512 : 4096;
	d.cfg.op_permille = U16(in) % 12000;
	d.cfg.gc_policy = (uint8_t)(U8(in) % 3);
	d.cfg.static_wl = (uint8_t)(U8(in) & 1);
	d.cfg.wl_threshold = U8(in);
	d.factory_bad = (flags & 64) != 0;
	if ((uint64_t)d.g.dies * d.g.blocks * d.g.pages > MAX_NAND_PAGES ||
	    (uint64_t)d.g.dies * d.g.blocks * d.g.pages * d.g.page_bytes > (8u << 20))
		return;
	d.need = ftl_ram_bytes(&d.g, &d.cfg);
	if (d.need > MAX_RAM)
		return;
	struct nand_model_faults fx = { .factory_bad = d.factory_bad ? 0.05 : 0.0 };
	d.m = nand_model_new(&d.g, &fx, U8(in));
	/* Less RAM than it asks for: refused (flag 128). */
	size_t give = flags & 128 ? (d.need > 1 ? d.need - 1 - U16(in) % d.need : 0) : d.need;
	int res;
	d.ram = malloc(give ? give : 1);
	d.f = ftl_init(d.ram, give, nand_model_nand(d.m), &d.cfg, &res);
	const char *why = impossible(&d.g, &d.cfg);
	if (res != FTL_OK) {
		if (res != FTL_E_CONFIG && res != FTL_E_MEMORY)
			fail("ftl_init refused with %s (%ld)", ftl_result_name(res), res, 0);
		if (!why && give >= d.need && res == FTL_E_MEMORY)
			fail("%sftl_init: not enough memory with the %ld bytes ftl_ram_bytes asked for", "", (long)give, 0);
		goto out;
	}
	if (why)
		fail("ftl_init accepted an impossible configuration: %s (%ld dies, %ld planes)", why, d.g.dies, d.g.planes);
	if (give < d.need)
		fail("%sftl_init accepted %ld bytes of RAM, ftl_ram_bytes says %ld", "", (long)give, (long)d.need);
	TRACE("device: %u dies, %u planes, %u blocks, %u pages of %u B, tag %u B; sector %u B, OP %u, GC %u, static WL %u "
	      "at %u%s\n", d.g.dies, d.g.planes, d.g.blocks, d.g.pages, d.g.page_bytes, d.g.tag_bytes, d.cfg.sector_bytes,
	      d.cfg.op_permille, d.cfg.gc_policy, d.cfg.static_wl, d.cfg.wl_threshold, d.factory_bad ? ", factory bad blocks" : "");
	d.sectors = ftl_sectors(d.f);
	TRACE("  %u sectors\n", d.sectors);
	d.S = d.cfg.sector_bytes;
	d.shadow = calloc((size_t)d.sectors + 1, sizeof(uint32_t));
	d.scratch = malloc(d.S);
	for (int n = 0; n < MAX_OPS && in->n; n++) {
		switch (U8(in) % 9) {
		case 0:
			res = ftl_format(d.f);
			TRACE("  format: %s\n", ftl_result_name(res));
			/* (ftl_init refuses every geometry format cannot use: bug 3 is fixed.) */
			if (res != FTL_OK && !(d.factory_bad && res == FTL_E_FULL))
				fail("format: %s (%ld)", ftl_result_name(res), res, 0);
			/* Everything before it reads zeros, now and after every mount (bug 2, fixed: data and trim
			 * records written before a format came back at the next mount). */
			d.formatted = d.mounted = res == FTL_OK;
			memset(d.shadow, 0, (size_t)d.sectors * sizeof(uint32_t));
			if (res != FTL_OK)
				goto out;
			break;
		case 1:
			res = ftl_mount(d.f);
			TRACE("  mount: %s\n", ftl_result_name(res));
			if (d.formatted ? res != FTL_OK : res != FTL_E_UNFORMATTED)
				fail("mount: %s (%ld)", ftl_result_name(res), res, d.formatted);
			d.mounted = res == FTL_OK;
			break;
		case 2: case 3: request(&d, in, FTL_REQ_WRITE); break;
		case 4: request(&d, in, FTL_REQ_READ); break;
		case 5: request(&d, in, FTL_REQ_TRIM); break;
		case 6: request(&d, in, FTL_REQ_FLUSH); break;
		case 7: remount(&d); break;
		default: batch(&d, in); break;
		}
	}
out:
	free(d.shadow);
	free(d.scratch);
	free(d.ram);
	nand_model_free(d.m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = { data, size };
	if (verbose < 0)
		verbose = getenv("NANDLAB_FUZZ_VERBOSE") != NULL;
	if (!size)
		return 0;
	if (U8(&in) & 1)
		raw_path(&in);
	else
		device_path(&in);
	return 0;
}
