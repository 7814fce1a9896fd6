/* nandlab firmware: the channel controllers' completion interrupts - mode, counts, and a check that one fires. */
#include <stdio.h>
#include <string.h>

#include <generated/soc.h>

#include "hal.h"
#include "nandctl.h"
#include "shell.h"

#define IRQ_TEST_TIMEOUT_US 100000    /* RESET and READ ID take microseconds; the R/B# timeout is 100 ms */

static uint32_t taken(void)
{
	uint32_t n = 0;
	int ch;
	for (ch = 0; ch < hal_ctrl_channels(); ch++)
		n += hal_ctrl_irq_count(ch);
	return n;
}

static void show(void)
{
	int ch;
	printf("irq: controller interrupt %s, completions %s, %lu interrupts taken",
	       hal_ctrl_irq_present() ? "wired" : "absent", hal_ctrl_irq_on() ? "by interrupt" : "polled",
	       (unsigned long)taken());
	if (hal_ctrl_channels() > 1)
		for (ch = 0; ch < hal_ctrl_channels(); ch++)
			printf("%sch %d: %lu", ch ? ", " : " (", ch, (unsigned long)hal_ctrl_irq_count(ch));
	printf("%s\n", hal_ctrl_channels() > 1 ? ")" : "");
}

static uint8_t id_buf[64] __attribute__((aligned(64), section(".dma")));

/* One descriptor on channel ch, waited for in the current mode; returns its result, or <0 when nothing completed. */
static int run(int ch, uint8_t op, unsigned int die, uint16_t col, uint16_t len, struct hal_ctrl_cpl *c)
{
	struct hal_ctrl_desc d = {.op = op, .way = (uint8_t)die, .col = col, .len = len,
	                          .addr = (uint32_t)(uintptr_t)id_buf};
	nandctl[ch].ch = ch;
	return nandctl_run_within(&nandctl[ch], &d, c, IRQ_TEST_TIMEOUT_US);
}

/* RESET and READ ID 20h on a die through channel ch's controller, each completion waited for in the
 * current mode. Messages name the channel unless it is 0. */
static int irq_test(unsigned int die, unsigned int ch)
{
	struct hal_ctrl_cpl c;
	uint32_t before;
	char who[24];
	int res;
	if (!hal_ctrl_present()) {
		printf("error: this SoC has no NAND channel controller\n");
		return -1;
	}
	if (ch >= (unsigned int)nandctl_channels()) {
		printf("error: channel %u out of range 0..%d\n", ch, nandctl_channels() - 1);
		return -1;
	}
	if (die >= (unsigned int)hal_nand_dies()) {
		printf("error: die %u out of range 0..%d\n", die, hal_nand_dies() - 1);
		return -1;
	}
	if (ch)
		snprintf(who, sizeof(who), "ch %u die %u", ch, die);
	else
		snprintf(who, sizeof(who), "die %u", die);
	before = hal_ctrl_irq_count((int)ch);
	if (ch == 0)
		hal_ctrl_own_bus(0, 1);
	res = run((int)ch, NANDLAB_CTRL_OP_RESET, die, 0, 0, &c);
	if (res == 0) {
		memset(id_buf, 0, 4);
		res = run((int)ch, NANDLAB_CTRL_OP_READ_ID, die, NANDLAB_ONFI_READ_ID_ONFI, 4, &c);
		hal_dma_sync();
	}
	if (res < 0) {
		printf("error: %s: no completion within %u us (%s)\n", who, IRQ_TEST_TIMEOUT_US,
		       hal_ctrl_irq_on() ? "no interrupt" : "polled");
		return -1;
	}
	printf("%s: RESET, READ ID %s: %02x %02x %02x %02x%s; %lu interrupts during the test\n", who,
	       res ? "failed" : "OK", id_buf[0], id_buf[1], id_buf[2], id_buf[3],
	       memcmp(id_buf, NANDLAB_ONFI_SIGNATURE, 4) ? "" : " (ONFI)",
	       (unsigned long)(hal_ctrl_irq_count((int)ch) - before));
	return res ? -1 : 0;
}

static int cmd_irq(int argc, char **argv)
{
	unsigned int die = 0, ch = 0;
	if (argc == 1) {
		show();
		return 0;
	}
	if (!strcmp(argv[1], "on") || !strcmp(argv[1], "off")) {
		int on = argv[1][1] == 'n';
		if (on && !hal_ctrl_irq_present()) {
			printf("error: the controller's interrupt is not wired in this SoC\n");
			return -1;
		}
		hal_ctrl_irq_mode(on);
		show();
		return 0;
	}
	if (!strcmp(argv[1], "test")) {
		if ((argc > 2 && shell_parse_u32(argv[2], "die", &die)) || (argc > 3 && shell_parse_u32(argv[3], "channel", &ch)))
			return -1;
		return irq_test(die, ch);
	}
	printf("error: usage: irq [on|off|test [die [channel]]]\n");
	return -1;
}
SHELL_COMMAND("irq", "[on|off|test [die [channel]]]", "Controller completions: by interrupt or polled", cmd_irq);
