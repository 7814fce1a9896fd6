/* The FTL's NAND on the SoC's channel controllers (see ftl_port.h). */
#include <stdio.h>
#include <string.h>

#include <generated/soc.h>

#include "ftl_port.h"
#include "hal.h"
#include "nandctl.h"

#ifdef NANDLAB_CTRL_ECC_T

/* Beside the FTL's per-page path, in its phases' sections (ftl_int.h): submissions, a program's and a
 * read's, completions, a read's. */
#define HOT_ISSUE   __attribute__((section(".text.hot_issue")))
#define HOT_W       __attribute__((noinline, section(".text.hot_port_w")))
#define HOT_ISSUE_R __attribute__((noinline, section(".text.hot_issue_r")))
#define HOT_REAP    __attribute__((section(".text.hot_reap")))
#define HOT_REAP_R  __attribute__((noinline, section(".text.hot_reap_r")))

/* Operations in flight over every channel: the FTL's pool is smaller (FTL_OPS). The controller's
 * tag of slot s is TAG_BASE + s: tags below are the synchronous commands' (nandctl_run). */
#define SLOTS    96
#define TAG_BASE 0x80
/* A slot's buffer for the spare's free bytes (the FTL's tag in its first FTL_TAG_BYTES): the controller
 * moves all of them, NANDLAB_CTRL_ECC_FREE_BYTES (6 on the 2 KiB SLC part, 222 on the DW/SDW part's 8 KiB
 * pages, 1150 on the MPNFM paper's 32 KiB pages), rounded up to DMA words. (8 fixed bytes once: a read on a
 * part with more free bytes wrote past its slot's buffer into the replay's state, which then hung.) */
#define FREE_SPACE ((NANDLAB_CTRL_ECC_FREE_BYTES + 7) & ~7)

static struct ftl_nand_op *slot_op[SLOTS];
static uint8_t slot_free[SLOTS][FREE_SPACE] __attribute__((aligned(8), section(".dma")));
static uint8_t die_ch[NANDCTL_MAX_CHANNELS * NANDCTL_MAX_DIES], die_way[NANDCTL_MAX_CHANNELS * NANDCTL_MAX_DIES];
static struct ftl_port_stats st;
static int next_slot, next_ch;

/* Multi-plane groups (ftl_port_submit_group): each slot's part in its group. A queued plane's
 * descriptor (MEMBER) completes before the array works; the group's ops are handed back only once the
 * final descriptor (and, for a read, READ STATUS and each other plane's data output) has completed. */
enum { ROLE_SINGLE, ROLE_MEMBER, ROLE_FINAL, ROLE_STATUS, ROLE_ENH };
#define GROUPS 32
struct group {
	struct ftl_nand_op *op[NANDCTL_PLANES_MAX];
	int8_t  slot[NANDCTL_PLANES_MAX];
	uint8_t n, used, waiting, failed;
};
static struct group groups[GROUPS] MAIN_BSS;     /* (ftl_port_open clears them) */
static uint8_t slot_role[SLOTS] MAIN_BSS, slot_group[SLOTS] MAIN_BSS;
/* Ops of finished groups not yet handed to the FTL (poll returns one at a time). */
static struct ftl_nand_op *ready[SLOTS] MAIN_BSS;
static int ready_head, ready_n;
static int held;                      /* ops the port holds (in a slot): the watchdog's concern */
static uint32_t page_total, page_bytes, per_us, page_bits;   /* (every channel's dies alike: ftl_port_open) */
/* MPNFM mode (ftl_port_mpnfm): plane 1's pages (odd blocks) are the part's small pages, moved with the
 * controller's SMALL layout. 0: off. */
static uint32_t small_bytes, small_total;
static uint64_t last_progress, limit_cycles;   /* the watchdog (poll) */

DRV_HOT2 void ftl_port_get_stats(struct ftl_port_stats *s) { *s = st; }

void ftl_port_die(uint32_t d, int *ch, int *way)
{
	*ch = die_ch[d];
	*way = die_way[d];
}

DRV_HOT2 static uint64_t now_us(void *dev)
{
	(void)dev;
	return hal_timestamp() / per_us;
}

