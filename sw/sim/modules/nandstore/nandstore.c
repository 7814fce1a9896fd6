/* nandstore: a litex_sim module holding the emulated NAND dies' arrays outside the Verilated model.
 *
 * It serves the die storage backend "sim" (nand_model/die/storage.py, NandLabDieSimStorage): the
 * capacity of the dies then costs the simulator neither build time nor memory, only the pages that
 * are not erased do.
 *
 * One instance serves every die of every channel: its interfaces are the pad groups
 * ("nand_storage", i), i the die's index over all channels (channel x dies per channel + die). One
 * instance rather than one per die because the device is one thing to the host: an image file
 * holds every die, saved or loaded at one point of simulated time with one geometry check, through
 * one control port, with one count of the memory in use. Its tick is a loop over the dies reading
 * two enables, nothing more while they are idle.
 *
 * Pads of a die (the die drives all but rd_data): rd_en, rd_adr, rd_data[31:0], wr_en, wr_adr,
 * wr_data[31:0], and er_en when the die is built with sim_fast_erase (the block whose first word is
 * at rd_adr is erased in that cycle: its pages are freed at once); an address is a 32-bit word of the die's array, page index (block x pages per
 * block + page) x page words + word, a page being its data and spare bytes rounded up to words,
 * byte 0 of the page in bits 7:0 of word 0.
 *
 * Timing (what NandLabDieSimStorage relies on for the block RAM port's timing): litex_sim calls
 * tick() after each evaluation of the model. After the evaluation of a rising edge of sys_clk, the
 * pads the die drives are settled for the cycle just begun (they come from the die's registers,
 * not from anything a module drives). Then, per die, the module applies the cycle's write and,
 * if rd_en, drives rd_data with the word at rd_adr, write included; the next evaluation (the
 * falling edge) propagates it and the die registers it at the next rising edge: a synchronous
 * read, one cycle, and a word written in the read's cycle is seen, as the simulated block RAM's
 * registered read address shows it. rd_data changes only when a word is read (an idle die's
 * idle gate sees no input change).
 *
 * Pad widths: Verilator makes a port of 1-8 bits a CData (uint8_t), 9-16 an SData (uint16_t),
 * 17-32 an IData (uint32_t), 33-64 a QData (uint64_t), wider a VlWide array; litex_sim hands the
 * port's address and its width (pad_s.len). Each pad is accessed through the type of its width;
 * the widths are checked against the geometry when the pads are added (an address of another
 * width means the simulator was built for another geometry than the arguments say).
 *
 * Sparse array: per die a table of blocks; a block (its page pointers) is allocated with its first
 * page that is not erased, a page (its words and how many of them are not FFFFFFFFh) with its first
 * word that is not FFFFFFFFh, and each is freed when it holds nothing else: an erase writes
 * FFFFFFFFh over every word of the block, which frees its pages and the block. Erased words read
 * FFFFFFFFh. Factory bad-block markers (argument "markers": [[die, word, value], ...], from
 * nand_model.die.common.bad_block_markers) are ANDed into the array at start and after each image
 * load; a bad block can be neither programmed nor erased, so they stay as the block RAM's.
 *
 * Reset: nothing here is reset with the SoC. The SoC reset (LiteX's ctrl_reset soc_rst: the CRG's
 * sys reset, the firmware's or host's "power cut") resets the dies' logic; the arrays live as long
 * as the simulator process, as a NAND chip keeps its contents over a power cycle.
 *
 * Image file (little-endian), only the pages that are not erased:
 *   header, 64 bytes: magic "NLNANDIM", u32 format version (1), u32 header bytes (64), u32 dies,
 *   u32 blocks per die, u32 pages per block, u32 page data bytes, u32 spare bytes, u32 bytes per
 *   page record (the page's words, 4 x page words), u64 page records, 16 bytes zero;
 *   then per page: u32 die, u32 page index in the die (block x pages per block + page), the page.
 * An image of another geometry (any of the five numbers) is refused, naming what differs; a load
 * that fails leaves the arrays as they were. sw/host/nandlab/nandimage.py reads the same format.
 *
 * Control (argument "port"): TCP on 127.0.0.1, one request a line, one line back ("ok ..." or
 * "error: ..."): "save PATH" (written to PATH.tmp, then renamed), "load PATH", "stats". Requests
 * run between batches of simulated cycles, so a save is the arrays at one cycle (an array
 * operation in progress is saved as far as it got) and a load replaces them at one cycle (a die in
 * the middle of an array operation finishes it on the loaded arrays: load while the dies are idle).
 * Relative paths are the simulator's run directory's; the nandlab CLI sends absolute ones.
 *
 * Arguments (sim_config.js): {"dies", "blocks", "pages", "page_size", "spare_size", "markers",
 * "port" (0: no control port), "image" (optional: loaded before the first cycle)}.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <event2/listener.h>
#include <event2/bufferevent.h>
#include <event2/buffer.h>
#include <event2/util.h>
#include <event2/event.h>
#include <json-c/json.h>

#include "error.h"
#include "modules.h"

#define ERASED       0xFFFFFFFFu
#define MAGIC        "NLNANDIM"
#define VERSION      1u
#define HEADER_BYTES 64u
#define MSG          (PATH_MAX + 512)

struct sig_s {
	void *p;
	unsigned bytes;               /* 1, 2, 4 or 8: the Verilator type of the port's width */
};

