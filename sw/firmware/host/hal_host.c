/* Host build of the firmware: hal.h served by a small model of the SoC (NAND dies on the bit-bang bus,
 * channel controllers that complete every descriptor, a few KiB of RAM), so that the shell's commands
 * run their real argument parsing and their real driver code (onfi.c, nandctl.c) in the fuzz target. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <generated/soc.h>
#include <generated/mem.h>

#include "hal.h"
#include "hal_host.h"
#include "nandctl.h"
#include <generated/csr_table.h>     /* the sim SoC's CSRs by name (nandlab.csrmap) */
#include <generated/param_page.h>    /* its die part's parameter page, three copies (nandlab.fuzz) */

/* The harness ends a run of the firmware with abort() when the firmware breaks a rule hal.h states
 * (a channel out of range, a DMA address that is not a buffer): the fuzzer reports it as a crash. */
static void broken(const char *what)
{
	fprintf(stderr, "hal_host: %s\n", what);
	abort();
}

/* Console ------------------------------------------------------------------------------------------ */
static const uint8_t *in_data;
static size_t in_len, in_pos;

void hal_host_input(const uint8_t *data, size_t len)
{
	in_data = data;
	in_len = len;
	in_pos = 0;
}

size_t hal_host_input_left(void) { return in_len - in_pos; }

int readchar(void)
{
	/* The end of the input ends the line being read. */
	return in_pos < in_len ? in_data[in_pos++] : '\n';
}

/* Time: every call moves the clock, faster the longer one input runs, so that a command waiting on
 * time (a workload of 2^32 microseconds, a poll loop) ends after a bounded number of calls. */
static uint64_t now, calls;

static void tick(uint64_t cycles)
{
	uint64_t step = 100ull << (calls++ / 4096 < 40 ? calls / 4096 : 40);
	now += cycles > step ? cycles : step;
}

void     hal_init(void) {}
void     hal_ident(char *buf, int size) { snprintf(buf, (size_t)size, "nandlab host model (fuzz)"); }
const char *hal_target(void) { return NANDLAB_TARGET; }
uint32_t hal_clock_hz(void) { return CONFIG_CLOCK_FREQUENCY; }
uint64_t hal_timestamp(void) { tick(0); return now; }
void     hal_delay_ns(uint32_t ns) { tick((uint64_t)ns * (CONFIG_CLOCK_FREQUENCY / 1000000u) / 1000u); }

/* CSRs by name: the generated table over a store of values. */
static uint64_t csr_value[sizeof(hal_csr_table) / sizeof(hal_csr_table[0])];

const struct hal_csr *hal_csr_at(int index)
{
	if (index < 0 || index >= (int)(sizeof(hal_csr_table) / sizeof(hal_csr_table[0])))
		return NULL;
	return &hal_csr_table[index];
}

const struct hal_csr *hal_csr_find(const char *name)
{
	const struct hal_csr *csr;
	int i;
	for (i = 0; (csr = hal_csr_at(i)) != NULL; i++)
		if (strcmp(csr->name, name) == 0)
			return csr;
	return NULL;
}

uint64_t hal_csr_read(const struct hal_csr *csr) { return csr_value[csr - hal_csr_table]; }
void     hal_csr_write(const struct hal_csr *csr, uint64_t value) { csr_value[csr - hal_csr_table] = value; }

/* Memory for mr/mw: HOST_RAM_BYTES at the start of main RAM; elsewhere nothing answers (a bus error,
 * all ones read), as LiteX's bus timeout does. */
#define HOST_RAM_BYTES 4096u
static uint32_t ram[HOST_RAM_BYTES / 4];
static uint32_t bus_errors;

static uint32_t *word_at(uint32_t addr)
{
	if (addr & 3)
		broken("unaligned word access");
	if (addr >= MAIN_RAM_BASE && addr - MAIN_RAM_BASE < HOST_RAM_BYTES)
		return &ram[(addr - MAIN_RAM_BASE) / 4];
	bus_errors++;
	return NULL;
}

uint32_t hal_read32(uint32_t addr)
{
	uint32_t *w = word_at(addr);
	return w ? *w : 0xffffffffu;
}

