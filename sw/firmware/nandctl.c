/* ONFI through the channel controller (gateware/onfi/controller.py): descriptors, completions,
 * DMA into page buffers. The parameter page follows the same rules as the bit-bang path and the
 * host parser (onfi_param_select: first copy with signature and CRC, else the bitwise majority). */
#include <stdio.h>
#include <string.h>

#include <generated/soc.h>

#include "nandctl.h"

struct nandctl nandctl[NANDCTL_MAX_CHANNELS];
uint8_t nandctl_buf[2][NANDCTL_PAGE_MAX] __attribute__((aligned(64), section(".dma")));

/* Names of the controller's result codes and of the ONFI data interfaces, as the SoC exports them. */
const char *nandctl_result_name(int result)
{
	static struct hal_names names;
	if (result == NANDCTL_NO_COMPLETION)
		return "NO_COMPLETION";
	if (result == NANDCTL_QUEUE_FULL)
		return "QUEUE_FULL";
	return hal_name(hal_names(&names, NANDLAB_CTRL_RESULTS), result);
}

const char *nandctl_interface_name(int interface)
{
	static struct hal_names names;
	return hal_name(hal_names(&names, NANDLAB_ONFI_INTERFACES), interface);
}

int nandctl_channels(void)
{
	int n = hal_ctrl_channels();
	return n > NANDCTL_MAX_CHANNELS ? NANDCTL_MAX_CHANNELS : n;
}

const char *nandctl_die_name(const struct nandctl *nc, int die)
{
	static char name[24];
	if (nc->ch)
		snprintf(name, sizeof(name), "ch %d die %d", nc->ch, die);
	else
		snprintf(name, sizeof(name), "die %d", die);
	return name;
}

/* Before a channel's own messages: nothing on channel 0 (a single-channel SoC's wording), "ch k: " else. */
static const char *chan(const struct nandctl *nc)
{
	static char name[12];
	if (nc->ch)
		snprintf(name, sizeof(name), "ch %d: ", nc->ch);
	else
		name[0] = '\0';
	return name;
}

/* The controller completes every descriptor, with TIMEOUT once one of its waits passed its `timeout`:
 * an ARDY poll (after a cache operation), R/B# low, an NV-DDR data output without DQS. A completion is
 * due within three of them and a page's transfer: wait four, RUN_MIN_US at least (and below 2^32 us). */
#define RUN_MIN_US 100000u

uint32_t nandctl_run_limit_us(const struct nandctl *nc)
{
	uint32_t t = hal_ctrl_timeout_us(nc->ch);
	if (t >= UINT32_MAX / 4)
		return UINT32_MAX;
	return t > RUN_MIN_US / 4 ? 4 * t : RUN_MIN_US;
}

int nandctl_run_within(struct nandctl *nc, struct hal_ctrl_desc *d, struct hal_ctrl_cpl *c, uint32_t timeout_us)
{
	const uint64_t per_us = hal_clock_hz() / 1000000u, limit = (uint64_t)timeout_us * per_us;
	const uint64_t t0 = hal_timestamp();
	uint64_t spent = 0;
	memset(c, 0, sizeof(*c));
	d->tag = ++nc->tag;
	while (hal_ctrl_submit(nc->ch, d))
		if (hal_timestamp() - t0 >= limit)
			return NANDCTL_QUEUE_FULL;
	/* polled, or by interrupt after 'irq on' */
	while (spent < limit && hal_ctrl_wait(nc->ch, (uint32_t)((limit - spent) / per_us) + 1) == 0) {
		if (hal_ctrl_complete(nc->ch, c)) {
			if (c->tag == d->tag)
				return c->result;
			/* A descriptor given up on earlier completed now: say so, do not take it for this one. */
			nc->late++;
			printf("warning: %slate completion of tag %u (%s, %s) while waiting for tag %u\n", chan(nc), c->tag,
			       nandctl_die_name(nc, c->way), nandctl_result_name(c->result), d->tag);
			memset(c, 0, sizeof(*c));
		}
		spent = hal_timestamp() - t0;
	}
	return NANDCTL_NO_COMPLETION;
}