struct page_s {
	uint32_t used;                /* words that are not FFFFFFFFh */
	uint32_t w[];
};

struct block_s {
	uint32_t used;                /* pages allocated */
	struct page_s *page[];
};

struct geometry_s {
	uint32_t dies, blocks, pages, page_size, spare_size, page_words;
};

/* Every die's blocks (dies x blocks pointers, NULL for an erased block) and how much they hold. */
struct array_s {
	struct block_s **block;
	uint64_t pages, blocks;
};

struct die_s {
	struct sig_s rd_en, rd_adr, rd_data, wr_en, wr_adr, wr_data, er_en;   /* er_en.p NULL: no such pad */
	int bound;                    /* its pads were added */
	uint64_t hit_base, hit_page;  /* the page of its last access: first word address and index */
};

struct marker_s {
	uint32_t die, value;
	uint64_t word;
};

struct session_s {
	struct geometry_s g;
	uint64_t words;               /* words per die */
	unsigned adr_bits;
	struct array_s a;
	struct die_s *die;
	struct marker_s *markers;
	size_t nmarkers;
	char *sys_clk;
	int last_clk, checked;
	uint64_t words_read, words_written, blocks_erased;
	struct evconnlistener *listener;
};

static struct event_base *base;

/* Pads ------------------------------------------------------------------------------------------- */

static uint64_t sig_get(const struct sig_s *s)
{
	switch (s->bytes) {
	case 1:  return *(uint8_t *)s->p;
	case 2:  return *(uint16_t *)s->p;
	case 4:  return *(uint32_t *)s->p;
	default: return *(uint64_t *)s->p;
	}
}

static void sig_set(const struct sig_s *s, uint64_t v)
{
	switch (s->bytes) {
	case 1:  *(uint8_t *)s->p = (uint8_t)v; break;
	case 2:  *(uint16_t *)s->p = (uint16_t)v; break;
	case 4:  *(uint32_t *)s->p = (uint32_t)v; break;
	default: *(uint64_t *)s->p = v; break;
	}
}

static int sig_bind(struct sig_s *s, struct pad_s *pads, const char *name, unsigned width, int die)
{
	for (int i = 0; pads[i].name; i++) {
		if (strcmp(pads[i].name, name))
			continue;
		if (pads[i].len != width) {
			fprintf(stderr, "[nandstore] die %d: pad %s has %zu bits, the geometry gives %u: the simulator "
			        "was built for another geometry than sim_config.js gives\n", die, name, pads[i].len, width);
			return RC_INVARG;
		}
		s->p = pads[i].signal;
		s->bytes = width <= 8 ? 1 : width <= 16 ? 2 : width <= 32 ? 4 : 8;
		return RC_OK;
	}
	fprintf(stderr, "[nandstore] die %d: no pad %s\n", die, name);
	return RC_INVARG;
}