HOT_ISSUE static int free_slot(void)
{
	for (int k = 0; k < SLOTS; k++) {
		int s = (next_slot + k) % SLOTS;
		if (!slot_op[s] && slot_role[s] != ROLE_STATUS) {
			next_slot = (s + 1) % SLOTS;
			return s;
		}
	}
	return -1;
}

#ifdef NANDLAB_CTRL_ECC_SMALL
#define SMALL_FREE NANDLAB_CTRL_ECC_SMALL_FREE_BYTES
#else
#define SMALL_FREE 0
#endif

/* The data bytes of op's page: the small page on plane 1 in MPNFM mode. */
HOT_REAP_R static uint32_t data_bytes(const struct ftl_nand_op *op)
{
	return small_bytes && (op->block & 1) ? small_bytes : nandctl[die_ch[op->die]].g.page_bytes;
}

DRV_HOT3 static void describe(const struct ftl_nand_op *op, int s, struct hal_ctrl_desc *d)
{
	const struct nandctl *nc = &nandctl[die_ch[op->die]];
	const int small = small_bytes && (op->block & 1);
	const uint32_t page = small ? small_bytes : nc->g.page_bytes, total = small ? small_total : page_total;
	const uint32_t free_bytes = small ? SMALL_FREE : NANDLAB_CTRL_ECC_FREE_BYTES;
	memset(d, 0, sizeof(*d));
	d->way = die_way[op->die];
	d->tag = (uint8_t)(TAG_BASE + s);
	d->row = op->block << page_bits | op->page;
	d->param = (uint32_t)(uintptr_t)slot_free[s];
	switch (op->opcode) {
	case FTL_NAND_READ:
		d->op = NANDLAB_CTRL_OP_READ_ECC_FREE;
		d->small = (uint8_t)small;
		d->len = (uint16_t)(page + free_bytes);
		d->addr = (uint32_t)(uintptr_t)op->data;
		break;
	case FTL_NAND_READ_TAG:              /* the free bytes as stored, at the end of the spare */
		d->op = NANDLAB_CTRL_OP_READ;
		d->col = (uint16_t)(total - free_bytes);
		d->len = (uint16_t)free_bytes;
		d->addr = d->param;
		break;
	case FTL_NAND_READ_BBM:              /* spare bytes 0 and 1: the factory marker */
		d->op = NANDLAB_CTRL_OP_READ;
		d->col = (uint16_t)page;
		d->len = 2;
		d->addr = d->param;
		break;
	case FTL_NAND_PROGRAM:
		memcpy(slot_free[s], op->tag, FTL_TAG_BYTES);
		d->op = NANDLAB_CTRL_OP_PROGRAM_ECC;
		d->small = (uint8_t)small;
		d->len = (uint16_t)(page + FTL_TAG_BYTES);
		d->addr = (uint32_t)(uintptr_t)op->data;
		break;
	default:
		d->op = NANDLAB_CTRL_OP_ERASE;
		d->row = op->block << page_bits;
		break;
	}
}

/* A descriptor went into the controller's queue: the in-flight count, and the watchdog's start. */
HOT_ISSUE static void submitted(void)
{
	if (!st.in_flight)
		last_progress = hal_timestamp();
	st.submitted++;
	if (++st.in_flight > st.max_in_flight)
		st.max_in_flight = st.in_flight;
}

/* Any other operation, or any on MPNFM's small pages: through a descriptor in memory. */
__attribute__((noinline, cold)) static int submit_other(struct ftl_nand_op *op, int s)
{
	struct hal_ctrl_desc d;
	describe(op, s, &d);
	return hal_ctrl_submit(die_ch[op->die], &d);
}

/* The per-page operations, PROGRAM and READ of a large page, as describe() builds them, straight
 * into the controller's CSRs; a program's tag into the slot's spare buffer by halfwords (aligned). */
HOT_W static int submit_program(struct ftl_nand_op *op, int s)
{
	uint16_t *t = (uint16_t *)slot_free[s];
	t[0] = (uint16_t)(op->tag[0] | op->tag[1] << 8);
	t[1] = (uint16_t)(op->tag[2] | op->tag[3] << 8);
	t[2] = (uint16_t)(op->tag[4] | op->tag[5] << 8);
	return hal_ctrl_submit_page(die_ch[op->die], NANDLAB_CTRL_OP_PROGRAM_ECC, die_way[op->die], TAG_BASE + s,
	                            op->block << page_bits | op->page, page_bytes + FTL_TAG_BYTES,
	                            (uint32_t)(uintptr_t)op->data, (uint32_t)(uintptr_t)slot_free[s]);
}

