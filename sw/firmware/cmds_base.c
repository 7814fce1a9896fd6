/* nandlab firmware base commands: version, CSR access by name, memory read/write, time. */
#include <stdio.h>
#include <string.h>
#include <stdint.h>

#include "hal.h"
#include "shell.h"

static int cmd_version(int argc, char **argv)
{
	char ident[256];
	(void)argc;
	(void)argv;
	hal_ident(ident, sizeof(ident));
	printf("%s\n", ident);
	printf("target: %s, sys_clk: %lu Hz\n", hal_target(), (unsigned long)hal_clock_hz());
	return 0;
}
SHELL_COMMAND("version", "", "SoC identifier, target and clock", cmd_version);

static void print_u64(uint64_t v)
{
	if (v >> 32)
		printf("0x%08lx%08lx", (unsigned long)(v >> 32), (unsigned long)(v & 0xffffffffu));
	else
		printf("0x%08lx", (unsigned long)v);
}

static int cmd_csr(int argc, char **argv)
{
	const struct hal_csr *csr;
	unsigned int value;
	int i;

	if (argc == 2 && strcmp(argv[1], "list") == 0) {
		for (i = 0; (csr = hal_csr_at(i)) != NULL; i++)
			printf("  0x%08lx %-32s %d bit %s\n", (unsigned long)csr->addr, csr->name,
			       csr->words * 32, csr->writable ? "rw" : "ro");
		return 0;
	}
	if (argc < 3 || argc > 4 || (strcmp(argv[1], "read") && strcmp(argv[1], "write"))) {
		return shell_usage("csr list | csr read <name> | csr write <name> <value>");
	}
	csr = hal_csr_find(argv[2]);
	if (csr == NULL) {
		printf("error: no CSR named '%s' (see 'csr list')\n", argv[2]);
		return -1;
	}
	if (strcmp(argv[1], "read") == 0) {
		if (argc != 3)
			return shell_usage("csr read <name>");
		printf("%s = ", csr->name);
		print_u64(hal_csr_read(csr));
		printf("\n");
		return 0;
	}
	if (argc != 4)
		return shell_usage("csr write <name> <value>");
	if (!csr->writable) {
		printf("error: CSR '%s' is read-only\n", csr->name);
		return -1;
	}
	if (shell_parse_u32(argv[3], "value", &value))
		return -1;
	hal_csr_write(csr, value);
	return 0;
}
SHELL_COMMAND("csr", "list|read|write ...", "CSRs by name (from csr.csv)", cmd_csr);

/* The word at `addr`, or -1 after saying that nothing answered there (the bus timed out: LiteX then
 * acks with all ones, which would otherwise pass for data). */
static int read_word(unsigned int addr, uint32_t *value)
{
	uint32_t errors = hal_bus_errors();
	*value = hal_read32(addr);
	if (hal_bus_errors() != errors) {
		printf("\nerror: bus error reading 0x%08x: nothing answered at that address\n", addr);
		return -1;
	}
	return 0;
}

/* Write `count` words of `value` from `addr`; the bus error count is checked every 256 words (not each
 * word: mw also fills memory for the benchmarks), so a write where nothing answers stops soon after. */
static int write_words(unsigned int addr, uint32_t value, unsigned int count)
{
	unsigned int i;
	uint32_t errors = hal_bus_errors();
	for (i = 0; i < count; i++) {
		hal_write32(addr + 4 * i, value);
		/* (writes are posted: the counter's read comes after the write on the bus) */
		if ((i % 256 == 255 || i == count - 1) && hal_bus_errors() != errors) {
			printf("error: bus error writing at or below 0x%08x: nothing answered there\n", addr + 4 * i);
			return -1;
		}
	}
	return 0;
}

/* addr aligned, count 1..limit, and the words do not run past the top of the address space. */
static int check_span(unsigned int addr, unsigned int count, unsigned int limit)
{
	if (addr & 3) {
		printf("error: address 0x%08x is not word aligned\n", addr);
		return -1;
	}
	if (count == 0 || count > limit) {
		printf("error: count %u out of range 1..%u\n", count, limit);
		return -1;
	}
	if (count - 1 > (0xffffffffu - addr) / 4) {
		printf("error: %u words from 0x%08x run past 0xffffffff\n", count, addr);
		return -1;
	}
	return 0;
}

static int cmd_mr(int argc, char **argv)
{
	unsigned int addr, count = 1, i;
	uint32_t v;
	if (argc < 2 || argc > 3)
		return shell_usage("mr <addr> [count]");
	if (shell_parse_u32(argv[1], "address", &addr))
		return -1;
	if (argc == 3 && shell_parse_u32(argv[2], "count", &count))
		return -1;
	if (check_span(addr, count, 256))
		return -1;
	for (i = 0; i < count; i++) {
		if (i % 4 == 0)
			printf("%s0x%08x:", i ? "\n" : "", addr + 4 * i);
		if (read_word(addr + 4 * i, &v))
			return -1;
		printf(" 0x%08lx", (unsigned long)v);
	}
	printf("\n");
	return 0;
}
SHELL_COMMAND("mr", "<addr> [count]", "Read 32-bit words from memory", cmd_mr);

static int cmd_mw(int argc, char **argv)
{
	unsigned int addr, value, count = 1;
	if (argc < 3 || argc > 4)
		return shell_usage("mw <addr> <value> [count]");
	if (shell_parse_u32(argv[1], "address", &addr) || shell_parse_u32(argv[2], "value", &value))
		return -1;
	if (argc == 4 && shell_parse_u32(argv[3], "count", &count))
		return -1;
	if (check_span(addr, count, 0x40000000u))
		return -1;
	return write_words(addr, value, count);
}
SHELL_COMMAND("mw", "<addr> <value> [count]", "Write 32-bit words to memory", cmd_mw);

static int cmd_time(int argc, char **argv)
{
	uint64_t t = hal_timestamp();
	uint32_t hz = hal_clock_hz();
	(void)argc;
	(void)argv;
	printf("cycles: ");
	print_u64(t);
	if (hz >= 1000000u)
		printf(" (%lu us at %lu Hz)", (unsigned long)(t / (hz / 1000000u)), (unsigned long)hz);
	printf("\ncpu slept: %lu cycles (the idle loop's pauses; simulation only)\n", (unsigned long)hal_idle_slept());
	return 0;
}
SHELL_COMMAND("time", "", "Cycles since reset (NAND time base), cycles the CPU slept", cmd_time);
