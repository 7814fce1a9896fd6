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

#endif