/* The sparse array ------------------------------------------------------------------------------ */

static struct block_s **slot(const struct geometry_s *g, const struct array_s *a, uint32_t d, uint64_t pi)
{
	return &a->block[(uint64_t)d * g->blocks + pi / g->pages];
}

static struct page_s *find(const struct geometry_s *g, const struct array_s *a, uint32_t d, uint64_t pi)
{
	struct block_s *b = *slot(g, a, d, pi);
	return b ? b->page[pi % g->pages] : NULL;
}

/* Page `pi` of die `d`, allocated erased if it was not stored; NULL: out of memory. */
static struct page_s *make(const struct geometry_s *g, struct array_s *a, uint32_t d, uint64_t pi)
{
	struct block_s **bp = slot(g, a, d, pi);
	struct page_s **pp;
	if (!*bp) {
		if (!(*bp = calloc(1, sizeof(struct block_s) + g->pages * sizeof(struct page_s *))))
			return NULL;
		a->blocks++;
	}
	pp = &(*bp)->page[pi % g->pages];
	if (!*pp) {
		if (!(*pp = malloc(sizeof(struct page_s) + 4u * (size_t)g->page_words)))
			return NULL;
		memset((*pp)->w, 0xFF, 4u * (size_t)g->page_words);
		(*pp)->used = 0;
		(*bp)->used++;
		a->pages++;
	}
	return *pp;
}

/* Frees page `pi` of die `d` (it holds only FFFFFFFFh), and its block with its last page. */
static void drop(const struct geometry_s *g, struct array_s *a, uint32_t d, uint64_t pi)
{
	struct block_s **bp = slot(g, a, d, pi);
	free((*bp)->page[pi % g->pages]);
	(*bp)->page[pi % g->pages] = NULL;
	a->pages--;
	if (--(*bp)->used == 0) {
		free(*bp);
		*bp = NULL;
		a->blocks--;
	}
}

/* Word `w` of page `pi` of die `d` becomes `v`; -1: out of memory. */
static int store(const struct geometry_s *g, struct array_s *a, uint32_t d, uint64_t pi, uint32_t w, uint32_t v)
{
	struct page_s *pg = v == ERASED ? find(g, a, d, pi) : make(g, a, d, pi);
	uint32_t old;
	if (!pg)
		return v == ERASED ? 0 : -1;
	old = pg->w[w];
	pg->w[w] = v;
	pg->used = pg->used + (old == ERASED) - (v == ERASED);
	if (!pg->used)
		drop(g, a, d, pi);
	return 0;
}

/* Block `b` of die `d` erased: its pages freed. Bad blocks never get here (the die refuses to erase
 * them), so their markers stay. */
static void erase_block(const struct geometry_s *g, struct array_s *a, uint32_t d, uint64_t b)
{
	struct block_s **bp = &a->block[(uint64_t)d * g->blocks + b];
	if (!*bp)
		return;
	for (uint32_t p = 0; p < g->pages; p++)
		if ((*bp)->page[p]) {
			free((*bp)->page[p]);
			a->pages--;
		}
	free(*bp);
	*bp = NULL;
	a->blocks--;
}

static void free_array(const struct geometry_s *g, struct array_s *a)
{
	for (uint64_t b = 0; a->block && b < (uint64_t)g->dies * g->blocks; b++) {
		if (!a->block[b])
			continue;
		for (uint32_t p = 0; p < g->pages; p++)
			free(a->block[b]->page[p]);
		free(a->block[b]);
	}
	free(a->block);
	memset(a, 0, sizeof(*a));
}

static int new_array(const struct geometry_s *g, struct array_s *a)
{
	memset(a, 0, sizeof(*a));
	a->block = calloc((size_t)g->dies * g->blocks, sizeof(struct block_s *));
	return a->block ? 0 : -1;
}

