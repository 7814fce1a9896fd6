/* nandlab firmware: the channel controller's shell commands (descriptors, DMA, mode switch). */
#include <stdio.h>
#include <string.h>

#include "hal.h"
#include "nandctl.h"
#include "shell.h"

/* The channel the commands other than bringup and status use ('ctl ch <n>'). */
static int ctl_ch;

static int need_up(const struct nandctl *nc)
{
	if (!nc->up) {
		if (nc->ch)
			printf("error: channel %d is not up: run 'ctl bringup' first\n", nc->ch);
		else
			printf("error: run 'ctl bringup' first\n");
		return -1;
	}
	return 0;
}

static int parse(int argc, char **argv, int i, const char *what, unsigned int limit, unsigned int *v)
{
	if (argc <= i) {
		printf("error: missing %s\n", what);
		return -1;
	}
	if (shell_parse_u32(argv[i], what, v))
		return -1;
	if (*v >= limit) {
		printf("error: %s %u out of range 0..%u\n", what, *v, limit - 1);
		return -1;
	}
	return 0;
}

static int parse_die(const struct nandctl *nc, int argc, char **argv, int i, unsigned int *die)
{
	if (parse(argc, argv, i, "die", (unsigned int)nc->dies, die))
		return -1;
	if (!(nc->online >> *die & 1)) {
		printf("error: %s was left out at bring-up\n", nandctl_die_name(nc, (int)*die));
		return -1;
	}
	return 0;
}

static void pattern(uint8_t *buf, uint32_t n, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1, i;
	for (i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		buf[i] = (uint8_t)(x >> 16);
	}
}

static void print_ecc(const struct nandctl_ecc *e)
{
	int i;
	printf("  ECC: %d bits corrected, max %d in a codeword, %d uncorrectable; per codeword:", e->corrected, e->max,
	       e->uncorrectable);
	for (i = 0; i < e->codewords && i < (int)sizeof(e->per_cw); i++) {
		if (e->per_cw[i] == 0xff)
			printf(" X");
		else
			printf(" %u", e->per_cw[i]);
	}
	printf("\n");
}

/* Erase a block on every online die, program `pages` pages of patterns, read them back, compare;
 * through the BCH ECC when the controller has it (unless `raw`). */
/* 'ctl ident': RESET, READ ID and the parameter page of every online die in the mode the channel is in. */
static int ctl_ident(struct nandctl *nc)
{
	int die, copy, bad = 0;
	for (die = 0; die < nc->dies; die++) {
		if (!(nc->online >> die & 1))
			continue;
		if (nandctl_identify(nc, die, nandctl_buf[0], &copy, "")) {
			bad++;
			continue;
		}
		printf("%s: RESET, READ ID ONFI, parameter page copy %d (CRC ok) in %s mode %d\n", nandctl_die_name(nc, die),
		       copy < 0 ? 0 : copy, nandctl_interface_name(nc->interface), nc->mode);
	}
	return bad ? -1 : 0;
}

