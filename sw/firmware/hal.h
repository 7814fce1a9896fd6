/* nandlab firmware HAL: the one place that touches SoC hardware, through the generated csr.h. */
#ifndef NANDLAB_HAL_H
#define NANDLAB_HAL_H

#include <stdint.h>

struct hal_csr {
	const char *name;
	uint32_t    addr;
	uint8_t     words;    /* 32-bit CSR words, most significant first */
	uint8_t     writable;
};

void     hal_init(void);
/* SoC identifier string (target, git revision, build date). */
void     hal_ident(char *buf, int size);
const char *hal_target(void);
uint32_t hal_clock_hz(void);
/* Cycles since reset, from the NAND time base. */
uint64_t hal_timestamp(void);

/* CSRs by name (table generated from csr.csv at build time). */
const struct hal_csr *hal_csr_find(const char *name);
const struct hal_csr *hal_csr_at(int index); /* NULL past the end */
uint64_t hal_csr_read(const struct hal_csr *csr);
void     hal_csr_write(const struct hal_csr *csr, uint64_t value);

/* Busy-wait (cycles of the NAND time base). */
void     hal_delay_ns(uint32_t ns);

/* NAND bus bit-bang master (bring-up): levels held until the next call. */
int      hal_nand_dies(void);                  /* 0 when the SoC has none */
void     hal_nand_levels(uint32_t ce_mask, int cle, int ale, int we_low, int re_low, int oe);
void     hal_nand_dq(uint8_t value);
uint8_t  hal_nand_dq_in(void);
uint32_t hal_nand_ready(void);                 /* R/B# bits, 1 = ready */

/* NAND channel controllers: descriptors in, completions out, data by DMA (gateware/onfi/controller.py).
 * Channel `ch` (0 .. hal_ctrl_channels() - 1, not checked here) is the CSR block nand_ctrl<ch>
 * (nand_ctrl for 0); each has its own dies, DMA master and interrupt. */
struct hal_ctrl_desc {
	uint8_t  op, way, tag;
	uint32_t row;
	uint16_t col, len;
	uint32_t addr, param;
};
struct hal_ctrl_cpl {
	uint8_t tag, way, result, status;
	uint64_t ecc;        /* READ_ECC: corrected bits per codeword (NANDLAB_CTRL_ECC_COUNT_BITS each) */
};
int      hal_ctrl_channels(void);                /* controllers in the SoC, 0 when it has none */
int      hal_ctrl_present(void);
/* Channel 0's bus: 1 the controller drives it, 0 the bit-bang master (channels 1.. have only their controller). */
void     hal_ctrl_own_bus(int controller);
int      hal_ctrl_submit(int ch, const struct hal_ctrl_desc *d);   /* 0, or -1 when the queue is full */
int      hal_ctrl_complete(int ch, struct hal_ctrl_cpl *c);         /* 1 when a completion was taken */
void     hal_ctrl_mode(int ch, int interface, int timing_mode, uint32_t ways_online);
void     hal_ctrl_geometry(int ch, uint32_t page_total, int page_bits, uint32_t blocks);
uint32_t hal_ctrl_in_flight(int ch);
/* Waiting for a completion: polled (the default: reads the completion CSR until one waits) or by
 * interrupt (the controller's `done` event: without a time limit the CPU reads no CSR while it waits).
 * The mode holds for every channel; each channel's interrupt has its own handler and count. */
int      hal_ctrl_irq_present(void);          /* every controller's interrupt reaches the CPU */
int      hal_ctrl_irq_mode(int on);           /* 1: wait by interrupt, 0: poll; returns the mode set */
int      hal_ctrl_irq_on(void);
uint32_t hal_ctrl_irq_count(int ch);          /* channel ch's interrupts taken since reset */
/* Return once a completion waits on channel ch (0), or -1 after timeout_us microseconds (0: no time limit). */
int      hal_ctrl_wait(int ch, uint32_t timeout_us);
void     hal_ctrl_counters(int ch, uint32_t *busy, uint32_t *data, uint32_t *bytes_in, uint32_t *bytes_out);
/* Before the CPU reads memory a DMA wrote. */
void     hal_dma_sync(void);

#endif
