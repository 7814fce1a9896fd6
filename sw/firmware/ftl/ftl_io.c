/* FTL requests: set-up, the operation pool, host writes, reads, trims and flushes issued to the
 * NAND asynchronously (many requests in flight, pages spread over every die by the write stream). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ftl_int.h"

#define GC_RESERVE_SB 3        /* superblocks kept out of the logical capacity for GC */

static const char *result_names[] = { "ok", "out of range", "request too big", "unformatted", "geometry mismatch",
	"version mismatch", "uncorrectable", "I/O error", "power lost", "full", "not mounted", "busy",
	"bad configuration", "not enough memory", "buffer not aligned" };

const char *ftl_result_name(int result)
{
	return result <= 0 && -result < (int)(sizeof(result_names) / sizeof(*result_names)) ? result_names[-result] : "?";
}

int ftl_set_error(struct ftl *f, int result, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(f->err, sizeof(f->err), fmt, ap);
	va_end(ap);
	return result;
}

const char *ftl_error(const struct ftl *f) { return f->err; }
const struct ftl_geo *ftl_geometry(const struct ftl *f) { return &f->g; }
const struct ftl_config *ftl_get_config(const struct ftl *f) { return &f->cfg; }
uint32_t ftl_sectors(const struct ftl *f) { return f->ready ? f->sectors : 0; }
uint32_t ftl_in_flight(const struct ftl *f) { return f->in_flight; }

void ftl_default_config(struct ftl_config *cfg)
{
	cfg->sector_bytes = 4096;
	cfg->op_permille = 70;
	cfg->gc_policy = FTL_GC_GREEDY;
	cfg->static_wl = 1;
	cfg->wl_threshold = 32;
	cfg->ckpt_pages = FTL_CKPT_AUTO;
	cfg->ckpt_flush = 0;
}

/* Superblocks the anchor log's candidates take on a device without factory bad blocks (one with them
 * may reserve more: its over-provisioning pays for those). */
static uint32_t anchor_sb(const struct ftl_geo *g)
{
	uint32_t members = g->dies * ftl_geo_groups(g);
	return members ? (FTL_ANCHOR_BLOCKS + members - 1) / members : FTL_ANCHOR_BLOCKS;
}

/* Superblocks one checkpoint takes: a header page and 4 bytes per logical page (counted without
 * over-provisioning, an upper bound) in data slots. Two are left out of the logical capacity (the
 * newest checkpoint and the next), whether checkpoints are written or not: the format is the same. */
uint32_t ftl_ckpt_region(const struct ftl_geo *g)
{
	/* (Degenerate geometries, which init refuses, must not divide by zero on the way.) */
	if (!ftl_geo_groups(g) || !g->pages || !g->page_bytes || ftl_geo_sb_pages(g) < 2)
		return 1;
	uint32_t reserved = anchor_sb(g), nsb = g->blocks / ftl_geo_groups(g);
	if (nsb <= reserved + GC_RESERVE_SB)
		return 1;
	uint64_t per_sb = ftl_geo_sb_pages(g) - 1, upper = (uint64_t)(nsb - reserved - GC_RESERVE_SB) * per_sb;
	uint64_t pages = 1 + (4 * upper + g->page_bytes - 1) / g->page_bytes;
	return (uint32_t)((pages + per_sb - 1) / per_sb);
}

/* Logical pages a geometry offers: the data slots outside the anchor, checkpoint and GC reserves, over 1 + OP. */
static uint64_t logical_pages(const struct ftl_geo *g, const struct ftl_config *cfg, uint32_t *nsb)
{
	uint32_t reserved = anchor_sb(g), ckpt = 2 * ftl_ckpt_region(g);
	*nsb = ftl_geo_groups(g) ? g->blocks / ftl_geo_groups(g) : 0;
	if (*nsb <= reserved + GC_RESERVE_SB + ckpt)
		return 0;
	uint64_t slots = (uint64_t)(*nsb - reserved - GC_RESERVE_SB - ckpt) * (ftl_geo_sb_pages(g) - 1);
	return slots * 1000 / (1000 + cfg->op_permille);
}

static uint64_t align8(uint64_t n) { return (n + 7) & ~(uint64_t)7; }

/* RAM for a geometry that check_config() accepted. */
static uint64_t ram_bytes(const struct ftl_geo *g, const struct ftl_config *cfg)
{
	uint32_t nsb;
	uint64_t lpns = logical_pages(g, cfg, &nsb), pages = (uint64_t)g->dies * g->blocks * g->pages;
	return align8(sizeof(struct ftl)) + align8(4 * lpns) + align8(4 * ((pages + 31) / 32)) +
	       align8((uint64_t)sizeof(struct ftl_sb) * nsb) + align8(4 * (uint64_t)nsb) +
	       align8(8 * (uint64_t)g->dies * ftl_geo_groups(g) * g->pages) + align8(4 * (((uint64_t)g->dies * g->blocks + 31) / 32)) +
	       (uint64_t)FTL_BUFS * g->page_bytes;
}

static int refuse(char *err, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, n, fmt, ap);
	va_end(ap);
	return FTL_E_CONFIG;
}

/* Whether checkpoints fit the formats (superblocks in the anchor record, page index in the tag). */
static int ckpt_possible(const struct ftl_geo *g, uint64_t lpns)
{
	return ftl_ckpt_region(g) <= FTL_CKPT_MAX_SB && 1 + (4 * lpns + g->page_bytes - 1) / g->page_bytes <= 0xFFFF;
}

/* Whether the FTL can run on geometry g with configuration c: FTL_OK, or FTL_E_CONFIG with the reason
 * (naming the field) in err. The geometry's own fields come first, each alone and in 64 bits, so that
 * nothing after divides by zero or overflows; format, mount and the on-flash records rely on these. */