static int ctl_test(struct nandctl *nc, int argc, char **argv)
{
	unsigned int pages = 4, block = 1, die;
	uint32_t len = nc->g.page_bytes, errors = 0, p, i, moved = 0;
	uint64_t t0, cycles_w = 0, cycles_r = 0;
	uint8_t status;
	int res, ecc = nandctl_ecc_present(), corrected = 0, max = 0, uncorrectable = 0;
	struct nandctl_ecc e = {0};
	if (argc >= 5 && !strcmp(argv[4], "raw"))
		ecc = 0;
	if (argc >= 3 && parse(argc, argv, 2, "pages", nc->g.pages_per_block + 1, &pages))
		return -1;
	if (argc >= 4 && parse(argc, argv, 3, "block", nc->g.blocks_per_lun, &block))
		return -1;
	for (die = 0; die < (unsigned int)nc->dies; die++) {
		if (!(nc->online >> die & 1))
			continue;
		res = nandctl_erase(nc, (int)die, block, &status);
		if (res || (status & NANDLAB_ONFI_STATUS_FAIL)) {
			printf("error: %s: erase block %u: %s, status 0x%02x\n", nandctl_die_name(nc, (int)die), block,
			       nandctl_result_name(res), status);
			return -1;
		}
		for (p = 0; p < pages; p++) {
			pattern(nandctl_buf[0], len, (uint32_t)nc->ch << 24 | die << 16 | block << 8 | p);
			t0 = hal_timestamp();
			if (ecc)
				res = nandctl_program_ecc(nc, (int)die, nandctl_row(nc, block, p), nandctl_buf[0], &status);
			else
				res = nandctl_program(nc, (int)die, nandctl_row(nc, block, p), nandctl_buf[0], len, &status);
			cycles_w += hal_timestamp() - t0;
			if (res || (status & NANDLAB_ONFI_STATUS_FAIL)) {
				printf("error: %s page %lu: program: %s, status 0x%02x\n", nandctl_die_name(nc, (int)die),
				       (unsigned long)p, nandctl_result_name(res), status);
				return -1;
			}
			memset(nandctl_buf[1], 0, len);
			t0 = hal_timestamp();
			if (ecc) {
				res = nandctl_read_ecc(nc, (int)die, nandctl_row(nc, block, p), nandctl_buf[1], len, &e);
				corrected += e.corrected;
				uncorrectable += e.uncorrectable;
				if (e.max > max)
					max = e.max;
				if (e.corrected || e.uncorrectable) {
					printf("%s block %u page %lu:", nandctl_die_name(nc, (int)die), block, (unsigned long)p);
					print_ecc(&e);
				}
			} else
				res = nandctl_read(nc, (int)die, nandctl_row(nc, block, p), nandctl_buf[1], len);
			cycles_r += hal_timestamp() - t0;
			if (res && !(ecc && e.uncorrectable)) {
				printf("error: %s page %lu: read: %s\n", nandctl_die_name(nc, (int)die), (unsigned long)p,
				       nandctl_result_name(res));
				return -1;
			}
			for (i = 0; i < len; i++)
				errors += nandctl_buf[0][i] != nandctl_buf[1][i];
			moved += len;
		}
	}
	if (nc->ch)
		printf("ctl test: ch %d, ", nc->ch);
	else
		printf("ctl test: ");
	printf("%s mode %d, %lu bytes written and read back, %lu bytes differ\n", nandctl_interface_name(nc->interface),
	       nc->mode, (unsigned long)moved, (unsigned long)errors);
	if (ecc)
		printf("  ECC (BCH t=%d per %d B): %d bits corrected, max %d in a codeword, %d codewords uncorrectable\n",
		       NANDCTL_ECC_T, NANDCTL_ECC_DATA_BYTES, corrected, max, uncorrectable);
	else
		printf("  no ECC (raw pages)\n");
	if (cycles_w && cycles_r)
		printf("  program %lu KB/s, read %lu KB/s (one page at a time, array times included)\n",
		       (unsigned long)((uint64_t)moved * hal_clock_hz() / cycles_w / 1000),
		       (unsigned long)((uint64_t)moved * hal_clock_hz() / cycles_r / 1000));
	return errors || uncorrectable ? -1 : 0;
}

/* 'ctl planes <die> <block> <page> <block> <page> [...]': erase the blocks, program the pages in one
 * multi-plane operation through the ECC (patterns), read them back in one multi-plane operation and compare.
 * Which pages go together is the die's plane architecture's business ('die arch'): a refused combination is
 * reported as such. */