void hal_write32(uint32_t addr, uint32_t value)
{
	uint32_t *w = word_at(addr);
	if (w)
		*w = value;
}

uint32_t hal_bus_errors(void) { return bus_errors; }

/* The idle sleep: the host build has no CPU to pause (the shell's loop polls on). */
void hal_idle_arm(void) {}
void hal_idle_sleep(void) {}
uint32_t hal_idle_slept(void) { return 0; }

/* NAND bit-bang bus: ONFI dies that answer READ ID, READ PARAMETER PAGE and READ STATUS. --------- */
static const uint8_t jedec_id[5] = {0x2c, 0xda, 0x90, 0x95, 0x06};
static struct {
	uint8_t dq, dq_in, cmd, we_low, re_low;
	const uint8_t *out;
	size_t out_len, out_pos;
	uint8_t status;
} bb;

int hal_nand_dies(void) { return NANDLAB_DIES; }
int hal_nand_use_socket(int on) { return on ? -1 : 0; }
int hal_nand_socket_in_use(void) { return 0; }

static void bb_latch(int cle, int ale)
{
	if (cle) {
		bb.cmd = bb.dq;
		bb.out = NULL;
		if (bb.cmd == NANDLAB_ONFI_CMD_READ_STATUS) {
			bb.out = &bb.status;
			bb.out_len = 1;
			bb.out_pos = 0;
		}
	} else if (ale) {
		if (bb.cmd == NANDLAB_ONFI_CMD_READ_ID) {
			bb.out = bb.dq == NANDLAB_ONFI_READ_ID_ONFI ? (const uint8_t *)NANDLAB_ONFI_SIGNATURE : jedec_id;
			bb.out_len = bb.dq == NANDLAB_ONFI_READ_ID_ONFI ? 4 : sizeof(jedec_id);
		} else if (bb.cmd == NANDLAB_ONFI_CMD_READ_PARAM_PAGE) {
			bb.out = host_param_page;
			bb.out_len = sizeof(host_param_page);
		}
		bb.out_pos = 0;
	}
}

void hal_nand_levels(uint32_t ce_mask, int cle, int ale, int we_low, int re_low, int oe)
{
	(void)oe;
	if (ce_mask >> NANDLAB_DIES)
		broken("chip enable of a die the SoC does not have");
	if (ce_mask && bb.we_low && !we_low)          /* WE# rising edge */
		bb_latch(cle, ale);
	if (ce_mask && !bb.re_low && re_low)          /* RE# falling edge: the next byte */
		bb.dq_in = bb.out && bb.out_pos < bb.out_len ? bb.out[bb.out_pos++] : 0;
	bb.we_low = (uint8_t)(we_low != 0);
	bb.re_low = (uint8_t)(re_low != 0);
}

void     hal_nand_dq(uint8_t value) { bb.dq = value; }
uint8_t  hal_nand_dq_in(void) { return bb.dq_in; }
uint32_t hal_nand_ready(void) { return (1u << NANDLAB_DIES) - 1; }

/* Channel controllers: each descriptor is carried out at submission, its completion queued. ------ */
#define QUEUE 8
#define STORE 16             /* pages kept (the oldest forgotten: reads then find FFh) */
struct channel {
	struct hal_ctrl_cpl cpl[QUEUE];
	int ncpl;
	uint8_t features[NANDCTL_MAX_DIES];
	uint32_t page_total, blocks, irqs;
	int page_bits;
};
static struct channel chans[NANDLAB_CHANNELS];
static struct { int used, ch, way; uint32_t row; uint8_t data[NANDCTL_PAGE_MAX]; } store[STORE];
static int store_next, irq_mode, own_bus;

static struct channel *channel(int ch)
{
	if (ch < 0 || ch >= NANDLAB_CHANNELS)
		broken("channel out of range");
	return &chans[ch];
}

/* The buffer a descriptor's DMA address names: the host build is linked below 4 GiB (-no-pie), so the
 * 32-bit address is the buffer's own; AddressSanitizer checks every byte moved. */
