/* nandlab firmware shell: line editing, tokenising and dispatch through the command table. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libbase/console.h>

#include "hal.h"
#include "shell.h"

#define LINE_MAX 128

static const struct shell_cmd *shell_find(const char *name)
{
	const struct shell_cmd *cmd;
	for (cmd = __shell_cmd_start; cmd < __shell_cmd_end; cmd++)
		if (strcmp(cmd->name, name) == 0)
			return cmd;
	return NULL;
}

int shell_parse_u32(const char *text, const char *what, unsigned int *value)
{
	char *end;
	unsigned long long v;

	if (text == NULL || *text == '\0') {
		printf("error: missing %s\n", what);
		return -1;
	}
	/* strtoull takes a sign and wraps "-1" to the largest value: only digits here. */
	if (*text < '0' || *text > '9') {
		printf("error: %s '%s' is not a number (0..4294967295, or 0x hex)\n", what, text);
		return -1;
	}
	errno = 0;
	v = strtoull(text, &end, 0);
	if (*end != '\0') {
		printf("error: %s '%s' is not a number (0..4294967295, or 0x hex)\n", what, text);
		return -1;
	}
	if (errno == ERANGE || v > 0xffffffffull) {
		printf("error: %s '%s' is over 32 bits (at most 4294967295 = 0xffffffff)\n", what, text);
		return -1;
	}
	*value = (unsigned int)v;
	return 0;
}

int shell_usage(const char *text)
{
	printf("error: usage: %s\n", text);
	return -1;
}

int shell_execute(char *line)
{
	char *argv[SHELL_MAX_ARGS];
	int argc = 0;
	char *p = line;
	const struct shell_cmd *cmd;

	while (*p) {
		while (*p == ' ' || *p == '\t')
			*p++ = '\0';
		if (*p == '\0')
			break;
		if (argc == SHELL_MAX_ARGS) {
			printf("error: more than %d arguments\n", SHELL_MAX_ARGS - 1);
			return -1;
		}
		argv[argc++] = p;
		while (*p && *p != ' ' && *p != '\t')
			p++;
	}
	if (argc == 0)
		return 0;
	cmd = shell_find(argv[0]);
	if (cmd == NULL) {
		printf("error: unknown command '%s' (type 'help')\n", argv[0]);
		return -1;
	}
	return cmd->fn(argc, argv);
}

void (*shell_idle_hook)(void);

/* Read one line with backspace handling; echoes what it accepts. */
static void shell_readline(char *buf, int size)
{
	int len = 0;
	for (;;) {
		/* Idle: arm, poll the console and the hook's sources, sleep until an event unless one came
		 * since the arm (the UART's and every other interrupt, the host bridge's cycles). */
		while (shell_idle_hook) {
			hal_idle_arm();
			if (readchar_nonblock())
				break;
			shell_idle_hook();
			if (!readchar_nonblock())
				hal_idle_sleep();
		}
		int c = readchar();
		switch (c) {
		case '\r':
		case '\n':
			buf[len] = '\0';
			putchar('\n');
			return;
		case 0x7f:
		case 0x08:
			if (len > 0) {
				len--;
				fputs("\x08 \x08", stdout);
			}
			break;
		default:
			if (c >= ' ' && len < size - 1) {
				buf[len++] = (char)c;
				putchar(c);
			}
			break;
		}
	}
}

void shell_loop(void)
{
	static char line[LINE_MAX];
	for (;;) {
		fputs(SHELL_PROMPT, stdout);
		fflush(stdout);
		shell_readline(line, sizeof(line));
		shell_execute(line);
	}
}

static int cmd_help(int argc, char **argv)
{
	const struct shell_cmd *cmd;
	(void)argc;
	(void)argv;
	printf("Commands:\n");
	for (cmd = __shell_cmd_start; cmd < __shell_cmd_end; cmd++)
		printf("  %-8s %-22s %s\n", cmd->name, cmd->usage, cmd->help);
	return 0;
}
SHELL_COMMAND("help", "", "List the commands", cmd_help);
