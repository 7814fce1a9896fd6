/* nandlab firmware: `ftl replay ring|run` (the shell side of ftl_replay.c), dispatched by cmds_ftl.c
 * with the mounted FTL and the RAM after its tables. That RAM holds, in order: the replay's work area
 * (a version byte per sector, the slot buffers), the ring of request records and the results, one
 * per record. Their addresses depend only on the FTL's configuration, so the host asks for them
 * (`ftl replay ring`) after `ftl format` and writes the ring through the bridge. */
#include <stdio.h>
#include <string.h>

#include "ftl/ftl.h"
#include "ftl_replay.h"
#include "hal.h"
#include "shell.h"

struct area {
	struct ftl_replay_stream *stream;
	struct ftl_replay_record *ring;
	struct ftl_replay_result *results;
	uint32_t capacity;
};

#define STREAM_BYTES 64u   /* the stream's control words, a cache line or more before the ring */

static int area(const struct ftl_dev *d, uint8_t *mem, size_t bytes, struct area *a)
{
	size_t work = ((ftl_replay_work_bytes(d) + 63) & ~(size_t)63) + STREAM_BYTES;
	size_t cap = bytes > work ? (bytes - work) / (sizeof(struct ftl_replay_record) + sizeof(struct ftl_replay_result)) : 0;
	a->capacity = cap > FTL_REPLAY_MAX_RECORDS ? FTL_REPLAY_MAX_RECORDS : (uint32_t)cap;
	a->stream = (struct ftl_replay_stream *)(mem + work - STREAM_BYTES);
	a->ring = (struct ftl_replay_record *)(mem + work);
	a->results = (struct ftl_replay_result *)(a->ring + a->capacity);
	if (!a->capacity) {
		printf("error: ftl replay: no RAM left for a ring (%lu bytes free, the work area needs %lu)\n",
		       (unsigned long)bytes, (unsigned long)work);
		return -1;
	}
	return 0;
}

/* The version bytes in the work area are those of the runs since the last fresh one (ftl_replay_forget). */
static int versions_valid;      /* .bss: zero at boot */

void ftl_replay_forget(void)
{
	versions_valid = 0;
}

/* The counters of the FTLs behind the device, summed (MPNFM: both page sizes'). */
static void dev_stats(const struct ftl_dev *d, struct ftl_stats *s)
{
	memset(s, 0, sizeof(*s));
	for (int i = 0; i < 2 && d->ftls[i]; i++) {
		struct ftl_stats t;
		ftl_get_stats(d->ftls[i], &t);
		s->host_reads += t.host_reads;
		s->host_writes += t.host_writes;
		s->nand_programs += t.nand_programs;
		s->nand_reads += t.nand_reads;
		s->nand_erases += t.nand_erases;
		s->gc_moves += t.gc_moves;
		s->meta_programs += t.meta_programs;
		s->rmw_reads += t.rmw_reads;
	}
}

#define RUN_USAGE "ftl replay run <n> <qd 0-32, 0 = open loop> [scale_permille] [keep]"
#define STREAM_USAGE "ftl replay stream <n> <qd 0-32> <window> [scale_permille] [keep]"

/* ftl replay run <n> <qd> [scale_permille] [keep]: the first n records of the ring; keep: reads check
 * what the previous runs wrote (a preconditioning before the measured run).
 * ftl replay stream <n> <qd> <window> [scale_permille] [keep]: n records through a window of the ring
 * that the host refills as the run goes (struct ftl_replay_stream). */
