/* ftl-torture: the FTL on the host NAND model against a shadow model of every sector, with faults
 * and power cuts; prints one JSON object (nandlab ftl torture --host runs it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../ftl_int.h"
#include "nand_model.h"
#include "shadow.h"

struct opts {
	struct ftl_geo g;
	struct ftl_config cfg;
	struct nand_model_faults fx;
	uint64_t ops, seed, cuts, cut_mean, precondition, warmup;
	double read_ratio, trim_ratio;
	uint32_t qd, max_sectors;
	int workload;                 /* 0 uniform, 1 hot/cold 80/20, 2 sequential */
	int final_remount;            /* after the run: a fresh FTL mounts, every sector checked again */
	double corrupt_ckpt;          /* per recovery: a page of the newest checkpoint damaged before the mount */
	int oracle;                   /* every mount from a checkpoint checked against a full scan of a copy */
};

struct slot { struct ftl_req r; uint32_t version; int busy; };

#define SERIES 100

/* Per sector: the acknowledged version; the version of a write in flight, or of one that failed
 * (either may be read then); one more allowed while a torn sector is written again after a cut; and
 * when such rewrites are cut again and again, the versions of the whole chain (chain): each page of
 * the sector may then hold any of them, none acknowledged (the rewrites' pages land one by one). */
#define CHAIN 8
static uint32_t *shadow, *pending, *alt, *chain;
static uint8_t  *nchain;
static uint8_t  *pending_trim;

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static int parse(int argc, char **argv, struct opts *o)
{
	memset(o, 0, sizeof(*o));
	o->g = (struct ftl_geo){ .dies = 2, .planes = 1, .blocks = 64, .pages = 32, .page_bytes = 2048, .tag_bytes = 6 };
	ftl_default_config(&o->cfg);
	o->ops = 100000; o->seed = 1; o->cut_mean = 2000; o->read_ratio = 0.3; o->trim_ratio = 0.05; o->qd = 8; o->max_sectors = 8;
	o->fx.flip = 0.01; o->fx.factory_bad = 0.01;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v) { fprintf(stderr, "ftl-torture: %s needs a value\n", a); return -1; }
		i++;
		if (!strcmp(a, "--dies")) o->g.dies = atoi(v);
		else if (!strcmp(a, "--planes")) o->g.planes = atoi(v);
		else if (!strcmp(a, "--span")) o->g.span = atoi(v);
		else if (!strcmp(a, "--stagger")) o->g.stagger = atoi(v);
		else if (!strcmp(a, "--blocks")) o->g.blocks = atoi(v);
		else if (!strcmp(a, "--pages")) o->g.pages = atoi(v);
		else if (!strcmp(a, "--page-bytes")) o->g.page_bytes = atoi(v);
		else if (!strcmp(a, "--sector-bytes")) o->cfg.sector_bytes = atoi(v);
		else if (!strcmp(a, "--op-permille")) o->cfg.op_permille = atoi(v);
		else if (!strcmp(a, "--gc")) o->cfg.gc_policy = !strcmp(v, "cost-benefit");
		else if (!strcmp(a, "--static-wl")) o->cfg.static_wl = atoi(v);
		else if (!strcmp(a, "--wl-threshold")) o->cfg.wl_threshold = atoi(v);
		else if (!strcmp(a, "--ops")) o->ops = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--seed")) o->seed = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--cuts")) o->cuts = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--cut-mean")) o->cut_mean = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--precondition")) o->precondition = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--warmup")) o->warmup = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--read-ratio")) o->read_ratio = atof(v);
		else if (!strcmp(a, "--trim-ratio")) o->trim_ratio = atof(v);
		else if (!strcmp(a, "--qd")) o->qd = atoi(v);
		else if (!strcmp(a, "--max-sectors")) o->max_sectors = atoi(v);
		else if (!strcmp(a, "--workload")) o->workload = !strcmp(v, "hotcold") ? 1 : !strcmp(v, "sequential") ? 2 : 0;
		else if (!strcmp(a, "--flip")) o->fx.flip = atof(v);
		else if (!strcmp(a, "--tag-flip")) o->fx.tag_flip = atof(v);
		else if (!strcmp(a, "--uncorrectable")) o->fx.uncorrectable = atof(v);
		else if (!strcmp(a, "--program-fail")) o->fx.program_fail = atof(v);
		else if (!strcmp(a, "--erase-fail")) o->fx.erase_fail = atof(v);
		else if (!strcmp(a, "--factory-bad")) o->fx.factory_bad = atof(v);
		else if (!strcmp(a, "--refuse")) o->fx.refuse = atof(v);
		else if (!strcmp(a, "--final-remount")) o->final_remount = atoi(v);
		else if (!strcmp(a, "--ckpt-pages")) o->cfg.ckpt_pages = atoi(v) < 0 ? FTL_CKPT_AUTO : (uint32_t)atoi(v);
		else if (!strcmp(a, "--ckpt-flush")) o->cfg.ckpt_flush = atoi(v);
		else if (!strcmp(a, "--corrupt-ckpt")) o->corrupt_ckpt = atof(v);
		else if (!strcmp(a, "--oracle")) o->oracle = atoi(v);
		else { fprintf(stderr, "ftl-torture: unknown option %s\n", a); return -1; }
	}
	if (o->qd < 1 || o->qd > FTL_MAX_REQUESTS || o->max_sectors < 1) {
		fprintf(stderr, "ftl-torture: --qd takes 1..%d, --max-sectors at least 1\n", FTL_MAX_REQUESTS);
		return -1;
	}
	o->ops += o->warmup;          /* the warm-up's requests come first; their NAND work is not measured */
	if (o->cuts && !o->cut_mean)
		o->cut_mean = 2000;       /* 0: the default spacing (a cut every 2000 NAND operations on average) */
	return 0;
}

