/* A timed host workload through the FTL (`ftl workload`): random reads and writes of 1 to 8 sectors,
 * `qd` requests in flight at once (asynchronous: ftl_submit / ftl_poll), for a span of SoC time. Each
 * sector's contents follow its write version (a shadow byte per sector): every read is checked, and
 * in-flight requests never overlap, so that each read has one right answer. */
#include <stdio.h>
#include <string.h>

#include "ftl/ftl.h"
#include "ftl_workload.h"
#include "hal.h"

#define MAX_QD      32
#define MAX_SECTORS 8

struct slot {
	struct ftl_req req;
	uint32_t first, count;
	uint8_t *buf;
	int busy;
};

static uint32_t rng;

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}

/* Sector contents of write version v (0: never written, which the FTL reads as zeros): a byte
 * derived from (sector, v) everywhere, and a stamp {sector, v, ~sector, ~v} at each 512 B. Cheap to
 * write and to check (memset speed), so that the CPU spends its time in the FTL, not here, and still
 * any page from another sector, another version or a torn write shows. Shared with the replay
 * (ftl_replay.c) through ftl_workload.h. */
DRV_HOT3 void ftl_pattern_fill(uint32_t *w, uint32_t words, uint32_t sector, uint8_t v)
{
	uint32_t b = v ? ((sector * 2654435761u) >> 24 ^ v) & 0xff : 0;
	memset(w, (int)b, words * 4);
	for (uint32_t i = 0; v && i < words; i += 128) {
		w[i] = sector;
		w[i + 1] = v;
		w[i + 2] = ~sector;
		w[i + 3] = ~(uint32_t)v;
	}
}

DRV_HOT3 int ftl_pattern_same(const uint32_t *got, uint32_t words, uint32_t sector, uint8_t v)
{
	uint32_t b = v ? ((sector * 2654435761u) >> 24 ^ v) & 0xff : 0, word = b * 0x01010101u;
	for (uint32_t i = 0; i < words; i++) {
		uint32_t want = word;
		if (v && (i & 127) < 4)
			want = (i & 3) == 0 ? sector : (i & 3) == 1 ? v : (i & 3) == 2 ? ~sector : ~(uint32_t)v;
		if (got[i] != want)
			return 0;
	}
	return 1;
}

static int overlaps(const struct slot *s, int qd, uint32_t first, uint32_t count)
{
	for (int i = 0; i < qd; i++)
		if (s[i].busy && first < s[i].first + s[i].count && s[i].first < first + count)
			return 1;
	return 0;
}

static uint64_t pattern_cycles;

static void start(struct ftl *f, struct slot *s, struct slot *all, int qd, uint8_t *version, uint32_t read_pct,
                  uint32_t sectors, uint32_t sb)
{
	uint32_t count, first;
	do {
		count = 1 + rnd() % MAX_SECTORS;
		first = rnd() % (sectors - count + 1);
	} while (overlaps(all, qd, first, count));
	memset(&s->req, 0, sizeof(s->req));
	s->req.op = rnd() % 100 < read_pct ? FTL_REQ_READ : FTL_REQ_WRITE;
	s->req.sector = first;
	s->req.count = count;
	s->req.buf = s->buf;
	s->first = first;
	s->count = count;
	if (s->req.op == FTL_REQ_WRITE) {
		uint64_t t = hal_timestamp();
		for (uint32_t i = 0; i < count; i++) {
			if (++version[first + i] == 0)
				version[first + i] = 1;
			ftl_pattern_fill((uint32_t *)(s->buf + i * sb), sb / 4, first + i, version[first + i]);
		}
		pattern_cycles += hal_timestamp() - t;
	}
	s->busy = ftl_submit(f, &s->req) == FTL_OK;
}

/* A completed read against the shadow: sectors that differ. */
static uint32_t check(const struct slot *s, const uint8_t *version, uint32_t sb)
{
	uint32_t bad = 0;
	for (uint32_t i = 0; i < s->count; i++) {
		if (!ftl_pattern_same((const uint32_t *)(s->buf + i * sb), sb / 4, s->first + i, version[s->first + i]) && bad++ < 4)
			printf("mismatch: sector %u (write version %u)\n", (unsigned int)(s->first + i),
			       version[s->first + i]);
	}
	return bad;
}

int ftl_workload_run(struct ftl *f, uint8_t *mem, size_t bytes, uint32_t us, uint32_t read_pct, int qd,
                     uint32_t seed, struct ftl_workload_result *res)
{
	const uint32_t sb = ftl_get_config(f)->sector_bytes, sectors = ftl_sectors(f);
	const uint64_t per_us = hal_clock_hz() / 1000000u;
	static struct slot slots[MAX_QD] MAIN_BSS;     /* (cleared below; main RAM: the SRAM keeps the stack) */
	if (qd < 1 || qd > MAX_QD || sb % 512 ||
	    sectors + (size_t)MAX_QD * MAX_SECTORS * sb > bytes)
		return -1;
	memset(res, 0, sizeof(*res));
	uint8_t *version = mem;                  /* one byte per sector, then the buffers */
	memset(version, 0, sectors);
	uint8_t *bufs = mem + ((sectors + 63) & ~63u);
	rng = seed * 2654435761u + 1;
	pattern_cycles = 0;
	memset(slots, 0, sizeof(slots));
	for (int i = 0; i < qd; i++)
		slots[i].buf = bufs + (size_t)i * MAX_SECTORS * sb;
	const uint64_t t0 = hal_timestamp(), end = t0 + (uint64_t)us * per_us;
	uint64_t lat_sum = 0;
	int running = 0;
	for (int i = 0; i < qd; i++) {
		start(f, &slots[i], slots, qd, version, read_pct, sectors, sb);
		running += slots[i].busy;
	}
	while (running) {
		struct ftl_req *r = ftl_poll(f);
		if (!r)
			continue;
		struct slot *s = (struct slot *)r;          /* req is the slot's first member */
		uint64_t now = hal_timestamp(), lat = now / per_us - r->t_submit_us;
		s->busy = 0;
		running--;
		lat_sum += lat;
		res->max_latency_us = lat > res->max_latency_us ? (uint32_t)lat : res->max_latency_us;
		if (r->result != FTL_OK) {
			res->errors++;
			if (res->errors <= 4)
				printf("error: ftl workload: %s of sectors %u..%u: %s\n", r->op == FTL_REQ_READ ? "read" : "write",
				       (unsigned int)s->first, (unsigned int)(s->first + s->count - 1), ftl_result_name(r->result));
		} else if (r->op == FTL_REQ_READ) {
			res->reads++;
			res->read_bytes += (uint64_t)s->count * sb;
			uint64_t t = hal_timestamp();
			res->mismatches += check(s, version, sb);
			pattern_cycles += hal_timestamp() - t;
		} else {
			res->writes++;
			res->write_bytes += (uint64_t)s->count * sb;
		}
		if (now < end) {
			start(f, s, slots, qd, version, read_pct, sectors, sb);
			running += s->busy;
		}
	}
	res->us = (hal_timestamp() - t0) / per_us;
	uint64_t n = res->reads + res->writes + res->errors;
	res->mean_latency_us = n ? (uint32_t)(lat_sum / n) : 0;
	res->pattern_cycles = pattern_cycles;
	return 0;
}