static uint8_t *dma(uint32_t addr)
{
	if (!addr)
		broken("DMA to address 0");
	return (uint8_t *)(uintptr_t)addr;
}

static int stored(int ch, int way, uint32_t row)
{
	int i;
	for (i = 0; i < STORE; i++)
		if (store[i].used && store[i].ch == ch && store[i].way == way && store[i].row == row)
			return i;
	return -1;
}

static int execute(int ch, struct channel *c, const struct hal_ctrl_desc *d, struct hal_ctrl_cpl *out)
{
	int i;
	out->status = NANDLAB_ONFI_STATUS_RDY | NANDLAB_ONFI_STATUS_ARDY | NANDLAB_ONFI_STATUS_WP_N;
	if (d->way >= NANDLAB_DIES)
		return NANDLAB_CTRL_RESULT_BAD_WAY;
	switch (d->op) {
	case NANDLAB_CTRL_OP_RESET:
		c->features[d->way] = 0;
		return NANDLAB_CTRL_RESULT_OK;
	case NANDLAB_CTRL_OP_READ_ID:
		if (d->len > 8)
			return NANDLAB_CTRL_RESULT_BAD_LENGTH;
		memcpy(dma(d->addr), d->col == NANDLAB_ONFI_READ_ID_ONFI ? (const uint8_t *)NANDLAB_ONFI_SIGNATURE : jedec_id,
		       d->len < 4 ? d->len : 4);
		return NANDLAB_CTRL_RESULT_OK;
	case NANDLAB_CTRL_OP_READ_PARAM_PAGE:
		if (d->len > sizeof(host_param_page))
			return NANDLAB_CTRL_RESULT_BAD_LENGTH;
		memcpy(dma(d->addr), host_param_page, d->len);
		return NANDLAB_CTRL_RESULT_OK;
	case NANDLAB_CTRL_OP_SET_FEATURES:
		c->features[d->way] = (uint8_t)d->param;
		return NANDLAB_CTRL_RESULT_OK;
	case NANDLAB_CTRL_OP_GET_FEATURES:
		if (d->len > 4)
			return NANDLAB_CTRL_RESULT_BAD_LENGTH;
		memset(dma(d->addr), 0, d->len);
		dma(d->addr)[0] = c->features[d->way];
		return NANDLAB_CTRL_RESULT_OK;
	case NANDLAB_CTRL_OP_READ:
	case NANDLAB_CTRL_OP_READ_ECC:
	case NANDLAB_CTRL_OP_PROGRAM:
	case NANDLAB_CTRL_OP_PROGRAM_ECC:
		if (!c->page_total || d->len == 0 || d->len > c->page_total)
			return NANDLAB_CTRL_RESULT_BAD_LENGTH;
		if ((d->row >> c->page_bits) >= c->blocks)
			return NANDLAB_CTRL_RESULT_BAD_ROW;
		i = stored(ch, d->way, d->row);
		if (d->op == NANDLAB_CTRL_OP_READ || d->op == NANDLAB_CTRL_OP_READ_ECC) {
			if (i < 0)
				memset(dma(d->addr), 0xff, d->len);
			else
				memcpy(dma(d->addr), store[i].data, d->len);
			return NANDLAB_CTRL_RESULT_OK;
		}
		if (i < 0) {
			i = store_next;
			store_next = (store_next + 1) % STORE;
			store[i].used = 1;
			store[i].ch = ch;
			store[i].way = d->way;
			store[i].row = d->row;
			memset(store[i].data, 0xff, sizeof(store[i].data));
		}
		memcpy(store[i].data, dma(d->addr), d->len);
		return NANDLAB_CTRL_RESULT_OK;
	case NANDLAB_CTRL_OP_ERASE:
		if ((d->row >> c->page_bits) >= c->blocks)
			return NANDLAB_CTRL_RESULT_BAD_ROW;
		for (i = 0; i < STORE; i++)
			if (store[i].used && store[i].ch == ch && store[i].way == d->way &&
			    store[i].row >> c->page_bits == d->row >> c->page_bits)
				store[i].used = 0;
		return NANDLAB_CTRL_RESULT_OK;
	default:
		return NANDLAB_CTRL_RESULT_BAD_OP;
	}
}

