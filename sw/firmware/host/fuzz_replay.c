/* libFuzzer target: the replay's record decoding and run (`ftl replay ring|run`, cmds_replay.c and
 * ftl_replay.c) on the FTL over the host NAND model, as the host drives it: records written into the
 * ring after the work area (the layout cmds_replay.c documents), then the command with its arguments.
 * Per input: a small device (geometry and sector size from the input), formatted and mounted; a ring
 * of 0..79 records, each either well formed or 16 raw bytes; argv "ftl replay <sub> <n> <qd> [scale]"
 * whose tokens are numbers or non-numbers. The harness decides on its own, from ftl_replay.h and the
 * command's usage, whether the command must be refused, and checks:
 *   refused: -1 and nothing replayed (the FTL's host counters unchanged);
 *   run:     0, one result per record with the record's id, FTL_OK, no mismatch, the write flag as
 *            the record's; then every sector read back equals the pattern of its last write in record
 *            order (version byte per sector, 255 wraps to 1), or zeros when never written.
 * Arrival times are real waits in the open loop; hal_host.c's clock speeds up as an input runs long,
 * so every time_us ends. Any abort (ASan, UBSan, a failed check) is a crash for the fuzzer. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftl/ftl.h"
#include "ftl/host/nand_model.h"
#include "ftl_replay.h"
#include "ftl_workload.h"
#include "hal_host.h"

#define MAX_RECORDS 80

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

static void fail(const char *what, long a, long b)
{
	fprintf(stderr, "fuzz-replay: %s (%ld, %ld)\n", what, a, b);
	abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (!getenv("NANDLAB_FUZZ_VERBOSE") && !freopen("/dev/null", "w", stdout))
		abort();
	return 0;
}

/* An argument: a number (known value) or text that is not one (starts with a non-digit). */
struct arg { char text[24]; int number; uint32_t value; };

static void make_arg(struct input *in, struct arg *a, uint32_t small)
{
	uint8_t kind = (uint8_t)U8(in);
	a->number = 1;
	switch (kind % 5) {
	case 0: a->value = U8(in) % (small + 1); break;
	case 1: a->value = U32(in); break;
	case 2: a->value = small + U8(in) % 4; break;
	case 3: a->value = U16(in); break;
	default: {
		a->number = 0;
		int len = 1 + U8(in) % 12;
		a->text[0] = "-x+ .a"[U8(in) % 6];
		for (int i = 1; i < len; i++)
			a->text[i] = (char)(1 + U8(in) % 255);
		a->text[len] = '\0';
		return;
	}
	}
	snprintf(a->text, sizeof(a->text), kind & 0x80 ? "0x%x" : "%u", (unsigned int)a->value);
}

