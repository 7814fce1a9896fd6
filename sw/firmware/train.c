/* Read training of the pin PHY's input delays: per lane, the taps at which NV-DDR reads of a known
 * pattern come back right, centred and verified; results kept per die and timing mode.
 *
 * The pattern is the die's parameter page, read first in async SDR mode 0 (where a byte is held for a
 * whole RE# cycle, so the delays do not matter) and accepted only with a right CRC. In NV-DDR the
 * controller takes a byte only where DQS toggles, so a DQS lane sampled off its window garbles every
 * DQ lane: the sweep runs in three passes,
 *   1. all nine lanes at the same tap (the documentation's sweep): each DQ lane's window within DQS's;
 *   2. DQ lanes at the centres of pass 1, DQS alone swept: DQS's window (a run of taps with the same DQ lanes
 *      right: DQS shows one launched phase there; of several, the one pass 3 succeeds with);
 *   3. DQS at its centre, the DQ lanes swept together: each DQ lane's own window;
 * then every lane goes to the centre of its window and the pattern is read again to verify.
 * A lane needs the pattern to change on it (a bit that never toggles reads right at any tap). */
#include <stdio.h>
#include <string.h>

#include <generated/csr.h>
#include <generated/soc.h>

#include "hal.h"
#include "nandctl.h"
#include "onfi.h"
#include "train.h"

#define PATTERN_BYTES  NANDLAB_ONFI_PARAM_PAGE_BYTES
#define VERIFY_READS   4

static const char *const lane_names[TRAIN_LANES] = {"DQ0", "DQ1", "DQ2", "DQ3", "DQ4", "DQ5", "DQ6", "DQ7", "DQS"};

/* The pin PHY trained: the simulator's (nand_phy: channel 0's dies behind the pin-level model) or the
 * external socket's (nand_socket_phy, built with its delay lines: the socket's channel). */
#if defined(CSR_NAND_PHY_BASE)
#define TRAIN_PHY       1
#define PHY(fn)         nand_phy_##fn
#define PHY_DLY_CTL     NAND_PHY_DLY_CTL
#define PHY_TAPS        NANDLAB_NAND_PHY_DELAY_TAPS
#define PHY_TAP_PS      NANDLAB_NAND_PHY_DELAY_TAP_PS
#define PHY_VALUE_BITS  CSR_NAND_PHY_DLY_CTL_VALUE_SIZE
#define TRAIN_CH        0
#ifdef NANDLAB_NAND_PHY_FAMILY_ECP5
#define PHY_ECP5        1
#endif
#elif defined(CSR_NAND_SOCKET_PHY_DLY_CTL_ADDR)
#define TRAIN_PHY       1
#define PHY(fn)         nand_socket_phy_##fn
#define PHY_DLY_CTL     NAND_SOCKET_PHY_DLY_CTL
#define PHY_TAPS        NANDLAB_NAND_SOCKET_DELAY_TAPS
#define PHY_TAP_PS      NANDLAB_NAND_SOCKET_DELAY_TAP_PS
#define PHY_VALUE_BITS  CSR_NAND_SOCKET_PHY_DLY_CTL_VALUE_SIZE
#define TRAIN_CH        hal_ctrl_socket_channel()
#ifdef NANDLAB_NAND_SOCKET_FAMILY_ECP5
#define PHY_ECP5        1
#endif
#endif
/* (A level of indirection: HAL_FIELD_PUT pastes its register argument, which must be expanded first.) */
#define DLY_CTL(field, x) HAL_FIELD_PUT_EXPANDED(PHY_DLY_CTL, field, x)
#define HAL_FIELD_PUT_EXPANDED(reg, field, x) HAL_FIELD_PUT(reg, field, x)

#ifdef TRAIN_PHY

