/* Trace replay through the FTL (`ftl replay run`): the host's records in order, asynchronous
 * (submit / poll on the device: the FTL, or MPNFM's layer over two) like ftl_workload.c, and checked the same way: a write fills each sector with
 * the pattern of (sector, write version) from a shadow byte per sector, every read is compared with
 * it. Requests are issued in record order; one that overlaps a request in flight waits until that one
 * completes (so every read has one right answer), and those behind it wait too. Closed loop (qd > 0):
 * qd requests in flight, arrival times ignored, latency from submission. Open loop (qd 0): a request
 * arrives at time_us * scale_permille / 1000 after the start and is issued then or, when all
 * FTL_REPLAY_MAX_QD slots are busy or it overlaps, later; its latency counts from its arrival. */
#include <stdio.h>
#include <string.h>

#include "ftl/ftl.h"
#include "ftl_replay.h"
#include "ftl_workload.h"
#include "hal.h"

struct rslot {
	struct ftl_req req;        /* first member: ftl_poll's pointer is the slot's */
	uint32_t index;            /* the record's */
	uint64_t t_from;           /* arrival (open loop) or submission (closed), cycles */
	uint64_t wait_from;        /* the wait clock at its submission */
	uint8_t *buf;
	int busy;
};

struct run {
	struct ftl_dev d;
	const struct ftl_replay_record *rec;
	struct ftl_replay_result *res;
	struct ftl_replay_summary *sum;
	struct rslot slots[FTL_REPLAY_MAX_QD];
	uint8_t *version;
	uint32_t sb, nslots, in_flight, window;   /* window: record i is at rec[i % window] */
	uint64_t t0, per_us;
	uint64_t last_done;        /* when a request last completed (or the run started) */
	int stall_said;
};

static uint64_t (*wait_clock)(void);

void ftl_replay_set_wait_clock(uint64_t (*clock)(void)) { wait_clock = clock; }

#define STALL_CYCLES (1ull << 25)  /* no completion for this long (0.34 s at 100 MHz): say what waits */

/* Requests in flight and nothing completes for STALL_CYCLES: name them, once a run (a run that never
 * ends otherwise says nothing about why). */
DRV_HOT static void stall_check(struct run *r, uint32_t next)
{
	uint64_t now = hal_timestamp();
	if (r->stall_said || !r->in_flight || now - r->last_done < STALL_CYCLES)
		return;
	r->stall_said = 1;
	printf("replay: stalled: nothing completed in %lu M cycles; record %u next, %u in flight, the FTL %u ops:\n",
	       (unsigned long)((now - r->last_done) >> 20), (unsigned int)next, (unsigned int)r->in_flight,
	       (unsigned int)r->d.in_flight(r->d.ctx));
	for (uint32_t i = 0; i < r->nslots; i++)
		if (r->slots[i].busy)
			printf("replay: stalled: record %u: %s sectors %u + %u, pending %u, issued all %u, next lpn %u\n",
			       (unsigned int)r->slots[i].index, r->slots[i].req.op == FTL_REQ_WRITE ? "write" : "read",
			       (unsigned int)r->slots[i].req.sector, (unsigned int)r->slots[i].req.count,
			       (unsigned int)r->slots[i].req.pending, (unsigned int)r->slots[i].req.issued_all,
			       (unsigned int)r->slots[i].req.next_lpn);
}

size_t ftl_replay_work_bytes(const struct ftl_dev *d)
{
	return ((d->sectors + 63) & ~(size_t)63) + (size_t)FTL_REPLAY_MAX_QD * FTL_REPLAY_SLOT_BYTES;
}

/* A record against the device and the slots: NULL when it is good, else why not. */
static const char *record_fault(const struct ftl_replay_record *r, uint32_t sectors, uint32_t sb)
{
	if (!r->count)
		return "count 0";
	if (r->flags & ~FTL_REPLAY_FLAG_WRITE || r->reserved)
		return "reserved flag bits set";
	if (r->sector >= sectors || r->count > sectors - r->sector)
		return "beyond the FTL's capacity";
	if ((uint32_t)r->count * sb > FTL_REPLAY_SLOT_BYTES)
		return "larger than a slot's buffer";
	return NULL;
}

static void refuse(uint32_t i, const struct ftl_replay_record *r, const char *why, uint32_t sectors, uint32_t sb)
{
	printf("error: ftl replay: record %u (id %u, sectors %u + %u): %s (the device has %u sectors of %u B, "
	       "a request at most %u B)\n", (unsigned int)i, (unsigned int)r->id, (unsigned int)r->sector,
	       (unsigned int)r->count, why, (unsigned int)sectors, (unsigned int)sb, FTL_REPLAY_SLOT_BYTES);
}

/* Every record against the device and the slots, before anything runs. */
static int check_records(const struct ftl_replay_record *rec, uint32_t n, uint32_t sectors, uint32_t sb)
{
	for (uint32_t i = 0; i < n; i++) {
		const char *why = record_fault(&rec[i], sectors, sb);
		if (why) {
			refuse(i, &rec[i], why, sectors, sb);
			return -1;
		}
	}
	return 0;
}

