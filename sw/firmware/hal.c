/* nandlab firmware HAL: console, identifier, time base and CSRs by name, all through csr.h. */
#include <stdio.h>
#include <string.h>

#include <irq.h>
#include <libbase/uart.h>
#include <generated/csr.h>
#include <generated/soc.h>
#include <generated/mem.h>

#include "hal.h"
#include <generated/csr_table.h> /* written by the nandlab host tool from csr.csv */

void hal_init(void)
{
#ifdef CONFIG_CPU_HAS_INTERRUPT
	irq_setmask(0);
	irq_setie(1);
#endif
	uart_init();
}

void hal_ident(char *buf, int size)
{
	int i;
	for (i = 0; i < size - 1; i++) {
		buf[i] = (char)csr_read_simple(CSR_IDENTIFIER_MEM_BASE + CONFIG_CSR_ALIGNMENT / 8 * i);
		if (buf[i] == '\0')
			break;
	}
	buf[i] = '\0';
}

const char *hal_target(void)
{
	return NANDLAB_TARGET;
}

uint32_t hal_clock_hz(void)
{
	return CONFIG_CLOCK_FREQUENCY;
}

__attribute__((section(".text.hot_reap"))) uint64_t hal_timestamp(void)
{
	timebase_latch_write(1);
	return timebase_timestamp_read();
}

void hal_cpu_perf(struct hal_cpu_perf *p)
{
#ifdef CSR_CPU_PERF_BASE
	p->ibus_busy = cpu_perf_ibus_busy_read();
	p->ibus_acks = cpu_perf_ibus_acks_read();
	p->dbus_busy = cpu_perf_dbus_busy_read();
	p->dbus_acks = cpu_perf_dbus_acks_read();
#else
	p->ibus_busy = p->ibus_acks = p->dbus_busy = p->dbus_acks = 0;
#endif
}

void hal_idle_arm(void)
{
#ifdef CSR_CPU_IDLE_BASE
	cpu_idle_arm_write(1);
#endif
}

void hal_idle_sleep(void)
{
#ifdef CSR_CPU_IDLE_BASE
	cpu_idle_sleep_write(1);
#endif
}

uint32_t hal_idle_slept(void)
{
#ifdef CSR_CPU_IDLE_BASE
	return cpu_idle_slept_read();
#else
	return 0;
#endif
}

uint32_t hal_bus_errors(void)
{
#ifdef CSR_CTRL_BUS_ERRORS_ADDR
	return ctrl_bus_errors_read();
#else
	return 0;
#endif
}

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

uint64_t hal_csr_read(const struct hal_csr *csr)
{
	uint64_t value = 0;
	int i;
	for (i = 0; i < csr->words; i++)
		value = (value << 32) | csr_read_simple(csr->addr + 4 * i);
	return value;
}

void hal_csr_write(const struct hal_csr *csr, uint64_t value)
{
	int i;
	for (i = csr->words - 1; i >= 0; i--) {
		csr_write_simple((uint32_t)value, csr->addr + 4 * i);
		value >>= 32;
	}
}

void hal_delay_ns(uint32_t ns)
{
	uint64_t cycles = ((uint64_t)ns * (hal_clock_hz() / 1000000u) + 999u) / 1000u;
	uint64_t t0 = hal_timestamp();
	while (hal_timestamp() - t0 < cycles)
		;
}

#ifdef CSR_NAND_BITBANG_BASE
/* The bit-bang master in use: channel 0's (the emulated dies) or, after hal_nand_use_socket(1), the external
 * socket's (same core, its own CSRs and CE# lines). */
static int bitbang_socket;

int hal_nand_use_socket(int on)
{
#ifdef CSR_NAND_SOCKET_BITBANG_BASE
	bitbang_socket = on != 0;
	return 0;
#else
	bitbang_socket = 0;
	return on ? -1 : 0;
#endif
}

int hal_nand_socket_in_use(void) { return bitbang_socket; }

