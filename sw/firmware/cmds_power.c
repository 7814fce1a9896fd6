/* nandlab firmware power commands: the token ring's policy, TG and alpha, and the current monitor.
 *
 * Token tables come from the host's token compiler (nandlab.tokens), generated into
 * nandlab_tokens.h at firmware build time for the SoC's die part, so firmware and host load the
 * same RTs. Policies, the ring's refusal reasons and the TG / alpha ranges come from soc.h
 * (nandlab.gateware.power.common). The ring refuses (and reports) a configuration the proofs do
 * not cover. */
#include <stdio.h>
#include <string.h>
#include <stdint.h>

#include <generated/soc.h>
#include <generated/nandlab_tokens.h>

#include "hal.h"
#include "power_adapt.h"
#include "shell.h"

#ifndef NANDLAB_POWER_TOPOLOGY
#define NANDLAB_POWER_TOPOLOGY "none"	/* a SoC without dies has no token ring (nandlab sim --dies 0) */
#endif

static const struct hal_names *policies(void)
{
	static struct hal_names t;
	return hal_names(&t, NANDLAB_POWER_POLICIES);
}

static const char *ring_error(unsigned int error)
{
	static struct hal_names t;
	return hal_name(hal_names(&t, NANDLAB_POWER_RING_ERRORS), (int)error);
}

static int need_power(void)
{
	if (hal_power_present())
		return 0;
	printf("error: this SoC has no power ring (no emulated dies)\n");
	return -1;
}

/* A current or budget in I_max / 2^NANDLAB_CURRENT_FRAC_BITS as "units.thousandths". */
static void print_current(uint32_t v)
{
	const uint32_t one = 1u << NANDLAB_CURRENT_FRAC_BITS;
	printf("%lu.%03lu", (unsigned long)(v >> NANDLAB_CURRENT_FRAC_BITS),
	       (unsigned long)(((v & (one - 1)) * 1000) >> NANDLAB_CURRENT_FRAC_BITS));
}

static int power_show(void)
{
	struct hal_power_status s;
	struct hal_power_config c;
	struct hal_monitor m;
	hal_power_status(&s);
	hal_power_requested(&c);
	printf("ring: %s, mode %s, TT %u, packet %u bits, largest RT %u; requested mode %s TG %u alpha %u; "
	       "last apply error: %s\n",
	       s.running ? "running" : "stopped (dies run free)", hal_name(policies(), (int)s.mode), s.tt, s.nbits,
	       s.table_max, hal_name(policies(), (int)c.mode), c.tg, c.alpha, ring_error(s.error));
	hal_monitor_read(&m);
	printf("monitor: windows %lu, violations %lu, max ", (unsigned long)m.windows, (unsigned long)m.violations);
	print_current(m.max);
	printf(" x I_max (%lu/%lu), budget ", (unsigned long)m.max, (unsigned long)(1u << NANDLAB_CURRENT_FRAC_BITS));
	print_current(m.pb);
	printf(" x I_max\n");
	return 0;
}

static int power_nodes(void)
{
	int i;
	for (i = 0; i < hal_power_nodes(); i++) {
		struct hal_power_node n;
		hal_power_node(i, &n);
		printf("node %d: HT %u, UT %u, key %s, sending %u, grants %lu, waited %lu cycles\n", i, n.ht, n.ut,
		       n.key ? "held" : (n.key_used ? "in use" : "-"), n.tx_tokens, (unsigned long)n.grants,
		       (unsigned long)n.waited);
	}
	return 0;
}

/* Each ring's share and use, its exchange node's loans; the global token sum (issue 18 a). */
static int power_rings(void)
{
	uint32_t tokens, cons;
	int k;
	hal_power_tokens(&tokens, &cons);
	printf("rings: %d (%s), tokens %lu, conservation errors %lu\n", hal_power_rings(), NANDLAB_POWER_TOPOLOGY,
	       (unsigned long)tokens, (unsigned long)cons);
	for (k = 0; k < hal_power_rings(); k++) {
		struct hal_power_ring r;
		hal_power_ring(k, &r);
		printf("ring %d: %s, share %u, in use %u, most in use %u, lent %lu, borrowed %lu\n", k,
		       r.running ? "running" : "stopped", r.share, r.ut, r.ut_peak, (unsigned long)r.lent,
		       (unsigned long)r.borrowed);
	}
	return 0;
}

/* Each die's peak current in a phase since the last clear, and the phase (OI); 'clear' restarts them. */
static int power_peaks(int argc, char **argv)
{
	int i;
	if (argc > 2 && strcmp(argv[2], "clear") == 0) {
		hal_power_die_peak_clear();
		printf("die peaks cleared\n");
		return 0;
	}
	for (i = 0; i < hal_power_nodes(); i++) {
		uint32_t cur;
		unsigned int oi;
		hal_power_die_peak(i, &cur, &oi);
		printf("die %d: peak ", i);
		print_current(cur);
		printf(" x I_max in OI 0x%02x", oi);
		hal_power_die_over(i, &cur, &oi);
		if (oi) {
			printf(", most above its RT: ");
			print_current(cur);
			printf(" x I_max in OI 0x%02x", oi);
		}
		printf("\n");
	}
	return 0;
}

