/* mpnfm-torture: the MPNFM layer (two FTLs on one host NAND model with two page sizes) against a
 * shadow model of every sector; requests in flight never overlap, every read is checked at its
 * completion and every sector once more at the end. Prints one JSON object. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../mpnfm.h"
#include "nand_model.h"
#include "shadow.h"

struct opts {
	struct ftl_geo g;             /* the device: 2 planes, plane 0's page = the large page */
	uint32_t small_bytes, sector_bytes, op_permille;
	struct mpnfm_config mc;
	struct nand_model_faults fx;
	uint64_t ops, seed, check_every;
	double read_ratio, trim_ratio, flush_ratio, small_ratio;
	uint32_t qd, max_sectors, footprint_permille;
};

struct slot { struct ftl_req r; uint32_t version; int busy; };

#define NO_ALT 0xFFFFFFFFu
#define ALTS 4                /* versions failed requests may have left in a sector, beside its own */

/* A sector read back: its version, or one that failed requests since left possible (which it then
 * settles to). alt holds ALTS per sector, NO_ALT where unused. */
static int read_matches(uint8_t *expect, uint32_t S, uint32_t sec, const uint8_t *got, uint32_t *shadow, uint32_t *alt)
{
	uint32_t *a = alt + (size_t)sec * ALTS;
	int ok = 0;
	pattern(expect, S, sec, shadow[sec]);
	ok = !memcmp(expect, got, S);
	for (int k = 0; k < ALTS && !ok && a[k] != NO_ALT; k++) {
		pattern(expect, S, sec, a[k]);
		if (!memcmp(expect, got, S)) {
			shadow[sec] = a[k];
			ok = 1;
		}
	}
	if (ok)
		for (int k = 0; k < ALTS; k++)
			a[k] = NO_ALT;
	return ok;
}

/* Which version of the sector `got` is (searching all written so far), -1 if none: for reports. */
static long which_version(uint8_t *scratch, uint32_t S, uint32_t sec, const uint8_t *got, uint32_t upto)
{
	for (uint32_t v = 0; v <= upto; v++) {
		pattern(scratch, S, sec, v);
		if (!memcmp(scratch, got, S))
			return (long)v;
	}
	return -1;
}

/* A write or trim of the sector failed: version v may be there now, or any it might hold before. 0 when
 * there is no room left to remember it (the run then stops checking this sector: counted). */
static int note_alt(uint32_t *alt, uint32_t sec, uint32_t v)
{
	uint32_t *a = alt + (size_t)sec * ALTS;
	for (int k = 0; k < ALTS; k++)
		if (a[k] == NO_ALT || a[k] == v) {
			a[k] = v;
			return 1;
		}
	return 0;
}


