/* libFuzzer target: the firmware shell (line editing, tokenising, number parsing, dispatch) and every
 * command it registers but the FTL's, over the HAL model (hal_host.c). The first byte picks the path:
 *   0: the bytes are typed at the console: shell_readline (backspace, control characters) then
 *      shell_execute, line after line;
 *   1: the bytes are lines given to shell_execute as they are (tabs, bytes over 127, long lines);
 *   2: the bytes are one number for shell_parse_u32, checked against an independent parser.
 * Any abort (ASan, UBSan, a broken HAL rule, a wrong number) is a crash for the fuzzer. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hal_host.h"
#include "../shell.c"          /* its static line editor too */

#define MAX_LINES 16           /* per input: keeps one input's run short */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* The firmware's printf output is formatted (and checked) but not shown, unless asked for. */
	if (!getenv("NANDLAB_FUZZ_VERBOSE") && !freopen("/dev/null", "w", stdout))
		abort();
	return 0;
}

/* The value of `s` as shell_parse_u32 promises to read it (decimal, 0x hex, 0 octal as strtoull's base
 * 0 takes them; digits only, at most 0xffffffff): 0 and *v, or -1 when it must be refused. */
static int expect_u32(const char *s, unsigned int *v)
{
	unsigned long long x = 0;
	unsigned int base = 10;
	const char *p = s;
	if (*p < '0' || *p > '9')
		return -1;
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		base = 16;
		p += 2;
		if (!*p)
			return -1;
	} else if (p[0] == '0') {
		base = 8;
	}
	for (; *p; p++) {
		unsigned int d;
		if (*p >= '0' && *p <= '9')
			d = (unsigned int)(*p - '0');
		else if (*p >= 'a' && *p <= 'f')
			d = (unsigned int)(*p - 'a' + 10);
		else if (*p >= 'A' && *p <= 'F')
			d = (unsigned int)(*p - 'A' + 10);
		else
			return -1;
		if (d >= base)
			return -1;
		x = x * base + d;
		if (x > 0xffffffffull)
			return -1;
	}
	*v = (unsigned int)x;
	return 0;
}

static void check_number(const uint8_t *data, size_t size)
{
	char text[64];
	unsigned int got = 0xdeadbeef, want = 0;
	int rc, expected;
	if (size >= sizeof(text))
		size = sizeof(text) - 1;
	memcpy(text, data, size);
	text[size] = '\0';
	rc = shell_parse_u32(text, "number", &got);
	expected = expect_u32(text, &want);
	if (rc != expected || (rc == 0 && got != want)) {
		fprintf(stderr, "shell_parse_u32(\"%s\") = %d, %u; expected %d, %u\n", text, rc, got, expected, want);
		abort();
	}
	if (rc && got != 0xdeadbeef) {
		fprintf(stderr, "shell_parse_u32(\"%s\") refused the text but wrote the value\n", text);
		abort();
	}
}

static void reset(void)
{
	static char select[] = "ctl ch 0";
	char line[sizeof(select)];
	hal_host_reset();
	memcpy(line, select, sizeof(select));
	shell_execute(line);       /* cmds_ctl.c's channel choice back to 0 */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char line[LINE_MAX];
	int n;
	if (size < 1)
		return 0;
	reset();
	switch (data[0] % 3) {
	case 0:
		hal_host_input(data + 1, size - 1);
		for (n = 0; n < MAX_LINES && hal_host_input_left(); n++) {
			shell_readline(line, sizeof(line));
			shell_execute(line);
		}
		break;
	case 1: {
		/* Lines split at \n, each a fresh heap copy of its exact length (AddressSanitizer sees any read
		 * past its end). */
		size_t at = 1;
		for (n = 0; n < MAX_LINES && at < size; n++) {
			const uint8_t *nl = memchr(data + at, '\n', size - at);
			size_t len = nl ? (size_t)(nl - (data + at)) : size - at;
			char *copy = malloc(len + 1);
			memcpy(copy, data + at, len);
			copy[len] = '\0';
			shell_execute(copy);
			free(copy);
			at += len + 1;
		}
		break;
	}
	default:
		check_number(data + 1, size - 1);
		break;
	}
	fflush(stdout);
	return 0;
}