HOT_ISSUE_R static int submit_read(struct ftl_nand_op *op, int s)
{
	return hal_ctrl_submit_page(die_ch[op->die], NANDLAB_CTRL_OP_READ_ECC_FREE, die_way[op->die], TAG_BASE + s,
	                            op->block << page_bits | op->page, page_bytes + NANDLAB_CTRL_ECC_FREE_BYTES,
	                            (uint32_t)(uintptr_t)op->data, (uint32_t)(uintptr_t)slot_free[s]);
}

HOT_ISSUE static int submit(void *dev, struct ftl_nand_op *op)
{
	int s = free_slot(), r;
	(void)dev;
	if (s < 0)
		return -1;
	if (op->opcode == FTL_NAND_PROGRAM && !small_bytes)
		r = submit_program(op, s);
	else if (op->opcode == FTL_NAND_READ && !small_bytes)
		r = submit_read(op, s);
	else
		r = submit_other(op, s);
	if (r) {
		st.queue_full++;
		return -1;
	}
	slot_op[s] = op;
	held++;
	submitted();
	return 0;
}

/* Zero bits of a word (the firmware links no libgcc popcount). */
static int zeros32(uint32_t v)
{
	v = ~v;
	v = v - ((v >> 1) & 0x55555555u);
	v = (v & 0x33333333u) + ((v >> 2) & 0x33333333u);
	return (int)((((v + (v >> 4)) & 0x0f0f0f0fu) * 0x01010101u) >> 24);
}

/* An erased page reads uncorrectable (all-FFh parity is no codeword): at most t zero bits in each
 * codeword's data and in the tag make it erased (as Linux's nand_check_erased_ecc_chunk decides;
 * the parity bytes are not in memory here, so only the data and the tag are counted). */
__attribute__((noinline, cold)) static int erased(const uint8_t *data, uint32_t bytes, const uint8_t *tag)
{
	const uint32_t *w = (const uint32_t *)data;
	hal_dma_sync_range(data, bytes);
	for (uint32_t cw = 0; cw < bytes / NANDLAB_CTRL_ECC_DATA_BYTES; cw++) {
		int zeros = 0;
		for (uint32_t i = 0; i < NANDLAB_CTRL_ECC_DATA_BYTES / 4; i++, w++)
			if (*w != 0xffffffffu && (zeros += zeros32(*w)) > NANDLAB_CTRL_ECC_T)
				return 0;
	}
	int tag_zeros = 0;
	for (int i = 0; i < FTL_TAG_BYTES; i++)
		tag_zeros += zeros32(0xffffff00u | tag[i]);
	return tag_zeros <= 1;
}

__attribute__((noinline, cold)) static void failed(const struct ftl_nand_op *op, int r)
{
	st.failed++;
	if (r != NANDLAB_CTRL_RESULT_NAND_FAIL) {
		/* TIMEOUT or a refusal: not the die's verdict; the FTL retires the block all the same. (OVERFLOW and
		 * BAD_ADDRESS would be this port's own fault: it waits for the queue's room and its buffers lie in
		 * the DMA window, which firmware leaves open.) */
		st.refused++;
		printf("ftl port: %s block %u page %u: %s\n", nandctl_die_name(&nandctl[die_ch[op->die]], die_way[op->die]),
		       (unsigned int)op->block, (unsigned int)op->page, nandctl_result_name(r));
	}
}

HOT_REAP_R static void finish_read(struct ftl_nand_op *op, const struct hal_ctrl_cpl *c, int s);

HOT_REAP static void finish(struct ftl_nand_op *op, const struct hal_ctrl_cpl *c, int s)
{
	int r = c->result;
	op->corrected = 0;
	op->status = r == NANDLAB_CTRL_RESULT_OK ? FTL_NAND_OK : FTL_NAND_FAIL;
	if (op->opcode == FTL_NAND_READ || op->opcode == FTL_NAND_READ_TAG || op->opcode == FTL_NAND_READ_BBM)
		finish_read(op, c, s);
	if (op->status == FTL_NAND_FAIL)
		failed(op, r);
}