static int ctl_planes(struct nandctl *nc, int argc, char **argv)
{
	uint32_t rows[NANDCTL_PLANES_MAX], len = nc->g.page_bytes, errors = 0, i;
	uint8_t *wr[NANDCTL_PLANES_MAX], *rd[NANDCTL_PLANES_MAX], status;
	struct nandctl_ecc e[NANDCTL_PLANES_MAX];
	unsigned int die, page, block, fit = NANDCTL_PAGE_MAX / len;
	int n = (argc - 3) / 2, k, res, corrected = 0, uncorrectable = 0;
	if (!nandctl_ecc_present()) {
		printf("error: multi-plane operations with ECC need a controller built with ECC\n");
		return -1;
	}
	if (n < 2 || (argc - 3) % 2)
		return shell_usage("ctl planes <die> <block> <page> <block> <page> [<block> <page> ...]");
	if (fit > NANDCTL_PLANES_MAX)
		fit = NANDCTL_PLANES_MAX;
	if ((unsigned int)n > fit) {
		printf("error: %d pages: at most %u pages of %lu bytes in one operation here\n", n, fit, (unsigned long)len);
		return -1;
	}
	if (parse_die(nc, argc, argv, 2, &die))
		return -1;
	for (k = 0; k < n; k++)
		if (parse(argc, argv, 3 + 2 * k, "block", nc->g.blocks_per_lun, &block) ||
		    parse(argc, argv, 4 + 2 * k, "page", nc->g.pages_per_block, &page))
			return -1;
	for (k = 0; k < n; k++) {
		shell_parse_u32(argv[3 + 2 * k], "block", &block);
		shell_parse_u32(argv[4 + 2 * k], "page", &page);
		res = nandctl_erase(nc, (int)die, block, &status);
		if (res || (status & NANDLAB_ONFI_STATUS_FAIL)) {
			printf("error: %s block %u: erase %s, status 0x%02x\n", nandctl_die_name(nc, (int)die), block,
			       nandctl_result_name(res), status);
			return -1;
		}
		rows[k] = nandctl_row(nc, block, page);
		wr[k] = nandctl_buf[0] + k * len;
		rd[k] = nandctl_buf[1] + k * len;
		pattern(wr[k], len, (uint32_t)nc->ch << 24 | die << 16 | block << 8 | page);
		memset(rd[k], 0, len);
	}
	printf("%s, %d pages: ", nandctl_die_name(nc, (int)die), n);
	res = nandctl_program_ecc_planes(nc, (int)die, n, rows, wr, &status);
	printf("program %s, status 0x%02x", nandctl_result_name(res), status);
	if (res == NANDLAB_CTRL_RESULT_NAND_FAIL) {
		printf("\nerror: the die refused the combination (its plane architecture, or a bad block)\n");
		return -1;
	}
	if (res) {
		printf("\n");
		return -1;
	}
	res = nandctl_read_ecc_planes(nc, (int)die, n, rows, rd, e, &status);
	printf("; read %s, status 0x%02x\n", nandctl_result_name(res), status);
	if (res && res != NANDLAB_CTRL_RESULT_ECC_UNCORRECTABLE)
		return -1;
	for (k = 0; k < n; k++) {
		corrected += e[k].corrected;
		uncorrectable += e[k].uncorrectable;
		for (i = 0; i < len; i++)
			errors += wr[k][i] != rd[k][i];
	}
	printf("ctl planes: %lu bytes written and read back, %lu bytes differ; ECC: %d bits corrected, %d codewords "
	       "uncorrectable\n", (unsigned long)(n * len), (unsigned long)errors, corrected, uncorrectable);
	return errors || uncorrectable ? -1 : 0;
}

/* 'ctl dmasync <die> [bytes]': hal_dma_sync_range against a DMA into lines the data cache holds. The first `bytes`
 * (4..2048, 256 by default) of block 0 page 0, raw, are read once with the whole cache flushed (the reference),
 * then into a buffer the CPU has just filled with their complement and read back (its lines cached): without a
 * sync the buffer still shows the complement (the hazard: a run that sees none proves nothing, and fails), after
 * hal_dma_sync_range every byte is the page's. The reference sits 2 KiB of cache sets away from the buffer. */
static int dmasync_read(struct nandctl *nc, unsigned int die, uint8_t *p, unsigned int n)
{
	struct hal_ctrl_cpl c;
	struct hal_ctrl_desc d = {.op = NANDLAB_CTRL_OP_READ, .way = (uint8_t)die, .row = nandctl_row(nc, 0, 0),
	                          .len = (uint16_t)n, .addr = (uint32_t)(uintptr_t)p};
	int res = nandctl_run(nc, &d, &c);
	if (res)
		printf("error: %s: read: %s\n", nandctl_die_name(nc, (int)die), nandctl_result_name(res));
	return res;
}

