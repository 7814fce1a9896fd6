/* ONFI protocol over the NAND bus bit-bang master: async SDR cycles with the ONFI minimum delays. */
#include <string.h>

#include <generated/soc.h>

#include "hal.h"
#include "onfi.h"

/* SDR mode 0 (every chip powers up in it): the slowest cycle, safe for any die or chip; the waits
 * twice mode 0's ONFI minima (tWB: its maximum). */
#define T_WC_NS   NANDLAB_ONFI_SDR0_TWC_NS
#define T_WHR_NS  (2 * NANDLAB_ONFI_SDR0_T_WHR_NS)
#define T_ADL_NS  NANDLAB_ONFI_SDR0_T_ADL_NS
#define T_WB_NS   (2 * NANDLAB_ONFI_SDR0_T_WB_NS)
#define T_RR_NS   (2 * NANDLAB_ONFI_SDR0_T_RR_NS)
#define T_RHW_NS  (2 * NANDLAB_ONFI_SDR0_T_RHW_NS)
/* WE# low for half a cycle, and at least tCS: CE# may have fallen with it. */
#define T_WP_NS   (T_WC_NS / 2 > NANDLAB_ONFI_SDR0_T_CS_NS ? T_WC_NS / 2 : NANDLAB_ONFI_SDR0_T_CS_NS)

static void latch(int die, int cle, int ale, uint8_t byte)
{
	uint32_t ce = 1u << die;
	hal_nand_dq(byte);
	hal_nand_levels(ce, cle, ale, 1, 0, 1);  /* WE# low with the byte on DQ */
	hal_delay_ns(T_WP_NS);
	hal_nand_levels(ce, cle, ale, 0, 0, 1);  /* WE# rising edge latches it */
	hal_delay_ns(T_WC_NS / 2);
	hal_nand_levels(ce, 0, 0, 0, 0, 0);
}

void onfi_command(int die, uint8_t cmd)
{
	latch(die, 1, 0, cmd);
}

void onfi_address(int die, uint8_t addr)
{
	latch(die, 0, 1, addr);
}

void onfi_write(int die, const uint8_t *buf, int n)
{
	int i;
	hal_delay_ns(T_ADL_NS);
	for (i = 0; i < n; i++)
		latch(die, 0, 0, buf[i]);
}

void onfi_read(int die, uint8_t *buf, int n)
{
	uint32_t ce = 1u << die;
	int i;
	hal_delay_ns(T_WHR_NS);
	for (i = 0; i < n; i++) {
		hal_nand_levels(ce, 0, 0, 0, 1, 0);  /* RE# falling: the die drives the next byte */
		hal_delay_ns(T_WC_NS / 2);
		buf[i] = hal_nand_dq_in();
		hal_nand_levels(ce, 0, 0, 0, 0, 0);
		hal_delay_ns(T_WC_NS / 2);
	}
	hal_delay_ns(T_RHW_NS);  /* RE# high to the next command or address (tRHW) */
}

int onfi_wait_ready(int die, uint32_t timeout_us)
{
	uint32_t waited = 0;
	hal_delay_ns(T_WB_NS);
	while (!(hal_nand_ready() >> die & 1)) {
		if (waited++ >= timeout_us)
			return -1;
		hal_delay_ns(1000);
	}
	hal_delay_ns(T_RR_NS);
	return 0;
}

uint8_t onfi_status(int die)
{
	uint8_t s;
	onfi_command(die, NANDLAB_ONFI_CMD_READ_STATUS);
	onfi_read(die, &s, 1);
	return s;
}

void onfi_release(void)
{
	hal_nand_levels(0, 0, 0, 0, 0, 0);
}

static uint32_t le32(const uint8_t *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }
static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

uint16_t onfi_crc16(const uint8_t *data, int n)
{
	uint16_t crc = NANDLAB_ONFI_PARAM_CRC_INIT;
	int i, b;
	for (i = 0; i < n; i++) {
		crc ^= (uint16_t)data[i] << 8;
		for (b = 0; b < 8; b++)
			crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ NANDLAB_ONFI_PARAM_CRC_POLY) : (uint16_t)(crc << 1);
	}
	return crc;
}