/* A read's completion (finish): the tag, the ECC's counts, an erased page recognised. */
HOT_REAP_R static void finish_read(struct ftl_nand_op *op, const struct hal_ctrl_cpl *c, int s)
{
	const uint16_t *t = (const uint16_t *)slot_free[s];
	int r = c->result;
	/* The tag's line alone out of the data cache (not the whole cache: the scheduler's and the FTL's data
	 * stay; the tag is 8-aligned, one line); the page's data is its reader's to sync (ftl_nand.cpu_view),
	 * erased() here syncs what it reads. */
	hal_dcache_evict_line(t);
	for (int i = 0; i < FTL_TAG_BYTES / 2; i++) {
		op->tag[2 * i] = (uint8_t)t[i];
		op->tag[2 * i + 1] = (uint8_t)(t[i] >> 8);
	}
	if (op->opcode == FTL_NAND_READ && (r == NANDLAB_CTRL_RESULT_OK || r == NANDLAB_CTRL_RESULT_ECC_UNCORRECTABLE)) {
		const uint32_t page = data_bytes(op);
		struct nandctl_ecc e;
		nandctl_ecc_counts(c->ecc, (int)(page / NANDLAB_CTRL_ECC_DATA_BYTES), &e);
		op->corrected = (uint16_t)e.corrected;
		if (r == NANDLAB_CTRL_RESULT_ECC_UNCORRECTABLE && erased(op->data, page, op->tag)) {
			memset(op->data, 0xff, page);
			memset(op->tag, 0xff, FTL_TAG_BYTES);
			op->status = FTL_NAND_ERASED;
			st.erased++;
		} else if (r == NANDLAB_CTRL_RESULT_ECC_UNCORRECTABLE) {
			op->status = FTL_NAND_UNCORRECTABLE;
			st.uncorrectable++;
		}
	}
}

/* Submit a descriptor of a group, waiting for the queue's room: a group is never left half submitted
 * (the controller drains its queue as it runs; the watchdog bounds the wait). */
DRV_HOT4 __attribute__((noinline, cold)) static int submit_wait(int ch, const struct hal_ctrl_desc *d)
{
	uint64_t t0 = hal_timestamp();
	while (hal_ctrl_submit(ch, d)) {
		st.queue_full++;
		if (hal_timestamp() - t0 > limit_cycles)
			return -1;
	}
	submitted();
	return 0;
}

DRV_HOT4 static void hand_back(struct ftl_nand_op *op)
{
	ready[(ready_head + ready_n++) % SLOTS] = op;
}

DRV_HOT3 int ftl_port_submit_group(struct ftl_nand_op **ops, int n)
{
	struct hal_ctrl_desc d;
	struct group *g;
	int gi, k, ch;
	if (n == 1)
		return submit(NULL, ops[0]);
	for (gi = 0; gi < GROUPS && groups[gi].used; gi++)
		;
	if (n < 2 || n > NANDCTL_PLANES_MAX || gi == GROUPS)
		return -1;
	for (k = 0; k < n; k++) {
		int s = free_slot();
		if (s < 0) {
			while (k--)
				slot_op[groups[gi].slot[k]] = NULL;
			return -1;
		}
		slot_op[s] = ops[k];               /* (reserved: free_slot looks for another) */
		groups[gi].slot[k] = (int8_t)s;
	}
	held += n;
	g = &groups[gi];
	g->used = 1;
	g->n = (uint8_t)n;
	g->failed = 0;
	g->waiting = (uint8_t)n;
	ch = die_ch[ops[0]->die];
	for (k = 0; k < n; k++) {
		int s = g->slot[k], last = k == n - 1;
		g->op[k] = ops[k];
		slot_group[s] = (uint8_t)gi;
		slot_role[s] = last ? ROLE_FINAL : ROLE_MEMBER;
		describe(ops[k], s, &d);
		if (!last) {
			if (ops[k]->opcode == FTL_NAND_PROGRAM)
				d.op = NANDLAB_CTRL_OP_PROGRAM_ECC_MULTIPLANE;
			else if (ops[k]->opcode == FTL_NAND_READ) {
				d.op = NANDLAB_CTRL_OP_READ_ECC_MULTIPLANE;
				d.len = (uint16_t)nandctl[ch].g.page_bytes;
			} else
				d.op = NANDLAB_CTRL_OP_ERASE_MULTIPLANE;
		}
		if (submit_wait(ch, &d))
			g->failed = 1;             /* (the watchdog fails what is in flight) */
	}
	st.groups++;
	st.group_pages += (uint32_t)n;
	return 0;
}