static int ctl_dmasync(struct nandctl *nc, int argc, char **argv)
{
	unsigned int die, n = 256, i, stale = 0, wrong = 0;
	uint8_t *p = nandctl_buf[1];
	uint8_t *ref = nandctl_buf[0] + (((uintptr_t)p - 2048 - (uintptr_t)nandctl_buf[0]) & 0xfff);
	volatile const uint8_t *v = p;
	if (parse_die(nc, argc, argv, 2, &die) || (argc >= 4 && parse(argc, argv, 3, "bytes", 2049, &n)))
		return -1;
	if (n < 4 || n % 4) {
		printf("error: bytes: a multiple of 4, 4..2048\n");
		return -1;
	}
	if (dmasync_read(nc, die, p, n))
		return -1;
	hal_dma_sync();
	for (i = 0; i < n; i++)
		ref[i] = p[i];
	for (i = 0; i < n; i++)
		p[i] = (uint8_t)~ref[i];             /* (written through to memory) */
	for (i = 0; i < n; i++)
		stale += v[i];                        /* (the buffer's lines into the cache) */
	if (dmasync_read(nc, die, p, n))
		return -1;
	for (i = stale = 0; i < n; i++)
		stale += v[i] != ref[i];
	hal_dma_sync_range(p, n);
	for (i = 0; i < n; i++)
		wrong += v[i] != ref[i];
	printf("dmasync die=%u bytes=%u stale=%u wrong=%u\n", die, n, stale, wrong);
	return wrong || !stale ? -1 : 0;
}

/* 'ctl features <die>': GET FEATURES of the timing-mode feature in the mode the channel is in (P1: data interface
 * in bits 5:4, timing mode in bits 3:0), the check of a negotiated mode a host makes (nandlab bringup). */
static int ctl_features(struct nandctl *nc, int argc, char **argv)
{
	struct hal_ctrl_cpl c;
	unsigned int die;
	uint8_t *p = nandctl_buf[1];
	int res;
	if (parse_die(nc, argc, argv, 2, &die))
		return -1;
	memset(p, 0xff, 4);
	struct hal_ctrl_desc d = {.op = NANDLAB_CTRL_OP_GET_FEATURES, .way = (uint8_t)die,
	                          .col = NANDLAB_ONFI_FEATURE_TIMING_MODE, .len = 4, .addr = (uint32_t)(uintptr_t)p};
	res = nandctl_run(nc, &d, &c);
	hal_dma_sync();
	printf("features die=%u address=0x%02x result=%s p1=0x%02x p2=0x%02x p3=0x%02x p4=0x%02x\n", die,
	       NANDLAB_ONFI_FEATURE_TIMING_MODE, nandctl_result_name(res), p[0], p[1], p[2], p[3]);
	if (res)
		printf("error: %s: GET FEATURES: %s\n", nandctl_die_name(nc, (int)die), nandctl_result_name(res));
	return res ? -1 : 0;
}

/* 'ctl badblocks [first] [last]': the factory bad-block scan, before anything is written (a program or an
 * erase would destroy a marker): a block whose first page has other than FFh in spare byte 0 is bad (the
 * ONFI marking). One line per die a host parses, the bad blocks listed. */
static int ctl_badblocks(struct nandctl *nc, int argc, char **argv)
{
	unsigned int first = 0, last = nc->g.blocks_per_lun - 1, block, die;
	uint8_t *p = nandctl_buf[1];
	int res, failed = 0, bad;
	if (argc >= 3 && parse(argc, argv, 2, "first block", nc->g.blocks_per_lun, &first))
		return -1;
	if (argc >= 4 && parse(argc, argv, 3, "last block", nc->g.blocks_per_lun, &last))
		return -1;
	if (last < first) {
		printf("error: blocks %u..%u: the last is before the first\n", first, last);
		return -1;
	}
	for (die = 0; die < (unsigned int)nc->dies; die++) {
		if (!(nc->online >> die & 1))
			continue;
		printf("badblocks die=%u first=%u last=%u bad=", die, first, last);
		for (bad = 0, block = first; block <= last; block++) {
			struct hal_ctrl_cpl c;
			struct hal_ctrl_desc d = {.op = NANDLAB_CTRL_OP_READ, .way = (uint8_t)die,
			                          .row = nandctl_row(nc, block, 0), .col = (uint16_t)nc->g.page_bytes, .len = 4,
			                          .addr = (uint32_t)(uintptr_t)p};
			memset(p, 0, 4);
			res = nandctl_run(nc, &d, &c);
			hal_dma_sync();
			if (res) {
				printf("%s%u?", bad++ ? "," : "", block);
				failed++;
			} else if (p[0] != 0xff)
				printf("%s%u", bad++ ? "," : "", block);
		}
		printf("\n");
	}
	if (failed)
		printf("error: %d spare reads failed (marked '?' above)\n", failed);
	return failed ? -1 : 0;
}