static int config_error(char *err, size_t n, const struct ftl_geo *g, const struct ftl_config *c)
{
	static const char *names[] = { "dies", "planes", "blocks", "pages", "page_bytes" };
	const uint32_t fields[] = { g->dies, g->planes, g->blocks, g->pages, g->page_bytes };
	for (int i = 0; i < 5; i++)
		if (!fields[i])
			return refuse(err, n, "geometry: %s = 0", names[i]);
#define REFUSE(...) return refuse(err, n, __VA_ARGS__)
	if (g->span > FTL_MAX_SPAN)
		REFUSE("geometry: span %u: a superblock spans 1..%u block groups per plane", g->span, FTL_MAX_SPAN);
	if ((uint64_t)g->dies * ftl_geo_groups(g) > FTL_MAX_MEMBERS)
		REFUSE("geometry: dies %u x planes %u x span %u: a superblock takes at most %u blocks", g->dies, g->planes,
		       ftl_geo_span(g), FTL_MAX_MEMBERS);
	if (g->blocks % ftl_geo_groups(g))
		REFUSE("geometry: blocks %u do not split over planes %u x span %u", g->blocks, g->planes, ftl_geo_span(g));
	if (g->stagger && (g->stagger > 255 || (uint64_t)g->stagger * (g->planes - 1) + 2 > g->pages))
		REFUSE("geometry: stagger %u: each plane's write point may trail the previous one's by 0..%u pages "
		       "(pages %u, planes %u, two rows kept)", g->stagger, g->planes > 1 ? (g->pages - 2) / (g->planes - 1) : 255,
		       g->pages, g->planes);
	if (ftl_geo_sb_pages(g) < 2)
		REFUSE("geometry: dies x planes x pages = 1: a superblock holds its header and nothing else");
	if ((uint64_t)g->dies * g->blocks * g->pages >= FTL_PPN_LIMIT)
		REFUSE("geometry: dies x blocks x pages = %llu physical pages, more than 31 bits address",
		       (unsigned long long)g->dies * g->blocks * g->pages);
	if (g->page_bytes < FTL_MIN_PAGE_BYTES || g->page_bytes > FTL_MAX_PAGE_BYTES)
		REFUSE("geometry: page_bytes %u: %u..%u (the metadata records' headers fill %u)", g->page_bytes,
		       FTL_MIN_PAGE_BYTES, FTL_MAX_PAGE_BYTES, FTL_MIN_PAGE_BYTES);
	if (g->tag_bytes < FTL_TAG_BYTES)
		REFUSE("geometry: tag_bytes %u: the page tag needs %u spare bytes", g->tag_bytes, FTL_TAG_BYTES);
	if (c->sector_bytes != 512 && c->sector_bytes != 4096)
		REFUSE("sector_bytes %u: 512 or 4096", c->sector_bytes);
	if (c->sector_bytes > g->page_bytes ? c->sector_bytes % g->page_bytes : g->page_bytes % c->sector_bytes)
		REFUSE("sector_bytes %u and page_bytes %u are not multiples", c->sector_bytes, g->page_bytes);
	if (c->op_permille > 10000)
		REFUSE("op_permille %u: at most 10000", c->op_permille);
	if (c->gc_policy > FTL_GC_COST_BENEFIT)
		REFUSE("gc_policy %u unknown", c->gc_policy);
	uint32_t nsb;
	uint64_t lpns = logical_pages(g, c, &nsb);
	if (!lpns)
		REFUSE("geometry: %u superblocks: too few for the anchor log, checkpoints and GC's reserve", nsb);
	if (lpns > FTL_LPN_LIMIT)
		REFUSE("%llu logical pages exceed the tag's 24-bit LPN", (unsigned long long)lpns);
	uint32_t anchor = ftl_anchor_pages(g);
	if (anchor > g->pages || anchor > 255)
		REFUSE("geometry: the anchor record (bad-block table, erase counts) takes %u pages, a block has %u "
		       "(at most 255)", anchor, g->pages);
	if (c->ckpt_pages && c->ckpt_pages != FTL_CKPT_AUTO && !ckpt_possible(g, lpns))
		REFUSE("ckpt_pages: a checkpoint takes %u superblocks (at most %u) or more than 65535 pages: "
		       "checkpoints off (0) or FTL_CKPT_AUTO", ftl_ckpt_region(g), FTL_CKPT_MAX_SB);
	if (ram_bytes(g, c) > (size_t)-1)
		REFUSE("the FTL's RAM for this geometry exceeds the address space");
#undef REFUSE
	return FTL_OK;
}

size_t ftl_ram_bytes(const struct ftl_geo *g, const struct ftl_config *cfg)
{
	char err[8];
	if (config_error(err, sizeof(err), g, cfg))
		return sizeof(struct ftl);    /* enough for ftl_init to say why it refuses */
	return (size_t)ram_bytes(g, cfg);
}

struct ftl *ftl_init(void *ram, size_t bytes, struct ftl_nand *nand, const struct ftl_config *cfg, int *result)
{
	struct ftl *f = ram;
	char err[sizeof(f->err)];
	int bad = config_error(err, sizeof(err), &nand->geo, cfg);
	if (bytes < sizeof(struct ftl)) {
		*result = bad ? bad : FTL_E_MEMORY;
		return NULL;
	}
	memset(f, 0, sizeof(*f));
	if (bad) {
		memcpy(f->err, err, sizeof(f->err));
		*result = bad;
		return f;
	}
	if (bytes < ftl_ram_bytes(&nand->geo, cfg)) {
		*result = ftl_set_error(f, FTL_E_MEMORY, "%lu bytes of RAM given, %lu needed", (unsigned long)bytes,
		                        (unsigned long)ftl_ram_bytes(&nand->geo, cfg));
		return f;
	}
	f->nand = nand;
	f->poll = nand->poll;
	f->submit = nand->submit;
	f->dev = nand->dev;
	f->g = nand->geo;
	f->cfg = *cfg;
	f->groups = ftl_geo_groups(&f->g);
	f->members = f->g.dies * f->groups;
	f->slots = f->members * f->g.pages;
	f->sh_pages = ftl_log2(f->g.pages);
	f->sh_blocks = ftl_log2(f->g.blocks);
	f->sh_planes = ftl_log2(f->g.planes);
	f->sh_members = ftl_log2(f->members);
	f->sh_groups = ftl_log2(f->groups);
	f->lpns = logical_pages(&f->g, cfg, &f->nsb);
	f->sh_nsb = ftl_log2(f->nsb);
	f->pow2 = f->sh_pages >= 0 && f->sh_blocks >= 0 && f->sh_planes >= 0 && f->sh_members >= 0 && f->sh_groups >= 0 &&
	          !f->g.stagger;
	if (cfg->sector_bytes >= f->g.page_bytes) {
		f->lpns_per_sec = cfg->sector_bytes / f->g.page_bytes;
		f->lpns -= f->lpns % f->lpns_per_sec;
		f->sectors = f->lpns / f->lpns_per_sec;
	} else {
		f->secs_per_lpn = f->g.page_bytes / cfg->sector_bytes;
		f->sectors = f->lpns * f->secs_per_lpn;
	}
	uint8_t *p = (uint8_t *)ram + align8(sizeof(struct ftl));
	uint64_t pages = (uint64_t)f->g.dies * f->g.blocks * f->g.pages;
	f->l2p = (uint32_t *)p;   p += align8(4 * (size_t)f->lpns);
	f->valid = (uint32_t *)p; p += align8(4 * ((pages + 31) / 32));
	f->sb = (struct ftl_sb *)p; p += align8(sizeof(struct ftl_sb) * f->nsb);
	f->sb_order = (uint32_t *)p; p += align8(4 * (size_t)f->nsb);
	f->refresh = (uint32_t *)p; p += align8(8 * (size_t)f->slots);
	f->bbt = (uint32_t *)p;   p += align8(4 * ((f->g.dies * f->g.blocks + 31) / 32));
	f->bufs = p;
	f->open_sb = FTL_UNMAPPED;
	f->ckpt_region = ftl_ckpt_region(&f->g);
	if (f->cfg.ckpt_pages == FTL_CKPT_AUTO)   /* (off where the geometry cannot hold them) */
		f->cfg.ckpt_pages = ckpt_possible(&f->g, f->lpns) ? 32 * ftl_ckpt_pages_needed(f) : 0;
	for (int i = 0; i < FTL_OPS; i++)
		f->ost[i].buf = -1;
	ftl_map_reset(f);
	f->ready = 1;
	*result = FTL_OK;
	return f;
}