struct run {
	struct opts *o;
	struct nand_model *m;
	struct ftl *f;
	void *ram;
	size_t ram_bytes;
	uint32_t sectors, S, version;
	struct slot *slots;
	uint8_t *scratch;
	uint64_t torn, mismatches, lost_acked, uncorrectable, done_ops, cuts_done, recoveries;
	uint64_t interrupted_programs, interrupted_erases, recovery_model_us_max, recovery_pages_max, mount_failures;
	double recovery_host_s_max, recovery_host_s_sum;
	uint64_t recovery_model_us_sum;
	/* Mounts by the path taken: [0] full scan, [1] checkpoint; NAND pages read, host seconds. */
	uint64_t mounts_by[2], mount_reads_sum[2], mount_reads_max[2], ckpt_fallbacks, ckpt_corrupted;
	double mount_host_s_sum[2];
	uint64_t ckpt_acc[3];         /* checkpoints written, their pages, skipped: FTLs before the last */
	uint64_t anchor_moves_acc;    /* anchor blocks retired: FTLs before the last */
	uint64_t cuts_in_ckpt;        /* cuts while a checkpoint (its pages or its anchor record) was written */
	uint64_t full_rejects;        /* writes and trims refused "full" (a device out of spare: not a mismatch) */
	struct ftl_stats final_mount; /* the final remount's counters */
	double final_mount_host_s;
	/* Sampled after every completion of the measured run: free superblocks, erase-count spread. */
	double free_sum;
	uint64_t samples;
	uint64_t spread_over;         /* samples whose spread exceeded wl_threshold */
	uint32_t spread_max, nseries;
	uint32_t series[SERIES][3];   /* {operations done, erase min, erase max} at every 1/SERIES of the run */
	uint64_t oracle_mounts, oracle_diffs;   /* --oracle: checkpoint mounts checked, pages that differed */
	char oracle_first[160];
	char first_error[200];
	char first_mismatch[200];     /* the first error counted as a mismatch (first_error may be a refusal) */
	uint64_t audit_failures;      /* ftl_audit() found the superblock accounting inconsistent */
	char first_audit[200];
};

static void mismatch(struct run *R, const char *what, uint32_t sector, uint32_t want, uint32_t got)
{
	R->mismatches++;
	if (!R->first_error[0])
		snprintf(R->first_error, sizeof(R->first_error), "%s: sector %u holds version %d, expected %u",
		         what, sector, (int)got, want);
	if (!R->first_mismatch[0])
		snprintf(R->first_mismatch, sizeof(R->first_mismatch), "%s: sector %u holds version %d, expected %u",
		         what, sector, (int)got, want);
}

/* Which allowed version a sector's data is: the acknowledged one, or the one (write or trim) in flight
 * at a power cut; -1 neither. A sector larger than a page is checked page by page: a cut may tear it
 * (each page old or new), which *torn reports (-2 returned). */
static long identify(struct run *R, const uint8_t *data, uint32_t sector)
{
	uint32_t cand[4] = { shadow[sector], 0, 0, 0 }, n = 1, chunk = R->S < R->o->g.page_bytes ? R->S : R->o->g.page_bytes;
	if (pending[sector])
		cand[n++] = pending[sector];
	if (alt[sector])
		cand[n++] = alt[sector];
	if (pending_trim[sector] && shadow[sector])
		cand[n++] = 0;
	long found = -1;
	for (uint32_t at = 0; at < R->S; at += chunk) {
		long here = -1;
		for (uint32_t i = 0; i < n && here < 0; i++) {
			pattern(R->scratch, R->S, sector, cand[i]);
			if (!memcmp(R->scratch + at, data + at, chunk))
				here = cand[i];
		}
		for (uint32_t k = 0; k < nchain[sector] && here < 0; k++) {
			pattern(R->scratch, R->S, sector, chain[sector * CHAIN + k]);
			if (!memcmp(R->scratch + at, data + at, chunk))
				here = chain[sector * CHAIN + k];
		}
		if (here < 0)
			return -1;
		if (found >= 0 && here != found)
			return -2;
		found = here;
	}
	return found;
}

static int overlaps(struct run *R, uint32_t lo, uint32_t n)
{
	for (uint32_t i = 0; i < R->o->qd; i++) {
		struct slot *s = &R->slots[i];
		if (s->busy && s->r.op != FTL_REQ_FLUSH && lo < s->r.sector + s->r.count && s->r.sector < lo + n)
			return 1;
	}
	return 0;
}

static uint32_t pick_sector(struct run *R, uint32_t n, uint64_t i)
{
	if (R->o->workload == 2)
		return (uint32_t)(i * n % (R->sectors - n + 1));
	if (R->o->workload == 1) {   /* 80 % of the operations on 20 % of the sectors */
		uint32_t hot = R->sectors / 5;
		if (unit() < 0.8)
			return rnd() % (hot - n + 1);
		return hot + rnd() % (R->sectors - hot - n + 1);
	}
	return rnd() % (R->sectors - n + 1);
}