/* A completion of a group's descriptor: returns the op to hand back now, if any. */
DRV_HOT4 __attribute__((noinline, cold)) static struct ftl_nand_op *group_done(const struct hal_ctrl_cpl *c, int s)
{
	struct group *g = &groups[slot_group[s]];
	struct ftl_nand_op *op = slot_op[s];
	int role = slot_role[s], k, ch = die_ch[g->op[0]->die];
	slot_role[s] = ROLE_SINGLE;
	if (role == ROLE_MEMBER) {               /* queued: the array has not worked yet */
		g->failed |= c->result != NANDLAB_CTRL_RESULT_OK;
		return NULL;                         /* (the slot stays the op's until the group ends) */
	}
	if (role == ROLE_FINAL && g->op[0]->opcode != FTL_NAND_READ) {
		/* Program or erase: the final status is every plane's. */
		finish(op, c, s);
		for (k = 0; k < g->n - 1; k++) {
			struct ftl_nand_op *m = g->op[k];
			slot_op[g->slot[k]] = NULL;
			held--;
			m->status = op->status == FTL_NAND_OK && !g->failed ? FTL_NAND_OK : FTL_NAND_FAIL;
			if (m->status == FTL_NAND_FAIL)
				failed(m, NANDLAB_CTRL_RESULT_NAND_FAIL);
			hand_back(m);
		}
		slot_op[s] = NULL;
		held--;
		g->used = 0;
		return op;
	}
	if (role == ROLE_FINAL) {
		/* Read: the last plane's data is in; READ STATUS says whether the die took the group, then
		 * every other plane's data comes out of its register (06h-E0h). */
		struct hal_ctrl_desc d;
		finish(op, c, s);
		g->failed |= c->result != NANDLAB_CTRL_RESULT_OK && c->result != NANDLAB_CTRL_RESULT_ECC_UNCORRECTABLE;
		slot_role[s] = ROLE_FINAL;           /* (done; the slot keeps its op until the group ends) */
		int t = free_slot();
		g->waiting = (uint8_t)g->n;          /* the status and n - 1 data outputs */
		memset(&d, 0, sizeof(d));
		d.op = NANDLAB_CTRL_OP_READ_STATUS;
		d.way = die_way[op->die];
		d.tag = (uint8_t)(TAG_BASE + t);
		if (t >= 0) {
			slot_role[t] = ROLE_STATUS;
			slot_group[t] = slot_group[s];
		}
		if (t < 0 || submit_wait(ch, &d)) {
			if (t >= 0)
				slot_role[t] = ROLE_SINGLE;
			g->failed = 1;
			g->waiting--;
		}
		for (k = 0; k < g->n - 1; k++) {
			describe(g->op[k], g->slot[k], &d);
			d.op = NANDLAB_CTRL_OP_READ_ECC_ENH_FREE;
			slot_role[g->slot[k]] = ROLE_ENH;
			if (submit_wait(ch, &d)) {
				g->failed = 1;
				g->waiting--;
			}
		}
		return NULL;
	}
	if (role == ROLE_STATUS)
		g->failed |= c->result != NANDLAB_CTRL_RESULT_OK || (c->status & NANDLAB_ONFI_STATUS_FAIL);
	else                                     /* ROLE_ENH: a plane's data */
		finish(op, c, s);
	if (--g->waiting)
		return NULL;
	/* The group's read is over: every op back to the FTL (failed, all of them, if the die refused it). */
	for (k = 0; k < g->n; k++) {
		struct ftl_nand_op *m = g->op[k];
		slot_op[g->slot[k]] = NULL;
		held--;
		slot_role[g->slot[k]] = ROLE_SINGLE;
		if (g->failed) {
			m->status = FTL_NAND_FAIL;
			failed(m, NANDLAB_CTRL_RESULT_NAND_FAIL);
		}
		hand_back(m);
	}
	g->used = 0;
	return NULL;
}

/* The controller completes every descriptor (TIMEOUT at worst): none for twice its time limit means
 * it is wedged. The operations in flight are then failed, so that the FTL never waits for ever. */