/* The factory bad-block markers ANDed into `a`. */
static int apply_markers(struct session_s *s, struct array_s *a)
{
	for (size_t i = 0; i < s->nmarkers; i++) {
		const struct marker_s *m = &s->markers[i];
		uint64_t pi = m->word / s->g.page_words;
		uint32_t w = (uint32_t)(m->word % s->g.page_words);
		struct page_s *pg = find(&s->g, a, m->die, pi);
		if (store(&s->g, a, m->die, pi, w, (pg ? pg->w[w] : ERASED) & m->value))
			return -1;
	}
	return 0;
}

/* Page index and word of address `adr` of a die (the last access's page first: no division). */
static void locate(const struct session_s *s, struct die_s *die, uint64_t adr, uint64_t *pi, uint32_t *w)
{
	if (adr - die->hit_base >= s->g.page_words) {     /* (unsigned: below the base too) */
		die->hit_page = adr / s->g.page_words;
		die->hit_base = die->hit_page * s->g.page_words;
	}
	*pi = die->hit_page;
	*w = (uint32_t)(adr - die->hit_base);
}

/* Image files ----------------------------------------------------------------------------------- */

static void put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void header(const struct session_s *s, unsigned char *h, uint64_t records)
{
	const struct geometry_s *g = &s->g;
	memset(h, 0, HEADER_BYTES);
	memcpy(h, MAGIC, 8);
	put32(h + 8, VERSION);
	put32(h + 12, HEADER_BYTES);
	put32(h + 16, g->dies);
	put32(h + 20, g->blocks);
	put32(h + 24, g->pages);
	put32(h + 28, g->page_size);
	put32(h + 32, g->spare_size);
	put32(h + 36, 4 * g->page_words);
	put32(h + 40, (uint32_t)records);
	put32(h + 44, (uint32_t)(records >> 32));
}

static int save_image(struct session_s *s, const char *path, char *msg)
{
	const struct geometry_s *g = &s->g;
	size_t rec_bytes = 8 + 4 * (size_t)g->page_words;
	unsigned char h[HEADER_BYTES], *rec = malloc(rec_bytes);
	char tmp[PATH_MAX];
	uint64_t n = 0;
	FILE *f;
	int ok;
	if (!rec) {
		snprintf(msg, MSG, "error: out of memory");
		return -1;
	}
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp) || !(f = fopen(tmp, "wb"))) {
		snprintf(msg, MSG, "error: cannot write %s.tmp: %s", path, strerror(errno ? errno : ENAMETOOLONG));
		free(rec);
		return -1;
	}
	header(s, h, s->a.pages);
	ok = fwrite(h, HEADER_BYTES, 1, f) == 1;
	for (uint32_t d = 0; ok && d < g->dies; d++) {
		for (uint64_t pi = 0; ok && pi < (uint64_t)g->blocks * g->pages; pi++) {
			struct page_s *pg;
			if (pi % g->pages == 0 && !*slot(g, &s->a, d, pi)) {
				pi += g->pages - 1;           /* an erased block */
				continue;
			}
			if (!(pg = find(g, &s->a, d, pi)))
				continue;
			put32(rec, d);
			put32(rec + 4, (uint32_t)pi);
			for (uint32_t w = 0; w < g->page_words; w++)
				put32(rec + 8 + 4 * w, pg->w[w]);
			ok = fwrite(rec, rec_bytes, 1, f) == 1;
			n++;
		}
	}
	free(rec);
	ok = !ferror(f) & (fclose(f) == 0) & ok;
	if (!ok || rename(tmp, path)) {
		snprintf(msg, MSG, "error: cannot write %s: %s", ok ? path : tmp, strerror(errno));
		unlink(tmp);
		return -1;
	}
	snprintf(msg, MSG, "ok saved %llu pages (%llu bytes) to %s", (unsigned long long)n,
	         (unsigned long long)(HEADER_BYTES + n * rec_bytes), path);
	return 0;
}