static int record_ok(const struct ftl_replay_record *r, uint32_t sectors, uint32_t sb)
{
	uint64_t end = (uint64_t)r->sector + r->count;
	return r->count && !(r->flags & ~1u) && !r->reserved && end <= sectors &&
	       (uint64_t)r->count * sb <= FTL_REPLAY_SLOT_BYTES;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = { data, size };
	if (size < 4)
		return 0;
	hal_host_reset();
	uint8_t geo = (uint8_t)U8(&in);
	struct ftl_geo g = { 0 };
	g.dies = 1 + (geo & 1);
	g.planes = 1 + ((geo >> 1) & 1);
	g.blocks = 16;
	g.pages = 8u << ((geo >> 2) & 1);
	g.page_bytes = 2048u << ((geo >> 3) & 1);
	g.tag_bytes = FTL_TAG_BYTES;
	struct ftl_config cfg;
	ftl_default_config(&cfg);
	cfg.sector_bytes = geo & 16 ? 4096 : 512;
	struct nand_model_faults fx = { 0 };
	struct nand_model *m = nand_model_new(&g, &fx, 1);
	size_t need = ftl_ram_bytes(&g, &cfg);
	void *ram = malloc(need);
	int res;
	struct ftl *f = ftl_init(ram, need, nand_model_nand(m), &cfg, &res);
	if (res || ftl_format(f) || ftl_mount(f))
		fail("a valid small device did not format and mount", res, geo);
	const uint32_t sectors = ftl_sectors(f), sb = cfg.sector_bytes;
	struct ftl_dev dev;
	ftl_as_dev(f, &dev);

	/* RAM after the FTL's tables: the work area, the stream's 64 control bytes, then capacity x (record +
	 * result) (cmds_replay.c's area()). */
	size_t work = ((ftl_replay_work_bytes(&dev) + 63) & ~(size_t)63) + 64;
	uint32_t capacity = U8(&in) % MAX_RECORDS;
	size_t bytes = work + (size_t)capacity * (sizeof(struct ftl_replay_record) + sizeof(struct ftl_replay_result));
	uint8_t *mem = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
	struct ftl_replay_record *ring = (struct ftl_replay_record *)(mem + work);
	struct ftl_replay_result *results = (struct ftl_replay_result *)(ring + capacity);
	for (uint32_t i = 0; i < capacity; i++) {
		struct ftl_replay_record *r = &ring[i];
		uint8_t kind = (uint8_t)U8(&in);
		if (kind % 4 == 3) {
			uint8_t raw[sizeof(*r)];
			for (size_t k = 0; k < sizeof(raw); k++)
				raw[k] = (uint8_t)U8(&in);
			memcpy(r, raw, sizeof(raw));
		} else {
			uint32_t most = FTL_REPLAY_SLOT_BYTES / sb < sectors ? FTL_REPLAY_SLOT_BYTES / sb : sectors;
			r->count = (uint16_t)(1 + U8(&in) % most);
			r->sector = kind % 4 == 2 ? sectors - r->count : U16(&in) % (sectors - r->count + 1);
			r->flags = kind & 0x10 ? FTL_REPLAY_FLAG_WRITE : 0;
			r->reserved = 0;
			r->time_us = U16(&in) % 4096;
			r->id = 1000 + i;
		}
	}
	struct arg sub, n, qd, scale, win;
	uint8_t form = (uint8_t)U8(&in);
	make_arg(&in, &n, capacity);
	make_arg(&in, &qd, FTL_REPLAY_MAX_QD);
	make_arg(&in, &scale, 2000);
	make_arg(&in, &win, capacity);
	const char *subs[] = { "run", "run", "stream", "stream", "ring", "rin", "" };
	snprintf(sub.text, sizeof(sub.text), "%s", subs[form % 7]);
	const int stream = !strcmp(sub.text, "stream");
	if (stream && n.number && n.value > 4 * capacity + 1) {
		/* The harness is the host and has written every record (produced = n): keep runs short. */
		n.value %= 4 * capacity + 2;
		snprintf(n.text, sizeof(n.text), "%u", (unsigned int)n.value);
	}
	char keep[8];
	snprintf(keep, sizeof(keep), "%s", form & 8 ? "keep" : "kee");
	char *argv[9] = { "ftl", "replay", sub.text, n.text, qd.text, scale.text, keep, NULL, NULL };
	int argc = 2 + (form >> 4) % 6;          /* 2..7 */
	if (stream) {                             /* ftl replay stream <n> <qd> <window> [scale] [keep] */
		argv[5] = win.text, argv[6] = scale.text, argv[7] = keep;
		argc = 2 + (form >> 4) % 7;       /* 2..8 */
	}
	argv[argc] = NULL;
	/* A fresh format, as the shell's `ftl format` makes it: no earlier run whose versions `keep` could use. */
	ftl_replay_forget();

	/* What the command must do, from ftl_replay.h and the usage. `window`: record i is ring[i % window];
	 * `ran`: records 0..ran-1 are replayed (a stream stops before its first bad record). */
	int want_ok;
	uint32_t count = n.number ? n.value : 0, window = capacity ? capacity : 1, ran = 0;
	const int opt = stream ? 6 : 5;           /* argv index of scale_permille */
	if (argc < 3 || !capacity)
		want_ok = 0;
	else if (!strcmp(sub.text, "ring"))
		want_ok = 1;
	else if ((strcmp(sub.text, "run") && !stream) || argc < opt || !n.number || !qd.number ||
	         (stream && !win.number) || (argc > opt && !scale.number))
		want_ok = 0;
	else if (argc > opt + 1)
		want_ok = 0;                     /* 'keep' with no earlier run, or not 'keep' at all */
	else if (!count || (stream ? !win.value || win.value > capacity : count > capacity) ||
	         qd.value > FTL_REPLAY_MAX_QD || (argc > opt && scale.value > 1000000u))
		want_ok = 0;
	else {
		if (stream)
			window = win.value;
		while (ran < count && record_ok(&ring[ran % window], sectors, sb))
			ran++;
		want_ok = ran == count;
		if (!stream && !want_ok)
			ran = 0;                 /* refused up front: nothing runs */
	}
	int is_run = ran > 0;
	struct ftl_replay_stream *ctl = (struct ftl_replay_stream *)(mem + work - 64);
	ctl->produced = count;                    /* the host has written them all */

	struct ftl_stats before, after;
	ftl_get_stats(f, &before);
	int rc = ftl_replay_cmd(&dev, mem, bytes, argc, argv);
	ftl_get_stats(f, &after);
	if (rc != (want_ok ? 0 : -1))
		fail(want_ok ? "a valid command was refused" : "an invalid command was accepted", rc, argc);
	if (!is_run) {
		if (after.host_writes != before.host_writes || after.host_reads != before.host_reads)
			fail("a refused command replayed requests", (long)(after.host_writes - before.host_writes),
			     (long)(after.host_reads - before.host_reads));
		goto out;
	}
	if (stream && ctl->completed != ran)
		fail("the stream's completed count is not the records it ran", (long)ctl->completed, (long)ran);

	/* The run: results (the last window of them when streamed), then the device's contents against the
	 * harness's own versions. */
	uint8_t *version = calloc(sectors, 1), *buf = malloc(sb), *want = malloc(sb);
	for (uint32_t i = 0; i < ran; i++) {
		const struct ftl_replay_record *r = &ring[i % window];
		const struct ftl_replay_result *o = &results[i % window];
		if (i + window >= ran &&
		    (o->id != r->id || o->result != FTL_OK || (o->flags & FTL_REPLAY_RES_MISMATCH) || o->mismatches ||
		     !(o->flags & FTL_REPLAY_RES_WRITE) != !(r->flags & FTL_REPLAY_FLAG_WRITE)))
			fail("a request's result is wrong (record, result code)", (long)i, o->result);
		if (r->flags & FTL_REPLAY_FLAG_WRITE)
			for (uint32_t k = 0; k < r->count; k++)
				if (++version[r->sector + k] == 0)
					version[r->sector + k] = 1;
	}
	for (uint32_t s = 0; s < sectors; s++) {
		if ((res = ftl_read(f, s, 1, buf)))
			fail("reading back after the replay failed (sector, result)", (long)s, res);
		if (version[s])
			ftl_pattern_fill((uint32_t *)want, sb / 4, s, version[s]);
		else
			memset(want, 0, sb);
		if (memcmp(buf, want, sb))
			fail("a sector does not hold its last write after the replay (sector, version)", (long)s, version[s]);
	}
	free(version);
	free(buf);
	free(want);
out:
	fflush(stdout);
	free(mem);
	free(ram);
	nand_model_free(m);
	return 0;
}