/* Page buffers and operations ------------------------------------------------------------------ */

int ftl_buf_get(struct ftl *f)
{
	for (int i = 0; i < FTL_BUFS; i++)
		if (!f->buf_used[i]) {
			f->buf_used[i] = 1;
			return i;
		}
	return -1;   /* never: the pool has a buffer per operation plus the FTL's own */
}

void ftl_buf_put(struct ftl *f, int i) { if (i >= 0) f->buf_used[i] = 0; }
uint8_t *ftl_buf(struct ftl *f, int i) { return f->bufs + (size_t)i * f->g.page_bytes; }

static void complete_one(struct ftl *f, struct ftl_nand_op *op);

/* A synchronous op's completion (out of the per-page path): its waiter may read a READ's data (GC's
 * trim records, checkpoints, metadata, recovery), so the data is made the CPU's first (ftl_nand.cpu_view). */
__attribute__((noinline, cold)) static void sync_done(struct ftl *f, struct ftl_nand_op *op)
{
	if (op->opcode == FTL_NAND_READ && op->data && f->nand->cpu_view)
		f->nand->cpu_view(op->data, f->g.page_bytes);
	f->ost[op - f->ops].used = 3;
}

/* Take one completion from the device (0: none waiting). */
FTL_HOT_REAP int ftl_reap(struct ftl *f)
{
	struct ftl_nand_op *op = f->poll(f->dev);
	if (!op)
		return 0;
	/* (Stores only where something changes: each is a bus write behind the DMA.) */
	f->in_flight--;
	if (op->opcode == FTL_NAND_PROGRAM)
		f->programs_in_flight--;
	if (op->status == FTL_NAND_POWER)
		f->power_lost = 1;
	if ((op->owner & 0xFF) == OWN_SYNC)
		sync_done(f, op);                /* completed: its waiter takes it */
	else
		complete_one(f, op);             /* (a request's op goes straight back to the pool there) */
	return 1;
}

_Static_assert((FTL_OPS & (FTL_OPS - 1)) == 0, "op_find wraps the pool with a mask");

/* A free op of the pool, taken, with buffer buf (-1 none; completions are taken while there is none). */
FTL_HOT_ISSUE static struct ftl_nand_op *op_find(struct ftl *f, int buf)
{
	for (;;) {
		for (int k = 0; k < FTL_OPS; k++) {
			uint32_t i = (f->op_next + k) & (FTL_OPS - 1);   /* (no rem: the soft CPU divides in ~34 cycles) */
			if (!f->ost[i].used) {
				f->op_next = (i + 1) & (FTL_OPS - 1);
				f->ost[i] = (struct ftl_op_state){ .used = 1, .buf = (int8_t)buf };
				return &f->ops[i];
			}
		}
		ftl_reap(f);
	}
}

struct ftl_nand_op *ftl_op_get(struct ftl *f)
{
	struct ftl_nand_op *op = op_find(f, -1);
	*op = (struct ftl_nand_op){ 0 };
	return op;
}

/* The per-page paths' op (a host page's program or read): every field set once, none cleared first
 * (each store is a bus write behind the DMA), but the tag: a program's caller packs it, a read's comes
 * with its completion. */
FTL_HOT_ISSUE static struct ftl_nand_op *op_page(struct ftl *f, int opcode, uint32_t ppn, uint8_t *data, uint32_t owner,
                                                 uint32_t arg, int buf)
{
	struct ftl_nand_op *op = op_find(f, buf);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	/* opcode, status 0, corrected 0: the op's first word in one store (no memcpy: -fno-builtin calls it) */
	typedef uint32_t __attribute__((may_alias)) op_word;
	*(op_word *)(void *)op = (uint8_t)opcode;
#else
	op->opcode = (uint8_t)opcode;
	op->status = 0;
	op->corrected = 0;
#endif
	if (f->pow2) {                   /* (ftl_ppn_split's, by shifts) */
		op->page = ppn & (f->g.pages - 1);
		op->block = ppn >> f->sh_pages & (f->g.blocks - 1);
		op->die = ppn >> f->sh_pages >> f->sh_blocks;
	} else {
		ftl_ppn_split(f, ppn, &op->die, &op->block, &op->page);
	}
	op->data = data;
	op->owner = (uint16_t)owner;
	op->arg = arg;
	return op;
}

struct ftl_nand_op *ftl_op_at(struct ftl *f, int opcode, uint32_t ppn, uint8_t *data)
{
	struct ftl_nand_op *op = ftl_op_get(f);
	op->opcode = opcode;
	ftl_ppn_split(f, ppn, &op->die, &op->block, &op->page);
	op->data = data;
	return op;
}

