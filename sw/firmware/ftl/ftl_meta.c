/* FTL metadata on flash: page tags, superblock headers, the anchor log (format, geometry, bad-block
 * table, erase counts, the newest checkpoint's place) and format itself. */
#include <string.h>

#include "ftl_int.h"

#define HEADER_MAGIC 0x42534c4eu   /* "NLSB" */

static void put32(uint8_t *p, uint32_t v) { p[0] = v; p[1] = v >> 8; p[2] = v >> 16; p[3] = v >> 24; }
static uint32_t get32(const uint8_t *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }

/* CRC-16/CCITT (polynomial 1021h, MSB first; Python's binascii.crc_hqx), a byte at a time without a
 * table (the polynomial's shifts folded): every page tag is packed and checked with it, and a table's
 * loads miss the D-cache behind the controller's DMA on the SoC. */
uint16_t ftl_crc16(const uint8_t *p, uint32_t n, uint16_t crc)
{
	while (n--) {
		uint32_t x = (crc >> 8 ^ *p++) & 0xff;
		x ^= x >> 4;
		crc = (uint16_t)(crc << 8 ^ x << 12 ^ x << 5 ^ x);
	}
	return crc;
}

/* CRC-32 (IEEE, reflected), a nibble at a time: checkpoints run it over the whole map. */
uint32_t ftl_crc32(const uint8_t *p, uint32_t n, uint32_t crc)
{
	static const uint32_t nib[16] = {
		0x00000000, 0x1db71064, 0x3b6e20c8, 0x26d930ac, 0x76dc4190, 0x6b6b51f4, 0x4db26158, 0x5005713c,
		0xedb88320, 0xf00f9344, 0xd6d6a3e8, 0xcb61b38c, 0x9b64c2b0, 0x86d3d2d4, 0xa00ae278, 0xbdbdf21c,
	};
	crc = ~crc;
	while (n--) {
		crc ^= *p++;
		crc = (crc >> 4) ^ nib[crc & 15];
		crc = (crc >> 4) ^ nib[crc & 15];
	}
	return ~crc;
}

/* ftl_crc16 of a word's four bytes, little-endian, from a register (no bytes stored to be read back:
 * each store is a bus write on the SoC). */
static inline __attribute__((always_inline)) uint16_t crc16_word(uint32_t w, uint16_t crc)
{
	for (int i = 0; i < 4; i++, w >>= 8) {
		uint32_t x = (crc >> 8 ^ w) & 0xff;
		x ^= x >> 4;
		crc = (uint16_t)(crc << 8 ^ x << 12 ^ x << 5 ^ x);
	}
	return crc;
}

/* The CRC of the tag's first four bytes (word: them, little-endian) and of the page's address (put32's
 * bytes): a tag read from the wrong page does not check. */
static uint16_t tag_crc(uint32_t word, uint32_t ppn)
{
	return crc16_word(ppn, crc16_word(word, 0xFFFF));
}

FTL_HOT_W void ftl_tag_pack(uint8_t *tag, uint32_t arg, int kind, uint32_t ppn)
{
	uint32_t w = (arg & 0xFFFFFF) | (uint32_t)(kind & 0xFF) << 24;
	uint16_t c = crc16_word(ppn, crc16_word(w, 0xFFFF));   /* (tag_crc's) */
	tag[0] = w; tag[1] = w >> 8; tag[2] = w >> 16; tag[3] = w >> 24;
	tag[4] = c; tag[5] = c >> 8;
}

static int tag_check(const uint8_t *tag, uint32_t ppn, uint32_t *arg)
{
	if ((tag[4] | tag[5] << 8) != tag_crc(get32(tag), ppn) || tag[3] < TAG_DATA || tag[3] > TAG_CKPT)
		return 0;
	*arg = tag[0] | tag[1] << 8 | (uint32_t)tag[2] << 16;
	return tag[3];
}

/* The kind of a valid tag, 0 when it does not check. The tag sits outside the page's ECC: one
 * flipped bit is corrected by trying each (CRC-16's distance is 4 at this length). */
