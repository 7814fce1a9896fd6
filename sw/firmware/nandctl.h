/* ONFI through the channel controller: bring-up of every die and page operations by descriptors. */
#ifndef NANDLAB_NANDCTL_H
#define NANDLAB_NANDCTL_H

#include <stdint.h>

#include <generated/soc.h>

#include "hal.h"
#include "onfi.h"

#define NANDCTL_MAX_DIES  16
#define NANDCTL_PAGE_MAX  (16384 + 2048)

/* Data interfaces (ONFI feature 01h P1[5:4]; 3 = nandlab's sync SDR). */
#define NANDCTL_IF_ASYNC  0
#define NANDCTL_IF_NVDDR  1
#define NANDCTL_IF_SYNC   3

struct nandctl {
	int      dies;                 /* on the channel */
	uint32_t online;               /* dies brought up (the others are left out) */
	struct onfi_geometry g;        /* from the first die's parameter page */
	int      interface, mode;      /* current data interface and timing mode */
	uint8_t  tag;
	int      up;
};

extern struct nandctl nandctl;
/* Page buffers for the DMA (word aligned). */
extern uint8_t nandctl_buf[2][NANDCTL_PAGE_MAX];

const char *nandctl_result_name(int result);
const char *nandctl_interface_name(int interface);
/* Submit one descriptor and wait for its completion; returns its result (NANDLAB_CTRL_RESULT_*). */
int nandctl_run(struct hal_ctrl_desc *d, struct hal_ctrl_cpl *c);
/* RESET, READ ID, READ PARAMETER PAGE (CRC, copy fallback) on every die, then the fastest mode
 * both sides support; dies that fail are reported and left out. Returns the number brought up. */
int nandctl_bringup(int verbose);
/* SET FEATURES (timing mode) on every online die, then the controller follows. 0 or -1. */
int nandctl_set_mode(int interface, int mode);
/* Row of (block, page). */
uint32_t nandctl_row(uint32_t block, uint32_t page);
/* Page operations; return the result; *status gets the NAND status byte (program, erase). */
int nandctl_read(int die, uint32_t row, uint8_t *buf, uint32_t len);
int nandctl_program(int die, uint32_t row, const uint8_t *buf, uint32_t len, uint8_t *status);
int nandctl_erase(int die, uint32_t block, uint8_t *status);

/* BCH ECC in the controller (SoCs built with it: NANDLAB_CTRL_ECC_T defined). A page's data area is
 * codewords of NANDLAB_CTRL_ECC_DATA_BYTES; the parity goes to the spare (layout in
 * gateware/ecc/bch.py). */
struct nandctl_ecc {
	int codewords;
	int corrected;                 /* bits corrected, all codewords */
	int max;                       /* most bits corrected in one codeword (Linux's max_bitflips) */
	int uncorrectable;             /* codewords that could not be corrected (their data is as read) */
	uint8_t per_cw[16];            /* per codeword: bits corrected, 0xff uncorrectable */
};
#ifdef NANDLAB_CTRL_ECC_T
#define NANDCTL_ECC_T           NANDLAB_CTRL_ECC_T
#define NANDCTL_ECC_DATA_BYTES  NANDLAB_CTRL_ECC_DATA_BYTES
#else
#define NANDCTL_ECC_T           0
#define NANDCTL_ECC_DATA_BYTES  0
#endif
int nandctl_ecc_present(void);
/* Whole data area (len = data bytes of a page) through the encoder; parity to the spare. */
int nandctl_program_ecc(int die, uint32_t row, const uint8_t *buf, uint8_t *status);
/* Whole codewords from column 0; *e gets the counts. Result OK, or ECC_UNCORRECTABLE (never silent). */
int nandctl_read_ecc(int die, uint32_t row, uint8_t *buf, uint32_t len, struct nandctl_ecc *e);

#endif