static void on_done(struct run *R, struct slot *s)
{
	struct ftl_req *r = &s->r;
	s->busy = 0;
	if (r->result == FTL_E_POWER)
		return;                   /* stays pending: checked after recovery */
	/* A write or trim refused for want of room may have done part of its pages: its sectors may read
	 * either version (pending kept) until they are written again, or a read settles them. */
	int refused = r->result == FTL_E_FULL && r->op != FTL_REQ_READ && r->op != FTL_REQ_FLUSH;
	for (uint32_t k = 0; k < r->count && r->op != FTL_REQ_FLUSH; k++) {
		uint32_t sec = r->sector + k;
		if (r->op == FTL_REQ_WRITE && r->result == FTL_OK) {
			shadow[sec] = s->version;
		} else if (r->op == FTL_REQ_TRIM && r->result == FTL_OK) {
			shadow[sec] = 0;
		} else if (r->op == FTL_REQ_READ && r->result == FTL_OK) {
			long v = identify(R, r->buf + (size_t)k * R->S, sec);
			int unsettled = pending[sec] || pending_trim[sec];
			if (unsettled && v >= 0) {
				shadow[sec] = v;
				pending[sec] = alt[sec] = nchain[sec] = pending_trim[sec] = 0;
			} else if (!(unsettled && v == -2) && (v < 0 || (uint32_t)v != shadow[sec])) {
				if (getenv("FTL_TORTURE_DEBUG") && !R->first_mismatch[0]) {
					uint32_t P = R->o->g.page_bytes;
					fprintf(stderr, "sector %u: acked %u pending %u alt %u trim %u\n", sec, shadow[sec], pending[sec], alt[sec], pending_trim[sec]);
					for (uint32_t at = 0; at < R->S; at += P) {
						long hit = -1;
						for (uint32_t vv = 0; vv <= R->version && hit < 0; vv++) {
							pattern(R->scratch, R->S, sec, vv);
							if (!memcmp(R->scratch + at, r->buf + (size_t)k * R->S + at, P)) hit = vv;
						}
						uint32_t lpn = (uint64_t)sec * R->S / P + at / P;
						uint32_t v2 = R->f->l2p[lpn], sb2 = ftl_is_ppn(v2) ? ftl_ppn_sb(R->f, v2) : 0;
						fprintf(stderr, "  chunk %u: version %ld (lpn %u l2p %x sb %u state %u seq %u valid %u; ckpt sb %u..%u)\n", at, hit,
						        lpn, v2, sb2, R->f->sb[sb2].state, R->f->sb[sb2].seq, R->f->sb[sb2].valid, R->f->ckpt.sb[0],
						        R->f->ckpt.nsb);
					}
				}
				mismatch(R, "read", sec, shadow[sec], v);
			}
		}
		if (r->op != FTL_REQ_READ && !refused) {
			pending[sec] = alt[sec] = nchain[sec] = 0;
			pending_trim[sec] = 0;
		}
	}
	if (r->result == FTL_E_UNCORRECTABLE)
		R->uncorrectable++;
	else if (r->result != FTL_OK && !R->first_error[0])
		snprintf(R->first_error, sizeof(R->first_error), "request %u: %s", r->op, ftl_result_name(r->result));
	if (refused) {
		R->full_rejects++;
	} else if (r->result != FTL_OK && r->result != FTL_E_UNCORRECTABLE) {
		R->mismatches++;
		if (!R->first_mismatch[0])
			snprintf(R->first_mismatch, sizeof(R->first_mismatch), "request %u: %s", r->op, ftl_result_name(r->result));
	}
}

static int submit_one(struct run *R, struct slot *s, uint64_t i)
{
	struct opts *o = R->o;
	uint32_t n = 1 + rnd() % o->max_sectors;
	if (n > R->sectors)
		n = R->sectors;
	uint32_t lo;
	int tries = 0;
	do
		lo = pick_sector(R, n, i + tries);
	while (overlaps(R, lo, n) && ++tries < 64);
	if (tries == 64)
		return 0;
	double u = unit();
	/* A sector left unsettled by two refused writes (three versions possible) is only read from then. */
	for (uint32_t k = 0; k < n; k++)
		if (alt[lo + k])
			u = 0;
	uint8_t *buf = s->r.buf;
	memset(&s->r, 0, sizeof(s->r));
	s->r.buf = buf;
	s->r.sector = lo;
	s->r.count = n;
	if (u < o->read_ratio) {
		s->r.op = FTL_REQ_READ;
	} else if (u < o->read_ratio + o->trim_ratio) {
		s->r.op = FTL_REQ_TRIM;
		for (uint32_t k = 0; k < n; k++)
			pending_trim[lo + k] = 1;
	} else {
		s->r.op = FTL_REQ_WRITE;
		s->version = ++R->version;
		for (uint32_t k = 0; k < n; k++) {
			pattern(buf + (size_t)k * R->S, R->S, lo + k, s->version);
			alt[lo + k] = pending[lo + k];   /* a refused write's version stays possible */
			pending[lo + k] = s->version;
		}
	}
	int res = ftl_submit(R->f, &s->r);
	if (res) {
		fprintf(stderr, "ftl-torture: submit: %s (%s)\n", ftl_result_name(res), ftl_error(R->f));
		exit(2);
	}
	s->busy = 1;
	return 1;
}

/* The next cut: uniformly 0.5..1.5 x cut_mean NAND operations ahead, while cuts remain. */
static uint64_t next_cut(struct run *R)
{
	/* A third of the cuts wait for an erase, a third for a program, the rest hit any operation. */
	int k = R->cuts_done % 3;
	nand_model_cut_on(R->m, k == 0 ? FTL_NAND_ERASE : k == 1 ? FTL_NAND_PROGRAM : -1);
	return R->cuts_done < R->o->cuts ? nand_model_ops(R->m) + R->o->cut_mean / 2 + rnd() % R->o->cut_mean + 1 : 0;
}

