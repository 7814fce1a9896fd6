/* ONFI protocol over the NAND bus (bit-bang master for now): commands, parameter page rules. */
#ifndef NANDLAB_ONFI_H
#define NANDLAB_ONFI_H

#include <stdint.h>

#include <generated/soc.h>

/* Copies of the parameter page read (NANDLAB_ONFI_PARAM_PAGE_BYTES each): ONFI has at least three. */
#define ONFI_PARAM_COPIES    3

struct onfi_geometry {
	uint32_t page_bytes, spare_bytes, pages_per_block, blocks_per_lun;
	uint8_t  luns, column_cycles, row_cycles, bits_per_cell;
	uint16_t planes;             /* 1 << the plane address bits (at most 15) */
	uint16_t revision, t_r_us, t_prog_us, t_bers_us;
	char     manufacturer[13], model[21];
	uint32_t small_page_bytes;   /* MPNFM (nandlab vendor extension): 0 when absent */
	uint16_t small_spare_bytes;
	uint8_t  small_plane;
};

void     onfi_command(int die, uint8_t cmd);
void     onfi_address(int die, uint8_t addr);
void     onfi_write(int die, const uint8_t *buf, int n);
void     onfi_read(int die, uint8_t *buf, int n);
int      onfi_wait_ready(int die, uint32_t timeout_us); /* 0 ready, -1 timed out */
uint8_t  onfi_status(int die);
void     onfi_release(void);

uint16_t onfi_crc16(const uint8_t *data, int n);
/* Index of the first copy with signature and CRC right, -1 for the 3-copy majority (written into
 * copies[0]), -2 when nothing is usable. The same rules as nand_model/param_page.py. */
int      onfi_param_select(uint8_t *copies, int ncopies);
void     onfi_param_decode(const uint8_t *page, struct onfi_geometry *g);

#endif
