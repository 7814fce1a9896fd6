/* nandlab firmware power commands: the token ring's policy, TG and alpha, and the current monitor.
 *
 * Token tables come from the host's token compiler (nandlab.tokens), generated into
 * nandlab_tokens.h at firmware build time for the SoC's die part, so firmware and host load the
 * same RTs. The ring refuses (and reports) a configuration the proofs do not cover. */
#include <stdio.h>
#include <string.h>
#include <stdint.h>

#include <generated/nandlab_tokens.h>

#include "hal.h"
#include "shell.h"

static const char *const modes[] = {"npm", "ppm", "mtpm", "kmtpm_atomic", "kmtpm_sub", "mtpm_nokey"};
#define NMODES (int)(sizeof(modes) / sizeof(modes[0]))
static const char *const errors[] = {"none", "TG out of range", "alpha out of range", "a table RT above TT"};

static const struct hal_csr *need(const char *name)
{
	const struct hal_csr *c = hal_csr_find(name);
	if (!c)
		printf("error: this SoC has no %s CSR (no emulated dies?)\n", name);
	return c;
}

#define CFG_MODE(v)   ((v) & 7)
#define CFG_TG(v)     (((v) >> 4) & 7)
#define CFG_ALPHA(v)  (((v) >> 8) & 15)
#define CFG_APPLY     (1u << 16)
#define CFG_CLEAR     (1u << 17)
#define CFG_PAUSE     (1u << 18)

static int power_show(void)
{
	const struct hal_csr *st = need("power_ring_status"), *cfg = need("power_ring_config");
	const struct hal_csr *win = need("power_monitor_windows"), *viol = need("power_monitor_violations");
	const struct hal_csr *max = need("power_monitor_max"), *pb = need("power_monitor_pb");
	uint32_t s, c, m, p;
	if (!st || !cfg || !win || !viol || !max || !pb)
		return -1;
	s = hal_csr_read(st);
	c = hal_csr_read(cfg);
	printf("ring: %s, mode %s, TT %lu, packet %lu bits, largest RT %lu; requested mode %s TG %lu alpha %lu; "
	       "last apply error: %s\n",
	       (s & 1) ? "running" : "stopped (dies run free)", modes[((s >> 4) & 7) % NMODES],
	       (unsigned long)((s >> 8) & 0xff), (unsigned long)((s >> 16) & 0xf), (unsigned long)((s >> 24) & 0xff),
	       CFG_MODE(c) < NMODES ? modes[CFG_MODE(c)] : "?", (unsigned long)CFG_TG(c),
	       (unsigned long)CFG_ALPHA(c), errors[(s >> 1) & 3]);
	m = hal_csr_read(max);
	p = hal_csr_read(pb);
	printf("monitor: windows %lu, violations %lu, max %lu.%03lu x I_max (%lu/4096), budget %lu.%03lu x I_max\n",
	       (unsigned long)hal_csr_read(win), (unsigned long)hal_csr_read(viol),
	       (unsigned long)(m >> 12), (unsigned long)(((m & 4095) * 1000) >> 12), (unsigned long)m,
	       (unsigned long)(p >> 12), (unsigned long)(((p & 4095) * 1000) >> 12));
	return 0;
}

static int power_nodes(void)
{
	const struct hal_csr *sel = need("power_ring_node_sel"), *st = need("power_ring_node_state");
	const struct hal_csr *w = need("power_ring_node_waited"), *g = need("power_ring_node_grants");
	int i;
	if (!sel || !st || !w || !g)
		return -1;
	for (i = 0; i < hal_nand_dies(); i++) {
		uint32_t s;
		hal_csr_write(sel, i);
		s = hal_csr_read(st);
		printf("node %d: HT %lu, UT %lu, key %s, sending %lu, grants %lu, waited %lu cycles\n", i,
		       (unsigned long)(s & 0xff), (unsigned long)((s >> 8) & 0xff),
		       (s >> 16) & 1 ? "held" : ((s >> 17) & 1 ? "in use" : "-"), (unsigned long)(s >> 24),
		       (unsigned long)hal_csr_read(g), (unsigned long)hal_csr_read(w));
	}
	return 0;
}