/* Main RAM (too large for the SRAM; not zeroed there: `kept` says which are set). */
static struct train_result results[NANDCTL_MAX_DIES][TRAIN_MODES] MAIN_BSS;
static uint8_t kept[NANDCTL_MAX_DIES][TRAIN_MODES];
/* The data interface each die was last put in here (0: not by train, then the channel's). */
static uint8_t die_set[NANDCTL_MAX_DIES], die_if[NANDCTL_MAX_DIES], die_mode[NANDCTL_MAX_DIES];
static uint8_t pattern[PATTERN_BYTES] MAIN_BSS;

int train_present(void) { return 1; }
int train_delay_taps(void) { return PHY_TAPS; }
int train_channel_index(void) { return TRAIN_CH; }

/* The lanes of `mask` at `tap`: a load (7-series); a load to 0 and `tap` increments (ECP5's DELAYF). */
static void set_taps(uint32_t mask, int tap)
{
	PHY(dly_sel_write)(mask);
#ifdef PHY_ECP5
	PHY(dly_ctl_write)(DLY_CTL(LOAD, 1));
	for (int k = 0; k < tap; k++)
		PHY(dly_ctl_write)(DLY_CTL(INC, 1));
#else
	PHY(dly_ctl_write)(DLY_CTL(LOAD, 1) | DLY_CTL(VALUE, tap));
#endif
}

/* A sweep's step: the lanes of `mask` from tap - 1 to `tap` (tap 0: loaded), one increment as the
 * documentation's procedure moves them (on ECP5 a load is only back to 0). */
static void step_taps(uint32_t mask, int tap)
{
#ifdef PHY_ECP5
	if (tap) {
		PHY(dly_sel_write)(mask);
		PHY(dly_ctl_write)(DLY_CTL(INC, 1));
		return;
	}
#endif
	set_taps(mask, tap);
}

/* The PHY's tap count of `lane` (its shadow of the delay line). */
static int lane_taps(int lane)
{
	uint64_t all = PHY(dly_taps_read)();
	int bits = PHY_VALUE_BITS;
	return (int)(all >> (lane * bits) & ((1u << bits) - 1));
}

/* Every lane's delay line moves as this firmware drives it (a load on 7-series; a load to 0 and
 * increments on ECP5): to tap 2 and back to 0, checked on the PHY's tap counts. A firmware built for
 * the other family would leave the taps where they are and train on nothing. */
static int check_delay_lines(int die, int mode)
{
	int b;
	for (int want = 2; want >= 0; want -= 2) {
		set_taps((1u << TRAIN_LANES) - 1, want);
		for (b = 0; b < TRAIN_LANES; b++)
			if (lane_taps(b) != want) {
				printf("error: die %d NV-DDR mode %d: lane %s's delay line is at tap %d after a move to %d "
				       "(the firmware drives a %s delay line)\n", die, mode, lane_names[b], lane_taps(b), want,
#ifdef PHY_ECP5
				       "DELAYF (ECP5)");
#else
				       "IDELAYE2 (7-series)");
#endif
				return -1;
			}
	}
	return 0;
}

static int run(struct nandctl *nc, uint8_t op, int die, uint16_t col, uint16_t len, void *buf, uint32_t param)
{
	struct hal_ctrl_cpl c;
	struct hal_ctrl_desc d = {.op = op, .way = (uint8_t)die, .col = col, .len = len,
	                          .addr = (uint32_t)(uintptr_t)buf, .param = param};
	int res = nandctl_run(nc, &d, &c);
	if (buf)
		hal_dma_sync();
	return res;
}

static uint8_t timing_p1(int interface, int mode)
{
	return (uint8_t)((uint32_t)interface << NANDLAB_ONFI_TIMING_MODE_P1_INTERFACE_OFFSET |
	                 (uint32_t)mode << NANDLAB_ONFI_TIMING_MODE_P1_MODE_OFFSET);
}

/* Read the pattern in the current mode; errs[lane] gets the bit errors of each DQ lane (all lanes
 * PATTERN_BYTES when the read did not complete); returns the controller's result. */