static int copy_ok(const uint8_t *p)
{
	uint16_t stored = le16(p + NANDLAB_ONFI_PARAM_CRC);
	return memcmp(p + NANDLAB_ONFI_PARAM_SIGNATURE, NANDLAB_ONFI_SIGNATURE, 4) == 0 &&
	       onfi_crc16(p, NANDLAB_ONFI_PARAM_CRC) == stored;
}

int onfi_param_select(uint8_t *copies, int ncopies)
{
	int i;
	for (i = 0; i < ncopies; i++)
		if (copy_ok(copies + i * NANDLAB_ONFI_PARAM_PAGE_BYTES))
			return i;
	if (ncopies >= 3) {
		uint8_t *a = copies, *b = copies + NANDLAB_ONFI_PARAM_PAGE_BYTES, *c = copies + 2 * NANDLAB_ONFI_PARAM_PAGE_BYTES;
		for (i = 0; i < NANDLAB_ONFI_PARAM_PAGE_BYTES; i++)
			a[i] = (uint8_t)((a[i] & b[i]) | (a[i] & c[i]) | (b[i] & c[i]));
		if (copy_ok(a))
			return -1;
	}
	return -2;
}


static void text(char *dst, const uint8_t *src, int n)
{
	memcpy(dst, src, n);
	dst[n] = '\0';
	while (n > 0 && dst[n - 1] == ' ')
		dst[--n] = '\0';
}

void onfi_param_decode(const uint8_t *p, struct onfi_geometry *g)
{
	const uint8_t *mpnfm = p + NANDLAB_ONFI_PARAM_VENDOR_SPECIFIC;
	g->revision        = le16(p + NANDLAB_ONFI_PARAM_REVISION);
	text(g->manufacturer, p + NANDLAB_ONFI_PARAM_MANUFACTURER, sizeof(g->manufacturer) - 1);
	text(g->model, p + NANDLAB_ONFI_PARAM_MODEL, sizeof(g->model) - 1);
	g->page_bytes      = le32(p + NANDLAB_ONFI_PARAM_DATA_BYTES_PER_PAGE);
	g->spare_bytes     = le16(p + NANDLAB_ONFI_PARAM_SPARE_BYTES_PER_PAGE);
	g->pages_per_block = le32(p + NANDLAB_ONFI_PARAM_PAGES_PER_BLOCK);
	g->blocks_per_lun  = le32(p + NANDLAB_ONFI_PARAM_BLOCKS_PER_LUN);
	g->luns            = p[NANDLAB_ONFI_PARAM_LUNS_PER_CE];
	g->row_cycles      = p[NANDLAB_ONFI_PARAM_ADDRESS_CYCLES] & 0x0F;   /* ONFI: row cycles low nibble, column high */
	g->column_cycles   = p[NANDLAB_ONFI_PARAM_ADDRESS_CYCLES] >> 4;
	g->bits_per_cell   = p[NANDLAB_ONFI_PARAM_BITS_PER_CELL];
	/* Byte 113: bits 3:0 the plane (interleaved) address bits, bits 7:4 reserved (nand_model/param_page.py). */
	g->planes          = (uint16_t)(1u << (p[NANDLAB_ONFI_PARAM_PLANE_ADDRESS_BITS] & 0x0F));
	g->t_prog_us       = le16(p + NANDLAB_ONFI_PARAM_T_PROG_US);
	g->t_bers_us       = le16(p + NANDLAB_ONFI_PARAM_T_BERS_US);
	g->t_r_us          = le16(p + NANDLAB_ONFI_PARAM_T_R_US);
	/* nandlab's MPNFM extension in the vendor-specific bytes: signature, small page (4 bytes), its
	 * spare (2), the plane (1): nand_model/param_page.py mpnfm_values(). */
	if (memcmp(mpnfm, NANDLAB_ONFI_MPNFM_SIGNATURE, 4) == 0) {
		g->small_page_bytes  = le32(mpnfm + 4);
		g->small_spare_bytes = le16(mpnfm + 8);
		g->small_plane       = mpnfm[10];
	} else {
		g->small_page_bytes = 0;
		g->small_spare_bytes = 0;
		g->small_plane = 0;
	}
}
