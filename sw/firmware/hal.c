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