/* Every sector read and checked after a recovery; FTL_E_POWER when a cut came first. */
static int check_all(struct run *R)
{
	uint8_t *buf = R->slots[0].r.buf;
	uint32_t chunk = R->o->max_sectors;
	for (uint32_t lo = 0; lo < R->sectors; lo += chunk) {
		uint32_t n = R->sectors - lo < chunk ? R->sectors - lo : chunk;
		int res = ftl_read(R->f, lo, n, buf);
		if (res == FTL_E_POWER)
			return res;
		for (uint32_t k = 0; k < n; k++) {
			uint32_t sec = lo + k;
			long v = res == FTL_OK ? identify(R, buf + (size_t)k * R->S, sec) : -1;
			if (v == -2) {
				/* Torn by the cut (pages of it old, others new): written again, as its owner would. A
				 * cut in that write may leave pages of any of the three versions (alt holds the third). */
				R->torn++;
				pattern(R->scratch, R->S, sec, ++R->version);
				if (!alt[sec])
					alt[sec] = pending[sec];
				else if (nchain[sec] < CHAIN)
					chain[sec * CHAIN + nchain[sec]++] = pending[sec];
				pending[sec] = R->version;
				int w = ftl_write(R->f, sec, 1, R->scratch);
				if (w == FTL_E_POWER)
					return w;
				if (w == FTL_OK) {
					shadow[sec] = R->version;
				} else if (w == FTL_E_FULL) {
					R->full_rejects++;
					continue;         /* stays unsettled */
				} else {
					char what[64];
					snprintf(what, sizeof(what), "rewriting a torn sector failed (%s)", ftl_result_name(w));
					mismatch(R, what, sec, 0, -1);
				}
			} else if (v < 0) {
				if (getenv("FTL_TORTURE_DEBUG"))
				{
					uint32_t lpn = (uint64_t)sec * R->S / R->o->g.page_bytes, ppn = R->f->l2p[lpn], sb = ftl_ppn_sb(R->f, ppn);
					uint32_t newer = 0;
					for (uint32_t q = 0; q < R->f->nsb; q++) newer += R->f->sb[q].seq > R->f->sb[sb].seq;
					fprintf(stderr, "sector %u: res %d acked %u pending %u trim %u lpn %u ppn %u sb %u seq %u newer %u state %u\n",
					        sec, res, shadow[sec], pending[sec], pending_trim[sec], lpn, ppn, sb, R->f->sb[sb].seq, newer,
					        R->f->sb[sb].state);
					uint32_t P = R->o->g.page_bytes;
					for (uint32_t at = 0; at < R->S; at += P) {
						long hit = -1;
						for (uint32_t vv = 0; vv <= R->version && hit < 0; vv++) {
							pattern(R->scratch, R->S, sec, vv);
							if (!memcmp(R->scratch + at, buf + (size_t)k * R->S + at, P)) hit = vv;
						}
						uint32_t l = (uint64_t)sec * R->S / P + at / P, v2 = R->f->l2p[l];
						fprintf(stderr, "  chunk %u: version %ld (lpn %u l2p %x sb %u seq %u)\n", at, hit, l, v2,
						        ftl_is_ppn(v2) ? ftl_ppn_sb(R->f, v2) : 0, ftl_is_ppn(v2) ? R->f->sb[ftl_ppn_sb(R->f, v2)].seq : 0);
					}
				}
				if (pending[sec] == 0 && !pending_trim[sec])
					R->lost_acked++;
				mismatch(R, "after recovery", sec, shadow[sec], v);
			} else {
				shadow[sec] = v;
			}
			pending[sec] = alt[sec] = nchain[sec] = 0;
			pending_trim[sec] = 0;
		}
	}
	return FTL_OK;
}

/* A mount that failed: reported in the result (the run stops there, its counts kept). */
static void mount_failed(struct run *R, const char *when, int res)
{
	R->mount_failures++;
	R->mismatches++;
	if (!R->first_error[0])
		snprintf(R->first_error, sizeof(R->first_error), "mount %s: %s (%s)", when, ftl_result_name(res), ftl_error(R->f));
	if (!R->first_mismatch[0])
		snprintf(R->first_mismatch, sizeof(R->first_mismatch), "mount %s: %s (%s)", when, ftl_result_name(res), ftl_error(R->f));
	fprintf(stderr, "ftl-torture: mount %s: %s (%s)\n", when, ftl_result_name(res), ftl_error(R->f));
}

/* With probability corrupt_ckpt, one page of the checkpoint the FTL last wrote (as its RAM before the
 * cut says) is damaged: the mount must take the full scan and lose nothing. */
static void corrupt_ckpt(struct run *R)
{
	struct ftl *f = R->f;
	if (!R->o->corrupt_ckpt || !f->ckpt.nsb || unit() >= R->o->corrupt_ckpt)
		return;
	for (int tries = 0; tries < 16; tries++) {
		uint32_t sb = f->ckpt.sb[rnd() % f->ckpt.nsb], slot = rnd() % f->slots, ppn = ftl_slot_ppn(f, sb, slot), d, b, p;
		if (ppn == FTL_UNMAPPED)
			continue;
		ftl_ppn_split(f, ppn, &d, &b, &p);
		if (nand_model_corrupt(R->m, d, b, p, rnd() % 2) == 0) {
			R->ckpt_corrupted++;
			return;
		}
	}
}

/* A mount's cost by the path it took. */
static void count_mount(struct run *R, const struct ftl_stats *st, double dt)
{
	int k = st->recovery_kind == 3;
	R->mounts_by[k]++;
	R->mount_reads_sum[k] += st->recovery_pages_read;
	if (st->recovery_pages_read > R->mount_reads_max[k])
		R->mount_reads_max[k] = st->recovery_pages_read;
	R->mount_host_s_sum[k] += dt;
	R->ckpt_fallbacks += st->recovery_ckpt_failed;
}

/* The version (or 0 for zeros) a map entry's page holds in array m, read without a NAND operation;
 * -1 none of this sector's, -3 lost, -4 erased. */
static long version_of(struct run *R, struct nand_model *m, uint32_t lpn, uint32_t v)
{
	if (!ftl_is_ppn(v))
		return ftl_reads_zero(v) ? 0 : -3;
	int st;
	const uint8_t *d = nand_model_peek(m, v, &st);
	if (!d)
		return -4;
	uint32_t P = R->o->g.page_bytes, sec = (uint64_t)lpn * P / R->S, at = (uint64_t)lpn * P % R->S;
	uint32_t len = P < R->S ? P : R->S;
	for (uint32_t vv = 0; vv <= R->version; vv++) {
		pattern(R->scratch, R->S, sec, vv);
		if (!memcmp(R->scratch + at, d, len))
			return vv;
	}
	return -1;
}

/* --oracle: a mount from a checkpoint against the full scan of a copy of the same array (taken before
 * the mount wrote anything): every logical page must hold the same version by both. */