static int read_errors(struct nandctl *nc, int die, uint32_t errs[TRAIN_LANES])
{
	uint8_t *buf = nandctl_buf[1];
	int k, b, res;
	for (k = 0; k < PATTERN_BYTES; k++)
		buf[k] = (uint8_t)~pattern[k];
	res = run(nc, NANDLAB_CTRL_OP_READ_PARAM_PAGE, die, 0, PATTERN_BYTES, buf, 0);
	for (b = 0; b < TRAIN_LANES; b++)
		errs[b] = res ? PATTERN_BYTES : 0;
	if (res)
		return res;
	for (k = 0; k < PATTERN_BYTES; k++) {
		uint8_t x = buf[k] ^ pattern[k];
		for (b = 0; b < 8; b++)
			errs[b] += x >> b & 1;
	}
	return 0;
}

static uint16_t clip16(uint32_t v) { return v > 0xffff ? 0xffff : (uint16_t)v; }

/* The longest run of passing taps; *lo = -1 when none passes. */
static void window(const uint8_t *pass, int taps, int *lo, int *hi)
{
	int t, start = -1;
	*lo = *hi = -1;
	for (t = 0; t <= taps; t++) {
		if (t < taps && pass[t]) {
			if (start < 0)
				start = t;
		} else if (start >= 0) {
			if (*lo < 0 || t - 1 - start > *hi - *lo) {
				*lo = start;
				*hi = t - 1;
			}
			start = -1;
		}
	}
}

static void print_lane(const struct train_lane *l, int lane)
{
	if (l->lo < 0)
		printf("  %s: no window\n", lane_names[lane]);
	else
		printf("  %s: window %d..%d (%d taps), tap %d\n", lane_names[lane], l->lo, l->hi, l->hi - l->lo + 1, l->tap);
}

/* The pattern: the parameter page in async SDR mode 0, CRC checked; every DQ lane must toggle in it. */
static int read_pattern(struct nandctl *nc, int die)
{
	uint8_t *p = nandctl_buf[0];
	int res, copy, b, k;
	hal_ctrl_mode(nc->ch, NANDLAB_ONFI_IF_ASYNC_SDR, 0, 1u << die);
	if ((res = run(nc, NANDLAB_CTRL_OP_RESET, die, 0, 0, NULL, 0))) {
		printf("error: die %d: RESET: %s\n", die, nandctl_result_name(res));
		return -1;
	}
	res = run(nc, NANDLAB_CTRL_OP_READ_PARAM_PAGE, die, 0, PATTERN_BYTES * ONFI_PARAM_COPIES, p, 0);
	copy = res ? -2 : onfi_param_select(p, ONFI_PARAM_COPIES);
	if (copy == -2) {
		printf("error: die %d: parameter page in async SDR mode 0: %s\n", die,
		       res ? nandctl_result_name(res) : "no copy with a valid signature and CRC");
		return -1;
	}
	memcpy(pattern, copy >= 0 ? p + copy * PATTERN_BYTES : p, PATTERN_BYTES);
	for (b = 0; b < 8; b++) {
		for (k = 1; k < PATTERN_BYTES && !((pattern[k] ^ pattern[k - 1]) >> b & 1); k++)
			;
		if (k == PATTERN_BYTES) {
			printf("error: die %d: the parameter page never changes on %s: no pattern to train it with\n", die,
			       lane_names[b]);
			return -1;
		}
	}
	return 0;
}