int ftl_tag_unpack(const uint8_t *tag, uint32_t ppn, uint32_t *arg)
{
	int kind = tag_check(tag, ppn, arg);
	if (kind)
		return kind;
	uint8_t t[FTL_TAG_BYTES];
	for (int bit = 0; bit < 8 * FTL_TAG_BYTES; bit++) {
		memcpy(t, tag, FTL_TAG_BYTES);
		t[bit >> 3] ^= 1 << (bit & 7);
		if ((kind = tag_check(t, ppn, arg)))
			return kind;
	}
	return 0;
}

void ftl_header_pack(struct ftl *f, uint8_t *page, uint32_t sb)
{
	memset(page, 0xFF, f->g.page_bytes);
	put32(page, HEADER_MAGIC);
	put32(page + 4, FTL_VERSION);
	put32(page + 8, sb);
	put32(page + 12, f->sb[sb].seq);
	put32(page + 16, f->sb[sb].erases);
	put32(page + 20, f->sb[sb].bad);
	put32(page + 24, ftl_crc32(page, 24, 0));
}

int ftl_header_unpack(struct ftl *f, const uint8_t *page, uint32_t sb, uint32_t *seq, uint32_t *erases, uint32_t *bad)
{
	(void)f;
	if (get32(page) != HEADER_MAGIC || get32(page + 24) != ftl_crc32(page, 24, 0) || get32(page + 8) != sb)
		return 0;
	*seq = get32(page + 12);
	*erases = get32(page + 16);
	*bad = get32(page + 20);
	return 1;
}

int ftl_program_meta(struct ftl *f, uint32_t die, uint32_t block, uint32_t page, uint8_t *data, uint32_t arg, int kind)
{
	uint32_t ppn = ftl_ppn(f, die, block, page);
	struct ftl_nand_op *op = ftl_op_at(f, FTL_NAND_PROGRAM, ppn, data);
	ftl_tag_pack(op->tag, arg, kind, ppn);
	f->st.meta_programs++;
	return ftl_sync(f, op);
}

/* Anchor record: a 64-byte header {magic, version, pages, seq, payload bytes, payload CRC, geometry,
 * configuration, header CRC}, then the payload: the bad-block bitmap, the erase counts and the newest
 * checkpoint {seq, the stream's seq when taken, pages, superblocks, map CRC, their numbers, their seqs}. */
#define CKPT_WORDS (5 + 2 * FTL_CKPT_MAX_SB)
static uint32_t bbt_words(const struct ftl *f) { return (f->g.dies * f->g.blocks + 31) / 32; }
static uint32_t payload_bytes(const struct ftl *f) { return 4 * (bbt_words(f) + f->nsb + CKPT_WORDS); }

uint32_t ftl_anchor_pages(const struct ftl_geo *g)
{
	uint64_t bbt = ((uint64_t)g->dies * g->blocks + 31) / 32, len = ANCHOR_HDR + 4 * (bbt + g->blocks / ftl_geo_groups(g) + CKPT_WORDS);
	return (uint32_t)((len + g->page_bytes - 1) / g->page_bytes);
}

static uint32_t *payload_word(struct ftl *f, uint32_t w)
{
	if (w < bbt_words(f))
		return &f->bbt[w];
	w -= bbt_words(f);
	if (w < f->nsb)
		return &f->sb[w].erases;
	w -= f->nsb;
	uint32_t *head[5] = { &f->ckpt.seq, &f->ckpt.stream_seq, &f->ckpt.pages, &f->ckpt.nsb, &f->ckpt.crc };
	if (w < 5)
		return head[w];
	w -= 5;
	return w < FTL_CKPT_MAX_SB ? &f->ckpt.sb[w] : &f->ckpt.sb_seq[w - FTL_CKPT_MAX_SB];
}

static uint8_t payload_byte(struct ftl *f, uint32_t i)
{
	return *payload_word(f, i / 4) >> (8 * (i % 4));
}

/* The record's planes field: planes, with the superblocks' span (span << 16, when it is not 1) and the
 * planes' stagger (<< 24) above, so that records of a span-1, stagger-0 format read as before. */
static uint32_t planes_word(const struct ftl *f)
{
	uint32_t span = ftl_geo_span(&f->g);
	return f->g.planes | (span > 1 ? span << 16 : 0) | f->g.stagger << 24;
}