int hal_nand_dies(void)
{
#ifdef CSR_NAND_SOCKET_BITBANG_BASE
	if (bitbang_socket)
		return NANDLAB_NAND_SOCKET_TARGETS;
#endif
	return NANDLAB_DIES;
}

#define BITBANG_CTRL(reg, ce_mask, cle, ale, we_low, re_low, oe) \
	(HAL_FIELD_PUT(reg, CE, ce_mask) | HAL_FIELD_PUT(reg, CLE, (cle) != 0) | HAL_FIELD_PUT(reg, ALE, (ale) != 0) | \
	 HAL_FIELD_PUT(reg, WE, (we_low) != 0) | HAL_FIELD_PUT(reg, RE, (re_low) != 0) | HAL_FIELD_PUT(reg, OE, (oe) != 0))

void hal_nand_levels(uint32_t ce_mask, int cle, int ale, int we_low, int re_low, int oe)
{
#ifdef CSR_NAND_SOCKET_BITBANG_BASE
	if (bitbang_socket) {
		nand_socket_bitbang_ctrl_write(BITBANG_CTRL(NAND_SOCKET_BITBANG_CTRL, ce_mask, cle, ale, we_low, re_low, oe));
		return;
	}
#endif
	nand_bitbang_ctrl_write(BITBANG_CTRL(NAND_BITBANG_CTRL, ce_mask, cle, ale, we_low, re_low, oe));
}

void hal_nand_dq(uint8_t value)
{
#ifdef CSR_NAND_SOCKET_BITBANG_BASE
	if (bitbang_socket) {
		nand_socket_bitbang_dq_write(value);
		return;
	}
#endif
	nand_bitbang_dq_write(value);
}

uint8_t hal_nand_dq_in(void)
{
#ifdef CSR_NAND_SOCKET_BITBANG_BASE
	if (bitbang_socket)
		return nand_socket_bitbang_dq_in_read();
#endif
	return nand_bitbang_dq_in_read();
}

uint32_t hal_nand_ready(void)
{
#ifdef CSR_NAND_SOCKET_BITBANG_BASE
	if (bitbang_socket)
		return nand_socket_bitbang_rb_read();
#endif
	return nand_bitbang_rb_read();
}
#else
int hal_nand_use_socket(int on) { return on ? -1 : 0; }
int hal_nand_socket_in_use(void) { return 0; }
int hal_nand_dies(void) { return 0; }
void hal_nand_levels(uint32_t ce_mask, int cle, int ale, int we_low, int re_low, int oe)
{
	(void)ce_mask; (void)cle; (void)ale; (void)we_low; (void)re_low; (void)oe;
}
void hal_nand_dq(uint8_t value) { (void)value; }
uint8_t hal_nand_dq_in(void) { return 0; }
uint32_t hal_nand_ready(void) { return 0; }
#endif

#ifdef CSR_NAND_CTRL_BASE
#include <system.h>

/* Channel k's controller is the CSR block nand_ctrl<k>. The controllers are built alike, so a register
 * sits at the same offset in every block: channel k's is channel 0's address moved to block k's base.
 * The bases come from csr.h, not from a stride: LiteX places the blocks by name, and nothing keeps
 * the controllers evenly apart. */
