/* The shell over the host bridge: a mailbox in main RAM that the host (`nandlab ftl remote`,
 * nandlab/remote.py) fills with a command line through litex_server; the shell runs it between
 * console keystrokes and leaves its output and result there. */
#ifndef NANDLAB_REMOTE_H
#define NANDLAB_REMOTE_H

#include <stdint.h>

#define REMOTE_MAGIC    0x626d6c6eu   /* "nlmb" */
#define REMOTE_CMD_MAX  256
#define REMOTE_OUT_MAX  16384

/* Layout shared with the host (nandlab/remote.py): 32-bit little-endian words, then the buffers. */
struct remote_mailbox {
	uint32_t magic;      /* REMOTE_MAGIC once the firmware serves the mailbox */
	uint32_t request;    /* the host's request number: it writes cmd, then increments this */
	uint32_t done;       /* the firmware's: request's number once its output and status are in place */
	int32_t status;      /* the command's result (0: success) */
	uint32_t out_len;    /* bytes of output in out */
	uint32_t out_lost;   /* bytes beyond REMOTE_OUT_MAX, not kept */
	uint32_t cmd_max, out_max;
	char cmd[REMOTE_CMD_MAX];
	char out[REMOTE_OUT_MAX];
};

extern struct remote_mailbox remote_mailbox;

/* Publish the mailbox and let the shell poll it while it waits for the console. */
void remote_init(void);

#endif