static void record_header(struct ftl *f, uint8_t *h, uint32_t npages, uint32_t crc)
{
	uint32_t v[14] = { ANCHOR_MAGIC, FTL_VERSION, npages, f->anchor_seq, payload_bytes(f), crc, f->g.dies,
	                   planes_word(f), f->g.blocks, f->g.pages, f->g.page_bytes, f->cfg.sector_bytes,
	                   f->cfg.op_permille, f->reserved_sb };
	for (int i = 0; i < 14; i++)
		put32(h + 4 * i, v[i]);
	put32(h + 56, f->seq_floor);      /* 0 in records of firmware before it: the same meaning */
	put32(h + 60, ftl_crc32(h, 60, 0));
}

static int erase_block(struct ftl *f, uint32_t die, uint32_t block)
{
	f->st.nand_erases++;
	return ftl_sync(f, ftl_op_at(f, FTL_NAND_ERASE, ftl_ppn(f, die, block, 0), NULL));
}

/* Candidate i is in the log's rotation: not retired (the bad-block table the records carry). */
static int anchor_good(const struct ftl *f, uint32_t i)
{
	return i < FTL_ANCHOR_BLOCKS && !ftl_is_bad(f, f->anchor_die[i], f->anchor_block[i]);
}

/* Candidate i failed an erase or a program: retired, as the next record's bad-block table says. (Its
 * superblock is reserved: no member mask or free count to keep.) */
static void anchor_retire(struct ftl *f, uint32_t i)
{
	if (!anchor_good(f, i))
		return;
	ftl_mark_bad(f, f->anchor_die[i], f->anchor_block[i]);
	f->st.bad_grown++;
	f->st.anchor_moves++;
}

/* Where the log's next block starts: the first good candidate that does not hold the newest complete
 * record. So the log alternates between the first two good candidates and the spares stay as format
 * left them, erased (a mount reads their first page only) and unworn. FTL_ANCHOR_BLOCKS: none left. */
static uint32_t anchor_next(const struct ftl *f)
{
	for (uint32_t i = 0; i < FTL_ANCHOR_BLOCKS; i++)
		if (i != f->anchor_home && anchor_good(f, i))
			return i;
	return FTL_ANCHOR_BLOCKS;
}

/* One record from the current candidate's write point on: the NAND status of the first page that did
 * not program, FTL_NAND_OK when every one did. */
static int anchor_program(struct ftl *f, uint32_t npages, uint32_t len)
{
	uint32_t P = f->g.page_bytes, crc = 0;
	for (uint32_t i = 0; i < payload_bytes(f); i++) {
		uint8_t b = payload_byte(f, i);
		crc = ftl_crc32(&b, 1, crc);
	}
	int bi = ftl_buf_get(f), s = FTL_NAND_OK;
	uint8_t *page = ftl_buf(f, bi);
	for (uint32_t k = 0; k < npages && s == FTL_NAND_OK; k++) {
		for (uint32_t i = 0; i < P; i++) {
			uint32_t at = k * P + i;
			page[i] = at < ANCHOR_HDR ? 0 : at < len ? payload_byte(f, at - ANCHOR_HDR) : 0xFF;
		}
		if (k == 0)
			record_header(f, page, npages, crc);
		s = ftl_program_meta(f, f->anchor_die[f->anchor_cur], f->anchor_block[f->anchor_cur], f->anchor_page++, page,
		                     (f->anchor_seq & 0xFFFF) << 8 | k, TAG_ANCHOR);
	}
	ftl_buf_put(f, bi);
	return s;
}

/* The next record, appended to the current candidate, or at the start of the next one when it is full
 * or retired. A candidate that fails its erase, or a program of the record, is retired and the record
 * goes whole into the next one under a new seq (the one it failed in may hold a complete copy of the
 * failed record, and the newer copy must win); the newest complete record stays where it is until then. */