int nandctl_run(struct nandctl *nc, struct hal_ctrl_desc *d, struct hal_ctrl_cpl *c)
{
	return nandctl_run_within(nc, d, c, nandctl_run_limit_us(nc));
}

static int simple(struct nandctl *nc, uint8_t op, int die, uint16_t col, uint16_t len, void *buf, uint32_t param,
                  struct hal_ctrl_cpl *c)
{
	struct hal_ctrl_desc d = {.op = op, .way = (uint8_t)die, .col = col, .len = len,
	                          .addr = (uint32_t)(uintptr_t)buf, .param = param};
	int res = nandctl_run(nc, &d, c);
	if (buf)
		hal_dma_sync();
	return res;
}

uint32_t nandctl_row(const struct nandctl *nc, uint32_t block, uint32_t page)
{
	uint32_t bits = 0;
	while ((1u << bits) < nc->g.pages_per_block)
		bits++;
	return block << bits | page;
}

/* SET FEATURES / GET FEATURES P1 of the timing-mode feature. */
static uint8_t timing_p1(int interface, int mode)
{
	return (uint8_t)((uint32_t)interface << NANDLAB_ONFI_TIMING_MODE_P1_INTERFACE_OFFSET |
	                 (uint32_t)mode << NANDLAB_ONFI_TIMING_MODE_P1_MODE_OFFSET);
}

int (*nandctl_nvddr_hook)(struct nandctl *nc, int mode);

int nandctl_set_mode(struct nandctl *nc, int interface, int mode)
{
	struct hal_ctrl_cpl c;
	uint8_t *p = nandctl_buf[1];
	int die, res;
	for (die = 0; die < nc->dies; die++) {
		if (!(nc->online >> die & 1))
			continue;
		res = simple(nc, NANDLAB_CTRL_OP_SET_FEATURES, die, NANDLAB_ONFI_FEATURE_TIMING_MODE, 0, NULL,
		             timing_p1(interface, mode), &c);
		if (res) {
			printf("error: %s: SET FEATURES: %s\n", nandctl_die_name(nc, die), nandctl_result_name(res));
			return -1;
		}
	}
	hal_ctrl_mode(nc->ch, interface, mode, nc->online);
	nc->interface = interface;
	nc->mode = mode;
	if (interface == NANDLAB_ONFI_IF_NVDDR && nandctl_nvddr_hook && nandctl_nvddr_hook(nc, mode))
		return -1;
	/* GET FEATURES in the new mode: every die must say it. */
	for (die = 0; die < nc->dies; die++) {
		if (!(nc->online >> die & 1))
			continue;
		memset(p, 0xff, 4);    /* (P1 = 00h for async mode 0: a read that wrote nothing must not pass) */
		res = simple(nc, NANDLAB_CTRL_OP_GET_FEATURES, die, NANDLAB_ONFI_FEATURE_TIMING_MODE, 4, p, 0, &c);
		if (res || p[0] != timing_p1(interface, mode)) {
			printf("error: %s: GET FEATURES after the switch: %s, P1 0x%02x\n", nandctl_die_name(nc, die),
			       nandctl_result_name(res), p[0]);
			return -1;
		}
	}
	return 0;
}

int nandctl_identify(struct nandctl *nc, int die, uint8_t *p, int *copy, const char *what)
{
	struct hal_ctrl_cpl c;
	int res = simple(nc, NANDLAB_CTRL_OP_RESET, die, 0, 0, NULL, 0, &c);
	if (res) {
		printf("%s: %sRESET: %s\n", nandctl_die_name(nc, die), what, nandctl_result_name(res));
		return -1;
	}
	memset(p, 0, 4);
	res = simple(nc, NANDLAB_CTRL_OP_READ_ID, die, NANDLAB_ONFI_READ_ID_ONFI, 4, p, 0, &c);
	if (res || memcmp(p, NANDLAB_ONFI_SIGNATURE, 4)) {
		printf("%s: %sno ONFI signature (READ ID 20h: %s, %02x %02x %02x %02x)\n", nandctl_die_name(nc, die), what,
		       nandctl_result_name(res), p[0], p[1], p[2], p[3]);
		return -1;
	}
	res = simple(nc, NANDLAB_CTRL_OP_READ_PARAM_PAGE, die, 0, NANDLAB_ONFI_PARAM_PAGE_BYTES * ONFI_PARAM_COPIES, p, 0, &c);
	*copy = res ? -2 : onfi_param_select(p, ONFI_PARAM_COPIES);
	if (*copy == -2) {
		printf("%s: %sparameter page: %s\n", nandctl_die_name(nc, die), what,
		       res ? nandctl_result_name(res) : "no copy with a valid signature and CRC");
		return -1;
	}
	return 0;
}