static const uint32_t ctrl_base[] = {
	CSR_NAND_CTRL_BASE,
#ifdef CSR_NAND_CTRL1_BASE
	CSR_NAND_CTRL1_BASE,
#endif
#ifdef CSR_NAND_CTRL2_BASE
	CSR_NAND_CTRL2_BASE,
#endif
#ifdef CSR_NAND_CTRL3_BASE
	CSR_NAND_CTRL3_BASE,
#endif
#ifdef CSR_NAND_CTRL4_BASE
	CSR_NAND_CTRL4_BASE,
#endif
#ifdef CSR_NAND_CTRL5_BASE
	CSR_NAND_CTRL5_BASE,
#endif
#ifdef CSR_NAND_CTRL6_BASE
	CSR_NAND_CTRL6_BASE,
#endif
#ifdef CSR_NAND_CTRL7_BASE
	CSR_NAND_CTRL7_BASE,
#endif
#ifdef CSR_NAND_SOCKET_CTRL_BASE
	CSR_NAND_SOCKET_CTRL_BASE,     /* the external NAND socket (--nand-socket): the last channel */
#endif
};
#define CTRL_CHANNELS ((int)(sizeof(ctrl_base) / sizeof(ctrl_base[0])))
#ifdef CSR_NAND_CTRL1_BASE
_Static_assert(CSR_NAND_CTRL1_EV_ENABLE_ADDR - CSR_NAND_CTRL1_BASE == CSR_NAND_CTRL_EV_ENABLE_ADDR - CSR_NAND_CTRL_BASE &&
               CSR_NAND_CTRL1_CPL_ADDR - CSR_NAND_CTRL1_BASE == CSR_NAND_CTRL_CPL_ADDR - CSR_NAND_CTRL_BASE,
               "nand_ctrl1's registers are not laid out as nand_ctrl's");
#endif

#ifdef CSR_NAND_SOCKET_CTRL_BASE
_Static_assert(CSR_NAND_SOCKET_CTRL_EV_ENABLE_ADDR - CSR_NAND_SOCKET_CTRL_BASE == CSR_NAND_CTRL_EV_ENABLE_ADDR - CSR_NAND_CTRL_BASE &&
               CSR_NAND_SOCKET_CTRL_CPL_ADDR - CSR_NAND_SOCKET_CTRL_BASE == CSR_NAND_CTRL_CPL_ADDR - CSR_NAND_CTRL_BASE &&
               CSR_NAND_SOCKET_CTRL_DESC_ROW_ADDR - CSR_NAND_SOCKET_CTRL_BASE == CSR_NAND_CTRL_DESC_ROW_ADDR - CSR_NAND_CTRL_BASE,
               "nand_socket_ctrl's registers are not laid out as nand_ctrl's");
#endif

#define CTRL_ADDR(ch, reg) (ctrl_base[ch] + (uint32_t)(CSR_NAND_CTRL_##reg##_ADDR - CSR_NAND_CTRL_BASE))
#define CTRL_RD(ch, reg)    csr_read_simple(CTRL_ADDR(ch, reg))
#define CTRL_WR(ch, reg, v) csr_write_simple((v), CTRL_ADDR(ch, reg))

int hal_ctrl_channels(void) { return CTRL_CHANNELS; }
int hal_ctrl_present(void) { return 1; }

int hal_ctrl_socket_channel(void)
{
#ifdef CSR_NAND_SOCKET_CTRL_BASE
	return CTRL_CHANNELS - 1;
#else
	return -1;
#endif
}

int hal_ctrl_ways(int ch)
{
#ifdef CSR_NAND_SOCKET_CTRL_BASE
	if (ch == CTRL_CHANNELS - 1)
		return NANDLAB_NAND_SOCKET_TARGETS;
#endif
	(void)ch;
#ifdef NANDLAB_DIES
	return NANDLAB_DIES;      /* (not hal_nand_dies(): the bit-bang master may be on the socket) */
#else
	return 0;
#endif
}

void hal_ctrl_own_bus(int ch, int controller)
{
#ifdef CSR_NAND_SOCKET_MUX_BASE
	if (ch == CTRL_CHANNELS - 1) {
		nand_socket_mux_select_write(controller ? 1 : 0);
		return;
	}
#endif
	if (ch == 0)
		nand_bus_mux_select_write(controller ? 1 : 0);
}