DRV_HOT static int overlaps(const struct run *x, const struct ftl_replay_record *r)
{
	for (uint32_t i = 0; i < x->nslots; i++) {
		const struct rslot *s = &x->slots[i];
		if (s->busy && r->sector < s->req.sector + s->req.count && s->req.sector < r->sector + r->count)
			return 1;
	}
	return 0;
}

DRV_HOT3 static void finish(struct run *x, struct rslot *s, uint64_t now)
{
	struct ftl_replay_result *o = &x->res[s->index % x->window];
	uint64_t lat = now - s->t_from;
	o->latency_cycles = lat > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)lat;
	if (wait_clock) {
		uint64_t w = wait_clock() - s->wait_from;
		o->wait_cycles = w > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)w;
	}
	o->result = s->req.result;
	if (s->req.result != FTL_OK) {
		if (x->sum->errors++ < 4)
			printf("error: ftl replay: request %u (%s of sectors %u + %u): %s\n", (unsigned int)o->id,
			       s->req.op == FTL_REQ_READ ? "read" : "write", (unsigned int)s->req.sector,
			       (unsigned int)s->req.count, ftl_result_name(s->req.result));
	} else if (s->req.op == FTL_REQ_READ) {
		uint32_t bad = 0;
		x->sum->reads++;
		x->sum->read_sectors += s->req.count;
		for (uint32_t i = 0; i < s->req.count; i++) {
			uint32_t sector = s->req.sector + i;
			if (ftl_pattern_same((const uint32_t *)(s->buf + i * x->sb), x->sb / 4, sector, x->version[sector]))
				continue;
			if (bad++ < 2 && x->sum->mismatches < 8)
				printf("mismatch: ftl replay: request %u, sector %u (write version %u)\n", (unsigned int)o->id,
				       (unsigned int)sector, x->version[sector]);
		}
		x->sum->mismatches += bad;
		o->mismatches = bad > 0xFFFF ? 0xFFFF : (uint16_t)bad;
		o->flags |= bad ? FTL_REPLAY_RES_MISMATCH : 0;
	} else {
		x->sum->writes++;
		x->sum->write_sectors += s->req.count;
	}
	s->busy = 0;
	x->in_flight--;
}

DRV_HOT static struct rslot *free_slot(struct run *x)
{
	for (uint32_t i = 0; i < x->nslots; i++)
		if (!x->slots[i].busy)
			return &x->slots[i];
	return NULL;
}

DRV_HOT static void issue(struct run *x, struct rslot *s, uint32_t index, uint64_t arrival, int open)
{
	const struct ftl_replay_record *r = &x->rec[index % x->window];
	struct ftl_replay_result *o = &x->res[index % x->window];
	memset(&s->req, 0, sizeof(s->req));
	s->req.op = r->flags & FTL_REPLAY_FLAG_WRITE ? FTL_REQ_WRITE : FTL_REQ_READ;
	s->req.sector = r->sector;
	s->req.count = r->count;
	s->req.buf = s->buf;
	s->req.id = r->id;
	s->index = index;
	if (s->req.op == FTL_REQ_WRITE) {
		o->flags |= FTL_REPLAY_RES_WRITE;
		for (uint32_t i = 0; i < r->count; i++) {
			uint32_t sector = r->sector + i;
			if (++x->version[sector] == 0)
				x->version[sector] = 1;
			ftl_pattern_fill((uint32_t *)(s->buf + i * x->sb), x->sb / 4, sector, x->version[sector]);
		}
	}
	uint64_t now = hal_timestamp();
	s->t_from = open ? arrival : now;
	s->wait_from = wait_clock ? wait_clock() : 0;
	o->submit_us = (uint32_t)((now - x->t0) / x->per_us);
	s->busy = 1;
	x->in_flight++;
	if (x->in_flight > x->sum->max_in_flight)
		x->sum->max_in_flight = x->in_flight;
	if (x->d.submit(x->d.ctx, &s->req) != FTL_OK) {
		s->req.result = FTL_E_BUSY;
		finish(x, s, hal_timestamp());
	}
}

/* The run state, in main RAM (.dma, not loaded: set at each run), not in .bss: the boards' SRAM is 8 KiB. */
static struct run x __attribute__((section(".dma")));

static int start(const struct ftl_dev *d, const struct ftl_replay_record *records, uint32_t window, int qd, uint8_t *mem,
                 size_t bytes, struct ftl_replay_result *results, struct ftl_replay_summary *sum, int keep)
{
	const uint32_t sb = d->sector_bytes, sectors = d->sectors;
	if (qd < 0 || qd > FTL_REPLAY_MAX_QD || bytes < ftl_replay_work_bytes(d) || sb % 512 || !window)
		return -1;
	memset(&x, 0, sizeof(x));
	x.d = *d, x.rec = records, x.res = results, x.sum = sum, x.sb = sb, x.window = window;
	x.nslots = qd == 0 ? FTL_REPLAY_MAX_QD : (uint32_t)qd;
	x.per_us = hal_clock_hz() / 1000000u;
	x.version = mem;
	if (!keep)
		memset(x.version, 0, sectors);
	uint8_t *bufs = mem + ((sectors + 63) & ~(size_t)63);
	for (uint32_t i = 0; i < FTL_REPLAY_MAX_QD; i++)
		x.slots[i].buf = bufs + (size_t)i * FTL_REPLAY_SLOT_BYTES;
	return 0;
}