int nandctl_bringup_channel(struct nandctl *nc, int verbose)
{
	uint8_t *p = nandctl_buf[0], *page;
	int ch = nc->ch, die, res, copy, nvddr = 0, sdr = 0, mode, n = 0;
	/* RESET keeps a die's data interface: dies a previous bring-up (or read training) switched go back to
	 * async SDR mode 0 first (SET FEATURES in the mode they are in). */
	uint32_t late = nc->late;
	if (nc->online && (nc->interface != NANDLAB_ONFI_IF_ASYNC_SDR || nc->mode != 0) &&
	    nandctl_set_mode(nc, NANDLAB_ONFI_IF_ASYNC_SDR, 0))
		printf("warning: %scould not take the dies back to async SDR mode 0\n", chan(nc));
	memset(nc, 0, sizeof(*nc));
	nc->ch = ch;
	nc->late = late;
	nc->dies = hal_ctrl_ways(ch);   /* the emulated dies per channel, or the socket's targets */
	if (nc->dies > NANDCTL_MAX_DIES)
		nc->dies = NANDCTL_MAX_DIES;
	hal_ctrl_own_bus(ch, 1);        /* (a channel without a bit-bang master: nothing) */
	hal_ctrl_mode(ch, NANDLAB_ONFI_IF_ASYNC_SDR, 0, (1u << nc->dies) - 1);
	for (die = 0; die < nc->dies; die++) {
		struct onfi_geometry g;
		if (nandctl_identify(nc, die, p, &copy, "left out: "))
			continue;
		page = copy >= 0 ? p + copy * NANDLAB_ONFI_PARAM_PAGE_BYTES : p;
		onfi_param_decode(page, &g);
		if (!n) {
			nc->g = g;
			sdr = page[NANDLAB_ONFI_PARAM_SDR_TIMING_MODES] | page[NANDLAB_ONFI_PARAM_SDR_TIMING_MODES + 1] << 8;
			nvddr = page[NANDLAB_ONFI_PARAM_NVDDR_TIMING_MODES];
		} else if (g.page_bytes != nc->g.page_bytes || g.pages_per_block != nc->g.pages_per_block) {
			printf("%s: left out: geometry differs from the channel's first die's\n", nandctl_die_name(nc, die));
			continue;
		} else {
			sdr &= page[NANDLAB_ONFI_PARAM_SDR_TIMING_MODES] | page[NANDLAB_ONFI_PARAM_SDR_TIMING_MODES + 1] << 8;
			nvddr &= page[NANDLAB_ONFI_PARAM_NVDDR_TIMING_MODES];
		}
		if (verbose)
			printf("%s: ONFI %s %s, %lu+%lu B pages, %lu pages/block, %lu blocks, copy %d%s\n",
			       nandctl_die_name(nc, die), g.manufacturer, g.model, (unsigned long)g.page_bytes,
			       (unsigned long)g.spare_bytes, (unsigned long)g.pages_per_block, (unsigned long)g.blocks_per_lun,
			       copy < 0 ? 0 : copy, copy < 0 ? " (majority)" : "");
		nc->online |= 1u << die;
		n++;
	}
	if (!n) {
		printf("error: %sno die brought up\n", chan(nc));
		return 0;
	}
	{
		uint32_t bits = 0;
		while ((1u << bits) < nc->g.pages_per_block)
			bits++;
		hal_ctrl_geometry(ch, nc->g.page_bytes + nc->g.spare_bytes, (int)bits, nc->g.blocks_per_lun);
	}
	hal_ctrl_mode(ch, NANDLAB_ONFI_IF_ASYNC_SDR, 0, nc->online);
	/* The fastest mode both sides have: NV-DDR if every die has it, else async SDR. */
	for (mode = NANDLAB_ONFI_TIMING_MODES - 1; mode > 0 && !(nvddr >> mode & 1); mode--)
		;
	if (nvddr >> mode & 1)
		res = nandctl_set_mode(nc, NANDLAB_ONFI_IF_NVDDR, mode);
	else {
		for (mode = NANDLAB_ONFI_TIMING_MODES - 1; mode > 0 && !(sdr >> mode & 1); mode--)
			;
		res = mode ? nandctl_set_mode(nc, NANDLAB_ONFI_IF_ASYNC_SDR, mode) : 0;
	}
	if (res)
		return 0;
	nc->up = 1;
	printf("%s%d of %d dies up, %s mode %d\n", chan(nc), n, nc->dies, nandctl_interface_name(nc->interface), nc->mode);
	return n;
}