FTL_HOT_REAP void ftl_op_put(struct ftl *f, struct ftl_nand_op *op)
{
	int i = op - f->ops;
	if (f->ost[i].buf >= 0) {         /* (a call out of the per-page path only when there is a buffer) */
		ftl_buf_put(f, f->ost[i].buf);
		f->ost[i].buf = -1;
	}
	f->ost[i].used = 0;
}

FTL_HOT_ISSUE int ftl_op_submit(struct ftl *f, struct ftl_nand_op *op)
{
	if (f->power_lost) {
		op->status = FTL_NAND_POWER;
		f->ost[op - f->ops].used = 3;
		return -1;
	}
	if (op->opcode == FTL_NAND_PROGRAM && op->owner != OWN_SYNC)
		f->hot_programs++;
	while (f->submit(f->dev, op)) {
		f->refused = 1;
		ftl_reap(f);
	}
	if (op->opcode == FTL_NAND_PROGRAM)
		f->programs_in_flight++;
	f->ost[op - f->ops].used = 2;
	f->in_flight++;
	if (f->in_flight > f->hot_max)
		f->hot_max = f->in_flight;
	return 0;
}

FTL_DRV_HOT2 void ftl_stats_fold(struct ftl *f)
{
	f->st.nand_reads += f->hot_reads;
	f->st.ecc_corrected += f->hot_corrected;
	f->st.nand_programs += f->hot_programs;
	f->hot_reads = f->hot_corrected = f->hot_programs = 0;
	f->st.max_in_flight = f->hot_max;
}

void ftl_stats_zero(struct ftl *f)
{
	memset(&f->st, 0, sizeof(f->st));
	f->hot_reads = f->hot_corrected = f->hot_programs = f->hot_max = 0;
}

void ftl_drain(struct ftl *f)
{
	while (f->in_flight)
		ftl_reap(f);
}

int ftl_sync_keep(struct ftl *f, struct ftl_nand_op *op)
{
	op->owner = OWN_SYNC;
	if (ftl_op_submit(f, op) == 0)
		while (f->ost[op - f->ops].used != 3)
			ftl_reap(f);
	return op->status;
}

int ftl_sync(struct ftl *f, struct ftl_nand_op *op)
{
	int s = ftl_sync_keep(f, op);
	ftl_op_put(f, op);
	return s;
}

int ftl_read_sync(struct ftl *f, int opcode, uint32_t ppn, uint8_t *buf, uint32_t *arg, int *kind)
{
	struct ftl_nand_op *op = ftl_op_at(f, opcode, ppn, buf);
	int s = ftl_sync_keep(f, op);
	uint32_t a = 0;
	int k = s == FTL_NAND_OK ? ftl_tag_unpack(op->tag, ppn, &a) : 0;
	if (arg)
		*arg = a;
	if (kind)
		*kind = k;
	f->st.nand_reads++;
	f->st.ecc_corrected += op->corrected;
	ftl_op_put(f, op);
	return s;
}

/* A program of ppn still in flight (its data serves reads of it), or NULL. */
FTL_HOT_ISSUE_R static struct ftl_nand_op *in_flight_program(struct ftl *f, uint32_t ppn)
{
	for (int i = 0; f->programs_in_flight && i < FTL_OPS; i++) {
		struct ftl_nand_op *op = &f->ops[i];
		if (f->ost[i].used == 2 && op->opcode == FTL_NAND_PROGRAM && ftl_ppn(f, op->die, op->block, op->page) == ppn)
			return op;
	}
	return NULL;
}

/* Requests -------------------------------------------------------------------------------------- */

/* Bytes of logical page lpn that request r covers: [*off, *off + *len) of the page, at *at in r's buffer. */
static inline __attribute__((always_inline)) void overlap(struct ftl *f, struct ftl_req *r, uint32_t lpn, uint32_t *off, uint32_t *len, uint32_t *at)
{
	uint64_t P = f->g.page_bytes, lo = (uint64_t)r->sector * f->cfg.sector_bytes;
	uint64_t hi = lo + (uint64_t)r->count * f->cfg.sector_bytes, plo = lpn * P, phi = plo + P;
	uint64_t a = lo > plo ? lo : plo, b = hi < phi ? hi : phi;
	*off = a - plo;
	*len = b - a;
	*at = a - lo;
}

/* overlap() where sectors hold whole logical pages (f->lpns_per_sec): every page whole, no 64-bit
 * products (the per-page paths' common case). */
static inline __attribute__((always_inline)) void overlap_page(struct ftl *f, struct ftl_req *r, uint32_t lpn, uint32_t *off, uint32_t *len, uint32_t *at)
{
	if (f->lpns_per_sec) {
		*off = 0;
		*len = f->g.page_bytes;
		*at = (lpn - r->sector * f->lpns_per_sec) * f->g.page_bytes;
	} else {
		overlap(f, r, lpn, off, len, at);
	}
}

FTL_HOT_ISSUE static void lpn_range(struct ftl *f, struct ftl_req *r, uint32_t *first, uint32_t *end)
{
	/* In sectors (sector and page sizes are multiples: ftl_init), no 64-bit division (a libgcc call). */
	if (f->lpns_per_sec) {
		*first = r->sector * f->lpns_per_sec;
		*end = (r->sector + r->count) * f->lpns_per_sec;
	} else {
		*first = r->sector / f->secs_per_lpn;
		*end = (r->sector + r->count + f->secs_per_lpn - 1) / f->secs_per_lpn;
	}
}

static void req_fail(struct ftl_req *r, int result)
{
	if (r->result == FTL_OK)
		r->result = result;
}

/* A logical page's mapping before a write (prev, and the seq of the superblock it names then) still
 * names what it did: that superblock has not been reopened (erased) since; it is kept from now. */
static int prev_intact(struct ftl *f, uint32_t prev, uint32_t seq)
{
	if (!ftl_is_ppn(prev) && !ftl_is_trim_ref(prev))
		return 1;
	uint32_t sb = ftl_ppn_sb(f, prev & ~FTL_TRIMMED);
	if (f->sb[sb].seq != seq || (f->sb[sb].state != SB_CLOSED && f->sb[sb].state != SB_OPEN && f->sb[sb].state != SB_DIRTY))
		return 0;
	if (f->sb[sb].state == SB_DIRTY) {
		/* Collected meanwhile but not reopened: it holds the copy still, and leaves the free pool. */
		f->sb[sb].state = SB_CLOSED;
		f->free_count--;
	}
	return 1;
}