static int power_set(int argc, char **argv)
{
	const struct hal_csr *cfg = need("power_ring_config"), *tab = need("power_ring_table");
	const struct hal_csr *st = need("power_ring_status");
	unsigned int tg = 4, alpha = 4, v;
	int mode = -1, i, k;
	uint32_t before, s;
	if (!cfg || !tab || !st)
		return -1;
	if (argc < 3) {
		printf("error: missing policy (npm, ppm, mtpm, kmtpm_atomic, kmtpm_sub, mtpm_nokey)\n");
		return -1;
	}
	for (i = 0; i < NMODES; i++)
		if (strcmp(argv[2], modes[i]) == 0)
			mode = i;
	if (mode < 0) {
		printf("error: unknown policy '%s' (npm, ppm, mtpm, kmtpm_atomic, kmtpm_sub, mtpm_nokey)\n", argv[2]);
		return -1;
	}
	for (k = 3; k + 1 < argc; k += 2) {
		if (shell_parse_u32(argv[k + 1], argv[k], &v))
			return -1;
		if (strcmp(argv[k], "tg") == 0)
			tg = v;
		else if (strcmp(argv[k], "alpha") == 0)
			alpha = v;
		else {
			printf("error: unknown option '%s' (tg N, alpha N)\n", argv[k]);
			return -1;
		}
	}
	if (k < argc) {
		printf("error: option '%s' needs a value\n", argv[k]);
		return -1;
	}
#if NANDLAB_TOKEN_TABLES
	if (tg < NANDLAB_TG_MIN || tg > NANDLAB_TG_MAX) {
		printf("error: TG = %u is out of range: the ring supports TG %d..%d\n", tg, NANDLAB_TG_MIN, NANDLAB_TG_MAX);
		return -1;
	}
	if (alpha < 1 || alpha > 8) {
		printf("error: alpha = %u is out of range: the ring supports alpha 1..8\n", alpha);
		return -1;
	}
	/* The compiled table of this TG (the ring checks RT <= TT again on apply). */
	hal_csr_write(cfg, CFG_CLEAR);
	hal_delay_ns(10000);
	for (i = 0; i < nandlab_token_counts[tg - NANDLAB_TG_MIN]; i++) {
		const struct token_entry *e = &nandlab_token_tables[tg - NANDLAB_TG_MIN][i];
		hal_csr_write(tab, ((uint32_t)e->oi << 8) | e->rt);
	}
#else
	printf("error: no token tables in this firmware (SoC without emulated dies)\n");
	return -1;
#endif
	before = hal_csr_read(st);
	(void)before;
	hal_csr_write(cfg, (uint32_t)mode | (tg << 4) | (alpha << 8) | CFG_APPLY);
	for (i = 0; i < 1000; i++) {
		s = hal_csr_read(st);
		if (((s >> 1) & 3) != 0) {
			printf("error: the ring refused the configuration: %s\n", errors[(s >> 1) & 3]);
			return -1;
		}
		if ((s & 1) && ((s >> 4) & 7) == (uint32_t)mode && ((s >> 8) & 0xff) == alpha * ((1u << tg) - 1))
			break;
		hal_delay_ns(1000);
	}
	if (i == 1000) {
		printf("error: the ring did not start the new configuration (dies still busy?)\n");
		return -1;
	}
	printf("power: %s, TG %u, alpha %u: TT = %u tokens, budget %u x I_max\n", modes[mode], tg, alpha,
	       alpha * ((1u << tg) - 1), alpha);
	return 0;
}

static int cmd_power(int argc, char **argv)
{
	const struct hal_csr *clr;
	if (argc < 2 || strcmp(argv[1], "show") == 0)
		return power_show();
	if (strcmp(argv[1], "set") == 0)
		return power_set(argc, argv);
	if (strcmp(argv[1], "nodes") == 0)
		return power_nodes();
	if (strcmp(argv[1], "clear") == 0) {
		if (!(clr = need("power_monitor_clear")))
			return -1;
		hal_csr_write(clr, 1);
		printf("monitor counters cleared\n");
		return 0;
	}
	printf("error: unknown power command '%s' (show, set, nodes, clear)\n", argv[1]);
	return -1;
}
SHELL_COMMAND("power", "[show]|set <policy> [tg N] [alpha N]|nodes|clear",
	"Token ring policy and current monitor", cmd_power);