static int parse(int argc, char **argv, struct opts *o)
{
	memset(o, 0, sizeof(*o));
	o->g = (struct ftl_geo){ .dies = 1, .planes = 2, .blocks = 128, .pages = 32, .page_bytes = 32768, .tag_bytes = 6 };
	o->small_bytes = 4096;
	o->sector_bytes = 512;
	o->op_permille = 70;
	mpnfm_default_config(&o->mc);
	o->ops = 20000; o->seed = 1; o->check_every = 1000; o->qd = 8; o->max_sectors = 128;
	o->read_ratio = 0.3; o->trim_ratio = 0.02; o->flush_ratio = 0.005; o->small_ratio = 0.6;
	o->footprint_permille = 1000;
	o->fx.flip = 0.01;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v) { fprintf(stderr, "mpnfm-torture: %s needs a value\n", a); return -1; }
		i++;
		if (!strcmp(a, "--dies")) o->g.dies = atoi(v);
		else if (!strcmp(a, "--blocks")) o->g.blocks = atoi(v);
		else if (!strcmp(a, "--pages")) o->g.pages = atoi(v);
		else if (!strcmp(a, "--large-bytes")) o->g.page_bytes = atoi(v);
		else if (!strcmp(a, "--small-bytes")) o->small_bytes = atoi(v);
		else if (!strcmp(a, "--sector-bytes")) o->sector_bytes = atoi(v);
		else if (!strcmp(a, "--op-permille")) o->op_permille = atoi(v);
		else if (!strcmp(a, "--theta")) o->mc.theta_bytes = atoi(v);
		else if (!strcmp(a, "--theta-inclusive")) o->mc.theta_inclusive = atoi(v);
		else if (!strcmp(a, "--low-permille")) o->mc.low_permille = atoi(v);
		else if (!strcmp(a, "--ops")) o->ops = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--seed")) o->seed = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--check-every")) o->check_every = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--read-ratio")) o->read_ratio = atof(v);
		else if (!strcmp(a, "--trim-ratio")) o->trim_ratio = atof(v);
		else if (!strcmp(a, "--flush-ratio")) o->flush_ratio = atof(v);
		else if (!strcmp(a, "--small-ratio")) o->small_ratio = atof(v);
		else if (!strcmp(a, "--qd")) o->qd = atoi(v);
		else if (!strcmp(a, "--max-sectors")) o->max_sectors = atoi(v);
		else if (!strcmp(a, "--footprint-permille")) o->footprint_permille = atoi(v);
		else if (!strcmp(a, "--flip")) o->fx.flip = atof(v);
		else if (!strcmp(a, "--program-fail")) o->fx.program_fail = atof(v);
		else if (!strcmp(a, "--erase-fail")) o->fx.erase_fail = atof(v);
		else if (!strcmp(a, "--factory-bad")) o->fx.factory_bad = atof(v);
		else if (!strcmp(a, "--refuse")) o->fx.refuse = atof(v);
		else { fprintf(stderr, "mpnfm-torture: unknown option %s\n", a); return -1; }
	}
	if (o->qd < 1 || o->qd > FTL_MAX_REQUESTS || o->max_sectors < 1 || !o->footprint_permille ||
	    o->footprint_permille > 1000) {
		fprintf(stderr, "mpnfm-torture: --qd takes 1..%d, --max-sectors at least 1, --footprint-permille 1..1000\n",
		        FTL_MAX_REQUESTS);
		return -1;
	}
	return 0;
}

static struct ftl *make_ftl(struct ftl_nand *n, const struct opts *o)
{
	struct ftl_config cfg;
	ftl_default_config(&cfg);
	cfg.sector_bytes = o->sector_bytes;
	cfg.op_permille = o->op_permille;
	size_t bytes = ftl_ram_bytes(&n->geo, &cfg);
	int res;
	struct ftl *f = ftl_init(malloc(bytes), bytes, n, &cfg, &res);
	if (res) {
		printf("{\"error\": \"ftl_init (%u B pages): %s\"}\n", (unsigned)n->geo.page_bytes, ftl_error(f));
		exit(2);
	}
	if ((res = ftl_format(f))) {
		printf("{\"error\": \"format (%u B pages): %s\"}\n", (unsigned)n->geo.page_bytes, ftl_error(f));
		exit(2);
	}
	return f;
}

static void print_ftl(const char *name, struct ftl *f)
{
	struct ftl_stats s;
	ftl_get_stats(f, &s);
	printf("\"%s\": {\"sectors\": %u, \"host_writes\": %llu, \"nand_reads\": %llu, \"nand_programs\": %llu, "
	       "\"nand_erases\": %llu, \"gc_moves\": %llu, \"rmw_reads\": %llu, \"bad_grown\": %u, \"bad_factory\": %u, "
	       "\"anchor_moves\": %u, \"last_error\": \"%s\"}", name,
	       (unsigned)ftl_sectors(f), (unsigned long long)s.host_writes, (unsigned long long)s.nand_reads,
	       (unsigned long long)s.nand_programs, (unsigned long long)s.nand_erases, (unsigned long long)s.gc_moves,
	       (unsigned long long)s.rmw_reads, (unsigned)s.bad_grown, (unsigned)s.bad_factory,
	       (unsigned)s.anchor_moves, ftl_error(f) ? ftl_error(f) : "");
}