int hal_ctrl_channels(void) { return NANDLAB_CHANNELS; }
int hal_ctrl_present(void) { return 1; }
void hal_ctrl_own_bus(int ch, int controller) { if (ch == 0) own_bus = controller; }
int hal_ctrl_socket_channel(void) { return -1; }
int hal_ctrl_ways(int ch) { (void)ch; return hal_nand_dies(); }

int hal_ctrl_submit(int ch, const struct hal_ctrl_desc *d)
{
	struct channel *c = channel(ch);
	struct hal_ctrl_cpl *out;
	if (c->ncpl == QUEUE)
		return -1;
	out = &c->cpl[c->ncpl++];
	memset(out, 0, sizeof(*out));
	out->tag = d->tag;
	out->way = d->way;
	out->result = (uint8_t)execute(ch, c, d, out);
	c->irqs += irq_mode;
	return 0;
}

int hal_ctrl_complete(int ch, struct hal_ctrl_cpl *out)
{
	struct channel *c = channel(ch);
	if (!c->ncpl)
		return 0;
	*out = c->cpl[0];
	memmove(c->cpl, c->cpl + 1, (size_t)--c->ncpl * sizeof(c->cpl[0]));
	return 1;
}

void hal_ctrl_mode(int ch, int interface, int timing_mode, uint32_t ways_online)
{
	(void)interface; (void)timing_mode; (void)ways_online;
	channel(ch);
}

void hal_ctrl_dqs_late(int ch, int late) { (void)late; channel(ch); }
int hal_ctrl_dqs_late_get(int ch) { channel(ch); return 0; }

void hal_ctrl_geometry(int ch, uint32_t page_total, int page_bits, uint32_t blocks)
{
	struct channel *c = channel(ch);
	if (page_total > NANDCTL_PAGE_MAX || page_bits < 0 || page_bits > 16)
		broken("controller geometry out of the controller's range");
	c->page_total = page_total;
	c->page_bits = page_bits;
	c->blocks = blocks;
}

uint32_t hal_ctrl_in_flight(int ch) { return (uint32_t)channel(ch)->ncpl; }
int      hal_ctrl_irq_present(void) { return 1; }
int      hal_ctrl_irq_mode(int on) { return irq_mode = on != 0; }
int      hal_ctrl_irq_on(void) { return irq_mode; }
uint32_t hal_ctrl_irq_count(int ch) { return channel(ch)->irqs; }
uint32_t hal_ctrl_timeout_us(int ch) { channel(ch); return 100000; }
void     hal_dma_sync(void) {}
void     hal_dma_sync_range(const void *p, uint32_t bytes) { (void)p; (void)bytes; }

int hal_ctrl_wait(int ch, uint32_t timeout_us)
{
	if (channel(ch)->ncpl)
		return 0;
	tick((uint64_t)timeout_us * (CONFIG_CLOCK_FREQUENCY / 1000000u));
	return -1;
}

void hal_ctrl_counters(int ch, uint32_t *busy, uint32_t *data, uint32_t *bytes_in, uint32_t *bytes_out)
{
	channel(ch);
	*busy = *data = *bytes_in = *bytes_out = 0;
}

/* Power ring, monitor and telemetry: a ring that takes any configuration in range at once. ------- */
static struct hal_power_config requested = {0, NANDLAB_POWER_DEFAULT_TG, NANDLAB_POWER_DEFAULT_ALPHA, 0};
static struct hal_power_status status;
static struct hal_telemetry telemetry;
static uint32_t power_table[256];

int  hal_power_present(void) { return 1; }
void hal_power_status(struct hal_power_status *s) { *s = status; }
void hal_power_requested(struct hal_power_config *c) { *c = requested; }
void hal_power_table_clear(void) { memset(power_table, 0, sizeof(power_table)); }

void hal_power_table_write(unsigned int oi, unsigned int rt)
{
	if (oi >= 256)
		broken("token table index over 255");
	power_table[oi] = rt;
}