static void show_channel(const struct nandctl *nc, int ch)
{
	uint32_t busy, data, bin, bout;
	hal_ctrl_counters(ch, &busy, &data, &bin, &bout);
	if (ch)
		printf("controller ch %d: ", ch);
	else
		printf("controller: ");
	printf("%s, %s mode %d, dies online 0x%lx, in flight 0x%lx\n", nc->up ? "up" : "not brought up",
	       nandctl_interface_name(nc->interface), nc->mode, (unsigned long)nc->online,
	       (unsigned long)hal_ctrl_in_flight(ch));
	printf("  cycles busy %lu, moving data %lu; bytes to NAND %lu, from NAND %lu\n", (unsigned long)busy,
	       (unsigned long)data, (unsigned long)bin, (unsigned long)bout);
	if (nc->late)
		printf("  %lu late completions (descriptors the firmware had given up on)\n", (unsigned long)nc->late);
}

/* 'ctl ch [n]': the channel the page commands, mode and test use. */
static int ctl_select(int argc, char **argv)
{
	int channels = nandctl_channels();
	unsigned int ch;
	if (argc >= 3) {
		if (shell_parse_u32(argv[2], "channel", &ch))
			return -1;
		if (ch >= (unsigned int)channels) {
			printf("error: channel %u out of range 0..%d (this SoC has %d channel%s)\n", ch, channels - 1, channels,
			       channels == 1 ? "" : "s");
			return -1;
		}
		ctl_ch = (int)ch;
	}
	printf("ctl: channel %d of 0..%d, %s\n", ctl_ch, channels - 1,
	       nandctl[ctl_ch].up ? nandctl_interface_name(nandctl[ctl_ch].interface) : "not brought up");
	return 0;
}

