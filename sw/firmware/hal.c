/* nandlab firmware HAL: console, identifier, time base and CSRs by name, all through csr.h. */
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

uint64_t hal_timestamp(void)
{
	timebase_latch_write(1);
	return timebase_timestamp_read();
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
int hal_nand_dies(void)
{
	return NANDLAB_DIES;
}

void hal_nand_levels(uint32_t ce_mask, int cle, int ale, int we_low, int re_low, int oe)
{
	uint32_t v = 0;
	v |= (ce_mask & ((1u << CSR_NAND_BITBANG_CTRL_CE_SIZE) - 1)) << CSR_NAND_BITBANG_CTRL_CE_OFFSET;
	v |= (uint32_t)(cle != 0) << CSR_NAND_BITBANG_CTRL_CLE_OFFSET;
	v |= (uint32_t)(ale != 0) << CSR_NAND_BITBANG_CTRL_ALE_OFFSET;
	v |= (uint32_t)(we_low != 0) << CSR_NAND_BITBANG_CTRL_WE_OFFSET;
	v |= (uint32_t)(re_low != 0) << CSR_NAND_BITBANG_CTRL_RE_OFFSET;
	v |= (uint32_t)(oe != 0) << CSR_NAND_BITBANG_CTRL_OE_OFFSET;
	nand_bitbang_ctrl_write(v);
}

void hal_nand_dq(uint8_t value)
{
	nand_bitbang_dq_write(value);
}

uint8_t hal_nand_dq_in(void)
{
	return nand_bitbang_dq_in_read();
}

uint32_t hal_nand_ready(void)
{
	return nand_bitbang_rb_read();
}
#else
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

int hal_ctrl_present(void) { return 1; }

void hal_ctrl_own_bus(int controller)
{
	nand_bus_mux_select_write(controller ? 1 : 0);
}

int hal_ctrl_submit(const struct hal_ctrl_desc *d)
{
	if (!(nand_ctrl_queue_read() & (1u << CSR_NAND_CTRL_QUEUE_READY_OFFSET)))
		return -1;
	nand_ctrl_desc0_write((uint32_t)d->op << CSR_NAND_CTRL_DESC0_OP_OFFSET |
	                      (uint32_t)d->way << CSR_NAND_CTRL_DESC0_WAY_OFFSET |
	                      (uint32_t)d->tag << CSR_NAND_CTRL_DESC0_TAG_OFFSET);
	nand_ctrl_desc_row_write(d->row);
	nand_ctrl_desc_col_write((uint32_t)d->col << CSR_NAND_CTRL_DESC_COL_COL_OFFSET |
	                         (uint32_t)d->len << CSR_NAND_CTRL_DESC_COL_LEN_OFFSET);
	nand_ctrl_desc_addr_write(d->addr);
	nand_ctrl_desc_param_write(d->param);
	nand_ctrl_submit_write(1);
	return 0;
}

int hal_ctrl_complete(struct hal_ctrl_cpl *c)
{
	uint32_t v = nand_ctrl_cpl_read();
	if (!(v & (1u << CSR_NAND_CTRL_CPL_VALID_OFFSET)))
		return 0;
	c->result = (v >> CSR_NAND_CTRL_CPL_RESULT_OFFSET) & ((1u << CSR_NAND_CTRL_CPL_RESULT_SIZE) - 1);
	c->tag    = (v >> CSR_NAND_CTRL_CPL_TAG_OFFSET) & 0xff;
	c->way    = (v >> CSR_NAND_CTRL_CPL_WAY_OFFSET) & 0xf;
	c->status = (v >> CSR_NAND_CTRL_CPL_STATUS_OFFSET) & 0xff;
#ifdef CSR_NAND_CTRL_CPL_ECC_ADDR
	c->ecc    = (uint64_t)nand_ctrl_cpl_ecc_read();
#else
	c->ecc    = 0;
#endif
	nand_ctrl_cpl_pop_write(1);
	return 1;
}

void hal_ctrl_mode(int interface, int timing_mode, uint32_t ways_online)
{
	nand_ctrl_config_write((uint32_t)interface << CSR_NAND_CTRL_CONFIG_INTERFACE_OFFSET |
	                       (uint32_t)timing_mode << CSR_NAND_CTRL_CONFIG_TIMING_MODE_OFFSET |
	                       ways_online << CSR_NAND_CTRL_CONFIG_WAYS_ONLINE_OFFSET);
}

void hal_ctrl_geometry(uint32_t page_total, int page_bits, uint32_t blocks)
{
	nand_ctrl_geometry_write(page_total << CSR_NAND_CTRL_GEOMETRY_PAGE_BYTES_OFFSET |
	                         (uint32_t)page_bits << CSR_NAND_CTRL_GEOMETRY_PAGE_BITS_OFFSET);
	nand_ctrl_blocks_write(blocks);
}

uint32_t hal_ctrl_in_flight(void)
{
	return (nand_ctrl_queue_read() >> CSR_NAND_CTRL_QUEUE_IN_FLIGHT_OFFSET) & 0xffff;
}

void hal_ctrl_counters(uint32_t *busy, uint32_t *data, uint32_t *bytes_in, uint32_t *bytes_out)
{
	*busy = nand_ctrl_busy_cycles_read();
	*data = nand_ctrl_data_cycles_read();
	*bytes_in = nand_ctrl_bytes_in_read();
	*bytes_out = nand_ctrl_bytes_out_read();
}

static int ctrl_irq_mode;
static volatile uint32_t ctrl_irqs;

#if defined(CONFIG_CPU_HAS_INTERRUPT) && defined(NAND_CTRL_INTERRUPT)
/* `done` is a level (completions wait): masked here, so that the CPU leaves the handler; the next
 * wait enables it again. */
static void ctrl_isr(void)
{
	nand_ctrl_ev_enable_write(0);
	ctrl_irqs++;
}

int hal_ctrl_irq_present(void) { return 1; }

int hal_ctrl_irq_mode(int on)
{
	nand_ctrl_ev_enable_write(0);
	if (on) {
		irq_attach(NAND_CTRL_INTERRUPT, ctrl_isr);
		irq_setmask(irq_getmask() | (1u << NAND_CTRL_INTERRUPT));
	} else
		irq_setmask(irq_getmask() & ~(1u << NAND_CTRL_INTERRUPT));
	ctrl_irq_mode = on != 0;
	return ctrl_irq_mode;
}
#else
int hal_ctrl_irq_present(void) { return 0; }
int hal_ctrl_irq_mode(int on) { (void)on; return ctrl_irq_mode = 0; }
#endif

int hal_ctrl_irq_on(void) { return ctrl_irq_mode; }
uint32_t hal_ctrl_irq_count(void) { return ctrl_irqs; }

static int ctrl_waiting(void)
{
	return (nand_ctrl_cpl_read() >> CSR_NAND_CTRL_CPL_VALID_OFFSET) & 1;
}

int hal_ctrl_wait(uint32_t timeout_us)
{
	uint64_t limit = (uint64_t)timeout_us * (hal_clock_hz() / 1000000u), t0 = timeout_us ? hal_timestamp() : 0;
	if (!ctrl_irq_mode) {
		while (!ctrl_waiting())
			if (timeout_us && hal_timestamp() - t0 >= limit)
				return -1;
		return 0;
	}
#ifdef NAND_CTRL_INTERRUPT
	{
		uint32_t seen = ctrl_irqs;
		/* A completion already waiting raises the level at once. */
		nand_ctrl_ev_enable_write(1u << CSR_NAND_CTRL_EV_ENABLE_DONE_OFFSET);
		while (ctrl_irqs == seen)
			if (timeout_us && hal_timestamp() - t0 >= limit) {
				nand_ctrl_ev_enable_write(0);
				return ctrl_waiting() ? 0 : -1;
			}
	}
#endif
	return 0;
}

void hal_dma_sync(void)
{
	flush_cpu_dcache();
	flush_l2_cache();
}
#else
int hal_ctrl_present(void) { return 0; }
void hal_ctrl_own_bus(int controller) { (void)controller; }
int hal_ctrl_submit(const struct hal_ctrl_desc *d) { (void)d; return -1; }
int hal_ctrl_complete(struct hal_ctrl_cpl *c) { (void)c; return 0; }
void hal_ctrl_mode(int interface, int timing_mode, uint32_t ways_online)
{
	(void)interface; (void)timing_mode; (void)ways_online;
}
void hal_ctrl_geometry(uint32_t page_total, int page_bits, uint32_t blocks)
{
	(void)page_total; (void)page_bits; (void)blocks;
}
uint32_t hal_ctrl_in_flight(void) { return 0; }
int hal_ctrl_irq_present(void) { return 0; }
int hal_ctrl_irq_mode(int on) { (void)on; return 0; }
int hal_ctrl_irq_on(void) { return 0; }
uint32_t hal_ctrl_irq_count(void) { return 0; }
int hal_ctrl_wait(uint32_t timeout_us) { (void)timeout_us; return -1; }
void hal_ctrl_counters(uint32_t *busy, uint32_t *data, uint32_t *bytes_in, uint32_t *bytes_out)
{
	*busy = *data = *bytes_in = *bytes_out = 0;
}
void hal_dma_sync(void) {}
#endif