/* The header of `path` checked against the simulator's geometry; returns its page records or -1. */
static int64_t check_header(const struct session_s *s, FILE *f, const char *path, char *msg)
{
	const struct geometry_s *g = &s->g;
	static const char *names[] = {"dies", "blocks per die", "pages per block", "page data bytes", "spare bytes"};
	uint32_t mine[] = {g->dies, g->blocks, g->pages, g->page_size, g->spare_size};
	unsigned char h[HEADER_BYTES];
	char diff[512] = "";
	size_t got = fread(h, 1, HEADER_BYTES, f);
	uint64_t records, size;
	if (got < 16 || memcmp(h, MAGIC, 8)) {
		snprintf(msg, MSG, "error: %s is not a nandlab NAND image (no %s header)", path, MAGIC);
		return -1;
	}
	if (get32(h + 8) != VERSION) {
		snprintf(msg, MSG, "error: %s: image format version %u, this simulator reads version %u", path,
		         get32(h + 8), VERSION);
		return -1;
	}
	if (got < HEADER_BYTES || get32(h + 12) != HEADER_BYTES) {
		snprintf(msg, MSG, "error: %s: truncated header", path);
		return -1;
	}
	for (int i = 0; i < 5; i++) {
		uint32_t v = get32(h + 16 + 4 * i);
		size_t len = strlen(diff);
		if (v != mine[i])
			snprintf(diff + len, sizeof(diff) - len, "%s%s %u (the simulator's: %u)", len ? ", " : "", names[i], v,
			         mine[i]);
	}
	if (diff[0]) {
		snprintf(msg, MSG, "error: %s has another geometry: %s", path, diff);
		return -1;
	}
	records = get32(h + 40) | (uint64_t)get32(h + 44) << 32;
	if (get32(h + 36) != 4 * g->page_words || fseek(f, 0, SEEK_END) || (int64_t)(size = (uint64_t)ftell(f)) < 0
	    || records > (uint64_t)g->dies * g->blocks * g->pages
	    || size != HEADER_BYTES + records * (8 + 4 * (uint64_t)g->page_words) || fseek(f, HEADER_BYTES, SEEK_SET)) {
		snprintf(msg, MSG, "error: %s: %llu page records do not match the file's size (truncated or damaged)",
		         path, (unsigned long long)records);
		return -1;
	}
	return (int64_t)records;
}

static int load_image(struct session_s *s, const char *path, char *msg)
{
	const struct geometry_s *g = &s->g;
	size_t rec_bytes = 8 + 4 * (size_t)g->page_words;
	unsigned char *rec = NULL;
	struct array_s a;
	int64_t records;
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(msg, MSG, "error: cannot read %s: %s", path, strerror(errno));
		return -1;
	}
	if ((records = check_header(s, f, path, msg)) < 0) {
		fclose(f);
		return -1;
	}
	if (new_array(g, &a) || !(rec = malloc(rec_bytes))) {
		snprintf(msg, MSG, "error: out of memory");
		goto fail;
	}
	for (int64_t r = 0; r < records; r++) {
		uint32_t d, used = 0;
		uint64_t pi;
		struct page_s *pg;
		if (fread(rec, rec_bytes, 1, f) != 1) {
			snprintf(msg, MSG, "error: cannot read %s: %s", path, ferror(f) ? strerror(errno) : "truncated");
			goto fail;
		}
		d = get32(rec);
		pi = get32(rec + 4);
		if (d >= g->dies || pi >= (uint64_t)g->blocks * g->pages || find(g, &a, d, pi)) {
			snprintf(msg, MSG, "error: %s: page record %lld (die %u, page %llu) is out of range or repeated", path,
			         (long long)r, d, (unsigned long long)pi);
			goto fail;
		}
		if (!(pg = make(g, &a, d, pi))) {
			snprintf(msg, MSG, "error: out of memory");
			goto fail;
		}
		for (uint32_t w = 0; w < g->page_words; w++)
			used += (pg->w[w] = get32(rec + 8 + 4 * w)) != ERASED;
		pg->used = used;
		if (!used)
			drop(g, &a, d, pi);           /* an erased page costs nothing */
	}
	if (apply_markers(s, &a)) {
		snprintf(msg, MSG, "error: out of memory");
		goto fail;
	}
	fclose(f);
	free(rec);
	free_array(g, &s->a);
	s->a = a;
	snprintf(msg, MSG, "ok loaded %lld pages from %s", (long long)records, path);
	return 0;
