/* ONFI protocol over the NAND bus bit-bang master: async SDR cycles with the ONFI minimum delays. */
#include <string.h>

#include "hal.h"
#include "onfi.h"

#define T_WC_NS   100   /* SDR mode 0 cycle: the slowest, safe for any die or chip. */
#define T_WHR_NS  120
#define T_ADL_NS  400
#define T_WB_NS   200
#define T_RR_NS   40

static void latch(int die, int cle, int ale, uint8_t byte)
{
	uint32_t ce = 1u << die;
	hal_nand_dq(byte);
	hal_nand_levels(ce, cle, ale, 1, 0, 1);  /* WE# low with the byte on DQ */
	hal_delay_ns(T_WC_NS / 2);
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
	onfi_command(die, 0x70);
	onfi_read(die, &s, 1);
	return s;
}

void onfi_release(void)
{
	hal_nand_levels(0, 0, 0, 0, 0, 0);
}

uint16_t onfi_crc16(const uint8_t *data, int n)
{
	uint16_t crc = 0x4F4E;
	int i, b;
	for (i = 0; i < n; i++) {
		crc ^= (uint16_t)data[i] << 8;
		for (b = 0; b < 8; b++)
			crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x8005) : (uint16_t)(crc << 1);
	}
	return crc;
}

static int copy_ok(const uint8_t *p)
{
	uint16_t stored = (uint16_t)(p[254] | p[255] << 8);
	return memcmp(p, "ONFI", 4) == 0 && onfi_crc16(p, 254) == stored;
}

int onfi_param_select(uint8_t *copies, int ncopies)
{
	int i;
	for (i = 0; i < ncopies; i++)
		if (copy_ok(copies + i * ONFI_PARAM_PAGE_SIZE))
			return i;
	if (ncopies >= 3) {
		uint8_t *a = copies, *b = copies + ONFI_PARAM_PAGE_SIZE, *c = copies + 2 * ONFI_PARAM_PAGE_SIZE;
		for (i = 0; i < ONFI_PARAM_PAGE_SIZE; i++)
			a[i] = (uint8_t)((a[i] & b[i]) | (a[i] & c[i]) | (b[i] & c[i]));
		if (copy_ok(a))
			return -1;
	}
	return -2;
}

static uint32_t le32(const uint8_t *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }
static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

static void text(char *dst, const uint8_t *src, int n)
{
	memcpy(dst, src, n);
	dst[n] = '\0';
	while (n > 0 && dst[n - 1] == ' ')
		dst[--n] = '\0';
}

void onfi_param_decode(const uint8_t *p, struct onfi_geometry *g)
{
	g->revision        = le16(p + 4);
	text(g->manufacturer, p + 32, 12);
	text(g->model, p + 44, 20);
	g->page_bytes      = le32(p + 80);
	g->spare_bytes     = le16(p + 84);
	g->pages_per_block = le32(p + 92);
	g->blocks_per_lun  = le32(p + 96);
	g->luns            = p[100];
	g->row_cycles      = p[101] & 0x0F;
	g->column_cycles   = p[101] >> 4;
	g->bits_per_cell   = p[102];
	g->planes          = (uint8_t)(1u << p[113]);
	g->t_prog_us       = le16(p + 133);
	g->t_bers_us       = le16(p + 135);
	g->t_r_us          = le16(p + 137);
	/* nandlab's MPNFM extension in the vendor-specific bytes: "NLMP", small page, spare, plane. */
	if (memcmp(p + 166, "NLMP", 4) == 0) {
		g->small_page_bytes  = le32(p + 170);
		g->small_spare_bytes = le16(p + 174);
		g->small_plane       = p[176];
	} else {
		g->small_page_bytes = 0;
		g->small_spare_bytes = 0;
		g->small_plane = 0;
	}
}