int hal_ctrl_submit(int ch, const struct hal_ctrl_desc *d)
{
	if (!HAL_FIELD_GET(NAND_CTRL_QUEUE, READY, CTRL_RD(ch, QUEUE)))
		return -1;
	CTRL_WR(ch, DESC0, HAL_FIELD_PUT(NAND_CTRL_DESC0, OP, d->op) | HAL_FIELD_PUT(NAND_CTRL_DESC0, WAY, d->way) |
	                   HAL_FIELD_PUT(NAND_CTRL_DESC0, TAG, d->tag)
#ifdef CSR_NAND_CTRL_DESC0_SMALL_OFFSET
	                   | HAL_FIELD_PUT(NAND_CTRL_DESC0, SMALL, d->small)
#endif
	                   );
	CTRL_WR(ch, DESC_ROW, d->row);
	CTRL_WR(ch, DESC_COL, HAL_FIELD_PUT(NAND_CTRL_DESC_COL, COL, d->col) | HAL_FIELD_PUT(NAND_CTRL_DESC_COL, LEN, d->len));
	CTRL_WR(ch, DESC_ADDR, d->addr);
	CTRL_WR(ch, DESC_PARAM, d->param);
	CTRL_WR(ch, SUBMIT, 1);
	return 0;
}

/* A page operation's descriptor (column 0, large page) straight into the CSRs: the FTL port's per-page
 * submission, without a descriptor in memory (each store there is a bus access queued behind the DMA). */
__attribute__((section(".text.hot_issue"))) int hal_ctrl_submit_page(int ch, int op, int way, int tag, uint32_t row,
                                                                   uint32_t len, uint32_t addr, uint32_t param)
{
	if (!HAL_FIELD_GET(NAND_CTRL_QUEUE, READY, CTRL_RD(ch, QUEUE)))
		return -1;
	CTRL_WR(ch, DESC0, HAL_FIELD_PUT(NAND_CTRL_DESC0, OP, op) | HAL_FIELD_PUT(NAND_CTRL_DESC0, WAY, way) |
	                   HAL_FIELD_PUT(NAND_CTRL_DESC0, TAG, tag));
	CTRL_WR(ch, DESC_ROW, row);
	CTRL_WR(ch, DESC_COL, HAL_FIELD_PUT(NAND_CTRL_DESC_COL, LEN, len));
	CTRL_WR(ch, DESC_ADDR, addr);
	CTRL_WR(ch, DESC_PARAM, param);
	CTRL_WR(ch, SUBMIT, 1);
	return 0;
}

__attribute__((section(".text.hot_reap"))) int hal_ctrl_cpl_peek(int ch, struct hal_ctrl_cpl *c)
{
	uint32_t v = CTRL_RD(ch, CPL);
	if (!HAL_FIELD_GET(NAND_CTRL_CPL, VALID, v))
		return 0;
	c->result = HAL_FIELD_GET(NAND_CTRL_CPL, RESULT, v);
	c->tag    = HAL_FIELD_GET(NAND_CTRL_CPL, TAG, v);
	c->way    = HAL_FIELD_GET(NAND_CTRL_CPL, WAY, v);
	c->status = HAL_FIELD_GET(NAND_CTRL_CPL, STATUS, v);
	c->ecc    = 0;
	return 1;
}

__attribute__((section(".text.hot_reap_r"))) void hal_ctrl_cpl_ecc(int ch, struct hal_ctrl_cpl *c)
{
#ifdef CSR_NAND_CTRL_CPL_ECC_ADDR
	int i;
	/* Most significant word first; the counts of the first codewords are the low bits. */
	for (i = CSR_NAND_CTRL_CPL_ECC_SIZE > 2 ? CSR_NAND_CTRL_CPL_ECC_SIZE - 2 : 0; i < CSR_NAND_CTRL_CPL_ECC_SIZE; i++)
		c->ecc = c->ecc << 32 | csr_read_simple(CTRL_ADDR(ch, CPL_ECC) + 4 * i);
#else
	(void)ch;
	(void)c;
#endif
}

__attribute__((section(".text.hot_reap"))) void hal_ctrl_cpl_pop(int ch)
{
	CTRL_WR(ch, CPL_POP, 1);
}