/* A program failed: the block went bad. Retire it later (not from here); 1 when the page is to be
 * programmed again elsewhere (the op's data buffer goes with the retry). */
__attribute__((noinline, cold)) static int program_failed(struct ftl *f, struct ftl_nand_op *op)
{
	int kind = op->owner & 0xFF, slot = op->owner >> 8, i = op - f->ops;
	uint32_t lpn = op->arg;
	if (f->nretire < 8) {
		f->retire_die[f->nretire] = op->die;
		f->retire_block[f->nretire++] = op->block;
	}
	uint32_t ppn = ftl_ppn(f, op->die, op->block, op->page);
	if (kind != OWN_TRIM_PROG && ftl_map_get(f, lpn) != ppn)
		return 0;
	f->retry_lpn[f->nretry] = kind == OWN_TRIM_PROG ? FTL_UNMAPPED : lpn;
	f->retry_from[f->nretry] = kind == OWN_TRIM_PROG ? FTL_TRIMMED | ppn : ppn;
	f->retry_req[f->nretry] = slot;
	f->retry_buf[f->nretry++] = f->ost[i].buf;
	f->ost[i].buf = -1;
	/* The failed page holds nothing: the retry's copy replaces it (and the block's relocation skips it).
	 * Meanwhile the logical page has its previous copy back, valid again so that GC keeps it: if the
	 * retry finds no room, the write fails and the page still reads what it held. (Intact: GC drains
	 * every operation, this completion among them, before it collects a superblock.) */
	ftl_valid_set(f, ppn, 0);
	if (kind != OWN_TRIM_PROG && prev_intact(f, f->op_prev[i], f->op_prev_seq[i]))
		ftl_map_set(f, lpn, f->op_prev[i]);
	return 1;
}

/* A request's read came back (complete_one): counted; its data, for a partial page, into the request. */
__attribute__((noinline)) FTL_HOT_REAP_R static void complete_read(struct ftl *f, struct ftl_nand_op *op, struct ftl_req *r)
{
	int i = op - f->ops;
	f->hot_reads++;
	f->hot_corrected += op->corrected;
	if (op->status == FTL_NAND_POWER) {
		req_fail(r, FTL_E_POWER);
	} else if (op->status != FTL_NAND_OK) {
		f->st.uncorrectable++;
		req_fail(r, FTL_E_UNCORRECTABLE);
	} else if (f->ost[i].buf >= 0) {
		uint32_t off, len, at;
		overlap(f, r, op->arg, &off, &len, &at);
		if (f->nand->cpu_view)
			f->nand->cpu_view(ftl_buf(f, f->ost[i].buf) + off, len);
		memcpy(r->buf + at, ftl_buf(f, f->ost[i].buf) + off, len);
	}
}

FTL_HOT_REAP static void complete_one(struct ftl *f, struct ftl_nand_op *op)
{
	int kind = op->owner & 0xFF, slot = op->owner >> 8;
	if (kind == OWN_SYNC)
		return;                      /* its waiter takes it */
	struct ftl_req *r = f->reqs[slot];
	if (op->opcode == FTL_NAND_READ) {
		complete_read(f, op, r);
	} else if (op->status == FTL_NAND_POWER) {
		req_fail(r, FTL_E_POWER);
	} else if (op->opcode == FTL_NAND_PROGRAM && op->status == FTL_NAND_FAIL) {
		if (program_failed(f, op))
			return ftl_op_put(f, op);    /* still pending: programmed again elsewhere */
	}
	r->pending--;
	ftl_op_put(f, op);
}

/* A trim record's program: its tag, and the pages it unmaps (program_lpn; out of the per-page path). */
__attribute__((noinline, cold)) static void map_trim_record(struct ftl *f, struct ftl_nand_op *op, const uint8_t *data,
                                                            uint32_t ppn, uint32_t from)
{
	uint32_t lo, n;
	memcpy(&lo, data, 4);
	memcpy(&n, data + 4, 4);
	ftl_tag_pack(op->tag, op->arg, TAG_TRIM, ppn);
	for (uint32_t l = lo; l < lo + n && l < f->lpns; l++)
		if (from == FTL_UNMAPPED || ftl_map_get(f, l) == from)
			ftl_map_set(f, l, FTL_TRIMMED | ppn);
	ftl_valid_set(f, ppn, 1);
}

/* Program `data` as logical page lpn of request slot (data kept in buffer `buf` when >= 0); a trim
 * record (kind OWN_TRIM_PROG, data {first, count}) names the pages it unmaps: all of them, or with
 * `from` a failed record's reference, those still naming that one. */
FTL_HOT_W static int program_lpn(struct ftl *f, int slot, uint32_t lpn, uint8_t *data, int buf, int kind, uint32_t from)
{
	uint32_t ppn;
	int r = ftl_alloc(f, &ppn);
	if (r) {
		ftl_buf_put(f, buf);         /* the op would have owned it: no op, so it goes back here */
		return r;
	}
	struct ftl_nand_op *op = op_page(f, FTL_NAND_PROGRAM, ppn, data, kind | slot << 8, lpn, buf);
	uint32_t i = op - f->ops;
	if (kind == OWN_TRIM_PROG) {
		map_trim_record(f, op, data, ppn, from);
	} else {
		ftl_tag_pack(op->tag, lpn, TAG_DATA, ppn);
		ftl_map_program(f, lpn, ppn, &f->op_prev[i], &f->op_prev_seq[i]);
	}
	f->reqs[slot]->pending++;
	return ftl_op_submit(f, op) ? FTL_E_POWER : FTL_OK;
}

/* The current contents of logical page lpn into buf (zeros when unmapped). */
static int read_lpn_sync(struct ftl *f, uint32_t lpn, uint8_t *buf)
{
	uint32_t ppn = ftl_map_get(f, lpn);
	if (ftl_reads_zero(ppn)) {
		memset(buf, 0, f->g.page_bytes);
		return FTL_OK;
	}
	if (ppn == FTL_LOST)
		return FTL_E_UNCORRECTABLE;
	struct ftl_nand_op *w = in_flight_program(f, ppn);
	if (w) {
		memcpy(buf, w->data, f->g.page_bytes);
		return FTL_OK;
	}
	int s = ftl_read_sync(f, FTL_NAND_READ, ppn, buf, NULL, NULL);
	f->st.rmw_reads++;
	if (s == FTL_NAND_POWER)
		return FTL_E_POWER;
	if (s != FTL_NAND_OK) {
		f->st.uncorrectable++;
		return FTL_E_UNCORRECTABLE;
	}
	return FTL_OK;
}