__attribute__((noinline, cold)) static struct ftl_nand_op *give_up(void)
{
	/* (Groups are given up whole: their ops come back failed, one a call.) */
	memset(groups, 0, sizeof(groups));
	memset(slot_role, 0, sizeof(slot_role));
	for (int s = 0; s < SLOTS; s++)
		if (slot_op[s]) {
			struct ftl_nand_op *op = slot_op[s];
			slot_op[s] = NULL;
			held--;
			if (st.in_flight)
				st.in_flight--;
			st.failed++;
			st.lost++;
			op->status = FTL_NAND_FAIL;
			printf("ftl port: no completion for %lu us: operation on die %u block %u failed\n",
			       (unsigned long)(limit_cycles / per_us), (unsigned int)op->die, (unsigned int)op->block);
			return op;
		}
	st.in_flight = 0;
	return NULL;
}

/* poll's rare cases, out of the per-page path: ops of a finished multi-plane group waiting to be handed
 * back, and a completion that is not a single operation's (a group's descriptor, or one no slot waits for). */
__attribute__((noinline, cold)) static struct ftl_nand_op *take_ready(void)
{
	struct ftl_nand_op *op = ready[ready_head];
	ready_head = (ready_head + 1) % SLOTS;
	ready_n--;
	return op;
}

__attribute__((noinline, cold)) static struct ftl_nand_op *complete_other(int ch, struct hal_ctrl_cpl *c, uint64_t t0)
{
	int s = c->tag - TAG_BASE;
	if (c->tag >= TAG_BASE && s < SLOTS && slot_role[s] != ROLE_SINGLE)
		hal_ctrl_cpl_ecc(ch, c);
	hal_ctrl_cpl_pop(ch);
	if (c->tag < TAG_BASE || s >= SLOTS || (!slot_op[s] && slot_role[s] != ROLE_STATUS)) {
		st.late++;
		return NULL;
	}
	st.in_flight--;
	st.completed++;
	last_progress = t0 ? t0 : hal_timestamp();
	return group_done(c, s);
}

HOT_REAP static struct ftl_nand_op *poll(void *dev)
{
	struct hal_ctrl_cpl c;
	(void)dev;
	uint64_t t0 = 0;
	st.polls++;
	if (ready_n)
		return take_ready();
	if (held) {
		t0 = hal_timestamp();
		if (t0 - last_progress > limit_cycles)
			return give_up();
	}
	for (uint32_t k = 0, ch = next_ch; k < st.channels; k++, ch = ch + 1 < st.channels ? ch + 1 : 0) {
		if (!hal_ctrl_cpl_peek((int)ch, &c))
			continue;
		next_ch = ch + 1 < st.channels ? (int)ch + 1 : 0;
		uint32_t s = c.tag - TAG_BASE;       /* (below TAG_BASE: wraps past SLOTS) */
		struct ftl_nand_op *op;
		if (s >= SLOTS || slot_role[s] != ROLE_SINGLE || !(op = slot_op[s]))
			return complete_other((int)ch, &c, t0);
		/* The ECC counts are read only where they say something: reads (and groups, above). */
		if (op->opcode == FTL_NAND_READ)
			hal_ctrl_cpl_ecc((int)ch, &c);
		hal_ctrl_cpl_pop((int)ch);
		st.in_flight--;
		st.completed++;
		last_progress = t0 ? t0 : hal_timestamp();   /* (this poll's start: the watchdog's resolution is ms) */
		slot_op[s] = NULL;
		held--;
		finish(op, &c, (int)s);
		return op;
	}
	if (t0) {
		st.idle_polls++;
		st.idle_cycles += hal_timestamp() - t0;
	}
	return NULL;
}