int hal_ctrl_complete(int ch, struct hal_ctrl_cpl *c)
{
	if (!hal_ctrl_cpl_peek(ch, c))
		return 0;
	hal_ctrl_cpl_ecc(ch, c);
	hal_ctrl_cpl_pop(ch);
	return 1;
}

/* NV-DDR data input's DQS placement per channel (hal_ctrl_dqs_late), kept across mode changes. */
static uint8_t dqs_late[CTRL_CHANNELS];

void hal_ctrl_mode(int ch, int interface, int timing_mode, uint32_t ways_online)
{
	CTRL_WR(ch, CONFIG, HAL_FIELD_PUT(NAND_CTRL_CONFIG, INTERFACE, interface) |
	                    HAL_FIELD_PUT(NAND_CTRL_CONFIG, TIMING_MODE, timing_mode) |
	                    HAL_FIELD_PUT(NAND_CTRL_CONFIG, DQS_LATE, dqs_late[ch]) |
	                    HAL_FIELD_PUT(NAND_CTRL_CONFIG, WAYS_ONLINE, ways_online));
}

void hal_ctrl_dqs_late(int ch, int late)
{
	uint32_t v = CTRL_RD(ch, CONFIG) & ~HAL_FIELD_PUT(NAND_CTRL_CONFIG, DQS_LATE, 1);
	dqs_late[ch] = late != 0;
	CTRL_WR(ch, CONFIG, v | HAL_FIELD_PUT(NAND_CTRL_CONFIG, DQS_LATE, dqs_late[ch]));
}

int hal_ctrl_dqs_late_get(int ch) { return dqs_late[ch]; }

void hal_ctrl_geometry(int ch, uint32_t page_total, int page_bits, uint32_t blocks)
{
	CTRL_WR(ch, GEOMETRY, HAL_FIELD_PUT(NAND_CTRL_GEOMETRY, PAGE_BYTES, page_total) |
	                      HAL_FIELD_PUT(NAND_CTRL_GEOMETRY, PAGE_BITS, page_bits));
	CTRL_WR(ch, BLOCKS, blocks);
}

uint32_t hal_ctrl_in_flight(int ch)
{
	return HAL_FIELD_GET(NAND_CTRL_QUEUE, IN_FLIGHT, CTRL_RD(ch, QUEUE));
}

uint32_t hal_ctrl_timeout_us(int ch)
{
	return (uint32_t)((uint64_t)CTRL_RD(ch, TIMEOUT) * 1000000u / hal_clock_hz());
}

void hal_ctrl_counters(int ch, uint32_t *busy, uint32_t *data, uint32_t *bytes_in, uint32_t *bytes_out)
{
	*busy = CTRL_RD(ch, BUSY_CYCLES);
	*data = CTRL_RD(ch, DATA_CYCLES);
	*bytes_in = CTRL_RD(ch, BYTES_IN);
	*bytes_out = CTRL_RD(ch, BYTES_OUT);
}

static int ctrl_irq_mode;
static volatile uint32_t ctrl_irqs[CTRL_CHANNELS];

#if defined(CONFIG_CPU_HAS_INTERRUPT) && defined(NAND_CTRL_INTERRUPT)
static const unsigned int ctrl_irq[] = {
	NAND_CTRL_INTERRUPT,
#ifdef NAND_CTRL1_INTERRUPT
	NAND_CTRL1_INTERRUPT,
#endif
#ifdef NAND_CTRL2_INTERRUPT
	NAND_CTRL2_INTERRUPT,
#endif
#ifdef NAND_CTRL3_INTERRUPT
	NAND_CTRL3_INTERRUPT,
#endif
#ifdef NAND_CTRL4_INTERRUPT
	NAND_CTRL4_INTERRUPT,
#endif
#ifdef NAND_CTRL5_INTERRUPT
	NAND_CTRL5_INTERRUPT,
#endif
#ifdef NAND_CTRL6_INTERRUPT
	NAND_CTRL6_INTERRUPT,
#endif
#ifdef NAND_CTRL7_INTERRUPT
	NAND_CTRL7_INTERRUPT,
#endif
#ifdef NAND_SOCKET_CTRL_INTERRUPT
	NAND_SOCKET_CTRL_INTERRUPT,
#endif
};
_Static_assert(CTRL_CHANNELS <= 8, "one handler per channel below: 8 of them");
_Static_assert(sizeof(ctrl_irq) == sizeof(ctrl_base) / sizeof(ctrl_base[0]) * sizeof(ctrl_irq[0]),
               "a channel controller without its interrupt");