static int cmd_ctl(int argc, char **argv)
{
	struct nandctl *nc = &nandctl[ctl_ch];
	unsigned int die, block, page, n, mode;
	uint8_t status;
	int res, ch;
	nc->ch = ctl_ch;               /* (before the first bring-up too) */
	if (!hal_ctrl_present()) {
		printf("error: this SoC has no NAND channel controller\n");
		return -1;
	}
	if (argc < 2) {
		return shell_usage("ctl bringup | ctl ch [n] | ctl mode async|sync|nvddr <0-5> | ctl ident | ctl erase <die> <block> | "
		       "ctl write <die> <block> <page> [seed] | ctl read <die> <block> <page> [bytes] | ctl test [pages] [block] [raw] | ctl status\n"
		       "  ctl planes <die> <block> <page> <block> <page> [...] | ctl features <die> | ctl badblocks [first] [last]\n"
		       "  (bringup and status: every channel; the others: the channel 'ctl ch' chose, 0 at first.\n"
		       "   write, read and test go through the BCH ECC when the controller has it; read ... raw: without,\n"
		       "   up to the end of the spare)");
	}
	if (!strcmp(argv[1], "bringup")) {
		int up = nandctl_bringup(1) > 0;
		for (ch = 0; ch < nandctl_channels(); ch++)
			up &= nandctl[ch].up;
		return up ? 0 : -1;
	}
	if (!strcmp(argv[1], "status")) {
		for (ch = 0; ch < nandctl_channels(); ch++)
			show_channel(&nandctl[ch], ch);
		if (nandctl_channels() > 1)
			printf("ctl commands use channel %d ('ctl ch <n>')\n", ctl_ch);
		return 0;
	}
	if (!strcmp(argv[1], "ch"))
		return ctl_select(argc, argv);
	if (need_up(nc))
		return -1;
	if (!strcmp(argv[1], "mode")) {
		int interface;
		if (argc < 4)
			return shell_usage("ctl mode async|sync|nvddr <0-5>");
		if (!strcmp(argv[2], "async"))
			interface = NANDLAB_ONFI_IF_ASYNC_SDR;
		else if (!strcmp(argv[2], "sync"))
			interface = NANDLAB_ONFI_IF_SYNC_SDR;
		else if (!strcmp(argv[2], "nvddr"))
			interface = NANDLAB_ONFI_IF_NVDDR;
		else {
			printf("error: interface '%s' unknown (async, sync, nvddr)\n", argv[2]);
			return -1;
		}
		if (parse(argc, argv, 3, "timing mode", NANDLAB_ONFI_TIMING_MODES, &mode) || nandctl_set_mode(nc, interface, (int)mode))
			return -1;
		if (nc->ch)
			printf("ch %d: ", nc->ch);
		printf("%s mode %u\n", nandctl_interface_name(interface), mode);
		return 0;
	}
	if (!strcmp(argv[1], "test"))
		return ctl_test(nc, argc, argv);
	if (!strcmp(argv[1], "ident"))
		return ctl_ident(nc);
	if (!strcmp(argv[1], "features"))
		return ctl_features(nc, argc, argv);
	if (!strcmp(argv[1], "badblocks"))
		return ctl_badblocks(nc, argc, argv);
	if (!strcmp(argv[1], "dmasync"))
		return ctl_dmasync(nc, argc, argv);
	if (!strcmp(argv[1], "planes"))
		return ctl_planes(nc, argc, argv);
	if (parse_die(nc, argc, argv, 2, &die) || parse(argc, argv, 3, "block", nc->g.blocks_per_lun, &block))
		return -1;
	if (!strcmp(argv[1], "erase")) {
		res = nandctl_erase(nc, (int)die, block, &status);
		printf("%s block %u: erase %s, status 0x%02x\n", nandctl_die_name(nc, (int)die), block, nandctl_result_name(res),
		       status);
		return res || (status & NANDLAB_ONFI_STATUS_FAIL) ? -1 : 0;
	}
	if (parse(argc, argv, 4, "page", nc->g.pages_per_block, &page))
		return -1;
	if (!strcmp(argv[1], "write")) {
		unsigned int seed = 0;
		if (argc >= 6 && shell_parse_u32(argv[5], "seed", &seed))
			return -1;
		pattern(nandctl_buf[0], nc->g.page_bytes, seed);
		if (nandctl_ecc_present())
			res = nandctl_program_ecc(nc, (int)die, nandctl_row(nc, block, page), nandctl_buf[0], &status);
		else
			res = nandctl_program(nc, (int)die, nandctl_row(nc, block, page), nandctl_buf[0], nc->g.page_bytes, &status);
		printf("%s block %u page %u: program %s, status 0x%02x\n", nandctl_die_name(nc, (int)die), block, page,
		       nandctl_result_name(res), status);
		return res || (status & NANDLAB_ONFI_STATUS_FAIL) ? -1 : 0;
	}
	if (!strcmp(argv[1], "read")) {
		unsigned int i;
		n = 64;
		/* (raw: the spare too, e.g. a factory bad-block marker at its byte 0) */
		if (argc >= 6 && parse(argc, argv, 5, "bytes", nc->g.page_bytes + nc->g.spare_bytes + 1, &n))
			return -1;
		n = (n + 3) & ~3u;
		if (nandctl_ecc_present() && !(argc >= 7 && !strcmp(argv[6], "raw"))) {
			/* The whole data area through the decoder; the first n bytes shown. */
			struct nandctl_ecc e;
			res = nandctl_read_ecc(nc, (int)die, nandctl_row(nc, block, page), nandctl_buf[1], nc->g.page_bytes, &e);
			printf("%s block %u page %u: read %s", nandctl_die_name(nc, (int)die), block, page, nandctl_result_name(res));
			for (i = 0; i < n && i < nc->g.page_bytes; i++)
				printf("%s%02x", i % 16 ? " " : "\n  ", nandctl_buf[1][i]);
			printf("\n");
			print_ecc(&e);
			return res ? -1 : 0;
		}
		res = nandctl_read(nc, (int)die, nandctl_row(nc, block, page), nandctl_buf[1], n ? n : 4);
		printf("%s block %u page %u: read %s", nandctl_die_name(nc, (int)die), block, page, nandctl_result_name(res));
		for (i = 0; i < n && !res; i++)
			printf("%s%02x", i % 16 ? " " : "\n  ", nandctl_buf[1][i]);
		printf("\n");
		return res ? -1 : 0;
	}
	printf("error: unknown ctl command '%s'\n", argv[1]);
	return -1;
}
SHELL_COMMAND("ctl", "bringup|ch|mode|ident|erase|write|read|test|planes|features|badblocks|dmasync|status",
              "NAND channel controllers: descriptors, DMA, NV-DDR", cmd_ctl);
