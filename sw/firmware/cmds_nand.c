/* nandlab firmware NAND commands: bring-up of the dies on the channel through the bit-bang master. */
#include <stdio.h>
#include <string.h>

#include <generated/soc.h>

#include "hal.h"
#include "nandctl.h"
#include "onfi.h"
#include "shell.h"

static uint8_t param_buf[NANDLAB_ONFI_PARAM_PAGE_BYTES * ONFI_PARAM_COPIES];

static int parse_die(int argc, char **argv, int *die)
{
	unsigned int d;
	if (argc < 3) {
		printf("error: missing die number (0..%d)\n", hal_nand_dies() - 1);
		return -1;
	}
	if (shell_parse_u32(argv[2], "die", &d))
		return -1;
	if (hal_nand_dies() <= 0 || d >= (unsigned int)hal_nand_dies()) {
		printf("error: die %u out of range 0..%d\n", d, hal_nand_dies() - 1);
		return -1;
	}
	*die = (int)d;
	return 0;
}

static int nand_id(int die)
{
	uint8_t id[5], onfi[4];
	onfi_command(die, NANDLAB_ONFI_CMD_READ_ID);
	onfi_address(die, NANDLAB_ONFI_READ_ID_JEDEC);
	onfi_read(die, id, 5);
	onfi_command(die, NANDLAB_ONFI_CMD_READ_ID);
	onfi_address(die, NANDLAB_ONFI_READ_ID_ONFI);
	onfi_read(die, onfi, 4);
	onfi_release();
	printf("die %d: ID %02x %02x %02x %02x %02x, ONFI signature %s\n", die, id[0], id[1], id[2], id[3], id[4],
	       memcmp(onfi, NANDLAB_ONFI_SIGNATURE, 4) == 0 ? "present" : "absent");
	return memcmp(onfi, NANDLAB_ONFI_SIGNATURE, 4) == 0 ? 0 : -1;
}

/* READ PARAMETER PAGE, copy selection (CRC, fallback, majority) and decoding; returns the copy
 * used (-1: bitwise majority of the copies) or -2 after printing why there is none. */
static int nand_geometry(int die, struct onfi_geometry *g)
{
	int copy;
	memset(param_buf, 0, sizeof(param_buf));    /* (a die that never answers shows no stale page) */
	onfi_command(die, NANDLAB_ONFI_CMD_READ_PARAM_PAGE);
	onfi_address(die, 0x00);   /* the ONFI parameter page */
	if (onfi_wait_ready(die, 100000)) {
		onfi_release();
		printf("error: die %d never became ready after READ PARAMETER PAGE\n", die);
		return -2;
	}
	onfi_read(die, param_buf, sizeof(param_buf));
	onfi_release();
	copy = onfi_param_select(param_buf, ONFI_PARAM_COPIES);
	if (copy == -2) {
		printf("error: die %d: no parameter page copy has a valid signature and CRC\n", die);
		return -2;
	}
	onfi_param_decode(copy >= 0 ? param_buf + copy * NANDLAB_ONFI_PARAM_PAGE_BYTES : param_buf, g);
	return copy;
}

/* 'nand param <die> raw': every copy read, as hex lines a host parses ("param OFFSET: bytes"), whatever
 * their CRCs say (nandlab bringup runs them through the host's checker). */
static void nand_param_raw(void)
{
	unsigned int i;
	for (i = 0; i < sizeof(param_buf); i++) {
		if (i % 32 == 0)
			printf("param %04x:", i);
		printf(" %02x", param_buf[i]);
		if (i % 32 == 31 || i + 1 == sizeof(param_buf))
			printf("\n");
	}
}

static int nand_param(int die, int raw)
{
	struct onfi_geometry g;
	int copy = nand_geometry(die, &g);
	if (raw)
		nand_param_raw();
	if (copy == -2)
		return -1;
	printf("die %d: %s %s, parameter page copy %d (CRC ok)\n", die, g.manufacturer, g.model, copy);
	printf("  page %lu+%lu B, %lu pages/block, %lu blocks/LUN, %u plane(s), %u bit/cell\n",
	       (unsigned long)g.page_bytes, (unsigned long)g.spare_bytes, (unsigned long)g.pages_per_block,
	       (unsigned long)g.blocks_per_lun, g.planes, g.bits_per_cell);
	printf("  address cycles %u column + %u row; tR %u us, tPROG %u us, tBERS %u us\n",
	       g.column_cycles, g.row_cycles, g.t_r_us, g.t_prog_us, g.t_bers_us);
	if (g.small_page_bytes)
		printf("  MPNFM: plane %u has %lu+%u B pages\n", g.small_plane,
		       (unsigned long)g.small_page_bytes, g.small_spare_bytes);
	return 0;
}

/* ERASE of the block at `row` started on a die (its R/B# then goes low). */
static void erase_start(int die, const struct onfi_geometry *g, uint32_t row)
{
	int i;
	onfi_command(die, NANDLAB_ONFI_CMD_ERASE);
	for (i = 0; i < g->row_cycles; i++)
		onfi_address(die, (row >> (8 * i)) & 0xff);
	onfi_command(die, NANDLAB_ONFI_CMD_ERASE_CONFIRM);
}