static void oracle(struct run *R, struct nand_model *copy)
{
	int res;
	void *ram = malloc(R->ram_bytes);
	struct ftl *g = ftl_init(ram, R->ram_bytes, nand_model_nand(copy), &R->o->cfg, &res);
	g->scan_only = 1;
	res = ftl_mount(g);
	R->oracle_mounts++;
	if (res) {
		R->oracle_diffs++;
		R->mismatches++;
		fprintf(stderr, "ftl-torture: oracle: the full scan failed: %s\n", ftl_result_name(res));
	}
	for (uint32_t l = 0; l < R->f->lpns && res == FTL_OK && R->S >= 8; l++) {
		uint32_t a = R->f->l2p[l], b = g->l2p[l];
		if (a == b)
			continue;
		long va = version_of(R, R->m, l, a), vb = version_of(R, copy, l, b);
		if (va == vb)
			continue;
		R->oracle_diffs++;
		R->mismatches++;
		if (!R->first_mismatch[0])
			snprintf(R->first_mismatch, sizeof(R->first_mismatch), "oracle: logical page %u: checkpoint mount "
			         "version %ld, full scan %ld", l, va, vb);
		if (!R->oracle_first[0])
			snprintf(R->oracle_first, sizeof(R->oracle_first), "logical page %u: checkpoint mount version %ld "
			         "(ppn %x), full scan %ld (ppn %x)", l, va, a, vb, b);
	}
	free(ram);
}


/* After a cut: power on, a new FTL (its RAM is lost), mount, every sector checked; again while
 * further cuts interrupt the recovery or the check. -1 when the mount failed. */
static int recover_and_check(struct run *R)
{
	for (;;) {
		nand_model_power_on(R->m, next_cut(R));
		uint64_t ip, ie;
		nand_model_cut_stats(R->m, &ip, &ie);
		R->interrupted_programs += ip;
		R->interrupted_erases += ie;
		int res;
		R->cuts_in_ckpt += R->f->ckpt_writing;
		R->ckpt_acc[0] += R->f->st.ckpt_writes;
		R->ckpt_acc[1] += R->f->st.ckpt_programs;
		R->ckpt_acc[2] += R->f->st.ckpt_skipped;
		R->anchor_moves_acc += R->f->st.anchor_moves;
		corrupt_ckpt(R);
		struct nand_model *copy = R->o->oracle ? nand_model_clone(R->m) : NULL;
		R->f = ftl_init(R->ram, R->ram_bytes, nand_model_nand(R->m), &R->o->cfg, &res);
		double t0 = now_s();
		res = ftl_mount(R->f);
		double dt = now_s() - t0;
		if (copy && res == FTL_OK && R->f->st.recovery_kind == 3)
			oracle(R, copy);
		if (copy)
			nand_model_free(copy);
		if (res == FTL_E_POWER) {
			R->cuts_done++;
			continue;
		}
		if (res) {
			mount_failed(R, "after a power cut", res);
			return -1;
		}
		struct ftl_stats st;
		ftl_get_stats(R->f, &st);
		count_mount(R, &st, dt);
		R->recoveries++;
		R->recovery_host_s_sum += dt;
		if (dt > R->recovery_host_s_max) R->recovery_host_s_max = dt;
		if (st.recovery_us > R->recovery_model_us_max) R->recovery_model_us_max = st.recovery_us;
		R->recovery_model_us_sum += st.recovery_us;
		if (st.recovery_pages_read > R->recovery_pages_max) R->recovery_pages_max = st.recovery_pages_read;
		if (check_all(R) == FTL_E_POWER) {
			R->cuts_done++;
			continue;
		}
		return 0;
	}
}

/* After a completion of the measured run: free superblocks and the erase-count spread. */
static void audit(struct run *R, const char *when)
{
	const char *why = ftl_audit(R->f);
	if (!why)
		return;
	if (!R->audit_failures++)
		snprintf(R->first_audit, sizeof(R->first_audit), "%s: %s", when, why);
}

static void sample(struct run *R)
{
	if (R->done_ops % 1000 == 0)
		audit(R, "during the run");
	ftl_erase_stats(R->f);
	uint32_t lo = R->f->st.erase_min, hi = R->f->st.erase_max;
	R->free_sum += R->f->free_count;
	R->samples++;
	if (hi - lo > R->spread_max)
		R->spread_max = hi - lo;
	R->spread_over += hi - lo > R->o->cfg.wl_threshold;
	uint64_t step = R->o->ops / SERIES ? R->o->ops / SERIES : 1;
	if (R->nseries < SERIES && R->done_ops >= (R->nseries + 1) * step) {
		R->series[R->nseries][0] = R->done_ops;
		R->series[R->nseries][1] = lo;
		R->series[R->nseries++][2] = hi;
	}
}

/* Every sector reads its acknowledged version (uncorrectable reads counted apart from wrong data). */
static void final_check(struct run *R, const char *what)
{
	uint8_t *buf = R->slots[0].r.buf;
	uint32_t chunk = R->o->max_sectors;
	for (uint32_t lo = 0; lo < R->sectors; lo += chunk) {
		uint32_t n = R->sectors - lo < chunk ? R->sectors - lo : chunk;
		int res = ftl_read(R->f, lo, n, buf);
		if (res == FTL_E_UNCORRECTABLE) {
			R->uncorrectable++;
			continue;
		}
		for (uint32_t k = 0; k < n; k++) {
			uint32_t sec = lo + k;
			long v = res == FTL_OK ? identify(R, buf + (size_t)k * R->S, sec) : -1;
			int unsettled = pending[sec] || pending_trim[sec];
			if (unsettled && v >= 0) {
				shadow[sec] = v;      /* a refused write's sector settled */
				pending[sec] = alt[sec] = nchain[sec] = pending_trim[sec] = 0;
			} else if (!(unsettled && v == -2) && (v < 0 || (uint32_t)v != shadow[sec])) {
				mismatch(R, what, sec, shadow[sec], v);
			}
		}
	}
}