void hal_power_table_only(int node)
{
	if (node < -1 || node >= NANDLAB_DIES)
		broken("table_keep node out of range");
}

void hal_power_apply(unsigned int mode, unsigned int tg, unsigned int alpha)
{
	requested.mode = mode;
	requested.tg = tg;
	requested.alpha = alpha;
	status.error = tg < NANDLAB_POWER_TG_MIN || tg > NANDLAB_POWER_TG_MAX ? 1
	             : alpha < NANDLAB_POWER_ALPHA_MIN || alpha > NANDLAB_POWER_ALPHA_MAX ? 2 : 0;
	if (!status.error) {
		status.running = 1;
		status.mode = mode;
		status.tt = alpha * ((1u << tg) - 1);
	}
}

void hal_power_node(int node, struct hal_power_node *n)
{
	if (node < 0 || node >= NANDLAB_DIES)
		broken("power node out of range");
	memset(n, 0, sizeof(*n));
}

/* One ring through the model's dies (no exchange): its state from the applied configuration. */
int hal_power_rings(void) { return 1; }
int hal_power_nodes(void) { return NANDLAB_DIES; }

void hal_power_ring(int ring, struct hal_power_ring *r)
{
	if (ring != 0)
		broken("power ring out of range");
	*r = (struct hal_power_ring){ .running = status.running, .share = status.tt };
}

void hal_power_tokens(uint32_t *tokens, uint32_t *cons_errors)
{
	*tokens = status.running ? status.tt : 0;
	*cons_errors = 0;
}

void hal_power_die_peak(int die, uint32_t *current, unsigned int *oi)
{
	if (die < 0 || die >= NANDLAB_DIES)
		broken("die peak out of range");
	*current = 0;
	*oi = 0;
}

void hal_power_die_over(int die, uint32_t *current, unsigned int *oi)
{
	if (die < 0 || die >= NANDLAB_DIES)
		broken("die over out of range");
	*current = 0;
	*oi = 0;
}

void hal_power_die_peak_clear(void) {}
void hal_monitor_read(struct hal_monitor *m) { memset(m, 0, sizeof(*m)); }
void hal_monitor_clear(void) {}
int  hal_telemetry_present(void) { return 1; }
void hal_telemetry_read(struct hal_telemetry *t) { *t = telemetry; }

void hal_telemetry_control(int enable, enum hal_telemetry_pulse pulse)
{
	telemetry.enabled = enable != 0;
	if (pulse == HAL_TELEMETRY_RESTART)
		telemetry.counting = 1;
	else if (pulse == HAL_TELEMETRY_STOP)
		telemetry.counting = 0;
}

void     hal_telemetry_rate(uint32_t windows_per_frame) { telemetry.decimation = windows_per_frame; }
uint32_t hal_telemetry_rate_max(void) { return 1u << 16; }
uint32_t hal_timebase_window(void) { return 64; }

/* Every input starts from the same state: the model's and the drivers' (the shell's own statics,
 * such as the channel 'ctl ch' chose, are the harness's to reset). */
void hal_host_reset(void)
{
	now = calls = 0;
	memset(ram, 0, sizeof(ram));
	bus_errors = 0;
	memset(&bb, 0, sizeof(bb));
	memset(chans, 0, sizeof(chans));
	memset(store, 0, sizeof(store));
	store_next = irq_mode = own_bus = 0;
	memset(csr_value, 0, sizeof(csr_value));
	memset(&status, 0, sizeof(status));
	memset(&telemetry, 0, sizeof(telemetry));
	requested = (struct hal_power_config){0, NANDLAB_POWER_DEFAULT_TG, NANDLAB_POWER_DEFAULT_ALPHA, 0};
	memset(nandctl, 0, sizeof(nandctl));
	bb.status = NANDLAB_ONFI_STATUS_RDY | NANDLAB_ONFI_STATUS_ARDY | NANDLAB_ONFI_STATUS_WP_N;
	if ((uintptr_t)nandctl_buf >> 32)
		broken("the DMA buffers are above 4 GiB: link with -no-pie");
}