/* The die in async SDR mode 0, the pattern read, then the die and the controller in NV-DDR `mode`. */
static int prepare(struct nandctl *nc, int die, int mode)
{
	int res, interface = die_set[die] ? die_if[die] : nc->interface, cur = die_set[die] ? die_mode[die] : nc->mode;
	hal_ctrl_own_bus(nc->ch, 1);
	/* A die left in another mode goes back to async SDR mode 0 (SET FEATURES only writes: no training needed). */
	if (interface != NANDLAB_ONFI_IF_ASYNC_SDR || cur != 0) {
		hal_ctrl_mode(nc->ch, interface, cur, 1u << die);
		run(nc, NANDLAB_CTRL_OP_SET_FEATURES, die, NANDLAB_ONFI_FEATURE_TIMING_MODE, 0, NULL,
		    timing_p1(NANDLAB_ONFI_IF_ASYNC_SDR, 0));
	}
	die_set[die] = 1;
	die_if[die] = NANDLAB_ONFI_IF_ASYNC_SDR;
	die_mode[die] = 0;
	if (read_pattern(nc, die))
		return -1;
	res = run(nc, NANDLAB_CTRL_OP_SET_FEATURES, die, NANDLAB_ONFI_FEATURE_TIMING_MODE, 0, NULL,
	          timing_p1(NANDLAB_ONFI_IF_NVDDR, mode));
	if (res) {
		printf("error: die %d: SET FEATURES NV-DDR mode %d: %s\n", die, mode, nandctl_result_name(res));
		return -1;
	}
	hal_ctrl_mode(nc->ch, NANDLAB_ONFI_IF_NVDDR, mode, 1u << die);
	/* The channel's driver knows the die answers and is in NV-DDR now (a later bring-up takes it back). */
	if (!nc->dies)
		nc->dies = hal_ctrl_ways(nc->ch) < NANDCTL_MAX_DIES ? hal_ctrl_ways(nc->ch) : NANDCTL_MAX_DIES;
	nc->online |= 1u << die;
	die_if[die] = NANDLAB_ONFI_IF_NVDDR;
	die_mode[die] = (uint8_t)mode;
	nc->interface = NANDLAB_ONFI_IF_NVDDR;
	nc->mode = mode;
	return 0;
}

static int check_args(int die, int mode)
{
	if (die < 0 || die >= NANDCTL_MAX_DIES || die >= hal_ctrl_ways(TRAIN_CH) || mode < 0 || mode >= TRAIN_MODES) {
		printf("error: train: die %d / NV-DDR mode %d out of range\n", die, mode);
		return -1;
	}
	return 0;
}

int train_check(struct nandctl *nc, int die, int mode)
{
	uint32_t errs[TRAIN_LANES];
	int b, res, bad = 0;
	if (check_args(die, mode) || prepare(nc, die, mode))
		return -1;
	res = read_errors(nc, die, errs);
	printf("die %d NV-DDR mode %d at the taps set: %s; bit errors per lane:", die, mode, nandctl_result_name(res));
	for (b = 0; b < 8; b++) {
		printf(" %s %lu@%d", lane_names[b], (unsigned long)errs[b], lane_taps(b));
		bad += errs[b] != 0;
	}
	printf(" (DQS@%d)\n", lane_taps(TRAIN_DQS_LANE));
	if (res || bad)
		printf("error: die %d NV-DDR mode %d: the parameter page reads wrong on %d lanes\n", die, mode, bad);
	return res || bad ? -1 : 0;
}

/* 3: the DQ lanes swept together, DQS at its tap: each DQ lane's own window, centred; the lanes without one. */
static int dq_pass(struct nandctl *nc, int die, struct train_result *r, uint8_t pass[][TRAIN_TAPS_MAX], int taps)
{
	uint32_t errs[TRAIN_LANES];
	int t, b, bad = 0;
	for (t = 0; t < taps; t++) {
		step_taps(0xff, t);
		read_errors(nc, die, errs);
		for (b = 0; b < 8; b++) {
			pass[b][t] = errs[b] == 0;
			r->errors[b][t] = clip16(errs[b]);
		}
	}
	for (b = 0; b < 8; b++) {
		window(pass[b], taps, &r->lane[b].lo, &r->lane[b].hi);
		r->lane[b].tap = r->lane[b].lo < 0 ? 0 : (r->lane[b].lo + r->lane[b].hi) / 2;
		set_taps(1u << b, r->lane[b].tap);
		bad += r->lane[b].lo < 0;
	}
	return bad;
}