static int replay_run(const struct ftl_dev *d, uint8_t *mem, size_t bytes, const struct area *a, int argc, char **argv)
{
	const int stream = !strcmp(argv[2], "stream");
	const int first_opt = stream ? 6 : 5;           /* argv index of scale_permille */
	unsigned int n, qd, window = 0, scale = 1000;
	int keep = 0;
	struct ftl_replay_summary s;
	struct ftl_stats before, after;
	if (argc < first_opt)
		return shell_usage(stream ? STREAM_USAGE : RUN_USAGE);
	if (shell_parse_u32(argv[3], "n", &n) || shell_parse_u32(argv[4], "qd", &qd) ||
	    (stream && shell_parse_u32(argv[5], "window", &window)) ||
	    (argc > first_opt && shell_parse_u32(argv[first_opt], "scale_permille", &scale)))
		return -1;
	if (argc > first_opt + 1) {
		if (argc > first_opt + 2 || strcmp(argv[first_opt + 1], "keep")) {
			printf("error: ftl replay %s: after scale_permille only 'keep' (got '%s')\n", argv[2],
			       argv[argc > first_opt + 2 ? first_opt + 2 : first_opt + 1]);
			return -1;
		}
		if (!versions_valid) {
			printf("error: ftl replay %s: 'keep' needs an earlier run since the last format, mount or FTL "
			       "command outside the replay\n", argv[2]);
			return -1;
		}
		keep = 1;
	}
	if (stream ? (!n || !window || window > a->capacity) : (!n || n > a->capacity)) {
		printf(stream ? "error: ftl replay: n 1 or more, window 1..%u (the ring's capacity)\n"
		              : "error: ftl replay: n 1..%u (the ring's capacity)\n", (unsigned int)a->capacity);
		return -1;
	}
	if (qd > FTL_REPLAY_MAX_QD || scale > 1000000u) {
		printf("error: ftl replay: qd 0..%u, scale_permille 0..1000000\n", FTL_REPLAY_MAX_QD);
		return -1;
	}
	hal_dma_sync();     /* the host wrote the ring behind the data cache's back */
	dev_stats(d, &before);
	int rc = stream ? ftl_replay_stream(d, a->ring, window, n, (int)qd, scale, mem, bytes, a->results, a->stream,
	                                    &s, keep)
	                : ftl_replay_run(d, a->ring, n, (int)qd, scale, mem, bytes, a->results, &s, keep);
	if (rc && !(stream && s.n))     /* refused up front (a stream stopped at a bad record still reports) */
		return -1;
	versions_valid = 1;
	dev_stats(d, &after);
	uint64_t per_us = hal_clock_hz() / 1000000u;
	/* FC after the run: mem starts with the replay's version byte per sector (0: never written). */
	uint64_t fc = d->unusable ? d->unusable(d->ctx, mem) : 0;
	printf("replay n=%u reads=%u writes=%u errors=%u mismatches=%u us=%lu overlap_waits=%u cycles=%llu t0=%llu qd=%u "
	       "scale_permille=%u max_in_flight=%u read_sectors=%llu write_sectors=%llu ftl_host_reads=%llu "
	       "ftl_host_writes=%llu ftl_nand_programs=%llu ftl_nand_reads=%llu ftl_nand_erases=%llu ftl_gc_moves=%llu "
	       "ftl_meta_programs=%llu ftl_rmw_reads=%llu fc_sectors=%llu window=%u underruns=%u stall_cycles=%llu\n",
	       (unsigned int)s.n, (unsigned int)s.reads, (unsigned int)s.writes, (unsigned int)s.errors,
	       (unsigned int)s.mismatches, (unsigned long)(s.cycles / per_us), (unsigned int)s.overlap_waits,
	       (unsigned long long)s.cycles, (unsigned long long)s.t0, qd, scale, (unsigned int)s.max_in_flight,
	       (unsigned long long)s.read_sectors, (unsigned long long)s.write_sectors,
	       (unsigned long long)(after.host_reads - before.host_reads),
	       (unsigned long long)(after.host_writes - before.host_writes),
	       (unsigned long long)(after.nand_programs - before.nand_programs),
	       (unsigned long long)(after.nand_reads - before.nand_reads),
	       (unsigned long long)(after.nand_erases - before.nand_erases),
	       (unsigned long long)(after.gc_moves - before.gc_moves),
	       (unsigned long long)(after.meta_programs - before.meta_programs),
	       (unsigned long long)(after.rmw_reads - before.rmw_reads), (unsigned long long)fc, (unsigned int)s.window, (unsigned int)s.underruns, (unsigned long long)s.stall_cycles);
	return rc || s.errors || s.mismatches ? -1 : 0;
}

int ftl_replay_cmd(const struct ftl_dev *d, uint8_t *mem, size_t bytes, int argc, char **argv)
{
	struct area a;
	if (argc < 3)
		return shell_usage("ftl replay ring | " RUN_USAGE " | " STREAM_USAGE);
	if (area(d, mem, bytes, &a))
		return -1;
	if (!strcmp(argv[2], "ring")) {
		printf("replay ring=0x%08lx results=0x%08lx stream=0x%08lx capacity=%u record_bytes=%u result_bytes=%u "
		       "slot_bytes=%u max_qd=%u sectors=%u sector_bytes=%u clock_hz=%lu\n", (unsigned long)(uintptr_t)a.ring,
		       (unsigned long)(uintptr_t)a.results, (unsigned long)(uintptr_t)a.stream, (unsigned int)a.capacity,
		       (unsigned int)sizeof(struct ftl_replay_record), (unsigned int)sizeof(struct ftl_replay_result),
		       FTL_REPLAY_SLOT_BYTES, FTL_REPLAY_MAX_QD, (unsigned int)d->sectors,
		       (unsigned int)d->sector_bytes, (unsigned long)hal_clock_hz());
		return 0;
	}
	if (!strcmp(argv[2], "run") || !strcmp(argv[2], "stream"))
		return replay_run(d, mem, bytes, &a, argc, argv);
	printf("error: ftl replay: unknown '%s' (ring, run, stream)\n", argv[2]);
	return -1;
}
