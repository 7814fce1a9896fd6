/* The shell over the host bridge (remote.h). */
#include <stdio.h>
#include <string.h>

#include "hal.h"
#include "remote.h"
#include "shell.h"

/* Main RAM (the host reaches it through the bridge), outside the image: NOLOAD, set at boot. */
struct remote_mailbox remote_mailbox __attribute__((aligned(64), section(".dma")));

static int (*console_put)(char, FILE *);

/* stdout's output while a remote command runs: to the console as always, and into the mailbox. */
static int tee_put(char c, FILE *f)
{
	struct remote_mailbox *m = &remote_mailbox;
	if (m->out_len < REMOTE_OUT_MAX)
		m->out[m->out_len++] = c;
	else
		m->out_lost++;
	return console_put(c, f);
}

static void remote_poll(void)
{
	struct remote_mailbox *m = &remote_mailbox;
	static char line[REMOTE_CMD_MAX];
	hal_dma_sync();                    /* the host writes main RAM behind the data cache */
	uint32_t request = m->request;
	if (request == m->done)
		return;
	memcpy(line, m->cmd, sizeof(line));
	line[sizeof(line) - 1] = '\0';
	m->out_len = m->out_lost = 0;
	printf("%s\n", line);              /* on the console, after its prompt, as if typed */
	console_put = stdout->put;
	stdout->put = tee_put;
	int status = shell_execute(line);
	fflush(stdout);
	stdout->put = console_put;
	m->status = status;
	m->done = request;                 /* last: the host reads the output once it sees this */
	printf("%s", SHELL_PROMPT);
	fflush(stdout);
}

void remote_init(void)
{
	struct remote_mailbox *m = &remote_mailbox;
	memset(m, 0, sizeof(*m) - REMOTE_OUT_MAX);
	m->cmd_max = REMOTE_CMD_MAX;
	m->out_max = REMOTE_OUT_MAX;
	m->magic = REMOTE_MAGIC;
	shell_idle_hook = remote_poll;
}