int ftl_anchor_write(struct ftl *f)
{
	uint32_t len = ANCHOR_HDR + payload_bytes(f), P = f->g.page_bytes;
	uint32_t npages = (len + P - 1) / P;
	if (npages > f->g.pages)
		return ftl_set_error(f, FTL_E_CONFIG, "anchor record of %u pages exceeds a block", npages);
	ftl_drain(f);
	for (;;) {
		if (!anchor_good(f, f->anchor_cur) || f->anchor_page + npages > f->g.pages) {
			uint32_t next = anchor_next(f);
			if (next == FTL_ANCHOR_BLOCKS) {
				uint32_t failed = 0;
				for (uint32_t i = 0; i < FTL_ANCHOR_BLOCKS; i++)
					failed += !anchor_good(f, i);
				return ftl_set_error(f, FTL_E_IO, "anchor log: no block left to move to (%u of its %u blocks failed)",
				                     failed, FTL_ANCHOR_BLOCKS);
			}
			int s = erase_block(f, f->anchor_die[next], f->anchor_block[next]);
			if (s == FTL_NAND_POWER)
				return FTL_E_POWER;
			if (s != FTL_NAND_OK) {
				anchor_retire(f, next);
				continue;
			}
			f->anchor_cur = next;
			f->anchor_page = 0;
		}
		f->anchor_seq++;
		int s = anchor_program(f, npages, len);
		if (s == FTL_NAND_OK) {
			f->anchor_home = f->anchor_cur;
			return FTL_OK;
		}
		if (s == FTL_NAND_POWER)
			return FTL_E_POWER;
		anchor_retire(f, f->anchor_cur);
	}
}

static int read_page(struct ftl *f, uint32_t die, uint32_t block, uint32_t page, uint8_t *buf, uint32_t *arg, int *kind)
{
	return ftl_read_sync(f, FTL_NAND_READ, ftl_ppn(f, die, block, page), buf, arg, kind);
}

/* The geometry fields of a record against ours: FTL_OK or which one differs. */
static int record_matches(struct ftl *f, const uint8_t *h)
{
	static const char *names[] = { "dies", "planes (+ span << 16, stagger << 24)", "blocks per die", "pages per block",
	                               "page bytes", "sector bytes", "over-provisioning (per mille)" };
	uint32_t ours[] = { f->g.dies, planes_word(f), f->g.blocks, f->g.pages, f->g.page_bytes,
	                    f->cfg.sector_bytes, f->cfg.op_permille };
	if (get32(h + 4) != FTL_VERSION)
		return ftl_set_error(f, FTL_E_VERSION, "formatted by FTL format version %u, this firmware reads version %u",
		                     get32(h + 4), FTL_VERSION);
	for (int i = 0; i < 7; i++)
		if (get32(h + 24 + 4 * i) != ours[i])
			return ftl_set_error(f, FTL_E_GEOMETRY, "formatted with %s = %u, this configuration has %u",
			                     names[i], get32(h + 24 + 4 * i), ours[i]);
	return FTL_OK;
}

/* Scan candidate `which`: the newest complete record so far (its seq, candidate, first page and seq
 * floor), and where the candidate's written pages end (its first erased page). */
static int scan_anchor_block(struct ftl *f, uint32_t which, uint32_t *best_seq, int *best_which, uint32_t *best_page,
                             uint32_t *best_floor, uint32_t *end)
{
	uint32_t die = f->anchor_die[which], block = f->anchor_block[which], P = f->g.page_bytes;
	int bi = ftl_buf_get(f), mismatch = FTL_OK;
	uint8_t *page = ftl_buf(f, bi);
	uint32_t p = 0;
	while (p < f->g.pages) {
		uint32_t arg, hdr[16];
		int kind, s = read_page(f, die, block, p, page, &arg, &kind);
		if (s == FTL_NAND_ERASED || s == FTL_NAND_POWER)
			break;
		if (kind != TAG_ANCHOR || (arg & 0xFF) || get32(page) != ANCHOR_MAGIC || get32(page + 60) != ftl_crc32(page, 60, 0)) {
			p++;
			continue;
		}
		for (int i = 0; i < 16; i++)
			hdr[i] = get32(page + 4 * i);
		int m = record_matches(f, page);
		if (m) {
			mismatch = m;
			p++;
			continue;
		}
		uint32_t npages = hdr[2], len = ANCHOR_HDR + hdr[4], crc = 0, k, first = p;
		for (k = 0; k < npages && p < f->g.pages; k++, p++) {
			if (k && (read_page(f, die, block, p, page, &arg, &kind) != FTL_NAND_OK || kind != TAG_ANCHOR ||
			          (arg & 0xFF) != k))
				break;
			for (uint32_t i = 0; i < P; i++) {
				uint32_t at = k * P + i;
				if (at >= ANCHOR_HDR && at < len)
					crc = ftl_crc32(&page[i], 1, crc);
			}
		}
		if (k == npages && crc == hdr[5] && (*best_which < 0 || hdr[3] > *best_seq)) {
			*best_seq = hdr[3];
			*best_floor = hdr[14];
			*best_which = (int)which;
			*best_page = first;
		}
	}
	*end = p;
	ftl_buf_put(f, bi);
	return mismatch;
}