/* The compiled token table of `tg` into the ring (the ring checks RT <= TT again on apply). */
static int load_tokens(unsigned int tg)
{
#if NANDLAB_TOKEN_TABLES
	int i;
	_Static_assert(sizeof(nandlab_token_counts) / sizeof(nandlab_token_counts[0]) ==
	               NANDLAB_POWER_TG_MAX - NANDLAB_POWER_TG_MIN + 1, "a token table per TG the ring takes");
	hal_power_table_clear();
	for (i = 0; i < nandlab_token_counts[tg - NANDLAB_POWER_TG_MIN]; i++) {
		const struct token_entry *e = &nandlab_token_tables[tg - NANDLAB_POWER_TG_MIN][i];
		hal_power_table_write(e->oi, e->rt);
	}
	return 0;
#else
	(void)tg;
	printf("error: no token tables in this firmware (SoC without emulated dies)\n");
	return -1;
#endif
}

/* Options after the policy: tg N, alpha N. */
static int parse_options(int argc, char **argv, unsigned int *tg, unsigned int *alpha)
{
	unsigned int v;
	int k;
	for (k = 3; k + 1 < argc; k += 2) {
		if (shell_parse_u32(argv[k + 1], argv[k], &v))
			return -1;
		if (strcmp(argv[k], "tg") == 0)
			*tg = v;
		else if (strcmp(argv[k], "alpha") == 0)
			*alpha = v;
		else {
			printf("error: unknown option '%s' (tg N, alpha N)\n", argv[k]);
			return -1;
		}
	}
	if (k < argc) {
		printf("error: option '%s' needs a value\n", argv[k]);
		return -1;
	}
	if (*tg < NANDLAB_POWER_TG_MIN || *tg > NANDLAB_POWER_TG_MAX) {
		printf("error: TG = %u is out of range: the ring supports TG %d..%d\n", *tg, NANDLAB_POWER_TG_MIN,
		       NANDLAB_POWER_TG_MAX);
		return -1;
	}
	if (*alpha < NANDLAB_POWER_ALPHA_MIN || *alpha > NANDLAB_POWER_ALPHA_MAX) {
		printf("error: alpha = %u is out of range: the ring supports alpha %d..%d\n", *alpha,
		       NANDLAB_POWER_ALPHA_MIN, NANDLAB_POWER_ALPHA_MAX);
		return -1;
	}
	return 0;
}

static int power_set(int argc, char **argv)
{
	unsigned int tg = NANDLAB_POWER_DEFAULT_TG, alpha = NANDLAB_POWER_DEFAULT_ALPHA, tt;
	struct hal_power_status s;
	int mode, i;
	if (argc < 3 || (mode = hal_name_index(policies(), argv[2])) < 0) {
		if (argc < 3)
			printf("error: missing policy (");
		else
			printf("error: unknown policy '%s' (", argv[2]);
		hal_names_print(policies());
		printf(")\n");
		return -1;
	}
	if (parse_options(argc, argv, &tg, &alpha) || load_tokens(tg))
		return -1;
	tt = alpha * ((1u << tg) - 1);
	hal_power_apply((unsigned int)mode, tg, alpha);
	for (i = 0; i < 1000; i++) {
		hal_power_status(&s);
		if (s.error) {
			printf("error: the ring refused the configuration: %s%s\n", ring_error(s.error),
			       s.error == NANDLAB_POWER_ERR_RT && hal_power_rings() > 1 &&
			       strcmp(NANDLAB_POWER_TOPOLOGY, "exchange") == 0 ? " or above a ring's home share (TT / rings)" : "");
			return -1;
		}
		if (s.running && s.mode == (unsigned int)mode && s.tt == tt)
			break;
		hal_delay_ns(1000);
	}
	if (i == 1000) {
		printf("error: the ring did not start the new configuration (dies still busy?)\n");
		return -1;
	}
	power_adapt_reset(tg);
	{
		struct hal_monitor m;
		hal_monitor_read(&m);
		printf("power: %s, TG %u, alpha %u: TT = %u tokens, budget %lu x I_max\n", hal_name(policies(), mode), tg,
		       alpha, tt, (unsigned long)(m.pb >> NANDLAB_CURRENT_FRAC_BITS));
	}
	return 0;
}

static int cmd_power(int argc, char **argv)
{
	if (need_power())
		return -1;
	if (argc < 2 || strcmp(argv[1], "show") == 0)
		return power_show();
	if (strcmp(argv[1], "set") == 0)
		return power_set(argc, argv);
	if (strcmp(argv[1], "nodes") == 0)
		return power_nodes();
	if (strcmp(argv[1], "rings") == 0)
		return power_rings();
	if (strcmp(argv[1], "peaks") == 0)
		return power_peaks(argc, argv);
	if (strcmp(argv[1], "adapt") == 0)
		return power_adapt();
	if (strcmp(argv[1], "clear") == 0) {
		hal_monitor_clear();
		printf("monitor counters cleared\n");
		return 0;
	}
	printf("error: unknown power command '%s' (show, set, nodes, rings, peaks, adapt, clear)\n", argv[1]);
	return -1;
}
SHELL_COMMAND("power", "[show]|set <policy> [tg N] [alpha N]|nodes|rings|peaks [clear]|adapt|clear",
	"Token ring policy and current monitor", cmd_power);
