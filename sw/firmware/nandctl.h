/* ONFI through the channel controller: bring-up of every die and page operations by descriptors. */
#ifndef NANDLAB_NANDCTL_H
#define NANDLAB_NANDCTL_H

#include <stdint.h>

#include <generated/soc.h>

#include "hal.h"
#include "onfi.h"

#define NANDCTL_MAX_DIES  16
/* Bytes of a page buffer: the largest page of the build (NANDLAB_CTRL_PAGE_MAX, data and spare, of the part
 * the controllers are built for: 34816 on MPNFM-32-4), never less than the 16 KiB + 2 KiB they always held
 * ('ctl planes' runs several pages of the smaller parts out of one). */
#if defined(NANDLAB_CTRL_PAGE_MAX) && NANDLAB_CTRL_PAGE_MAX > 16384 + 2048
#define NANDCTL_PAGE_MAX  NANDLAB_CTRL_PAGE_MAX
#else
#define NANDCTL_PAGE_MAX  (16384 + 2048)
#endif

#define NANDCTL_MAX_CHANNELS 8

/* One channel: its controller (hal_ctrl_* channel `ch`) and the dies on its bus. */
struct nandctl {
	int      ch;
	int      dies;                 /* on the channel */
	uint32_t online;               /* dies brought up (the others are left out) */
	struct onfi_geometry g;        /* from the first die's parameter page */
	int      interface, mode;      /* current data interface and timing mode */
	uint8_t  tag;
	int      up;
	uint32_t late;                 /* completions of descriptors given up on, taken later */
};

extern struct nandctl nandctl[NANDCTL_MAX_CHANNELS];
/* Page buffers for the DMA (word aligned), shared by the channels (one operation at a time). */
extern uint8_t nandctl_buf[2][NANDCTL_PAGE_MAX];

/* Channels the driver runs (the SoC's controllers, at most NANDCTL_MAX_CHANNELS). */
int nandctl_channels(void);
const char *nandctl_result_name(int result);
const char *nandctl_interface_name(int interface);
/* "die 3" on channel 0 (as a single-channel SoC names it), "ch 1 die 3" on the others. */
const char *nandctl_die_name(const struct nandctl *nc, int die);
/* Data interfaces: NANDLAB_ONFI_IF_* (soc.h). The controller's results are NANDLAB_CTRL_RESULT_* (soc.h; names in
 * NANDLAB_CTRL_RESULTS); among its refusals (a refused descriptor never reaches the NAND):
 *   NANDLAB_CTRL_RESULT_OVERFLOW     submitted while the queue was full (hal_ctrl_submit waits for 'ready', so
 *                                    only a driver that does not can see it; one held at a time, more are
 *                                    counted in the overflow_lost CSR and never complete)
 *   NANDLAB_CTRL_RESULT_BAD_ADDRESS  its data (addr, and an ECC operation's free bytes at param) is outside the
 *                                    DMA window (dma_base..dma_limit CSRs, default all) or wraps past 2^32
 *   NANDLAB_CTRL_RESULT_BAD_OP       also: a reserved bit of descriptor word 0 set
 * Results besides the controller's: */
#define NANDCTL_NO_COMPLETION (-1)     /* the descriptor did not complete in time */
#define NANDCTL_QUEUE_FULL    (-2)     /* the controller's queue did not take it in time */
/* Submit one descriptor on nc's channel and wait for its completion, at most nandctl_run_limit_us()
 * (four times the controller's own timeout: see nandctl.c); returns its result. A completion of a descriptor given
 * up on earlier is reported (and counted in nc->late), not taken for this one's. */
int nandctl_run(struct nandctl *nc, struct hal_ctrl_desc *d, struct hal_ctrl_cpl *c);
int nandctl_run_within(struct nandctl *nc, struct hal_ctrl_desc *d, struct hal_ctrl_cpl *c, uint32_t timeout_us);
uint32_t nandctl_run_limit_us(const struct nandctl *nc);
/* Every channel: RESET, READ ID, READ PARAMETER PAGE (CRC, copy fallback) on each die, then the fastest
 * mode both sides support; dies that fail are reported and left out. Returns the dies brought up on
 * the channels that came up. */
int nandctl_bringup(int verbose);
/* One channel; returns its dies brought up (0: the channel is not up). */
int nandctl_bringup_channel(struct nandctl *nc, int verbose);
/* RESET, READ ID (the ONFI signature) and the parameter page (into p, ONFI_PARAM_COPIES copies; *copy: the
 * copy whose signature and CRC hold, -1 for a majority of three) of `die` in the mode the channel is in.
 * 0, or -1 with the failing step printed after the die's name and `what`. */
