/* Differential harness of the multi-plane scheduler (sched.c): random geometries, architectures, depths and
 * streams (batched pushes through sched_push_n, single ones through sched_push, picks of random die and max,
 * every 25th stream 60 000 steps long so that the arrival count wraps), every answer printed. Built against
 * two versions of sched.c (sched_diff.sh: the worktree's and a git revision's), whose outputs must be
 * identical when a change is meant to keep the decisions. usage: sched_diff SEED CONFIGS */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "sched.h"

static uint64_t rs;
static uint32_t rnd(void) { rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17; return (uint32_t)(rs >> 11); }
static uint32_t rn(uint32_t n) { return n ? rnd() % n : 0; }
static struct sched s;

int main(int argc, char **argv)
{
	uint64_t seed = strtoull(argv[1], 0, 0);
	int configs = atoi(argv[2]);
	unsigned long picks = 0;
	for (int c = 0; c < configs; c++) {
		rs = seed * 0x9E3779B97F4A7C15ull + (uint64_t)c * 7919 + 1;
		for (int k = 0; k < 4; k++) rnd();
		struct sched_geo g;
		static const uint32_t bl[] = {4, 8, 12, 16, 64, 100, 1024, 2048, 4096, 65536};
		g.dies = 1 + rn(rn(4) ? 4 : 32);
		g.planes = 1 + rn(2);
		g.subplane_registers = rn(2);
		do g.blocks = bl[rn(10)]; while (g.blocks % g.planes || g.blocks < g.planes * (g.subplane_registers ? 4 : 1));
		g.pages = rn(3) ? 1u << rn(9) : 1 + rn(65536);
		g.bits_per_cell = 1 + rn(3);
		int arch = (int)rn(3);
		uint32_t depth = rn(3) ? 1 + rn(64) : 1 + rn(256);
		int r = sched_init(&s, &g, arch, depth);
		printf("cfg %d %u %u %u %u %u %u %d %u -> %d\n", c, g.dies, g.planes, g.blocks, g.pages, g.bits_per_cell,
		       g.subplane_registers, arch, depth, r);
		if (r) continue;
		uint32_t dies_hot = 1 + rn(g.dies);
		uint32_t blocks_hot = rn(2) ? g.blocks : 1 + rn(g.blocks < 16 ? g.blocks : 16);
		uint32_t steps = c % 25 == 7 ? 60000 : 200 + rn(800), id = 1;   /* some long: the arrival count wraps */
		struct sched_op ops[SCHED_MAX_DEPTH];
		void *out[SCHED_MAX_REGS];
		for (uint32_t t = 0; t < steps; t++) {
			uint32_t what = rn(10);
			if (what < 4) {                  /* a batch through sched_push_n */
				uint32_t n = rn(sched_free(&s) + 1);
				if (n > 12 && rn(2)) n = rn(12);
				for (uint32_t i = 0; i < n; i++) {
					ops[i].kind = (uint8_t)rn(4);
					if (rn(2)) ops[i].kind = (uint8_t)rn(2);
					ops[i].die = (uint8_t)rn(dies_hot);
					ops[i].block = (uint16_t)rn(blocks_hot);
					ops[i].page = (uint16_t)(rn(3) ? rn(g.pages < 8 ? g.pages : 8) : rn(g.pages));
					ops[i].ctx = (void *)(uintptr_t)id++;
				}
				sched_push_n(&s, ops, n);
				printf("pushn %u q %u\n", n, sched_queued(&s, ops[0].die));
			} else if (what < 5) {           /* one through sched_push, sometimes refused */
				struct sched_op op = {(uint8_t)rn(5), (uint8_t)rn(g.dies + 1), (uint16_t)rn(g.blocks + 1),
				                      (uint16_t)rn(g.pages + 1), (void *)(uintptr_t)id++};
				if (op.die >= g.dies && rn(2)) op.die = 0;
				printf("push %d\n", sched_push(&s, &op));
			} else if (what == 9 && rn(20) == 0) {
				printf("arch %d\n", sched_set_arch(&s, (int)rn(4)));
			} else {
				uint32_t die = rn(dies_hot + 1 < g.dies + 1 ? dies_hot + 1 : g.dies + 1);
				int max = rn(4) ? 8 : (int)rn(9);
				int n = sched_pick(&s, die, out, max);
				picks++;
				printf("pick %u %d:", die, n);
				for (int i = 0; i < n; i++)
					printf(" %lu", (unsigned long)(uintptr_t)out[i]);
				printf(" w%d\n", sched_waiting(&s, die < g.dies ? die : 0));
			}
		}
		for (uint32_t d = 0; d < g.dies; d++)
			for (int n; (n = sched_pick(&s, d, out, 8)) > 0; picks++) {
				printf("drain %u %d:", d, n);
				for (int i = 0; i < n; i++)
					printf(" %lu", (unsigned long)(uintptr_t)out[i]);
				printf("\n");
			}
		struct sched_stats st;
		sched_get_stats(&s, &st);
		printf("stats %u %u", st.decisions, st.max_queued);
		for (int i = 1; i <= SCHED_MAX_REGS; i++) printf(" %u", st.groups[i]);
		printf("\n");
	}
	fprintf(stderr, "picks %lu\n", picks);
	return 0;
}