/* Every candidate scanned (retired ones too: the bad-block table that says so is in a record): the
 * newest complete record's candidate (-1: none) and seq; each candidate's write point in end[]. */
static int scan_anchor_log(struct ftl *f, uint32_t *seq, uint32_t *first, uint32_t *floor, uint32_t *end, int *mismatch)
{
	int which = -1;
	*mismatch = FTL_OK;
	for (uint32_t w = 0; w < FTL_ANCHOR_BLOCKS; w++) {
		int m = scan_anchor_block(f, w, seq, &which, first, floor, &end[w]);
		*mismatch = *mismatch ? *mismatch : m;
	}
	return which;
}

int ftl_anchor_load(struct ftl *f)
{
	uint32_t seq = 0, first = 0, P = f->g.page_bytes, floor = 0, end[FTL_ANCHOR_BLOCKS];
	int mismatch, which = scan_anchor_log(f, &seq, &first, &floor, end, &mismatch);
	if (f->power_lost)
		return FTL_E_POWER;
	if (which < 0)
		return mismatch ? mismatch : ftl_set_error(f, FTL_E_UNFORMATTED, "no valid anchor record: the device is not formatted");
	/* The next record goes after every page written in the newest record's candidate. */
	f->anchor_cur = f->anchor_home = (uint32_t)which;
	f->anchor_page = end[which];
	f->anchor_seq = seq;
	f->seq_floor = floor;
	/* The record's payload into the tables. */
	int bi = ftl_buf_get(f);
	uint8_t *page = ftl_buf(f, bi);
	uint32_t len = ANCHOR_HDR + payload_bytes(f), npages = (len + P - 1) / P;
	for (uint32_t k = 0; k < npages; k++) {
		uint32_t arg;
		int kind;
		read_page(f, f->anchor_die[which], f->anchor_block[which], first + k, page, &arg, &kind);
		for (uint32_t i = 0; i < P; i++) {
			uint32_t at = k * P + i;
			if (at < ANCHOR_HDR || at >= len)
				continue;
			uint32_t off = at - ANCHOR_HDR, w = off / 4, sh = 8 * (off % 4);
			uint32_t *word = payload_word(f, w);
			*word = (*word & ~(0xFFu << sh)) | (uint32_t)page[i] << sh;
		}
	}
	ftl_buf_put(f, bi);
	return FTL_OK;
}

/* The anchor log's candidates: the first FTL_ANCHOR_BLOCKS blocks without a factory bad-block marker,
 * member by member from superblock 0 (the same at every mount: grown bad blocks are in the records);
 * the superblocks up to the one holding the last are reserved. */
int ftl_anchor_find(struct ftl *f)
{
	uint32_t found = 0;
	for (uint32_t sb = 0; sb < f->nsb && found < FTL_ANCHOR_BLOCKS; sb++) {
		for (uint32_t m = 0; m < f->members && found < FTL_ANCHOR_BLOCKS; m++) {
			uint32_t die, block = ftl_member_block(f, sb, m, &die);
			struct ftl_nand_op *op = ftl_op_at(f, FTL_NAND_READ_BBM, ftl_ppn(f, die, block, 0), NULL);
			int s = ftl_sync_keep(f, op);
			int good = s == FTL_NAND_OK && op->tag[0] == 0xFF;
			f->st.nand_reads++;
			ftl_op_put(f, op);
			if (s == FTL_NAND_POWER)
				return FTL_E_POWER;
			if (good) {
				f->anchor_die[found] = die;
				f->anchor_block[found] = block;
				found++;
			}
		}
		f->reserved_sb = sb + 1;
	}
	if (found < FTL_ANCHOR_BLOCKS)
		return ftl_set_error(f, FTL_E_FULL, "fewer than %u good blocks for the anchor log", FTL_ANCHOR_BLOCKS);
	return FTL_OK;
}

/* Every block's factory marker, read in parallel (completions are taken by reap(), also while a
 * submission waits for room in the device's queues: each read is done once its op says so). */