int nandctl_identify(struct nandctl *nc, int die, uint8_t *p, int *copy, const char *what);
/* SET FEATURES (timing mode) on every online die of the channel, then its controller follows. 0 or -1. */
int nandctl_set_mode(struct nandctl *nc, int interface, int mode);
/* Called by nandctl_set_mode once the dies and the controller are in NV-DDR `mode`, before anything is read
 * in it: the read training of a channel behind a pin PHY (train.c; main.c sets it where the SoC has one).
 * Returns 0, or -1 when the channel cannot read in that mode. NULL: nothing to do. */
extern int (*nandctl_nvddr_hook)(struct nandctl *nc, int mode);
/* Row of (block, page). */
uint32_t nandctl_row(const struct nandctl *nc, uint32_t block, uint32_t page);
/* Page operations; return the result; *status gets the NAND status byte (program, erase). */
int nandctl_read(struct nandctl *nc, int die, uint32_t row, uint8_t *buf, uint32_t len);
int nandctl_program(struct nandctl *nc, int die, uint32_t row, const uint8_t *buf, uint32_t len, uint8_t *status);
int nandctl_erase(struct nandctl *nc, int die, uint32_t block, uint8_t *status);

/* BCH ECC in the controller (SoCs built with it: NANDLAB_CTRL_ECC_T defined). A page's data area is
 * codewords of NANDLAB_CTRL_ECC_DATA_BYTES; the parity goes to the spare (layout in
 * gateware/ecc/bch.py). A completion carries each codeword's count (NANDLAB_CTRL_ECC_COUNT_BITS each) while
 * the part's pages have at most 16 codewords; beyond (NANDLAB_CTRL_ECC_SUMMARY 1: 32 KiB pages, 16 KiB ones)
 * it carries only the summary: bits corrected, the most in one codeword, the uncorrectable codewords
 * (fields NANDLAB_CTRL_ECC_SUMMARY_{CORRECTED,MAX,UNCORRECTABLE}_{OFFSET,SIZE}). */
struct nandctl_ecc {
	int codewords;
	int corrected;                 /* bits corrected, all codewords */
	int max;                       /* most bits corrected in one codeword (Linux's max_bitflips) */
	int uncorrectable;             /* codewords that could not be corrected (their data is as read) */
	uint8_t per_cw[16];            /* per codeword: bits corrected, 0xff uncorrectable; not filled (all 0)
	                                * where the completion carries the summary: read the three above */
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
int nandctl_program_ecc(struct nandctl *nc, int die, uint32_t row, const uint8_t *buf, uint8_t *status);
/* Whole codewords from column 0; *e gets the counts. Result OK, or ECC_UNCORRECTABLE (never silent). */
int nandctl_read_ecc(struct nandctl *nc, int die, uint32_t row, uint8_t *buf, uint32_t len, struct nandctl_ecc *e);
/* Multi-plane with ECC: n pages (2 .. NANDCTL_PLANES_MAX) of one die in one array operation, rows[k] with the
 * data area bufs[k]. The die's plane architecture decides which rows go together: a combination it refuses
 * fails as a whole (NAND_FAIL, *status with FAIL; nothing programmed). Program: PROGRAM_ECC_MULTIPLANE on every
 * row but the last, PROGRAM_ECC on the last (its 10h programs them all; its status covers them all). Read:
 * READ_ECC_MULTIPLANE on every row but the last, READ_ECC_FREE on the last (its 30h reads them all), READ STATUS
 * (a refused read shows FAIL there and nothing else), then READ_ECC_ENH_FREE (06h-E0h) for the others;
 * e[k] gets row k's counts. Returns OK, NAND_FAIL, ECC_UNCORRECTABLE (some page; see e) or the first other
 * result. */
#define NANDCTL_PLANES_MAX 8
int nandctl_program_ecc_planes(struct nandctl *nc, int die, int n, const uint32_t *rows, uint8_t *const *bufs,
                               uint8_t *status);
int nandctl_read_ecc_planes(struct nandctl *nc, int die, int n, const uint32_t *rows, uint8_t *const *bufs,
                            struct nandctl_ecc *e, uint8_t *status);
/* A completion's ECC result (hal_ctrl_cpl.ecc) of `codewords` codewords into *e: per-codeword counts, or the
 * summary (NANDLAB_CTRL_ECC_SUMMARY; per_cw is then not filled). */
void nandctl_ecc_counts(uint64_t raw, int codewords, struct nandctl_ecc *e);

#endif