int ftl_port_open(struct ftl_nand *nand)
{
	int channels = nandctl_channels(), n = 0;
	if (!channels) {
		printf("error: this SoC has no channel controller\n");
		return -1;
	}
	if (!nandctl[0].up && nandctl_bringup(0) <= 0) {
		printf("error: no die came up ('ctl bringup' says why)\n");
		return -1;
	}
	const struct onfi_geometry *g0 = &nandctl[0].g;
	for (int ch = 0; ch < channels; ch++) {
		const struct nandctl *nc = &nandctl[ch];
		if (!nc->up)
			continue;
		if (nc->g.page_bytes != g0->page_bytes || nc->g.pages_per_block != g0->pages_per_block ||
		    nc->g.blocks_per_lun != g0->blocks_per_lun || nc->g.planes != g0->planes) {
			printf("error: channel %d's dies differ in geometry from channel 0's\n", ch);
			return -1;
		}
		for (int way = 0; way < nc->dies; way++)
			if (nc->online >> way & 1) {
				die_ch[n] = (uint8_t)ch;
				die_way[n++] = (uint8_t)way;
			}
	}
	memset(slot_op, 0, sizeof(slot_op));
	memset(slot_role, 0, sizeof(slot_role));
	memset(groups, 0, sizeof(groups));
	ready_n = ready_head = held = 0;
	memset(&st, 0, sizeof(st));
	st.channels = (uint32_t)channels;
	st.dies = (uint32_t)n;
	page_total = g0->page_bytes + g0->spare_bytes;
	page_bytes = g0->page_bytes;
	/* Large pages on every plane until ftl_port_mpnfm says otherwise (the dies too). */
	small_bytes = small_total = 0;
	for (int d = 0; d < n; d++)
		hal_die_set_mpnfm(d, 0);
	per_us = hal_clock_hz() / 1000000u;
	page_bits = 0;
	while ((1u << page_bits) < g0->pages_per_block)
		page_bits++;
	limit_cycles = (uint64_t)nandctl_run_limit_us(&nandctl[0]) * per_us;
	nand->geo.dies = (uint32_t)n;
	nand->geo.planes = g0->planes ? g0->planes : 1;
	nand->geo.blocks = g0->blocks_per_lun;
	nand->geo.pages = g0->pages_per_block;
	nand->geo.page_bytes = g0->page_bytes;
	nand->cpu_view = hal_dma_sync_range;
	nand->geo.tag_bytes = NANDLAB_CTRL_ECC_FREE_BYTES;
	nand->dev = NULL;
	nand->submit = submit;
	nand->poll = poll;
	nand->now_us = now_us;
	return 0;
}

int ftl_port_mpnfm(int on, uint32_t *small)
{
	const struct onfi_geometry *g0 = &nandctl[0].g;
	*small = 0;
	if (!on) {
		for (uint32_t d = 0; d < st.dies; d++)
			hal_die_set_mpnfm((int)d, 0);
		small_bytes = small_total = 0;
		return 0;
	}
#ifdef NANDLAB_CTRL_ECC_SMALL
	if (g0->small_page_bytes && g0->small_plane == 1 && (g0->planes ? g0->planes : 1) == 2 &&
	    SMALL_FREE >= FTL_TAG_BYTES) {
		for (uint32_t d = 0; d < st.dies; d++)
			if (hal_die_set_mpnfm((int)d, 1)) {
				printf("error: ftl: die %u has no MPNFM mode to set\n", (unsigned int)d);
				return -1;
			}
		small_bytes = g0->small_page_bytes;
		small_total = g0->small_page_bytes + g0->small_spare_bytes;
		*small = small_bytes;
		return 0;
	}
#endif
	printf("error: ftl: MPNFM needs dies with small pages on plane 1 (the parameter page's MPNFM extension) and "
	       "controllers built with their ECC layout (an MPNFM part, e.g. --nand-part MPNFM-32-4); this build has %s\n",
	       !g0->small_page_bytes ? "no small pages" : SMALL_FREE < FTL_TAG_BYTES ? "no room for the FTL's tag in a small "
	       "page's spare" : "no SMALL layout in its controllers");
	return -1;
}

#else

int ftl_port_mpnfm(int on, uint32_t *small) { (void)on; *small = 0; return -1; }

int ftl_port_open(struct ftl_nand *nand)
{
	(void)nand;
	printf("error: the FTL needs the channel controllers' ECC (this SoC was built with --nand-ecc none)\n");
	return -1;
}
void ftl_port_get_stats(struct ftl_port_stats *s) { memset(s, 0, sizeof(*s)); }
int ftl_port_submit_group(struct ftl_nand_op **ops, int n) { (void)ops; (void)n; return -1; }
void ftl_port_die(uint32_t d, int *ch, int *way) { (void)d; *ch = *way = 0; }

#endif