/* ERASE (60h-D0h) of one block on one die or all dies at once (all start, then all are waited for:
 * their array operations overlap, which is what the power ring and the monitor are about). */
static int nand_erase(int argc, char **argv)
{
	struct onfi_geometry g;
	unsigned int block, page_bits = 0;
	int first, last, die, rc = 0;
	uint32_t row;
	if (argc < 4)
		return shell_usage("nand erase <die>|all <block>");
	if (strcmp(argv[2], "all") == 0) {
		first = 0;
		last = hal_nand_dies() - 1;
	} else {
		if (parse_die(argc, argv, &die))
			return -1;
		first = last = die;
	}
	if (shell_parse_u32(argv[3], "block", &block) || nand_geometry(first, &g) == -2)
		return -1;
	if (block >= g.blocks_per_lun) {
		printf("error: block %u out of range 0..%lu\n", block, (unsigned long)g.blocks_per_lun - 1);
		return -1;
	}
	while ((1u << page_bits) < g.pages_per_block)
		page_bits++;
	row = block << page_bits;
	for (die = first; die <= last; die++) {
		erase_start(die, &g, row);
		onfi_release();
	}
	for (die = first; die <= last; die++) {
		uint8_t st;
		if (onfi_wait_ready(die, 1000000)) {
			printf("error: die %d never became ready after ERASE\n", die);
			rc = -1;
			continue;
		}
		st = onfi_status(die);
		onfi_release();
		printf("die %d: erase block %u: %s (status 0x%02x)\n", die, block,
		       (st & NANDLAB_ONFI_STATUS_FAIL) ? "FAIL" : "ok", st);
		rc |= (st & NANDLAB_ONFI_STATUS_FAIL) ? -1 : 0;
	}
	return rc;
}

/* A mixed workload on every die at once, for the power manager and telemetry: each die erases a
 * block, programs its pages in order (a few data bytes each: the rest of the page stays FFh) and
 * reads pages it has programmed, `read_pct` % of the time; dies are served round robin as R/B#
 * shows them ready, so their array operations overlap. Runs `us` microseconds of SoC time. */
#define WL_MAX_DIES 16
static int nand_workload(int argc, char **argv)
{
	struct onfi_geometry g;
	unsigned int us, read_pct = 30, page_bits = 0;
	uint32_t block[WL_MAX_DIES], page[WL_MAX_DIES], done[WL_MAX_DIES][3];
	uint32_t rng = 12345, busy = 0, failed = 0;
	uint64_t end;
	int dies = hal_nand_dies(), d, i;
	if (argc < 3 || shell_parse_u32(argv[2], "microseconds", &us))
		return -1;
	if (argc >= 4 && (shell_parse_u32(argv[3], "read percentage", &read_pct) || read_pct > 100)) {
		if (read_pct > 100)
			printf("error: read percentage %u is over 100\n", read_pct);
		return -1;
	}
	if (dies > WL_MAX_DIES)
		dies = WL_MAX_DIES;
	if (nand_geometry(0, &g) == -2)
		return -1;
	while ((1u << page_bits) < g.pages_per_block)
		page_bits++;
	memset(done, 0, sizeof(done));
	for (d = 0; d < dies; d++) {
		block[d] = (uint32_t)d % g.blocks_per_lun;
		page[d] = 0;
	}
	end = hal_timestamp() + (uint64_t)us * (hal_clock_hz() / 1000000);
	while (hal_timestamp() < end) {
		uint32_t ready = hal_nand_ready();
		for (d = 0; d < dies; d++) {
			uint32_t row, op;
			if (!(ready >> d & 1))
				continue;
			if (busy >> d & 1) {           /* its last operation is over: check its status */
				uint8_t st = onfi_status(d);
				onfi_release();
				failed += (st & NANDLAB_ONFI_STATUS_FAIL) != 0;
				busy &= ~(1u << d);
			}
			rng = rng * 1103515245u + 12345u;
			if (page[d] == 0)
				op = 2;                    /* erase the block first */
			else if (((rng >> 16) % 100) < read_pct)
				op = 0;
			else
				op = 1;
			if (op == 1 && page[d] >= g.pages_per_block) {     /* block full: next block */
				block[d] = (block[d] + dies) % g.blocks_per_lun;
				page[d] = 0;
				op = 2;
			}
			if (op == 2) {
				erase_start(d, &g, block[d] << page_bits);
				page[d] = 1;               /* page index + 1 from here on */
			} else {
				uint8_t data[4] = {(uint8_t)d, (uint8_t)block[d], (uint8_t)page[d], 0xA5};
				uint32_t programmed = page[d] - 1, p;
				if (op == 0 && programmed == 0)
					op = 1;                /* nothing to read yet */
				p = op == 1 ? programmed : (rng >> 8) % programmed;
				row = (block[d] << page_bits) | p;
				onfi_command(d, op == 1 ? NANDLAB_ONFI_CMD_PROGRAM : NANDLAB_ONFI_CMD_READ);
				for (i = 0; i < g.column_cycles; i++)
					onfi_address(d, 0);
				for (i = 0; i < g.row_cycles; i++)
					onfi_address(d, (row >> (8 * i)) & 0xff);
				if (op == 1) {
					onfi_write(d, data, sizeof(data));
					onfi_command(d, NANDLAB_ONFI_CMD_PROGRAM_CONFIRM);
					page[d]++;
				} else {
					onfi_command(d, NANDLAB_ONFI_CMD_READ_CONFIRM);
				}
			}
			onfi_release();
			busy |= 1u << d;
			done[d][op]++;
		}
	}
	for (d = 0; d < dies; d++)
		onfi_wait_ready(d, 1000000);
	for (d = 0; d < dies; d++)
		printf("die %d: %lu reads, %lu programs, %lu erases\n", d, (unsigned long)done[d][0],
		       (unsigned long)done[d][1], (unsigned long)done[d][2]);
	if (failed)
		printf("error: %lu operations reported FAIL\n", (unsigned long)failed);
	return failed ? -1 : 0;
}

