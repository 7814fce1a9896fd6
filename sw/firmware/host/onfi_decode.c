/* onfi-decode: the firmware's parameter-page code (onfi.c) on the host, for tests/test_onfi_c.py: reads
 * parameter page copies (256 bytes each) from stdin, prints the copy chosen and the geometry as JSON. */
#include <stdio.h>
#include <string.h>

#include "hal.h"
#include "onfi.h"

/* onfi.c's bus functions need these; decoding never calls them. */
void     hal_nand_levels(uint32_t ce_mask, int cle, int ale, int we_low, int re_low, int oe)
{
	(void)ce_mask; (void)cle; (void)ale; (void)we_low; (void)re_low; (void)oe;
}
void     hal_nand_dq(uint8_t value) { (void)value; }
uint8_t  hal_nand_dq_in(void) { return 0; }
uint32_t hal_nand_ready(void) { return 0; }
void     hal_delay_ns(uint32_t ns) { (void)ns; }

int main(void)
{
	static uint8_t buf[NANDLAB_ONFI_PARAM_PAGE_BYTES * 8];
	struct onfi_geometry g;
	size_t n = fread(buf, 1, sizeof(buf), stdin);
	int copies = (int)(n / NANDLAB_ONFI_PARAM_PAGE_BYTES), copy;
	if (copies < 1) {
		fprintf(stderr, "onfi-decode: %zu bytes: at least one %d-byte copy needed\n", n, NANDLAB_ONFI_PARAM_PAGE_BYTES);
		return 2;
	}
	copy = onfi_param_select(buf, copies);
	if (copy == -2) {
		printf("{\"copy\": -2}\n");
		return 1;
	}
	onfi_param_decode(copy >= 0 ? buf + copy * NANDLAB_ONFI_PARAM_PAGE_BYTES : buf, &g);
	printf("{\"copy\": %d, \"revision\": %u, \"manufacturer\": \"%s\", \"model\": \"%s\", \"page_bytes\": %lu, "
	       "\"spare_bytes\": %lu, \"pages_per_block\": %lu, \"blocks_per_lun\": %lu, \"luns\": %u, "
	       "\"column_cycles\": %u, \"row_cycles\": %u, \"bits_per_cell\": %u, \"planes\": %u, \"t_r_us\": %u, "
	       "\"t_prog_us\": %u, \"t_bers_us\": %u}\n",
	       copy, g.revision, g.manufacturer, g.model, (unsigned long)g.page_bytes, (unsigned long)g.spare_bytes,
	       (unsigned long)g.pages_per_block, (unsigned long)g.blocks_per_lun, g.luns, g.column_cycles, g.row_cycles,
	       g.bits_per_cell, g.planes, g.t_r_us, g.t_prog_us, g.t_bers_us);
	return 0;
}
