/* Host driver of the multi-plane scheduler (sched.c) for tests/test_sched.py: one command per line on
 * stdin, the answers on stdout.
 *   init <dies> <planes> <blocks> <pages> <bits_per_cell> <subplane_registers> <arch> <depth>  -> ok | error
 *   push <kind> <die> <block> <page> <id>   -> ok | full
 *   pick <die> <max>                        -> group <id> ... (the anchor first; "group" alone: none)
 *   arch <arch>                             -> ok | error
 *   stats                                   -> stats <decisions> <max_queued> <groups of 1> .. <groups of 8> */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "sched.h"

static struct sched s;

int main(void)
{
	char line[256], cmd[16];
	unsigned long a[8];
	void *out[SCHED_MAX_REGS];
	int i, n;
	while (fgets(line, sizeof(line), stdin)) {
		n = sscanf(line, "%15s %lu %lu %lu %lu %lu %lu %lu %lu", cmd, &a[0], &a[1], &a[2], &a[3], &a[4], &a[5],
		           &a[6], &a[7]);
		if (n >= 9 && !strcmp(cmd, "init")) {
			struct sched_geo g = {(uint32_t)a[0], (uint32_t)a[1], (uint32_t)a[2], (uint32_t)a[3], (uint32_t)a[4],
			                      (uint32_t)a[5]};
			puts(sched_init(&s, &g, (int)a[6], (uint32_t)a[7]) ? "error" : "ok");
		} else if (n >= 6 && !strcmp(cmd, "push")) {
			struct sched_op op = {(uint8_t)a[0], (uint32_t)a[1], (uint32_t)a[2], (uint32_t)a[3], (void *)(uintptr_t)a[4]};
			puts(sched_push(&s, &op) ? "full" : "ok");
		} else if (n >= 3 && !strcmp(cmd, "pick")) {
			n = sched_pick(&s, (uint32_t)a[0], out, (int)a[1]);
			printf("group");
			for (i = 0; i < n; i++)
				printf(" %lu", (unsigned long)(uintptr_t)out[i]);
			printf("\n");
		} else if (n >= 2 && !strcmp(cmd, "arch")) {
			puts(sched_set_arch(&s, (int)a[0]) ? "error" : "ok");
		} else if (n >= 1 && !strcmp(cmd, "stats")) {
			struct sched_stats st;
			sched_get_stats(&s, &st);
			printf("stats %lu %lu", (unsigned long)st.decisions, (unsigned long)st.max_queued);
			for (i = 1; i <= SCHED_MAX_REGS; i++)
				printf(" %lu", (unsigned long)st.groups[i]);
			printf("\n");
		} else {
			printf("bad command: %s", line);
			return 2;
		}
	}
	return 0;
}