/* The bit-bang master talks async SDR: dies the channel controller switched to another data interface
 * ('ctl bringup' ends in NV-DDR) do not answer it, and would all look absent. */
static int check_async(void)
{
	int ch = hal_nand_socket_in_use() ? hal_ctrl_socket_channel() : 0;
	const struct nandctl *nc = &nandctl[ch < 0 ? 0 : ch];
	if (nc->online && nc->interface != NANDLAB_ONFI_IF_ASYNC_SDR) {
		printf("error: the dies are in %s mode %d (since 'ctl bringup' or 'ctl mode'); the bit-bang master talks "
		       "async SDR only: run 'ctl mode async 0' first\n", nandctl_interface_name(nc->interface), nc->mode);
		return -1;
	}
	return 0;
}

/* 'nand socket [on|off]': the bit-bang commands go to the external socket's chip (on) or to channel 0's dies. */
static int nand_socket(int argc, char **argv)
{
	if (argc >= 3) {
		int on = strcmp(argv[2], "on") == 0;
		if (!on && strcmp(argv[2], "off")) {
			printf("error: nand socket '%s': on or off\n", argv[2]);
			return -1;
		}
		if (hal_nand_use_socket(on)) {
			printf("error: this SoC has no NAND socket (build it with --nand-socket)\n");
			return -1;
		}
	}
	printf("nand commands use %s (%d dies)\n", hal_nand_socket_in_use() ? "the socket" : "channel 0", hal_nand_dies());
	return 0;
}

static int cmd_nand(int argc, char **argv)
{
	int die, i, rc = 0;
	if (hal_nand_dies() == 0) {
		printf("error: this SoC has no NAND dies\n");
		return -1;
	}
	if (argc >= 2 && strcmp(argv[1], "dies") == 0) {
		printf("%d dies on %s\n", hal_nand_dies(), hal_nand_socket_in_use() ? "the socket" : "channel 0");
		return 0;
	}
	if (argc >= 2 && strcmp(argv[1], "socket") == 0)
		return nand_socket(argc, argv);
	if (check_async())
		return -1;
	/* The bit-bang master drives the bus (the dies are in async SDR). */
	hal_ctrl_own_bus(hal_nand_socket_in_use() ? hal_ctrl_socket_channel() : 0, 0);
	if (argc >= 2 && strcmp(argv[1], "scan") == 0) {
		for (i = 0; i < hal_nand_dies(); i++)
			rc |= nand_id(i);
		if (rc)
			printf("error: not every die has an ONFI signature\n");
		return rc;
	}
	if (argc >= 2 && strcmp(argv[1], "erase") == 0)
		return nand_erase(argc, argv);
	if (argc >= 2 && strcmp(argv[1], "workload") == 0)
		return nand_workload(argc, argv);
	if (argc < 2 || (strcmp(argv[1], "id") && strcmp(argv[1], "param") && strcmp(argv[1], "status"))) {
		return shell_usage("nand dies | nand scan | nand id <die> | nand param <die> [raw] | nand status <die> | "
		                   "nand erase <die>|all <block> | nand workload <us> [read%] | nand socket [on|off]");
	}
	if (parse_die(argc, argv, &die))
		return -1;
	if (strcmp(argv[1], "id") == 0) {
		if (nand_id(die)) {
			printf("error: die %d has no ONFI signature\n", die);
			return -1;
		}
		return 0;
	}
	if (strcmp(argv[1], "param") == 0)
		return nand_param(die, argc >= 4 && strcmp(argv[3], "raw") == 0);
	printf("die %d: status 0x%02x\n", die, onfi_status(die));
	onfi_release();
	return 0;
}
SHELL_COMMAND("nand", "dies|scan|id|param|status|erase|workload|socket", "NAND bring-up and workloads (bit-bang)", cmd_nand);