int nandctl_bringup(int verbose)
{
	int ch, channels = nandctl_channels(), up = 0, n = 0;
	if (!channels) {
		printf("error: this SoC has no NAND channel controller\n");
		return 0;
	}
	for (ch = 0; ch < channels; ch++) {
		nandctl[ch].ch = ch;
		n += nandctl_bringup_channel(&nandctl[ch], verbose);
		up += nandctl[ch].up;
	}
	if (channels > 1)
		printf("%d of %d channels up, %d of %d dies\n", up, channels, n, channels * hal_nand_dies());
	return n;
}

int nandctl_read(struct nandctl *nc, int die, uint32_t row, uint8_t *buf, uint32_t len)
{
	struct hal_ctrl_cpl c;
	struct hal_ctrl_desc d = {.op = NANDLAB_CTRL_OP_READ, .way = (uint8_t)die, .row = row, .len = (uint16_t)len,
	                          .addr = (uint32_t)(uintptr_t)buf};
	int res = nandctl_run(nc, &d, &c);
	hal_dma_sync();
	return res;
}

int nandctl_program(struct nandctl *nc, int die, uint32_t row, const uint8_t *buf, uint32_t len, uint8_t *status)
{
	struct hal_ctrl_cpl c;
	struct hal_ctrl_desc d = {.op = NANDLAB_CTRL_OP_PROGRAM, .way = (uint8_t)die, .row = row, .len = (uint16_t)len,
	                          .addr = (uint32_t)(uintptr_t)buf};
	int res = nandctl_run(nc, &d, &c);
	*status = c.status;
	return res;
}

int nandctl_erase(struct nandctl *nc, int die, uint32_t block, uint8_t *status)
{
	struct hal_ctrl_cpl c;
	struct hal_ctrl_desc d = {.op = NANDLAB_CTRL_OP_ERASE, .way = (uint8_t)die, .row = nandctl_row(nc, block, 0)};
	int res = nandctl_run(nc, &d, &c);
	*status = c.status;
	return res;
}

/* SoCs built without ECC in their controllers (--nand-ecc none) have no NANDLAB_CTRL_ECC_*. */
#ifdef NANDLAB_CTRL_ECC_T
int nandctl_ecc_present(void) { return 1; }

int nandctl_program_ecc(struct nandctl *nc, int die, uint32_t row, const uint8_t *buf, uint8_t *status)
{
	struct hal_ctrl_cpl c;
	struct hal_ctrl_desc d = {.op = NANDLAB_CTRL_OP_PROGRAM_ECC, .way = (uint8_t)die, .row = row,
	                          .len = (uint16_t)nc->g.page_bytes, .addr = (uint32_t)(uintptr_t)buf};
	int res = nandctl_run(nc, &d, &c);
	*status = c.status;
	return res;
}

