/* nandlab firmware: the emulated dies' own controls and counters ('die arch', 'die ops'): the plane
 * architecture each die enforces (CNFM, DW-NFM, SDW-NFM) and the array operations it started, multi-plane
 * ones by page count, as the plane papers measure exploitation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <generated/soc.h>

#include "hal.h"
#include "shell.h"

#ifndef NANDLAB_DIE_TIME_SCALE          /* (a SoC without dies: the commands refuse before using it) */
#define NANDLAB_DIE_TIME_SCALE 1
#endif

static const char *const op_names[HAL_DIE_OPS] = {"read", "program", "erase"};

static const struct hal_names *archs(void)
{
	static struct hal_names t;
	return hal_names(&t, NANDLAB_DIE_ARCHS);
}

/* "die 3" on channel 0, "ch 1 die 3" on the others (as the ctl commands name them). */
static void print_die(int die)
{
	int index, ch = hal_die_channel(die, &index);
	if (ch > 0)
		printf("ch %d die %d", ch, index);
	else
		printf("die %d", die);
}

static int die_arch(int argc, char **argv)
{
	int dies = hal_die_count(), arch, d;
	if (argc >= 3) {
		if ((arch = hal_name_index(archs(), argv[2])) < 0) {
			printf("error: unknown plane architecture '%s' (", argv[2]);
			hal_names_print(archs());
			printf(")\n");
			return -1;
		}
		for (d = 0; d < dies; d++)
			if (hal_die_set_arch(d, arch)) {
				printf("error: die %d does not take architecture %s\n", d, argv[2]);
				return -1;
			}
	}
	for (d = 0; d < dies; d++) {
		print_die(d);
		printf(": %s\n", hal_name(archs(), hal_die_arch(d)));
	}
	if (hal_die_registers() < 2 * NANDLAB_DIE_SUBPLANES)
		printf("(these dies have %d page registers: SDW-NFM runs as DW-NFM without subplane registers)\n",
		       hal_die_registers());
	return 0;
}

/* 'die time-shift [N]': every die's array times divided by 2**N more than the build's time scale. */
static int die_time_shift(int argc, char **argv)
{
	int dies = hal_die_count(), d;
	if (argc >= 3) {
		char *end;
		long n = strtol(argv[2], &end, 0);
		if (*argv[2] == '\0' || *end || n < 0 || n > 20) {
			printf("error: time shift '%s': 0 (the build's array times) .. 20\n", argv[2]);
			return -1;
		}
		for (d = 0; d < dies; d++)
			if (hal_die_set_time_shift(d, (int)n)) {
				printf("error: die %d has no time shift\n", d);
				return -1;
			}
	}
	for (d = 0; d < dies; d++) {
		print_die(d);
		printf(": time shift %d (array times / %lu / 2^%d)\n", hal_die_time_shift(d),
		       (unsigned long)NANDLAB_DIE_TIME_SCALE, hal_die_time_shift(d));
	}
	return 0;
}

/* Per die: operations started, of which multi-plane by page count; then the pages read and programmed
 * in multi-plane operations over all pages (exploitation, per mille). */
static int die_ops(void)
{
	struct hal_die_counts c;
	uint32_t pages[2] = {0, 0}, mp_pages[2] = {0, 0}, multi;
	int dies = hal_die_count(), regs = hal_die_registers(), d, op, n;
	for (d = 0; d < dies; d++) {
		hal_die_counts(d, &c);
		print_die(d);
		printf(":");
		for (op = 0; op < HAL_DIE_OPS; op++) {
			printf(" %s %lu", op_names[op], (unsigned long)c.ops[op]);
			for (multi = 0, n = 2; n <= regs; n++) {
				multi += c.mp[op][n];
				if (c.mp[op][n])
					printf(" %d-page %lu", n, (unsigned long)c.mp[op][n]);
				if (op < 2)
					mp_pages[op] += (uint32_t)n * c.mp[op][n];
			}
			if (op < 2)
				pages[op] += c.ops[op] - multi;
			printf(op < HAL_DIE_OPS - 1 ? ";" : "\n");
		}
	}
	for (op = 0; op < 2; op++) {
		uint32_t all = pages[op] + mp_pages[op];
		printf("%s pages %lu, in multi-plane operations %lu (%lu per mille)\n", op_names[op], (unsigned long)all,
		       (unsigned long)mp_pages[op], (unsigned long)(all ? (uint64_t)mp_pages[op] * 1000 / all : 0));
	}
	return 0;
}

/* 'die stat NAME': counter NAME (as its CSR suffix: viol_t_whr, fail_reason7, ops_read, ...) of every die,
 * whether the dies keep it in a CSR or in their statistics memory. */
static int die_stat(int argc, char **argv)
{
	uint32_t v;
	int d;
	if (argc < 3)
		return shell_usage("die stat <name>");
	for (d = 0; d < hal_die_count(); d++) {
		if (hal_die_stat(d, argv[2], &v)) {
			printf("error: the dies have no counter '%s'\n", argv[2]);
			return -1;
		}
		print_die(d);
		printf(": %s %lu\n", argv[2], (unsigned long)v);
	}
	return 0;
}

static int cmd_die(int argc, char **argv)
{
	if (hal_die_count() == 0) {
		printf("error: this SoC has no emulated dies\n");
		return -1;
	}
	if (argc >= 2 && !strcmp(argv[1], "arch"))
		return die_arch(argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "ops"))
		return die_ops();
	if (argc >= 2 && !strcmp(argv[1], "time-shift"))
		return die_time_shift(argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "stat"))
		return die_stat(argc, argv);
	return shell_usage("die arch [CNFM|DW-NFM|SDW-NFM] | die ops | die time-shift [N] | die stat <name>");
}
SHELL_COMMAND("die", "arch|ops|time-shift|stat", "Emulated dies: plane architecture, operation counters, time shift",
              cmd_die);
