/* nandlab firmware shell: commands registered by table from any source file. */
#ifndef NANDLAB_SHELL_H
#define NANDLAB_SHELL_H

#define SHELL_MAX_ARGS 8
#define SHELL_PROMPT   "nandlab> "

struct shell_cmd {
	const char *name;
	const char *usage;  /* arguments, e.g. "<addr> [count]" */
	const char *help;   /* one line */
	int (*fn)(int argc, char **argv); /* returns 0 on success */
};

/* AddressSanitizer (the host fuzz build) pads the globals it instruments, which would break the
 * table's stride: the entries are left out of it. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SHELL_CMD_NO_ASAN __attribute__((no_sanitize("address")))
#endif
#endif
#ifndef SHELL_CMD_NO_ASAN
#define SHELL_CMD_NO_ASAN
#endif

/* Register a command: the linker gathers every entry into one sorted table. */
#define SHELL_COMMAND(cmd_name, cmd_usage, cmd_help, cmd_fn)                          \
	static const struct shell_cmd shell_cmd_##cmd_fn SHELL_CMD_NO_ASAN                 \
	__attribute__((used, section(".shell_cmd." cmd_name))) = {                         \
		.name = cmd_name, .usage = cmd_usage, .help = cmd_help, .fn = cmd_fn,         \
	}

/* Table bounds, from linker.ld. */
extern const struct shell_cmd __shell_cmd_start[];
extern const struct shell_cmd __shell_cmd_end[];

/* Run one command line; returns the command's status, -1 for an unknown command. */
int shell_execute(char *line);
/* Read lines from the console and run them, forever. */
void shell_loop(void);
/* Called while the shell waits for a console character (remote.c serves the host's mailbox). */
extern void (*shell_idle_hook)(void);

/* Parse a number (decimal, 0x hex) of 0..0xffffffff: no sign, nothing after it; returns 0 and sets *value,
 * or -1 and prints an error naming `what`. */
int shell_parse_u32(const char *text, const char *what, unsigned int *value);
/* A command's arguments did not fit: prints "error: usage: <text>" (so a script sees the failure) and
 * returns -1, for `return shell_usage("mr <addr> [count]");`. */
int shell_usage(const char *text);

#endif