int nandctl_read_ecc(struct nandctl *nc, int die, uint32_t row, uint8_t *buf, uint32_t len, struct nandctl_ecc *e)
{
	struct hal_ctrl_cpl c;
	struct hal_ctrl_desc d = {.op = NANDLAB_CTRL_OP_READ_ECC, .way = (uint8_t)die, .row = row, .len = (uint16_t)len,
	                          .addr = (uint32_t)(uintptr_t)buf};
	int res = nandctl_run(nc, &d, &c);
	hal_dma_sync();
	nandctl_ecc_counts(c.ecc, (int)(len / NANDLAB_CTRL_ECC_DATA_BYTES), e);
	return res;
}

/* The spare's free bytes a multi-plane read's READ_ECC_FREE / READ_ECC_ENH_FREE move (not kept). */
static uint8_t mp_free[(NANDLAB_CTRL_ECC_FREE_BYTES + 15) & ~15] __attribute__((aligned(16), section(".dma")));

int nandctl_program_ecc_planes(struct nandctl *nc, int die, int n, const uint32_t *rows, uint8_t *const *bufs,
                               uint8_t *status)
{
	struct hal_ctrl_cpl c;
	struct hal_ctrl_desc d = {.way = (uint8_t)die, .len = (uint16_t)nc->g.page_bytes};
	int k, res = NANDLAB_CTRL_RESULT_BAD_LENGTH;
	*status = 0;
	if (n < 2 || n > NANDCTL_PLANES_MAX)
		return res;
	for (k = 0; k < n; k++) {
		d.op = k < n - 1 ? NANDLAB_CTRL_OP_PROGRAM_ECC_MULTIPLANE : NANDLAB_CTRL_OP_PROGRAM_ECC;
		d.row = rows[k];
		d.addr = (uint32_t)(uintptr_t)bufs[k];
		if ((res = nandctl_run(nc, &d, &c)) != NANDLAB_CTRL_RESULT_OK && k < n - 1)
			return res;
	}
	*status = c.status;
	return res;
}

int nandctl_read_ecc_planes(struct nandctl *nc, int die, int n, const uint32_t *rows, uint8_t *const *bufs,
                            struct nandctl_ecc *e, uint8_t *status)
{
	struct hal_ctrl_cpl c;
	struct hal_ctrl_desc d = {.way = (uint8_t)die};
	const uint16_t len = (uint16_t)(nc->g.page_bytes + NANDLAB_CTRL_ECC_FREE_BYTES);
	const int cws = (int)(nc->g.page_bytes / NANDLAB_CTRL_ECC_DATA_BYTES);
	int k, res, worst = NANDLAB_CTRL_RESULT_OK;
	*status = 0;
	if (n < 2 || n > NANDCTL_PLANES_MAX)
		return NANDLAB_CTRL_RESULT_BAD_LENGTH;
	for (k = 0; k < n; k++)
		memset(&e[k], 0, sizeof(e[k]));
	d.op = NANDLAB_CTRL_OP_READ_ECC_MULTIPLANE;
	d.len = (uint16_t)nc->g.page_bytes;
	for (k = 0; k < n - 1; k++) {
		d.row = rows[k];
		if ((res = nandctl_run(nc, &d, &c)) != NANDLAB_CTRL_RESULT_OK)
			return res;
	}
	d.op = NANDLAB_CTRL_OP_READ_ECC_FREE;
	d.row = rows[n - 1];
	d.len = len;
	d.addr = (uint32_t)(uintptr_t)bufs[n - 1];
	d.param = (uint32_t)(uintptr_t)mp_free;
	res = nandctl_run(nc, &d, &c);
	nandctl_ecc_counts(c.ecc, cws, &e[n - 1]);
	if (res != NANDLAB_CTRL_RESULT_OK && res != NANDLAB_CTRL_RESULT_ECC_UNCORRECTABLE)
		return res;
	worst = res;
	/* READ itself reads no status: a combination the die refused shows FAIL here. */
	d.op = NANDLAB_CTRL_OP_READ_STATUS;
	if ((res = nandctl_run(nc, &d, &c)) != NANDLAB_CTRL_RESULT_OK)
		return res;
	*status = c.status;
	if (c.status & NANDLAB_ONFI_STATUS_FAIL)
		return NANDLAB_CTRL_RESULT_NAND_FAIL;
	d.op = NANDLAB_CTRL_OP_READ_ECC_ENH_FREE;
	for (k = 0; k < n - 1; k++) {
		d.row = rows[k];
		d.addr = (uint32_t)(uintptr_t)bufs[k];
		res = nandctl_run(nc, &d, &c);
		nandctl_ecc_counts(c.ecc, cws, &e[k]);
		if (res == NANDLAB_CTRL_RESULT_ECC_UNCORRECTABLE)
			worst = res;
		else if (res != NANDLAB_CTRL_RESULT_OK)
			return res;
	}
	hal_dma_sync();
	return worst;
}