/* 2: DQS alone, the DQ lanes with a pass-1 window (`need`) at their centres; at each tap, which of them read
 * right. Over a run of taps DQS's sample shows the toggles of one launched phase, and a DQ lane reads right
 * only where DQS's phase is the one its own sample holds: a chip whole phases late (tDQSCK up to 25 ns) can put
 * DQS across a phase boundary inside the taps, and the pass-1 centres in two phases. So each run of taps with
 * the same lanes right is a candidate, tried longest first (the first of equals) with pass 3 at its centre
 * until every DQ lane has a window. Returns 0, or -1 (printed) when no candidate gives them all one: then no
 * taps read the die right (a lane straddles a phase boundary the taps cannot bridge). */
static int dqs_and_dq_passes(struct nandctl *nc, int die, int mode, struct train_result *r,
                             uint8_t pass[][TRAIN_TAPS_MAX], uint32_t need, int taps)
{
	static uint16_t right[TRAIN_TAPS_MAX] MAIN_BSS;
	static int16_t run_lo[TRAIN_TAPS_MAX], run_hi[TRAIN_TAPS_MAX];
	struct train_lane *q = &r->lane[TRAIN_DQS_LANE];
	uint32_t errs[TRAIN_LANES], sum;
	int t, b, k, runs = 0, tried = 0, best, bad = 0;
	for (t = 0; t < taps; t++) {
		step_taps(1u << TRAIN_DQS_LANE, t);
		read_errors(nc, die, errs);
		right[t] = 0;
		for (sum = 0, b = 0; b < 8; b++)
			if (need >> b & 1) {
				sum += errs[b];
				right[t] |= (uint16_t)((errs[b] == 0) << b);
			}
		pass[TRAIN_DQS_LANE][t] = right[t] != 0;
		r->errors[TRAIN_DQS_LANE][t] = clip16(sum);
	}
	for (t = 0; t < taps; t = k) {
		for (k = t + 1; k < taps && right[k] == right[t]; k++)
			;
		if (right[t]) {
			run_lo[runs] = (int16_t)t;
			run_hi[runs++] = (int16_t)(k - 1);
		}
	}
	q->lo = q->hi = -1;
	while (tried < runs) {
		for (best = -1, k = 0; k < runs; k++)
			if (run_lo[k] >= 0 && (best < 0 || run_hi[k] - run_lo[k] > run_hi[best] - run_lo[best]))
				best = k;
		q->lo = run_lo[best];
		q->hi = run_hi[best];
		run_lo[best] = -1;
		tried++;
		q->tap = (q->lo + q->hi) / 2;
		set_taps(1u << TRAIN_DQS_LANE, q->tap);
		if (!(bad = dq_pass(nc, die, r, pass, taps))) {
			/* DQS's eye: 0 where the run's lanes (and only they) read right. */
			for (t = 0; t < taps; t++)
				if (right[t] == right[q->lo])
					r->errors[TRAIN_DQS_LANE][t] = 0;
				else if (!r->errors[TRAIN_DQS_LANE][t])
					r->errors[TRAIN_DQS_LANE][t] = 1;
			return 0;
		}
	}
	if (!runs)
		printf("error: die %d NV-DDR mode %d: lane DQS: no window (no tap with the DQ lanes at their pass-1 centres "
		       "right)\n", die, mode);
	else
		printf("error: die %d NV-DDR mode %d: no DQS window (of %d tried) at which every DQ lane has one: a lane "
		       "straddles a phase boundary the taps cannot bridge\n", die, mode, tried);
	return -1;
}