/* `done` is a level (completions wait): masked here, so that the CPU leaves the handler; the next
 * wait enables it again. The interrupt table calls handlers without an argument: one per channel. */
static void ctrl_isr(int ch)
{
	if (ch >= CTRL_CHANNELS)
		return;
	CTRL_WR(ch, EV_ENABLE, 0);
	ctrl_irqs[ch]++;
}
#define CTRL_ISR(k) static void ctrl_isr##k(void) { ctrl_isr(k); }
CTRL_ISR(0) CTRL_ISR(1) CTRL_ISR(2) CTRL_ISR(3) CTRL_ISR(4) CTRL_ISR(5) CTRL_ISR(6) CTRL_ISR(7)
static const isr_t ctrl_isrs[8] = {ctrl_isr0, ctrl_isr1, ctrl_isr2, ctrl_isr3, ctrl_isr4, ctrl_isr5, ctrl_isr6,
                                   ctrl_isr7};

int hal_ctrl_irq_present(void) { return 1; }

int hal_ctrl_irq_mode(int on)
{
	uint32_t mask = 0;
	int ch;
	for (ch = 0; ch < CTRL_CHANNELS; ch++) {
		CTRL_WR(ch, EV_ENABLE, 0);
		if (on)
			irq_attach(ctrl_irq[ch], ctrl_isrs[ch]);
		mask |= 1u << ctrl_irq[ch];
	}
	irq_setmask(on ? irq_getmask() | mask : irq_getmask() & ~mask);
	ctrl_irq_mode = on != 0;
	return ctrl_irq_mode;
}
#define CTRL_WAIT_BY_IRQ 1
#else
int hal_ctrl_irq_present(void) { return 0; }
int hal_ctrl_irq_mode(int on) { (void)on; return ctrl_irq_mode = 0; }
#define CTRL_WAIT_BY_IRQ 0
#endif

int hal_ctrl_irq_on(void) { return ctrl_irq_mode; }
uint32_t hal_ctrl_irq_count(int ch) { return ch >= 0 && ch < CTRL_CHANNELS ? ctrl_irqs[ch] : 0; }

static int ctrl_waiting(int ch)
{
	return HAL_FIELD_GET(NAND_CTRL_CPL, VALID, CTRL_RD(ch, CPL));
}

int hal_ctrl_wait(int ch, uint32_t timeout_us)
{
	uint64_t limit = (uint64_t)timeout_us * (hal_clock_hz() / 1000000u), t0 = hal_timestamp();
	if (!ctrl_irq_mode || !CTRL_WAIT_BY_IRQ) {
		while (!ctrl_waiting(ch))
			if (hal_timestamp() - t0 >= limit)
				return -1;
		return 0;
	}
#if CTRL_WAIT_BY_IRQ
	{
		uint32_t seen = ctrl_irqs[ch];
		/* A completion already waiting raises the level at once. */
		CTRL_WR(ch, EV_ENABLE, 1u << CSR_NAND_CTRL_EV_ENABLE_DONE_OFFSET);
		while (ctrl_irqs[ch] == seen)
			if (hal_timestamp() - t0 >= limit) {
				CTRL_WR(ch, EV_ENABLE, 0);
				return ctrl_waiting(ch) ? 0 : -1;
			}
	}
#endif
	return 0;
}

void hal_dma_sync(void)
{
	flush_cpu_dcache();
#ifdef CONFIG_L2_SIZE
	flush_l2_cache();
#endif
}