/* The region table, and both FTLs' superblock accounting. */
static void audit(struct mpnfm *m, struct ftl *fl, struct ftl *fs, uint64_t *failures, char *first, size_t n)
{
	const char *why = mpnfm_check(m) ? mpnfm_why() : NULL, *what = "region table";
	if (!why && (why = ftl_audit(fl)))
		what = "large FTL";
	if (!why && (why = ftl_audit(fs)))
		what = "small FTL";
	if (!why)
		return;
	(*failures)++;
	if (!*first)
		snprintf(first, n, "%s: %s", what, why);
}

int main(int argc, char **argv)
{
	struct opts o;
	if (parse(argc, argv, &o))
		return 2;
	rng = o.seed * 0x2545F4914F6CDD1Dull + 7;
	struct nand_model *nm = nand_model_new(&o.g, &o.fx, o.seed);
	if (nand_model_set_small(nm, o.small_bytes)) {
		printf("{\"error\": \"small pages of %u B on a %u B-page model\"}\n", (unsigned)o.small_bytes,
		       (unsigned)o.g.page_bytes);
		return 2;
	}
	static struct mpnfm_views views;
	if (mpnfm_views_open(&views, nand_model_nand(nm), o.small_bytes)) {
		printf("{\"error\": \"views: large %u B, small %u B, %u blocks\"}\n", (unsigned)o.g.page_bytes,
		       (unsigned)o.small_bytes, (unsigned)o.g.blocks);
		return 2;
	}
	struct ftl *fl = make_ftl(&views.view[0], &o), *fs = make_ftl(&views.view[1], &o);
	size_t bytes = mpnfm_ram_bytes(fl, fs, &o.mc);
	int res;
	void *ram = aligned_alloc(8, (bytes + 7) & ~(size_t)7);
	struct mpnfm *m = mpnfm_init(ram, bytes, fl, fs, &o.mc, &res);
	if (!m) {
		printf("{\"error\": \"%s\"}\n", mpnfm_why());
		return 2;
	}
	const uint32_t S = o.sector_bytes, sectors = mpnfm_sectors(m);
	const uint32_t foot = (uint32_t)((uint64_t)sectors * o.footprint_permille / 1000);
	const uint32_t theta_s = (o.mc.theta_bytes ? o.mc.theta_bytes : o.small_bytes) / S;
	/* shadow: each sector's version; alt: a second version it may hold (a write or trim that failed may
	 * have reached some of its sectors: either is right until a read says which), NO_ALT when none. */
	uint32_t *shadow = calloc(sectors, 4), *alt = malloc((size_t)sectors * 4 * ALTS), version = 0;
	memset(alt, 0xFF, (size_t)sectors * 4 * ALTS);
	uint8_t *busy = calloc(sectors, 1), *expect = malloc(S);
	struct slot *sl = calloc(o.qd, sizeof(*sl));
	for (uint32_t i = 0; i < o.qd; i++)
		sl[i].r.buf = aligned_alloc(8, (size_t)o.max_sectors * S);
	uint64_t issued = 0, done = 0, mismatches = 0, failures = 0, check_failures = 0, reads = 0, writes = 0;
	uint64_t unsettled = 0;
	uint64_t small = 0, large = 0, trims = 0, flushes = 0;
	char first_bad[200] = "";
	char first_mismatch[200] = "";   /* the first wrong read (first_bad may be a refusal) */
	uint32_t inflight = 0;
	while (done < o.ops) {
		/* Fill free slots with requests that overlap nothing in flight. */
		for (uint32_t k = 0; k < o.qd && issued < o.ops; k++) {
			struct slot *s = &sl[k];
			if (s->busy)
				continue;
			double x = unit();
			struct ftl_req *r = &s->r;
			memset(r, 0, offsetof(struct ftl_req, buf));
			if (x < o.flush_ratio) {
				r->op = FTL_REQ_FLUSH;
			} else {
				uint32_t n;
				if (x < o.flush_ratio + o.read_ratio) {
					r->op = FTL_REQ_READ;
					n = 1 + rnd() % o.max_sectors;
				} else if (x < o.flush_ratio + o.read_ratio + o.trim_ratio) {
					r->op = FTL_REQ_TRIM;
					n = 1 + rnd() % o.max_sectors;
				} else {
					r->op = FTL_REQ_WRITE;
					if (unit() < o.small_ratio && theta_s > 1)
						n = 1 + rnd() % (theta_s - 1);
					else
						n = theta_s + rnd() % (o.max_sectors > theta_s ? o.max_sectors - theta_s + 1 : 1);
				}
				if (n > o.max_sectors)
					n = o.max_sectors;
				if (n > foot)
					n = foot;
				uint32_t lo = rnd() % (foot - n + 1), i;
				for (i = 0; i < n && !busy[lo + i]; i++)
					;
				if (i < n)
					continue;             /* overlaps a request in flight: draw again next round */
				r->sector = lo;
				r->count = n;
				if (r->op == FTL_REQ_WRITE) {
					s->version = ++version;
					for (i = 0; i < n; i++)
						pattern(r->buf + (size_t)i * S, S, lo + i, s->version);
				}
				memset(busy + lo, 1, n);
			}
			r->id = k;
			if ((res = mpnfm_submit(m, r))) {
				printf("{\"error\": \"submit: %s\"}\n", ftl_result_name(res));
				return 2;
			}
			s->busy = 1;
			issued++;
			inflight++;
		}
		struct ftl_req *r = mpnfm_poll(m);
		if (!r)
			continue;
		struct slot *s = &sl[r->id];
		s->busy = 0;
		inflight--;
		done++;
		if (r->result != FTL_OK) {
			failures++;
			if (!*first_bad)
				snprintf(first_bad, sizeof(first_bad), "request %llu (op %u, sectors %u+%u) failed: %s",
				         (unsigned long long)done, r->op, (unsigned)r->sector, (unsigned)r->count,
				         ftl_result_name(r->result));
		}
		if (r->op == FTL_REQ_FLUSH) {
			flushes++;
			continue;
		}
		for (uint32_t i = 0; i < r->count; i++) {
			uint32_t sec = r->sector + i;
			busy[sec] = 0;
			if (r->op == FTL_REQ_WRITE || r->op == FTL_REQ_TRIM) {
				uint32_t v = r->op == FTL_REQ_WRITE ? s->version : 0;
				if (r->result == FTL_OK) {
					shadow[sec] = v;
					memset(alt + (size_t)sec * ALTS, 0xFF, 4 * ALTS);
				} else {
					unsettled++;
					if (!note_alt(alt, sec, v)) {
						mismatches++;    /* more failed versions than the check can follow: not silent */
						if (!*first_mismatch)
							snprintf(first_mismatch, sizeof(first_mismatch), "sector %u: more than %d failed "
							         "writes in a row", (unsigned)sec, ALTS);
					}
				}
			} else if (r->op == FTL_REQ_READ && r->result == FTL_OK) {
				if (!read_matches(expect, S, sec, r->buf + (size_t)i * S, shadow, alt)) {
					mismatches++;
					if (!*first_mismatch)
						snprintf(first_mismatch, sizeof(first_mismatch), "request %llu: sector %u read version %ld "
						         "(%u expected, or %d; unit %s)", (unsigned long long)done, (unsigned)sec,
						         which_version(expect, S, sec, r->buf + (size_t)i * S, version), (unsigned)shadow[sec],
						         alt[(size_t)sec * ALTS] == NO_ALT ? -1 : (int)alt[(size_t)sec * ALTS],
						         mpnfm_slot_of(m, sec / (o.small_bytes / S)) < 0 ? "L" : "S");
				}
			}
		}
		reads += r->op == FTL_REQ_READ;
		trims += r->op == FTL_REQ_TRIM;
		if (r->op == FTL_REQ_WRITE) {
			writes++;
			if ((uint64_t)r->count * S < (o.mc.theta_bytes ? o.mc.theta_bytes : o.small_bytes))
				small++;
			else
				large++;
		}
		if (o.check_every && done % o.check_every == 0)
			audit(m, fl, fs, &check_failures, first_bad, sizeof(first_bad));
	}
	/* Every sector of the footprint read back once more. */
	struct ftl_req *r = &sl[0].r;
	for (uint32_t lo = 0; lo < foot; lo += o.max_sectors) {
		memset(r, 0, offsetof(struct ftl_req, buf));
		r->op = FTL_REQ_READ;
		r->sector = lo;
		r->count = foot - lo < o.max_sectors ? foot - lo : o.max_sectors;
		if (mpnfm_submit(m, r))
			return 2;
		struct ftl_req *q;
		while (!(q = mpnfm_poll(m)))
			;
		for (uint32_t i = 0; i < r->count; i++) {
			if (q->result != FTL_OK || !read_matches(expect, S, lo + i, r->buf + (size_t)i * S, shadow, alt)) {
				mismatches++;
				if (!*first_mismatch)
					snprintf(first_mismatch, sizeof(first_mismatch), "final read: sector %u wrong (version %u "
					         "expected)", (unsigned)(lo + i), (unsigned)shadow[lo + i]);
			}
		}
	}
	audit(m, fl, fs, &check_failures, first_bad, sizeof(first_bad));
	struct mpnfm_stats st;
	mpnfm_get_stats(m, &st);
	printf("{\"ops\": %llu, \"sectors\": %u, \"footprint\": %u, \"reads\": %llu, \"writes\": %llu, "
	       "\"small_writes\": %llu, \"large_writes\": %llu, \"trims\": %llu, \"flushes\": %llu, "
	       "\"mismatches\": %llu, \"failures\": %llu, \"unsettled\": %llu, \"check_failures\": %llu, "
	       "\"first_problem\": \"%s\", \"first_mismatch\": \"%s\", ",
	       (unsigned long long)done, (unsigned)sectors, (unsigned)foot, (unsigned long long)reads,
	       (unsigned long long)writes, (unsigned long long)small, (unsigned long long)large,
	       (unsigned long long)trims, (unsigned long long)flushes, (unsigned long long)mismatches,
	       (unsigned long long)failures, (unsigned long long)unsettled, (unsigned long long)check_failures,
	       first_bad, first_mismatch);
	printf("\"mpnfm\": {\"slots\": %u, \"free_slots\": %u, \"max_used_slots\": %u, \"units_s\": %u, "
	       "\"small_writes\": %llu, \"large_writes\": %llu, \"fills\": %llu, \"edge_moves\": %llu, \"merges\": %llu, "
	       "\"merged_units\": %llu, \"merge_large_reads\": %llu, \"slot_waits\": %llu, \"merge_failures\": %llu}, ",
	       (unsigned)st.slots, (unsigned)st.free_slots, (unsigned)st.max_used_slots, (unsigned)st.units_s,
	       (unsigned long long)st.small_writes, (unsigned long long)st.large_writes, (unsigned long long)st.fills,
	       (unsigned long long)st.edge_moves, (unsigned long long)st.merges, (unsigned long long)st.merged_units,
	       (unsigned long long)st.merge_large_reads, (unsigned long long)st.slot_waits,
	       (unsigned long long)st.merge_failures);
	print_ftl("large", fl);
	printf(", ");
	print_ftl("small", fs);
	printf("}\n");
	return mismatches || check_failures ? 1 : 0;
}