int train_die(struct nandctl *nc, int die, int mode, int verbose)
{
	static uint8_t pass[TRAIN_LANES][TRAIN_TAPS_MAX] MAIN_BSS;
	struct train_result *r;
	uint32_t errs[TRAIN_LANES], need = 0;
	int taps = PHY_TAPS, t, b, res, k, bad = 0;
	if (check_args(die, mode))
		return -1;
	if (taps > TRAIN_TAPS_MAX)
		taps = TRAIN_TAPS_MAX;
	r = &results[die][mode];
	memset(r, 0, sizeof(*r));
	kept[die][mode] = 1;
	if (check_delay_lines(die, mode))
		return -1;
	if (prepare(nc, die, mode))
		return -1;
	r->done = 1;

	/* 1: every lane at the same tap (the eye until a later pass sweeps the lane alone; DQS: all DQ lanes' errors). */
	r->taps = taps;
	for (t = 0; t < taps; t++) {
		step_taps((1u << TRAIN_LANES) - 1, t);
		read_errors(nc, die, errs);
		for (k = 0, b = 0; b < 8; b++) {
			pass[b][t] = errs[b] == 0;
			r->errors[b][t] = clip16(errs[b]);
			k += (int)errs[b];
		}
		r->errors[TRAIN_DQS_LANE][t] = clip16((uint32_t)k);
	}
	for (b = 0; b < 8; b++) {
		window(pass[b], taps, &r->lane[b].lo, &r->lane[b].hi);
		if (r->lane[b].lo >= 0) {
			need |= 1u << b;
			set_taps(1u << b, (r->lane[b].lo + r->lane[b].hi) / 2);
		}
	}
	if (!need) {
		printf("error: die %d NV-DDR mode %d: no tap at which any DQ lane reads right with DQS at the same tap\n",
		       die, mode);
		for (b = 0; b < TRAIN_LANES; b++)
			r->lane[b].lo = r->lane[b].hi = r->lane[b].tap = -1;
		return -1;
	}
	/* 2 and 3: DQS's window, then the DQ lanes' own (dqs_and_dq_passes); verified where they succeed. */
	if (dqs_and_dq_passes(nc, die, mode, r, pass, need, taps)) {
		bad++;
	} else {
		/* The PHY holds what was set. */
		for (b = 0; b < TRAIN_LANES; b++)
			if (lane_taps(b) != r->lane[b].tap) {
				printf("error: %s: the PHY holds tap %d, %d was set\n", lane_names[b], lane_taps(b), r->lane[b].tap);
				bad++;
			}
		for (k = 0; k < VERIFY_READS; k++) {
			res = read_errors(nc, die, errs);
			for (b = 0; b < 8; b++)
				r->verify_errors += errs[b];
			if (res)
				bad++;
		}
	}
	r->ok = !bad && !r->verify_errors;
	if (verbose || !r->ok) {
		printf("die %d NV-DDR mode %d: %d taps of %d ps per lane; pattern: parameter page (%d bytes)\n", die, mode,
		       PHY_TAPS, PHY_TAP_PS, PATTERN_BYTES);
		for (b = 0; b < TRAIN_LANES; b++)
			print_lane(&r->lane[b], b);
	}
	for (b = 0; b < TRAIN_LANES; b++)
		if (r->lane[b].lo < 0)
			printf("error: die %d NV-DDR mode %d: lane %s has no window\n", die, mode, lane_names[b]);
	printf("die %d NV-DDR mode %d: %s (%d verification reads, %lu bit errors)\n", die, mode,
	       r->ok ? "trained" : "error: training failed", VERIFY_READS, (unsigned long)r->verify_errors);
	return r->ok ? 0 : -1;
}