fail:
	fclose(f);
	free(rec);
	free_array(g, &a);
	return -1;
}

/* Control port ---------------------------------------------------------------------------------- */

static void request(struct session_s *s, const char *line, char *msg)
{
	if (!strncmp(line, "save ", 5) && line[5])
		save_image(s, line + 5, msg);
	else if (!strncmp(line, "load ", 5) && line[5])
		load_image(s, line + 5, msg);
	else if (!strcmp(line, "stats"))
		snprintf(msg, MSG, "ok %u dies, %llu pages in %llu blocks stored (%llu KiB), %llu words read, %llu written, "
		         "%llu blocks erased at once", s->g.dies, (unsigned long long)s->a.pages,
		         (unsigned long long)s->a.blocks,
		         (unsigned long long)(s->a.pages * (4 * (uint64_t)s->g.page_words + 4) / 1024),
		         (unsigned long long)s->words_read, (unsigned long long)s->words_written,
		         (unsigned long long)s->blocks_erased);
	else
		snprintf(msg, MSG, "error: unknown request '%.64s' (save PATH, load PATH, stats)", line);
}

static void read_cb(struct bufferevent *bev, void *ctx)
{
	struct evbuffer *in = bufferevent_get_input(bev);
	char *line, msg[MSG];
	size_t n;
	while ((line = evbuffer_readln(in, &n, EVBUFFER_EOL_CRLF))) {
		request(ctx, line, msg);       /* (not printed: stdout is the SoC's console) */
		evbuffer_add_printf(bufferevent_get_output(bev), "%s\n", msg);
		free(line);
	}
}

static void event_cb(struct bufferevent *bev, short events, void *ctx)
{
	if (events & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
		bufferevent_free(bev);
}

static void accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *a, int len, void *ctx)
{
	struct bufferevent *bev = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!bev) {
		close(fd);
		return;
	}
	bufferevent_setcb(bev, read_cb, NULL, event_cb, ctx);
	bufferevent_enable(bev, EV_READ | EV_WRITE);
}

/* litex_sim module ------------------------------------------------------------------------------ */

static int get_u32(json_object *obj, const char *key, uint32_t *v, int required)
{
	json_object *val;
	int64_t x;
	if (!json_object_object_get_ex(obj, key, &val)) {
		if (required)
			fprintf(stderr, "[nandstore] missing \"%s\" argument\n", key);
		return required ? RC_JSERROR : RC_OK;
	}
	x = json_object_get_int64(val);
	if (x < 0 || x > UINT32_MAX || (required && x == 0)) {
		fprintf(stderr, "[nandstore] \"%s\": %lld is out of range\n", key, (long long)x);
		return RC_INVARG;
	}
	*v = (uint32_t)x;
	return RC_OK;
}

static int get_markers(struct session_s *s, json_object *obj)
{
	json_object *list;
	if (!json_object_object_get_ex(obj, "markers", &list))
		return RC_OK;
	s->nmarkers = json_object_array_length(list);
	if (!(s->markers = calloc(s->nmarkers + 1, sizeof(*s->markers))))
		return RC_NOENMEM;
	for (size_t i = 0; i < s->nmarkers; i++) {
		json_object *m = json_object_array_get_idx(list, i);
		struct marker_s *mk = &s->markers[i];
		if (!m || json_object_array_length(m) != 3)
			return RC_JSERROR;
		mk->die = (uint32_t)json_object_get_int64(json_object_array_get_idx(m, 0));
		mk->word = (uint64_t)json_object_get_int64(json_object_array_get_idx(m, 1));
		mk->value = (uint32_t)json_object_get_int64(json_object_array_get_idx(m, 2));
		if (mk->die >= s->g.dies || mk->word >= s->words) {
			fprintf(stderr, "[nandstore] marker %zu (die %u, word %llu) is out of range\n", i, mk->die,
			        (unsigned long long)mk->word);
			return RC_INVARG;
		}
	}
	return RC_OK;
}