/* Records 0..n) in order (see the top of the file); `ctl` NULL: all in the ring already (checked up
 * front), else streamed through the window. Returns 0, or -1 when a streamed record was bad. */
DRV_HOT static int replay(uint32_t n, int qd, uint32_t scale_permille, struct ftl_replay_stream *ctl)
{
	struct ftl_replay_summary *sum = x.sum;
	const int open = qd == 0;
	const uint32_t sectors = x.d.sectors;
	uint32_t next = 0, waited = 0xFFFFFFFFu, done = 0, have = ctl ? 0 : n, starving = 0, bad = 0, checked = 0;
	uint64_t starved_at = 0, polled_at = 0;
	sum->n = n;
	x.t0 = sum->t0 = x.last_done = hal_timestamp();
	while ((next < n && !bad) || x.in_flight) {
		if (next < n && !bad && next >= have) {
			/* Streaming: the next record is not known to be there; look again (not more often than
			 * every 2000 cycles: a look flushes the data cache, the host wrote behind it). */
			uint64_t now = hal_timestamp();
			if (!starving || now - polled_at >= 2000) {
				polled_at = now;
				hal_dma_sync();
				have = ctl->produced;
				if (have > n)
					have = n;
				if (next >= have && !starving) {
					starving = 1;
					starved_at = now;
					ctl->underruns = ++sum->underruns;
				} else if (next < have && starving) {
					starving = 0;
					sum->stall_cycles += now - starved_at;
				}
			}
		}
		if (next < n && !bad && next < have) {
			const struct ftl_replay_record *r = &x.rec[next % x.window];
			struct ftl_replay_result *o = &x.res[next % x.window];
			uint64_t arrival = open ? x.t0 + (uint64_t)r->time_us * scale_permille * x.per_us / 1000u : 0;
			struct rslot *s;
			if (ctl && checked == next) {
				/* First look at a streamed record: check it, then start its result afresh. */
				const char *why = record_fault(r, sectors, x.sb);
				if (why) {
					refuse(next, r, why, sectors, x.sb);
					bad = 1;
					continue;
				}
				memset(o, 0, sizeof(*o));
				o->id = r->id;
				checked = next + 1;
			}
			if (open && hal_timestamp() < arrival) {
				/* not yet arrived: poll below */
			} else if (overlaps(&x, r)) {
				if (waited != next) {
					waited = next;
					sum->overlap_waits++;
					o->flags |= FTL_REPLAY_RES_WAITED;
				}
			} else if ((s = free_slot(&x)) != NULL) {
				issue(&x, s, next++, arrival, open);
				continue;
			}
		}
		struct ftl_req *q = x.d.poll(x.d.ctx);
		if (!q) {
			stall_check(&x, next);
			continue;
		}
		x.last_done = hal_timestamp();
		finish(&x, (struct rslot *)q, x.last_done);
		if (ctl) {
			uint32_t low = next;                  /* the lowest record still in flight, else next */
			for (uint32_t i = 0; i < x.nslots; i++)
				if (x.slots[i].busy && x.slots[i].index < low)
					low = x.slots[i].index;
			ctl->completed = low;
		}
		if (++done % 4096 == 0)
			printf("replay progress %u/%u\n", (unsigned int)done, (unsigned int)n);
	}
	sum->cycles = hal_timestamp() - x.t0;
	if (ctl) {
		ctl->completed = next;
		sum->window = x.window;
		sum->n = next;
	}
	return bad ? -1 : 0;
}

int ftl_replay_run(const struct ftl_dev *d, const struct ftl_replay_record *records, uint32_t n, int qd,
                   uint32_t scale_permille, uint8_t *mem, size_t bytes, struct ftl_replay_result *results,
                   struct ftl_replay_summary *sum, int keep)
{
	memset(sum, 0, sizeof(*sum));
	if (!n || check_records(records, n, d->sectors, d->sector_bytes) ||
	    start(d, records, n, qd, mem, bytes, results, sum, keep))
		return -1;
	memset(results, 0, (size_t)n * sizeof(*results));
	for (uint32_t i = 0; i < n; i++)
		results[i].id = records[i].id;
	return replay(n, qd, scale_permille, NULL);
}

int ftl_replay_stream(const struct ftl_dev *d, const struct ftl_replay_record *ring, uint32_t window, uint32_t n, int qd,
                      uint32_t scale_permille, uint8_t *mem, size_t bytes, struct ftl_replay_result *results,
                      struct ftl_replay_stream *ctl, struct ftl_replay_summary *sum, int keep)
{
	memset(sum, 0, sizeof(*sum));
	if (!n || start(d, ring, window, qd, mem, bytes, results, sum, keep))
		return -1;
	ctl->completed = 0;
	ctl->underruns = 0;
	return replay(n, qd, scale_permille, ctl);
}
