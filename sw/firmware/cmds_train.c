/* nandlab firmware: 'train', read training of the pin PHY's input delays on channel 0 (train.c). */
#include <stdio.h>
#include <string.h>

#include <generated/soc.h>

#include "hal.h"
#include "nandctl.h"
#include "shell.h"
#include "train.h"

static const char *const lanes[TRAIN_LANES] = {"DQ0", "DQ1", "DQ2", "DQ3", "DQ4", "DQ5", "DQ6", "DQ7", "DQS"};

/* 'train show': the kept results, per die and NV-DDR mode. */
static int train_show(void)
{
	int die, mode, b, any = 0;
	for (die = 0; die < hal_ctrl_ways(train_channel_index()) && die < NANDCTL_MAX_DIES; die++)
		for (mode = 0; mode < TRAIN_MODES; mode++) {
			const struct train_result *r = train_result(die, mode);
			if (!r || !r->done)
				continue;
			any = 1;
			printf("die %d NV-DDR mode %d: %s, %lu bit errors verifying;", die, mode, r->ok ? "trained" : "FAILED",
			       (unsigned long)r->verify_errors);
			for (b = 0; b < TRAIN_LANES; b++)
				if (r->lane[b].lo < 0)
					printf(" %s -", lanes[b]);
				else
					printf(" %s %d..%d@%d", lanes[b], r->lane[b].lo, r->lane[b].hi, r->lane[b].tap);
			printf("\n");
		}
	if (!any)
		printf("nothing trained yet\n");
	return 0;
}

/* 'train [DIE|all] [MODE]': NV-DDR MODE (default 5), each die trained, then the lanes at the centre of
 * the windows the dies share. 'train check [DIE] [MODE]': one read at the taps the lanes hold. 'train eye
 * [DIE] [MODE]': the kept sweep, bit errors per lane and tap (for nandlab bringup's eye plots). */
static int cmd_train(int argc, char **argv)
{
	unsigned int die = 0, mode = 5;
	uint32_t mask;
	int first, last, d, fails = 0;
	if (!train_present()) {
		printf("error: this SoC has no pin PHY on channel 0 (the simulator's --nand-pin-model)\n");
		return -1;
	}
	if (argc >= 2 && !strcmp(argv[1], "show"))
		return train_show();
	if (argc >= 2 && !strcmp(argv[1], "eye")) {
		if (argc >= 3 && shell_parse_u32(argv[2], "die", &die))
			return -1;
		if (argc >= 4 && shell_parse_u32(argv[3], "NV-DDR timing mode", &mode))
			return -1;
		return train_print_eye((int)die, (int)mode);
	}
	if (argc >= 2 && !strcmp(argv[1], "write")) {
		unsigned int block;
		if (argc != 4)
			return shell_usage("train write DIE BLOCK (erases BLOCK)");
		if (shell_parse_u32(argv[2], "die", &die) || shell_parse_u32(argv[3], "block", &block))
			return -1;
		if ((int)die >= hal_ctrl_ways(train_channel_index())) {
			printf("error: die %u: the channel has %d\n", die, hal_ctrl_ways(train_channel_index()));
			return -1;
		}
		return train_write(&nandctl[train_channel_index()], (int)die, block);
	}
	if (argc >= 2 && !strcmp(argv[1], "check")) {
		if (argc >= 3 && shell_parse_u32(argv[2], "die", &die))
			return -1;
		if (argc >= 4 && shell_parse_u32(argv[3], "NV-DDR timing mode", &mode))
			return -1;
		nandctl[train_channel_index()].ch = train_channel_index();
		return train_check(&nandctl[train_channel_index()], (int)die, (int)mode);
	}
	if (argc > 3)
		return shell_usage("train [DIE|all] [MODE] | train check [DIE] [MODE] | train eye [DIE] [MODE] | train show | "
		                   "train write DIE BLOCK");
	if (argc >= 2 && strcmp(argv[1], "all") && shell_parse_u32(argv[1], "die", &die))
		return -1;
	if (argc >= 3 && shell_parse_u32(argv[2], "NV-DDR timing mode", &mode))
		return -1;
	if (mode >= TRAIN_MODES) {
		printf("error: NV-DDR timing mode %u: 0..%d\n", mode, TRAIN_MODES - 1);
		return -1;
	}
	first = last = (int)die;
	if (argc < 2 || !strcmp(argv[1], "all")) {
		first = 0;
		last = hal_ctrl_ways(train_channel_index()) - 1;
	}
	if (last >= hal_ctrl_ways(train_channel_index()) || last >= NANDCTL_MAX_DIES) {
		printf("error: die %d: the channel has %d\n", last, hal_ctrl_ways(train_channel_index()));
		return -1;
	}
	nandctl[train_channel_index()].ch = train_channel_index();
	for (mask = 0, d = first; d <= last; d++) {
		fails += train_die(&nandctl[train_channel_index()], d, (int)mode, 1) != 0;
		mask |= 1u << d;
	}
	hal_ctrl_mode(0, NANDLAB_ONFI_IF_NVDDR, (int)mode, mask);
	if (train_apply((int)mode, mask))
		fails++;
	return fails ? -1 : 0;
}
SHELL_COMMAND("train", "[DIE|all] [MODE] | check|eye [DIE] [MODE] | show | write DIE BLOCK",
              "NV-DDR training: the pin PHY's input delays (read), DQS placement (write)", cmd_train);