static int listen_on(struct session_s *s, uint32_t port)
{
	struct sockaddr_in sin;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons((uint16_t)port);
	s->listener = evconnlistener_new_bind(base, accept_cb, s, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, -1,
	                                      (struct sockaddr *)&sin, sizeof(sin));
	if (!s->listener) {
		fprintf(stderr, "[nandstore] cannot listen on port %u\n", port);
		return RC_ERROR;
	}
	return RC_OK;
}

static int nandstore_start(void *b)
{
	base = (struct event_base *)b;
	return RC_OK;
}

static int nandstore_new(void **sess, char *args)
{
	struct session_s *s = calloc(1, sizeof(*s));
	json_object *obj = json_tokener_parse(args ? args : ""), *val;
	struct geometry_s *g;
	uint32_t port = 0;
	int ret = RC_JSERROR;
	char msg[MSG];
	if (!s)
		return RC_NOENMEM;
	g = &s->g;
	if (!obj || get_u32(obj, "dies", &g->dies, 1) || get_u32(obj, "blocks", &g->blocks, 1)
	    || get_u32(obj, "pages", &g->pages, 1) || get_u32(obj, "page_size", &g->page_size, 1)
	    || get_u32(obj, "spare_size", &g->spare_size, 0) || get_u32(obj, "port", &port, 0) || port > 65535)
		goto out;
	g->page_words = (g->page_size + g->spare_size + 3) / 4;
	s->words = (uint64_t)g->blocks * g->pages * g->page_words;
	if (s->words > (uint64_t)UINT32_MAX * g->page_words) {
		fprintf(stderr, "[nandstore] %u blocks x %u pages is too many\n", g->blocks, g->pages);
		goto out;
	}
	while ((1ull << s->adr_bits) < (s->words > 2 ? s->words : 2))
		s->adr_bits++;
	ret = RC_NOENMEM;
	if (!(s->die = calloc(g->dies, sizeof(*s->die))) || new_array(g, &s->a))
		goto out;
	if ((ret = get_markers(s, obj)) != RC_OK)
		goto out;
	ret = RC_NOENMEM;
	if (apply_markers(s, &s->a))
		goto out;
	if (json_object_object_get_ex(obj, "image", &val) && json_object_get_string_len(val)) {
		ret = RC_ERROR;
		if (load_image(s, json_object_get_string(val), msg)) {
			fprintf(stderr, "[nandstore] %s\n", msg);
			goto out;
		}
		printf("[nandstore] %s\n", msg);
	}
	if (port && (ret = listen_on(s, port)) != RC_OK)
		goto out;
	printf("[nandstore] %u dies x %u blocks x %u pages x (%u + %u) B, erased", g->dies, g->blocks, g->pages,
	       g->page_size, g->spare_size);
	if (port)
		printf("; images saved and loaded through tcp://127.0.0.1:%u", port);
	printf("\n");
	*sess = s;
	ret = RC_OK;
out:
	if (obj)
		json_object_put(obj);
	if (ret != RC_OK && s) {
		free_array(g, &s->a);
		free(s->die);
		free(s->markers);
		free(s);
	}
	return ret;
}