/* Superblocks the newest checkpoint holds (out of the pool, like the anchor's). */
static uint32_t ckpt_held(const struct ftl *f)
{
	uint32_t n = 0;
	for (uint32_t s = 0; s < f->nsb; s++)
		n += f->sb[s].state == SB_CKPT;
	return n;
}

/* The checkpoint period the FTL runs with (FTL_CKPT_AUTO resolved). */
static uint32_t st_ckpt_pages(struct run *R) { return ftl_get_config(R->f)->ckpt_pages; }

/* Blocks the array failed since the factory (program or erase FAIL), and those of them missing from
 * the FTL's bad-block table. */
static void grown_bad(struct run *R, uint32_t *failed, uint32_t *unretired)
{
	*failed = *unretired = 0;
	for (uint32_t d = 0; d < R->o->g.dies; d++)
		for (uint32_t b = 0; b < R->o->g.blocks; b++)
			if (nand_model_block_state(R->m, d, b) == 2) {
				(*failed)++;
				*unretired += !ftl_is_bad(R->f, d, b);
			}
}

int main(int argc, char **argv)
{
	struct opts o;
	if (parse(argc, argv, &o))
		return 2;
	struct run R = { .o = &o };
	rng = o.seed * 0x2545F4914F6CDD1Dull + 7;
	R.ram_bytes = ftl_ram_bytes(&o.g, &o.cfg);
	R.ram = malloc(R.ram_bytes > 65536 ? R.ram_bytes : 65536);
	/* Power cuts at random NAND operations, uniformly 1..2 x cut_mean operations apart; the run goes
	 * on past --ops until --cuts have happened. */
	uint64_t cut_every = o.cuts ? o.cut_mean : 0;
	R.m = nand_model_new(&o.g, &o.fx, o.seed);
	int res;
	R.f = ftl_init(R.ram, R.ram_bytes, nand_model_nand(R.m), &o.cfg, &res);
	if (res) {
		printf("{\"error\": \"%s\"}\n", ftl_error(R.f));
		return 2;
	}
	if ((res = ftl_format(R.f))) {
		printf("{\"error\": \"format: %s\"}\n", ftl_error(R.f));
		return 2;
	}
	R.sectors = ftl_sectors(R.f);
	R.S = o.cfg.sector_bytes;
	shadow = calloc(R.sectors, 4);
	pending = calloc(R.sectors, 4);
	alt = calloc(R.sectors, 4);
	chain = calloc((size_t)R.sectors * CHAIN, 4);
	nchain = calloc(R.sectors, 1);
	pending_trim = calloc(R.sectors, 1);
	R.scratch = malloc(R.S);
	R.slots = calloc(o.qd, sizeof(struct slot));
	for (uint32_t i = 0; i < o.qd; i++)
		R.slots[i].r.buf = malloc((size_t)o.max_sectors * R.S);
	/* Preconditioning: a sequential fill, then random writes (their NAND work excluded below). */
	struct ftl_stats base = { 0 };
	if (o.precondition) {
		uint8_t *buf = R.slots[0].r.buf;
		uint64_t total = (uint64_t)R.sectors * o.precondition;
		for (uint64_t i = 0; i < total; i += o.max_sectors) {
			uint32_t n = o.max_sectors, lo = i < R.sectors ? (uint32_t)i : (uint32_t)(rnd() % (R.sectors - n + 1));
			if (lo + n > R.sectors) n = R.sectors - lo;
			uint32_t v = ++R.version;
			for (uint32_t k = 0; k < n; k++)
				pattern(buf + (size_t)k * R.S, R.S, lo + k, v);
			if ((res = ftl_write(R.f, lo, n, buf))) {
				printf("{\"error\": \"precondition: %s (%s)\"}\n", ftl_result_name(res), ftl_error(R.f));
				return 1;
			}
			for (uint32_t k = 0; k < n; k++)
				shadow[lo + k] = v;
		}
		ftl_get_stats(R.f, &base);
	}
	if (cut_every)
		nand_model_power_on(R.m, next_cut(&R));
	double t0 = now_s();
	uint64_t issued = 0, last = 0;
	while (R.done_ops < o.ops || (o.cuts && R.cuts_done < o.cuts)) {
		for (uint32_t i = 0; i < o.qd && (issued < o.ops || (o.cuts && R.cuts_done < o.cuts)); i++)
			if (!R.slots[i].busy && submit_one(&R, &R.slots[i], issued))
				issued++;
		struct ftl_req *d = ftl_poll(R.f);
		if (d) {
			struct slot *s = (struct slot *)d;
			on_done(&R, s);
			R.done_ops++;
			sample(&R);
			if (o.warmup && R.done_ops == o.warmup) {
				ftl_get_stats(R.f, &base);   /* measured from here: write amplification, free superblocks */
				R.free_sum = 0;
				R.samples = 0;
				R.spread_over = 0;
				R.spread_max = 0;
			}
		}
		if (!nand_model_powered(R.m) && !ftl_in_flight(R.f)) {
			/* Drain the FTL's view (every request ends with power lost), then recover. */
			while ((d = ftl_poll(R.f)))
				on_done(&R, (struct slot *)d), R.done_ops++;
			for (uint32_t i = 0; i < o.qd; i++)
				if (R.slots[i].busy) { on_done(&R, &R.slots[i]); R.done_ops++; }
			R.cuts_done++;
			if (recover_and_check(&R))
				break;
		}
		if (o.ops >= 200000 && R.done_ops / (o.ops / 10) != last) {
			last = R.done_ops / (o.ops / 10);
			fprintf(stderr, "ftl-torture: %llu of %llu operations, %llu power cuts\n",
			        (unsigned long long)R.done_ops, (unsigned long long)o.ops, (unsigned long long)R.cuts_done);
		}
	}
	while (!R.mount_failures) {
		struct ftl_req *d = ftl_poll(R.f);
		if (!d) {
			int any = 0;
			for (uint32_t i = 0; i < o.qd; i++) any |= R.slots[i].busy;
			if (!any) break;
			continue;
		}
		on_done(&R, (struct slot *)d);
	}
	double dt = now_s() - t0;
	/* A final full check: every sector reads its acknowledged version. */
	if (!R.mount_failures) {
		final_check(&R, "final check");
		audit(&R, "at the end");
	}
	struct ftl_stats st;
	ftl_get_stats(R.f, &st);
	/* Optionally a fresh FTL mounts what the flash holds (anchor log, bad-block table, every page's
	 * tag) and every sector is checked again: grown bad blocks must stay retired. */
	int remounted = 0;
	uint64_t before_remount = R.mismatches;
	if (o.final_remount && !R.mount_failures) {
		struct nand_model *copy = o.oracle ? nand_model_clone(R.m) : NULL;
		R.f = ftl_init(R.ram, R.ram_bytes, nand_model_nand(R.m), &o.cfg, &res);
		double t1 = now_s();
		res = ftl_mount(R.f);
		R.final_mount_host_s = now_s() - t1;
		if (copy && res == FTL_OK && R.f->st.recovery_kind == 3)
			oracle(&R, copy);
		if (copy)
			nand_model_free(copy);
		if (res) {
			mount_failed(&R, "after the run", res);
		} else {
			ftl_get_stats(R.f, &R.final_mount);
			count_mount(&R, &R.final_mount, R.final_mount_host_s);
			final_check(&R, "after the final remount");
		}
		remounted = 1;
	}
	uint32_t grown_failed, grown_unretired;
	grown_bad(&R, &grown_failed, &grown_unretired);
	uint64_t host_pages = st.host_page_writes - base.host_page_writes;
	uint64_t progs = st.nand_programs - base.nand_programs;
	double waf = host_pages ? (double)progs / host_pages : 0;
	double waf_meta = host_pages ? (double)(progs + st.meta_programs - base.meta_programs) / host_pages : 0;
	uint64_t lpn_bytes = (uint64_t)ftl_sectors(R.f) * R.S / o.g.page_bytes;
	printf("{\"dies\": %u, \"planes\": %u, \"span\": %u, \"stagger\": %u, \"blocks\": %u, \"pages\": %u, \"page_bytes\": %u, \"sector_bytes\": %u, "
	       "\"op_permille\": %u, \"gc\": \"%s\", \"static_wl\": %u, \"wl_threshold\": %u, \"seed\": %llu, "
	       "\"ops\": %llu, \"sectors\": %u, \"mismatches\": %llu, \"lost_acked\": %llu, \"uncorrectable_reported\": %llu, "
	       "\"torn_sectors\": %llu, \"power_cuts\": %llu, \"recoveries\": %llu, \"interrupted_programs\": %llu, \"interrupted_erases\": %llu, "
	       "\"recovery_host_ms_max\": %.3f, \"recovery_host_ms_mean\": %.3f, \"recovery_model_us_max\": %llu, "
	       "\"recovery_pages_read_max\": %llu, \"seconds\": %.3f, \"ops_per_s\": %.0f, "
	       "\"waf\": %.4f, \"waf_with_metadata\": %.4f, \"nand_reads\": %llu, \"nand_programs\": %llu, "
	       "\"nand_erases\": %llu, \"gc_runs\": %llu, \"gc_moves\": %llu, \"wl_moves\": %llu, \"ecc_corrected\": %llu, "
	       "\"bad_factory\": %u, \"bad_grown\": %u, \"lost_pages\": %llu, \"erase_min\": %u, \"erase_max\": %u, "
	       "\"erase_mean\": %.2f, \"ram_bytes\": %zu, \"ram_per_logical_page\": %.3f, \"max_in_flight\": %llu, "
	       "\"first_error\": \"%s\", ",
	       o.g.dies, o.g.planes, ftl_geo_span(&o.g), o.g.stagger, o.g.blocks, o.g.pages, o.g.page_bytes, o.cfg.sector_bytes, o.cfg.op_permille,
	       o.cfg.gc_policy ? "cost-benefit" : "greedy", o.cfg.static_wl, o.cfg.wl_threshold,
	       (unsigned long long)o.seed, (unsigned long long)(o.ops - o.warmup), R.sectors, (unsigned long long)R.mismatches,
	       (unsigned long long)R.lost_acked, (unsigned long long)R.uncorrectable, (unsigned long long)R.torn, (unsigned long long)R.cuts_done,
	       (unsigned long long)R.recoveries, (unsigned long long)R.interrupted_programs,
	       (unsigned long long)R.interrupted_erases, R.recovery_host_s_max * 1e3,
	       R.recoveries ? R.recovery_host_s_sum * 1e3 / R.recoveries : 0.0, (unsigned long long)R.recovery_model_us_max,
	       (unsigned long long)R.recovery_pages_max, dt, dt > 0 ? o.ops / dt : 0.0, waf, waf_meta,
	       (unsigned long long)st.nand_reads, (unsigned long long)st.nand_programs, (unsigned long long)st.nand_erases,
	       (unsigned long long)st.gc_runs, (unsigned long long)st.gc_moves, (unsigned long long)st.wl_moves,
	       (unsigned long long)st.ecc_corrected, st.bad_factory, st.bad_grown, (unsigned long long)st.lost_pages,
	       st.erase_min, st.erase_max, st.superblocks ? (double)st.erase_sum / st.superblocks : 0.0, R.ram_bytes,
	       lpn_bytes ? (double)R.ram_bytes / lpn_bytes : 0.0, (unsigned long long)st.max_in_flight, R.first_error);
	uint64_t phys = (uint64_t)o.g.dies * o.g.blocks * o.g.pages;
	/* The layout as programmed: per plane, the lowest page index above 0 (page 0 may hold a superblock
	 * header) that any block of the plane outside the anchor's superblocks holds data in (a staggered
	 * plane's write point trails). */
	printf("\"lowest_page_by_plane\": [");
	for (uint32_t pl = 0; pl < o.g.planes; pl++) {
		uint32_t lowest = o.g.pages;
		for (uint64_t ppn = 0; ppn < phys; ppn++) {
			uint32_t page = (uint32_t)(ppn % o.g.pages), block = (uint32_t)(ppn / o.g.pages % o.g.blocks), m;
			uint32_t die = (uint32_t)(ppn / o.g.pages / o.g.blocks);
			int state;
			if (page && page < lowest && block % o.g.planes == pl && ftl_block_sb(R.f, die, block, &m) >= R.f->reserved_sb &&
			    nand_model_peek(R.m, (uint32_t)ppn, &state))
				lowest = page;
		}
		printf("%s%u", pl ? ", " : "", lowest);
	}
	printf("], ");
	printf("\"logical_pages\": %u, \"physical_pages\": %llu, \"superblocks\": %u, \"reserved_superblocks\": %u, "
	       "\"precondition\": %llu, \"warmup\": %llu, \"slots_per_superblock\": %u, \"free_superblocks_mean\": %.4f, \"ram_per_physical_page\": %.3f, "
	       "\"recovery_model_us_mean\": %.1f, \"erase_spread_max\": %u, \"erase_spread_over_samples\": %llu, \"samples\": %llu, "
	       "\"final_remount\": %d, \"mismatches_after_remount\": %llu, \"mount_failures\": %llu, "
	       "\"grown_bad_in_array\": %u, \"grown_bad_unretired\": %u, \"host_page_writes\": %llu, \"anchor_moves\": %llu, ",
	       R.f->lpns, (unsigned long long)phys, R.f->nsb, R.f->reserved_sb + ckpt_held(R.f), (unsigned long long)o.precondition, (unsigned long long)o.warmup, R.f->slots,
	       R.samples ? R.free_sum / R.samples : 0.0, (double)R.ram_bytes / phys,
	       R.recoveries ? (double)R.recovery_model_us_sum / R.recoveries : 0.0, R.spread_max,
	       (unsigned long long)R.spread_over, (unsigned long long)R.samples, remounted,
	       (unsigned long long)(R.mismatches - before_remount), (unsigned long long)R.mount_failures,
	       grown_failed, grown_unretired, (unsigned long long)host_pages,
	       (unsigned long long)(R.anchor_moves_acc + st.anchor_moves + R.final_mount.anchor_moves));
	const struct ftl_stats *fm = &R.final_mount;
	printf("\"ckpt_pages\": %u, \"ckpt_flush\": %u, \"ckpt_size_pages\": %u, \"ckpt_writes\": %llu, \"ckpt_programs\": %llu, "
	       "\"ckpt_skipped\": %llu, \"ckpt_corrupted\": %llu, \"ckpt_fallbacks\": %llu, \"full_rejects\": %llu, "
	       "\"mounts_scan\": %llu, \"mounts_ckpt\": %llu, \"mount_reads_scan_mean\": %.1f, \"mount_reads_scan_max\": %llu, "
	       "\"mount_reads_ckpt_mean\": %.1f, \"mount_reads_ckpt_max\": %llu, \"mount_host_ms_scan_mean\": %.3f, "
	       "\"mount_host_ms_ckpt_mean\": %.3f, \"final_mount_kind\": \"%s\", \"final_mount_reads\": %llu, "
	       "\"final_mount_sb_replayed\": %u, \"final_mount_host_ms\": %.3f, \"final_mount_model_us\": %llu, \"first_mismatch\": \"%s\", \"cuts_in_ckpt\": %llu, "
	       "\"oracle_mounts\": %llu, \"oracle_diffs\": %llu, \"oracle_first\": \"%s\", \"audit_failures\": %llu, "
	       "\"first_audit\": \"%s\", \"erase_series\": [",
	       st_ckpt_pages(&R), o.cfg.ckpt_flush, ftl_ckpt_pages_needed(R.f), (unsigned long long)(R.ckpt_acc[0] + st.ckpt_writes),
	       (unsigned long long)(R.ckpt_acc[1] + st.ckpt_programs), (unsigned long long)(R.ckpt_acc[2] + st.ckpt_skipped), (unsigned long long)R.ckpt_corrupted,
	       (unsigned long long)R.ckpt_fallbacks, (unsigned long long)R.full_rejects,
	       (unsigned long long)R.mounts_by[0], (unsigned long long)R.mounts_by[1],
	       R.mounts_by[0] ? (double)R.mount_reads_sum[0] / R.mounts_by[0] : 0.0, (unsigned long long)R.mount_reads_max[0],
	       R.mounts_by[1] ? (double)R.mount_reads_sum[1] / R.mounts_by[1] : 0.0, (unsigned long long)R.mount_reads_max[1],
	       R.mounts_by[0] ? R.mount_host_s_sum[0] * 1e3 / R.mounts_by[0] : 0.0,
	       R.mounts_by[1] ? R.mount_host_s_sum[1] * 1e3 / R.mounts_by[1] : 0.0,
	       !remounted || R.mount_failures ? "none" : fm->recovery_kind == 3 ? "checkpoint" : "full scan",
	       (unsigned long long)fm->recovery_pages_read, fm->recovery_sb_replayed, R.final_mount_host_s * 1e3,
	       (unsigned long long)fm->recovery_us, R.first_mismatch,
	       (unsigned long long)R.cuts_in_ckpt, (unsigned long long)R.oracle_mounts, (unsigned long long)R.oracle_diffs,
	       R.oracle_first, (unsigned long long)R.audit_failures, R.first_audit);
	for (uint32_t i = 0; i < R.nseries; i++)
		printf("%s[%u, %u, %u]", i ? ", " : "", R.series[i][0], R.series[i][1], R.series[i][2]);
	printf("]}\n");
	return R.mismatches || R.audit_failures ? 1 : 0;
}