/* Write one logical page of request slot: directly from the request's buffer when it covers the
 * page, by read-modify-write otherwise (zeros for a trim's partial pages). */
static int rmw_lpn(struct ftl *f, int slot, uint32_t lpn, int zeros, uint32_t off, uint32_t len, uint32_t at);

__attribute__((noinline)) FTL_HOT_W static int issue_write_lpn(struct ftl *f, int slot, uint32_t lpn, int zeros)
{
	struct ftl_req *r = f->reqs[slot];
	uint32_t off, len, at;
	overlap_page(f, r, lpn, &off, &len, &at);
	if (len == f->g.page_bytes && !zeros)
		return program_lpn(f, slot, lpn, r->buf + at, -1, OWN_REQ_WRITE, 0);
	return rmw_lpn(f, slot, lpn, zeros, off, len, at);
}

/* A partial page (or a trim's): read, modify, program (out of the whole-page path). */
__attribute__((noinline, cold)) static int rmw_lpn(struct ftl *f, int slot, uint32_t lpn, int zeros, uint32_t off,
                                                   uint32_t len, uint32_t at)
{
	struct ftl_req *r = f->reqs[slot];
	int b = ftl_buf_get(f), res = read_lpn_sync(f, lpn, ftl_buf(f, b));
	if (res) {
		ftl_buf_put(f, b);
		return res;
	}
	if (zeros)
		memset(ftl_buf(f, b) + off, 0, len);
	else
		memcpy(ftl_buf(f, b) + off, r->buf + at, len);
	return program_lpn(f, slot, lpn, ftl_buf(f, b), b, OWN_REQ_WRITE, 0);
}

__attribute__((noinline)) FTL_HOT_ISSUE_R static int issue_read_lpn(struct ftl *f, int slot, uint32_t lpn)
{
	struct ftl_req *r = f->reqs[slot];
	uint32_t off, len, at, ppn = ftl_map_get(f, lpn);
	overlap_page(f, r, lpn, &off, &len, &at);
	if (ftl_reads_zero(ppn)) {
		memset(r->buf + at, 0, len);
		return FTL_OK;
	}
	if (ppn == FTL_LOST) {
		req_fail(r, FTL_E_UNCORRECTABLE);
		return FTL_OK;
	}
	struct ftl_nand_op *w = f->programs_in_flight ? in_flight_program(f, ppn) : NULL;
	if (w) {
		memcpy(r->buf + at, w->data + off, len);
		return FTL_OK;
	}
	struct ftl_nand_op *op = op_page(f, FTL_NAND_READ, ppn, r->buf + at, OWN_REQ_READ | slot << 8, lpn, -1);
	if (len != f->g.page_bytes) {
		f->ost[op - f->ops].buf = ftl_buf_get(f);
		op->data = ftl_buf(f, f->ost[op - f->ops].buf);
	}
	r->pending++;
	return ftl_op_submit(f, op) ? FTL_E_POWER : FTL_OK;
}

/* A trim: whole logical pages unmapped by one trim record (they name it from its allocation on),
 * partial ones zeroed. */
static int issue_trim(struct ftl *f, int slot)
{
	struct ftl_req *r = f->reqs[slot];
	uint32_t first, end, lo = FTL_UNMAPPED, n = 0;
	lpn_range(f, r, &first, &end);
	for (uint32_t l = first; l < end; l++) {
		uint32_t off, len, at;
		overlap(f, r, l, &off, &len, &at);
		if (len < f->g.page_bytes) {
			int res = issue_write_lpn(f, slot, l, 1);
			if (res)
				return res;
			continue;
		}
		if (lo == FTL_UNMAPPED)
			lo = l;
		n++;
	}
	if (!n)
		return FTL_OK;
	int b = ftl_buf_get(f);
	uint8_t *page = ftl_buf(f, b);
	memset(page, 0xFF, f->g.page_bytes);
	memcpy(page, &lo, 4);
	memcpy(page + 4, &n, 4);
	return program_lpn(f, slot, 1, page, b, OWN_TRIM_PROG, FTL_UNMAPPED);
}

FTL_HOT static void finish(struct ftl *f, int slot)
{
	const struct ftl_req *r = f->reqs[slot];
	if (r->op == FTL_REQ_READ && f->nand->cpu_view)       /* (its pages' DMA into the caller's buffer) */
		f->nand->cpu_view(r->buf, r->count * f->cfg.sector_bytes);
	f->done[f->ndone++] = f->reqs[slot];
	f->reqs[slot] = NULL;
	while (f->req_end && !f->reqs[f->req_end - 1])
		f->req_end--;
}

/* Deferred work of completions: retire bad blocks, program failed pages again. A device without
 * room left (FTL_E_FULL) fails only the writes whose pages could not be programmed again; a retired
 * block whose pages cannot be moved keeps them readable (GC and mount read bad members' pages too).
 * Anything else it returns fails every request. (Out of the per-page path: it runs only after a failure.) */