static inline int ecc_field(uint64_t raw, unsigned int offset, unsigned int size)
{
	return (int)(raw >> offset & ((1u << size) - 1));
}

__attribute__((section(".text.hot_reap_r"))) void nandctl_ecc_counts(uint64_t raw, int codewords, struct nandctl_ecc *e)
{
	const unsigned int w = NANDLAB_CTRL_ECC_COUNT_BITS, all = (1u << w) - 1;
	int i;
	memset(e, 0, sizeof(*e));
	e->codewords = codewords;
	if (NANDLAB_CTRL_ECC_SUMMARY) {
		e->corrected = ecc_field(raw, NANDLAB_CTRL_ECC_SUMMARY_CORRECTED_OFFSET, NANDLAB_CTRL_ECC_SUMMARY_CORRECTED_SIZE);
		e->max = ecc_field(raw, NANDLAB_CTRL_ECC_SUMMARY_MAX_OFFSET, NANDLAB_CTRL_ECC_SUMMARY_MAX_SIZE);
		e->uncorrectable = ecc_field(raw, NANDLAB_CTRL_ECC_SUMMARY_UNCORRECTABLE_OFFSET,
		                             NANDLAB_CTRL_ECC_SUMMARY_UNCORRECTABLE_SIZE);
		return;
	}
	/* (Shifted by the constant width a codeword: a variable 64-bit shift is a libgcc call.) */
	for (i = 0; i < e->codewords && i < (int)sizeof(e->per_cw); i++, raw >>= w) {
		unsigned int n = (unsigned int)raw & all;
		if (n == all) {
			e->per_cw[i] = 0xff;
			e->uncorrectable++;
			continue;
		}
		e->per_cw[i] = (uint8_t)n;
		e->corrected += (int)n;
		if ((int)n > e->max)
			e->max = (int)n;
	}
}
#else
int nandctl_ecc_present(void) { return 0; }
int nandctl_program_ecc(struct nandctl *nc, int die, uint32_t row, const uint8_t *buf, uint8_t *status)
{
	(void)nc; (void)die; (void)row; (void)buf; *status = 0; return -1;
}
int nandctl_read_ecc(struct nandctl *nc, int die, uint32_t row, uint8_t *buf, uint32_t len, struct nandctl_ecc *e)
{
	(void)nc; (void)die; (void)row; (void)buf; (void)len; memset(e, 0, sizeof(*e)); return -1;
}
void nandctl_ecc_counts(uint64_t raw, int codewords, struct nandctl_ecc *e)
{
	(void)raw; (void)codewords; memset(e, 0, sizeof(*e));
}
int nandctl_program_ecc_planes(struct nandctl *nc, int die, int n, const uint32_t *rows, uint8_t *const *bufs,
                               uint8_t *status)
{
	(void)nc; (void)die; (void)n; (void)rows; (void)bufs; *status = 0; return -1;
}
int nandctl_read_ecc_planes(struct nandctl *nc, int die, int n, const uint32_t *rows, uint8_t *const *bufs,
                            struct nandctl_ecc *e, uint8_t *status)
{
	(void)nc; (void)die; (void)rows; (void)bufs;
	memset(e, 0, (size_t)(n > 0 ? n : 0) * sizeof(*e));
	*status = 0;
	return -1;
}
#endif