static int nandstore_add_pads(void *sess, struct pad_list_s *plist)
{
	struct session_s *s = sess;
	struct die_s *die;
	int i, ret = RC_OK;
	if (!sess || !plist)
		return RC_INVARG;
	if (!strcmp(plist->name, "sys_clk")) {
		for (i = 0; plist->pads[i].name; i++)
			if (!strcmp(plist->pads[i].name, "sys_clk"))
				s->sys_clk = (char *)plist->pads[i].signal;
		return RC_OK;
	}
	if (strcmp(plist->name, "nand_storage"))
		return RC_OK;
	i = plist->index;
	if (i < 0 || (uint32_t)i >= s->g.dies) {
		fprintf(stderr, "[nandstore] pads of die %d, but the geometry has %u dies\n", i, s->g.dies);
		return RC_INVARG;
	}
	die = &s->die[i];
	ret |= sig_bind(&die->rd_en, plist->pads, "rd_en", 1, i);
	ret |= sig_bind(&die->rd_adr, plist->pads, "rd_adr", s->adr_bits, i);
	ret |= sig_bind(&die->rd_data, plist->pads, "rd_data", 32, i);
	ret |= sig_bind(&die->wr_en, plist->pads, "wr_en", 1, i);
	ret |= sig_bind(&die->wr_adr, plist->pads, "wr_adr", s->adr_bits, i);
	ret |= sig_bind(&die->wr_data, plist->pads, "wr_data", 32, i);
	for (int k = 0; plist->pads[k].name; k++)             /* optional: dies built with sim_fast_erase */
		if (!strcmp(plist->pads[k].name, "er_en"))
			ret |= sig_bind(&die->er_en, plist->pads, "er_en", 1, i);
	if (ret != RC_OK)
		return RC_INVARG;
	die->bound = 1;
	return RC_OK;
}

static int nandstore_tick(void *sess, uint64_t time_ps)
{
	struct session_s *s = sess;
	int clk = s->sys_clk ? *s->sys_clk : 0;
	if (!(clk && !s->last_clk)) {
		s->last_clk = clk;
		return RC_OK;
	}
	s->last_clk = clk;
	if (!s->checked) {
		s->checked = 1;
		for (uint32_t d = 0; d < s->g.dies; d++)
			if (!s->die[d].bound)
				fprintf(stderr, "[nandstore] warning: die %u has no pads (its reads give 0)\n", d);
	}
	for (uint32_t d = 0; d < s->g.dies; d++) {
		struct die_s *die = &s->die[d];
		uint64_t adr, pi;
		uint32_t w;
		/* (the enables are 1-bit pads, CData: read directly, every cycle of every die) */
		if (!die->bound || !(*(uint8_t *)die->wr_en.p | *(uint8_t *)die->rd_en.p |
		                     (die->er_en.p ? *(uint8_t *)die->er_en.p : 0)))
			continue;
		if (die->er_en.p && *(uint8_t *)die->er_en.p && (adr = sig_get(&die->rd_adr)) < s->words) {
			erase_block(&s->g, &s->a, d, adr / ((uint64_t)s->g.page_words * s->g.pages));
			s->blocks_erased++;
		}
		if (*(uint8_t *)die->wr_en.p && (adr = sig_get(&die->wr_adr)) < s->words) {
			locate(s, die, adr, &pi, &w);
			if (store(&s->g, &s->a, d, pi, w, (uint32_t)sig_get(&die->wr_data))) {
				fprintf(stderr, "[nandstore] out of memory: a program cannot be stored\n");
				exit(1);
			}
			s->words_written++;
		}
		if (*(uint8_t *)die->rd_en.p) {
			struct page_s *pg = NULL;
			if ((adr = sig_get(&die->rd_adr)) < s->words) {
				locate(s, die, adr, &pi, &w);
				pg = find(&s->g, &s->a, d, pi);
			}
			sig_set(&die->rd_data, pg ? pg->w[w] : ERASED);
			s->words_read++;
		}
	}
	return RC_OK;
}

static int nandstore_close(void *sess)
{
	struct session_s *s = sess;
	if (s->listener)
		evconnlistener_free(s->listener);
	free_array(&s->g, &s->a);
	free(s->die);
	free(s->markers);
	free(s);
	return RC_OK;
}

static struct ext_module_s ext_mod = {
	"nandstore", nandstore_start, nandstore_new, nandstore_add_pads, nandstore_close, nandstore_tick
};

int litex_sim_ext_module_init(int (*register_module)(struct ext_module_s *))
{
	return register_module(&ext_mod);
}