__attribute__((noinline, cold)) static int handle_failures(struct ftl *f)
{
	int res = FTL_OK;
	if (f->power_lost) {
		/* Nothing more is programmed: the requests end with the power (their retries dropped). */
		while (f->nretry)
			ftl_buf_put(f, f->retry_buf[--f->nretry]);
		f->nretire = 0;
		return FTL_E_POWER;
	}
	while (f->nretire && res == FTL_OK) {
		f->nretire--;
		ftl_retire_member(f, f->retire_die[f->nretire], f->retire_block[f->nretire]);
		res = ftl_anchor_write(f);
		if (res == FTL_OK)
			res = ftl_relocate_retired(f, f->retire_die[f->nretire], f->retire_block[f->nretire]);
		if (res == FTL_E_FULL)
			res = FTL_OK;
	}
	while (f->nretry && res == FTL_OK) {
		uint32_t k = --f->nretry, slot = f->retry_req[k], lpn = f->retry_lpn[k], from = f->retry_from[k];
		struct ftl_req *r = f->reqs[slot];
		int b = f->retry_buf[k];
		r->pending--;
		if (lpn == FTL_UNMAPPED) {
			uint32_t lo, n;
			memcpy(&lo, ftl_buf(f, b), 4);
			memcpy(&n, ftl_buf(f, b) + 4, 4);
			res = program_lpn(f, slot, 1, ftl_buf(f, b), b, OWN_TRIM_PROG, from);
			/* Not recorded: the pages keep no reference to the failed record (the trim failed). */
			for (uint32_t l = lo; res && res != FTL_E_POWER && l < lo + n && l < f->lpns; l++)
				if (ftl_map_get(f, l) == from)
					ftl_map_set(f, l, FTL_UNMAPPED);
		} else {
			uint32_t off, len, at;
			overlap(f, r, lpn, &off, &len, &at);
			res = program_lpn(f, slot, lpn, b >= 0 ? ftl_buf(f, b) : r->buf + at, b, OWN_REQ_WRITE, 0);
			/* Not programmed again and no previous copy to go back to: nothing readable, which reads report. */
			if (res && res != FTL_E_POWER && ftl_map_get(f, lpn) == from)
				ftl_map_set(f, lpn, FTL_LOST);
		}
		if (res == FTL_E_FULL) {
			req_fail(r, res);
			res = FTL_OK;
		}
	}
	return res;
}

/* A flush or a trim (issue(), out of the per-page path): 1 when a flush must wait for the requests
 * before it, else its result. */
__attribute__((noinline, cold)) static int issue_flush_trim(struct ftl *f, int slot, uint32_t end)
{
	struct ftl_req *r = f->reqs[slot];
	int res;
	if (r->op == FTL_REQ_FLUSH) {
		for (int i = 0; i < FTL_MAX_REQUESTS; i++)
			if (i < f->req_end && f->reqs[i] && f->reqs[i]->order < r->order)
				return 1;        /* everything before it first */
		res = f->cfg.ckpt_flush && f->cfg.ckpt_pages ? ftl_checkpoint(f) : FTL_OK;
		if (res == FTL_OK)
			res = ftl_anchor_write(f);
	} else {
		res = issue_trim(f, slot);
	}
	r->next_lpn = end;
	return res;
}

/* Issue what request slot can now; 1 when it has issued everything. */
FTL_HOT static int issue(struct ftl *f, int slot)
{
	struct ftl_req *r = f->reqs[slot];
	uint32_t first, end;
	int res = FTL_OK;
	if (r->issued_all)
		return 1;
	lpn_range(f, r, &first, &end);
	if (r->op == FTL_REQ_FLUSH || r->op == FTL_REQ_TRIM) {
		res = issue_flush_trim(f, slot, end);
		if (res > 0)
			return 0;            /* a flush waits for everything before it */
	}
	/* Until the device's queue is full: ftl_poll then takes every completion waiting before it issues
	 * more, so that the soft CPU runs each path many times in a row (see ftl_poll), not one page each. */
	while (res == FTL_OK && r->next_lpn < end && f->in_flight < FTL_OPS - 2 && !f->refused) {
		res = r->op == FTL_REQ_WRITE ? issue_write_lpn(f, slot, r->next_lpn, 0) : issue_read_lpn(f, slot, r->next_lpn);
		r->next_lpn++;
	}
	if (res)
		req_fail(r, res);
	if (res || r->next_lpn >= end)
		r->issued_all = 1;
	return r->issued_all;
}

FTL_DRV_HOT2 int ftl_submit(struct ftl *f, struct ftl_req *r)
{
	if (!f->ready || !f->mounted)
		return FTL_E_NOT_MOUNTED;
	if (r->op > FTL_REQ_FLUSH)
		return ftl_set_error(f, FTL_E_CONFIG, "request operation %u unknown", r->op);
	if (r->op != FTL_REQ_FLUSH) {
		if (r->sector >= f->sectors || r->count > f->sectors - r->sector)
			return ftl_set_error(f, FTL_E_RANGE, "sectors %u..%u outside the device's %u", r->sector,
			                     r->sector + r->count - 1, f->sectors);
		if (r->op != FTL_REQ_TRIM && ((uintptr_t)r->buf & (FTL_BUF_ALIGN - 1)))
			return ftl_set_error(f, FTL_E_ALIGN, "buffer at %p: requests need %u-byte aligned buffers (DMA)",
			                     (void *)r->buf, FTL_BUF_ALIGN);
		if ((uint64_t)r->count * f->cfg.sector_bytes > FTL_MAX_SECTORS_BYTES)
			return ftl_set_error(f, FTL_E_TOO_BIG, "%u sectors: a request moves at most %u bytes", r->count,
			                     FTL_MAX_SECTORS_BYTES);
	}
	for (int i = 0; i < FTL_MAX_REQUESTS; i++)
		if (!f->reqs[i]) {
			f->reqs[i] = r;
			if (i >= f->req_end)
				f->req_end = i + 1;
			r->result = FTL_OK;
			r->pending = r->issued_all = 0;
			r->order = f->order++;
			r->t_submit_us = f->nand->now_us(f->nand->dev);
			uint32_t first, end;
			lpn_range(f, r, &first, &end);
			r->next_lpn = first;
			if (r->op == FTL_REQ_WRITE) {
				f->st.host_writes++;
				f->st.host_write_sectors += r->count;
				f->st.host_page_writes += end - first;
			} else if (r->op == FTL_REQ_READ) {
				f->st.host_reads++;
				f->st.host_read_sectors += r->count;
			} else if (r->op == FTL_REQ_TRIM) {
				f->st.host_trims++;
			}
			return FTL_OK;
		}
	return FTL_E_BUSY;
}

FTL_DRV_HOT2 static int dev_submit(void *f, struct ftl_req *r) { return ftl_submit(f, r); }
FTL_DRV_HOT2 static struct ftl_req *dev_poll(void *f) { return ftl_poll(f); }
static uint32_t dev_in_flight(void *f) { return ftl_in_flight(f); }

int ftl_lpn_mapped(const struct ftl *f, uint32_t lpn)
{
	return f->ready && lpn < f->lpns && ftl_is_ppn(f->l2p[lpn]);
}