static int scan_factory_bad(struct ftl *f)
{
	uint32_t total = f->g.dies * f->g.blocks, next = 0, done = 0;
	struct ftl_nand_op *mine[FTL_OPS / 2];
	int n = 0;
	while (done < total && !f->power_lost) {
		while (next < total && n < FTL_OPS / 2) {
			struct ftl_nand_op *op = ftl_op_at(f, FTL_NAND_READ_BBM, next * f->g.pages, NULL);
			op->owner = OWN_SYNC;
			mine[n++] = op;
			next++;
			if (ftl_op_submit(f, op))
				break;
		}
		ftl_reap(f);
		for (int i = 0; i < n;) {
			struct ftl_nand_op *op = mine[i];
			if (f->ost[op - f->ops].used != 3) {
				i++;
				continue;
			}
			if (op->status == FTL_NAND_OK && op->tag[0] != 0xFF) {
				ftl_mark_bad(f, op->die, op->block);
				f->st.bad_factory++;
			}
			ftl_op_put(f, op);
			mine[i] = mine[--n];
			done++;
		}
	}
	return f->power_lost ? FTL_E_POWER : FTL_OK;
}

int ftl_format(struct ftl *f)
{
	int r;
	if (!f->ready)
		return ftl_set_error(f, FTL_E_CONFIG, "not set up: ftl_init refused the configuration");
	f->mounted = 0;
	ftl_drain(f);
	memset(f->bbt, 0, 4 * bbt_words(f));
	ftl_stats_zero(f);
	for (uint32_t s = 0; s < f->nsb; s++)
		memset(&f->sb[s], 0, sizeof(f->sb[s]));
	uint64_t t0 = f->nand->now_us(f->nand->dev);
	if ((r = ftl_anchor_find(f)) || (r = scan_factory_bad(f)))
		return r;
	/* Every superblock's header, for the seq floor: whatever they hold is dead from this format on. */
	f->seq_floor = 0;
	if ((r = ftl_read_headers(f)))
		return r;
	uint32_t top = 0;
	for (uint32_t s = f->reserved_sb; s < f->nsb; s++)
		top = f->sb[s].seq > top ? f->sb[s].seq : top;
	f->seq_floor = top + 1;
	for (uint32_t s = 0; s < f->nsb; s++)
		f->sb[s].seq = f->sb[s].open_bad = f->sb[s].hslot = 0;
	ftl_map_reset(f);
	f->free_count = 0;
	for (uint32_t s = 0; s < f->nsb; s++) {
		int all_bad = f->sb[s].bad == (f->members == 32 ? 0xFFFFFFFFu : (1u << f->members) - 1);
		f->sb[s].state = s < f->reserved_sb ? SB_RESERVED : all_bad ? SB_DEAD : SB_DIRTY;
		f->free_count += f->sb[s].state == SB_DIRTY;
	}
	f->seq = f->seq_floor - 1;
	f->open_sb = FTL_UNMAPPED;
	f->ckpt.seq = f->ckpt.stream_seq = f->ckpt.pages = f->ckpt.nsb = f->ckpt.crc = 0;
	f->since_ckpt = 0;
	f->ckpt_due = 0;
	/* The log starts above the newest record any candidate holds: one of an earlier format must not
	 * win at mount, were it in a candidate that fails its erase here. Every candidate but the first
	 * erased here (the spares then cost a mount one read each), the first by the first write (it
	 * starts there); one that fails is retired. */
	uint32_t seq = 0, first, floor, end[FTL_ANCHOR_BLOCKS];
	int mismatch;
	scan_anchor_log(f, &seq, &first, &floor, end, &mismatch);
	if (f->power_lost)
		return FTL_E_POWER;
	f->anchor_seq = seq;
	f->anchor_cur = f->anchor_home = FTL_ANCHOR_BLOCKS;
	for (uint32_t i = 1; i < FTL_ANCHOR_BLOCKS; i++) {
		if ((r = erase_block(f, f->anchor_die[i], f->anchor_block[i])) == FTL_NAND_POWER)
			return FTL_E_POWER;
		if (r != FTL_NAND_OK)
			anchor_retire(f, i);
	}
	if ((r = ftl_anchor_write(f)))
		return r;
	f->mounted = 1;
	f->st.recovery_kind = 1;
	f->st.recovery_us = f->nand->now_us(f->nand->dev) - t0;
	ftl_erase_stats(f);
	return FTL_OK;
}