/* A range evicted line by line (hal_dcache_evict_line, hal.h), each line a miss (8 bus words): past
 * DCACHE_EVICT_MAX bytes the whole flush (128 cycles, then the misses of whatever the CPU used) is the cheaper,
 * and a range in the code the loads go to is flushed whole too. Out of the per-page path (the port evicts a
 * read's tag inline): the FTL calls it once a read request (ftl_nand.cpu_view). The controllers' DMA is a
 * master of the SoC's bus, before any L2 (NandLabSoC.add_nand_controller): an L2 needs nothing here. */
#define DCACHE_EVICT_MAX 1024u

void hal_dma_sync_range(const void *p, uint32_t bytes)
{
	const uintptr_t other = hal_dcache_evict_base();
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)(HAL_DCACHE_LINE - 1);
	const uintptr_t end = (uintptr_t)p + bytes;
	if (end - a > DCACHE_EVICT_MAX || (end > other && a < other + HAL_DCACHE_BYTES)) {
		hal_dma_sync();
		return;
	}
	for (; a < end; a += HAL_DCACHE_LINE)
		hal_dcache_evict_line((const void *)a);
}
#else
int hal_ctrl_channels(void) { return 0; }
int hal_ctrl_present(void) { return 0; }
int hal_ctrl_socket_channel(void) { return -1; }
int hal_ctrl_ways(int ch) { (void)ch; return 0; }
void hal_ctrl_own_bus(int ch, int controller) { (void)ch; (void)controller; }
int hal_ctrl_submit(int ch, const struct hal_ctrl_desc *d) { (void)ch; (void)d; return -1; }
int hal_ctrl_complete(int ch, struct hal_ctrl_cpl *c) { (void)ch; (void)c; return 0; }
int hal_ctrl_submit_page(int ch, int op, int way, int tag, uint32_t row, uint32_t len, uint32_t addr, uint32_t param)
{
	(void)ch; (void)op; (void)way; (void)tag; (void)row; (void)len; (void)addr; (void)param;
	return -1;
}
int hal_ctrl_cpl_peek(int ch, struct hal_ctrl_cpl *c) { (void)ch; (void)c; return 0; }
void hal_ctrl_cpl_ecc(int ch, struct hal_ctrl_cpl *c) { (void)ch; (void)c; }
void hal_ctrl_cpl_pop(int ch) { (void)ch; }
void hal_ctrl_mode(int ch, int interface, int timing_mode, uint32_t ways_online)
{
	(void)ch; (void)interface; (void)timing_mode; (void)ways_online;
}
void hal_ctrl_dqs_late(int ch, int late) { (void)ch; (void)late; }
int hal_ctrl_dqs_late_get(int ch) { (void)ch; return 0; }
void hal_ctrl_geometry(int ch, uint32_t page_total, int page_bits, uint32_t blocks)
{
	(void)ch; (void)page_total; (void)page_bits; (void)blocks;
}
uint32_t hal_ctrl_in_flight(int ch) { (void)ch; return 0; }
uint32_t hal_ctrl_timeout_us(int ch) { (void)ch; return 0; }
int hal_ctrl_irq_present(void) { return 0; }
int hal_ctrl_irq_mode(int on) { (void)on; return 0; }
int hal_ctrl_irq_on(void) { return 0; }
uint32_t hal_ctrl_irq_count(int ch) { (void)ch; return 0; }
int hal_ctrl_wait(int ch, uint32_t timeout_us) { (void)ch; (void)timeout_us; return -1; }
void hal_ctrl_counters(int ch, uint32_t *busy, uint32_t *data, uint32_t *bytes_in, uint32_t *bytes_out)
{
	(void)ch; *busy = *data = *bytes_in = *bytes_out = 0;
}
void hal_dma_sync(void) {}
void hal_dma_sync_range(const void *p, uint32_t bytes) { (void)p; (void)bytes; }
#endif