/* Sectors of mapped logical pages the host never wrote (RMW filled them with zeros). */
static uint64_t dev_unusable(void *ctx, const uint8_t *written)
{
	struct ftl *f = ctx;
	uint64_t n = 0;
	if (f->secs_per_lpn < 1)
		return 0;                    /* (sectors larger than pages: a page is never part-written) */
	for (uint32_t l = 0; l < f->lpns; l++)
		if (ftl_is_ppn(f->l2p[l]))
			for (uint32_t k = 0, s = l * f->secs_per_lpn; k < f->secs_per_lpn && s < f->sectors; k++, s++)
				n += !written[s];
	return n;
}

void ftl_as_dev(struct ftl *f, struct ftl_dev *d)
{
	d->unusable = dev_unusable;
	d->ctx = f;
	d->submit = dev_submit;
	d->poll = dev_poll;
	d->in_flight = dev_in_flight;
	d->sectors = ftl_sectors(f);
	d->sector_bytes = f->cfg.sector_bytes;
	d->ftls[0] = f;
	d->ftls[1] = NULL;
}

int ftl_discard(struct ftl *f, uint32_t sector, uint32_t count)
{
	if (!f->ready || !f->mounted)
		return FTL_E_NOT_MOUNTED;
	uint64_t lo = (uint64_t)sector * f->cfg.sector_bytes, hi = lo + (uint64_t)count * f->cfg.sector_bytes;
	if (sector >= f->sectors || count > f->sectors - sector)
		return ftl_set_error(f, FTL_E_RANGE, "sectors %u..%u outside the device's %u", sector, sector + count - 1,
		                     f->sectors);
	if (lo % f->g.page_bytes || hi % f->g.page_bytes)
		return ftl_set_error(f, FTL_E_RANGE, "discard of sectors %u..%u: whole logical pages only", sector,
		                     sector + count - 1);
	for (uint64_t l = lo / f->g.page_bytes; l < hi / f->g.page_bytes; l++)
		ftl_map_set(f, (uint32_t)l, FTL_UNMAPPED);
	return FTL_OK;
}

/* The periodic checkpoint, once nothing is in flight and no failure waits (its map is then the
 * flash's); requests already issued complete first, new ones wait. */
__attribute__((noinline, cold)) static int checkpoint_now(struct ftl *f)
{
	int res = FTL_OK;
	while (res == FTL_OK && !f->power_lost && (f->in_flight || f->nretire || f->nretry)) {
		ftl_drain(f);
		if (f->nretire || f->nretry)
			res = handle_failures(f);
	}
	if (res == FTL_OK && !f->power_lost)
		res = ftl_checkpoint(f);
	return f->power_lost ? FTL_E_POWER : res;
}

/* ftl_poll's deferred work, when there is some (out of the per-page path): failures, then a due checkpoint. */
__attribute__((noinline, cold)) static void deferred_work(struct ftl *f)
{
	if ((f->nretire || f->nretry) && handle_failures(f)) {
		for (int i = 0; i < f->req_end; i++)
			if (f->reqs[i])
				req_fail(f->reqs[i], f->power_lost ? FTL_E_POWER : FTL_E_IO);
	}
	if (f->ckpt_due && !f->power_lost && checkpoint_now(f)) {
		for (int i = 0; i < f->req_end; i++)
			if (f->reqs[i])
				req_fail(f->reqs[i], f->power_lost ? FTL_E_POWER : FTL_E_IO);
	}
}

FTL_DRV_HOT5 struct ftl_req *ftl_poll(struct ftl *f)
{
	if (!f->ready)
		return NULL;
	while (ftl_reap(f))
		;
	if (f->nretire || f->nretry || (f->ckpt_due && !f->power_lost))
		deferred_work(f);
	/* New pages go out in batches, once half the operations have come back: the issue path and the
	 * completion path then each run many times in a row, and the soft CPU's 4 KiB instruction cache
	 * holds the one running instead of losing both to each other every page. */
	f->refused = 0;
	for (uint32_t o = 0, issued = f->in_flight <= FTL_OPS / 2; issued; o++) {
		/* Oldest first: requests are issued in submission order. */
		int best = -1;
		for (int i = 0; i < f->req_end; i++)
			if (f->reqs[i] && !f->reqs[i]->issued_all && (best < 0 || f->reqs[i]->order < f->reqs[best]->order))
				best = i;
		issued = best >= 0 && issue(f, best);
		if (f->power_lost)
			break;
	}
	for (int i = 0; i < f->req_end; i++) {
		struct ftl_req *r = f->reqs[i];
		if (r && ((r->issued_all && !r->pending) || (f->power_lost && !f->in_flight))) {
			if (f->power_lost)
				req_fail(r, FTL_E_POWER);
			finish(f, i);
		}
	}
	if (!f->ndone)
		return NULL;
	ftl_stats_fold(f);               /* (per request returned: the 32-bit counts never wrap) */
	struct ftl_req *r = f->done[0];
	memmove(f->done, f->done + 1, --f->ndone * sizeof(*f->done));
	return r;
}

static int run(struct ftl *f, struct ftl_req *r)
{
	int res = ftl_submit(f, r);
	if (res)
		return res;
	for (;;) {
		struct ftl_req *d = ftl_poll(f);
		if (d == r)
			return r->result;
	}
}

int ftl_write(struct ftl *f, uint32_t sector, uint32_t count, const void *buf)
{
	struct ftl_req r = { .op = FTL_REQ_WRITE, .sector = sector, .count = count, .buf = (uint8_t *)buf };
	return run(f, &r);
}

int ftl_read(struct ftl *f, uint32_t sector, uint32_t count, void *buf)
{
	struct ftl_req r = { .op = FTL_REQ_READ, .sector = sector, .count = count, .buf = buf };
	return run(f, &r);
}

int ftl_trim(struct ftl *f, uint32_t sector, uint32_t count)
{
	struct ftl_req r = { .op = FTL_REQ_TRIM, .sector = sector, .count = count };
	return run(f, &r);
}

int ftl_flush(struct ftl *f)
{
	struct ftl_req r = { .op = FTL_REQ_FLUSH };
	return run(f, &r);
}

void ftl_get_stats(const struct ftl *f, struct ftl_stats *s)
{
	ftl_stats_fold((struct ftl *)f);
	ftl_erase_stats((struct ftl *)f);
	*s = f->st;
}