/* Lines for the host (nandlab bringup): a header, then per lane its window, tap and one error count per tap. */
int train_print_eye(int die, int mode)
{
	const struct train_result *r = train_result(die, mode);
	int b, t;
	if (!r || !r->done || !r->taps) {
		printf("error: die %d NV-DDR mode %d: not trained (no sweep kept): run 'train %d %d' or 'ctl bringup'\n", die,
		       mode, die, mode);
		return -1;
	}
	printf("eye die=%d mode=%d taps=%d tap_ps=%d pattern_bytes=%d ok=%d verify_errors=%lu\n", die, mode, r->taps,
	       PHY_TAP_PS, PATTERN_BYTES, r->ok, (unsigned long)r->verify_errors);
	for (b = 0; b < TRAIN_LANES; b++) {
		printf("eye lane=%s lo=%d hi=%d tap=%d errors=", lane_names[b], r->lane[b].lo, r->lane[b].hi, r->lane[b].tap);
		for (t = 0; t < r->taps; t++)
			printf(t ? ",%u" : "%u", r->errors[b][t]);
		printf("\n");
	}
	return 0;
}

const struct train_result *train_result(int die, int mode)
{
	if (die < 0 || die >= NANDCTL_MAX_DIES || mode < 0 || mode >= TRAIN_MODES || !kept[die][mode])
		return NULL;
	return &results[die][mode];
}

int train_apply(int mode, uint32_t dies)
{
	int b, d, lo, hi, any = 0;
	for (b = 0; b < TRAIN_LANES; b++) {
		lo = 0;
		hi = PHY_TAPS - 1;
		for (d = 0; d < NANDCTL_MAX_DIES; d++) {
			const struct train_result *r = &results[d][mode];
			if (!(dies >> d & 1) || !kept[d][mode] || !r->done)
				continue;
			any = 1;
			if (r->lane[b].lo > lo)
				lo = r->lane[b].lo;
			if (r->lane[b].hi < hi)
				hi = r->lane[b].hi;
			if (r->lane[b].lo < 0)
				hi = -1;
		}
		if (!any)
			return 0;
		if (lo > hi) {
			printf("error: NV-DDR mode %d: lane %s: the dies' windows have no tap in common\n", mode, lane_names[b]);
			return -1;
		}
		set_taps(1u << b, (lo + hi) / 2);
	}
	return 0;
}

int train_channel(struct nandctl *nc, int mode)
{
	int die, fails = 0;
	if (nc->ch != TRAIN_CH)
		return 0;
	for (die = 0; die < nc->dies && die < NANDCTL_MAX_DIES; die++) {
		if (!(nc->online >> die & 1))
			continue;
		/* The die is in `mode` already (nandctl_set_mode's SET FEATURES). */
		die_set[die] = 1;
		die_if[die] = NANDLAB_ONFI_IF_NVDDR;
		die_mode[die] = (uint8_t)mode;
		fails += train_die(nc, die, mode, 0) != 0;
	}
	hal_ctrl_mode(nc->ch, NANDLAB_ONFI_IF_NVDDR, mode, nc->online);
	nc->interface = NANDLAB_ONFI_IF_NVDDR;
	nc->mode = mode;
	if (fails || train_apply(mode, nc->online))
		return -1;
	return 0;
}

#else

int train_channel(struct nandctl *nc, int mode) { (void)nc; (void)mode; return 0; }
int train_present(void) { return 0; }
int train_delay_taps(void) { return 0; }
int train_channel_index(void) { return 0; }
int train_check(struct nandctl *nc, int die, int mode)
{
	(void)nc; (void)die; (void)mode;
	printf("error: this SoC has no pin PHY with delay lines (simulated, or a socket)\n");
	return -1;
}
int train_die(struct nandctl *nc, int die, int mode, int verbose)
{
	(void)nc; (void)die; (void)mode; (void)verbose; (void)lane_names;
	printf("error: this SoC has no pin PHY with delay lines (simulated, or a socket)\n");
	return -1;
}
const struct train_result *train_result(int die, int mode) { (void)die; (void)mode; return NULL; }
int train_print_eye(int die, int mode)
{
	(void)die; (void)mode;
	printf("error: this SoC has no pin PHY with delay lines (simulated, or a socket)\n");
	return -1;
}
int train_apply(int mode, uint32_t dies) { (void)mode; (void)dies; return -1; }

#endif
