/* `power adapt`: token tables that follow the dies' real current (issue 18 b, docs/power_deviation.md).
 *
 * The ring's tables are compiled from the part's nominal waveform; a die whose current is higher
 * (process variation, aging) draws more than its phases' RTs pay for. The monitor keeps, per die, where
 * it drew most above what its node's RT pays for since the last clear: that current and its phase's
 * OI (hal_power_die_over, gateware/power/diepeak.py). One step: a die whose current there is above what
 * the phase covers - the larger of the nominal peak and what the RT its node holds pays for,
 * RT x 4096 / (2^TG - 1) - gets that RT re-compiled from the current, rounded up and
 * capped at its ring's TT (its home share with exchange nodes), and the phases before it in its atomic
 * operation raised to as much (the whole operation then waits for the tokens its worst phase needs),
 * written into its own ring node only (hal_power_table_keep). The same rule as the power harness's
 * driver (gateware/power/harness_deviation.h) and the host's PowerControl.adapt (nandlab.control).
 * One phase per die and step: once its RT is raised, the next step sees the die's next largest excess.
 * RTs are only ever raised; `power set` loads the compiled tables again. */
#include <stdio.h>
#include <string.h>

#include <generated/soc.h>
#include <generated/nandlab_tokens.h>

#include "hal.h"
#include "power_adapt.h"

#if NANDLAB_TOKEN_TABLES && defined(NANDLAB_DIES)
#define NODES (NANDLAB_DIES * NANDLAB_CHANNELS)

static unsigned char node_rt[NODES][NANDLAB_ADAPT_PHASES];   /* the RT each node holds, per array phase */
static unsigned int  loaded_tg;                              /* the TG of the table in node_rt (0: none) */

/* The RTs of the compiled table of `tg`, in every node (what `power set` just loaded). */
void power_adapt_reset(unsigned int tg)
{
	const struct token_entry *t = nandlab_token_tables[tg - NANDLAB_POWER_TG_MIN];
	int n = nandlab_token_counts[tg - NANDLAB_POWER_TG_MIN], k, i, d;
	for (k = 0; k < NANDLAB_ADAPT_PHASES; k++) {
		unsigned int rt = 0;
		for (i = 0; i < n; i++)
			if (t[i].oi == nandlab_adapt_phases[k].oi)
				rt = t[i].rt;
		for (d = 0; d < NODES; d++)
			node_rt[d][k] = (unsigned char)rt;
	}
	loaded_tg = tg;
}

static int phase_index(unsigned int oi)
{
	int k;
	for (k = 0; k < NANDLAB_ADAPT_PHASES; k++)
		if (nandlab_adapt_phases[k].oi == oi)
			return k;
	return -1;
}

/* The most tokens a node of `die` may ask for: its ring's TT, or its home share with exchange nodes. */
static unsigned int rt_cap(int die)
{
	struct hal_power_ring r;
	hal_power_ring(hal_power_rings() > 1 ? die / NANDLAB_DIES : 0, &r);
	return r.share;
}

/* Write RT `rt` for OI `oi` into die `die`'s node alone. */
static void write_one(int die, unsigned int oi, unsigned int rt)
{
	hal_power_table_only(die);
	hal_power_table_write(oi, rt);
	hal_power_table_only(-1);
}

int power_adapt(void)
{
	struct hal_power_config c;
	unsigned int den;
	int die, writes = 0, detected = 0;
	hal_power_requested(&c);
	if (loaded_tg != c.tg) {
		printf("error: the ring's tables are not the ones 'power set' loaded for TG %u: run 'power set' first\n", c.tg);
		return -1;
	}
	den = (1u << c.tg) - 1;
	for (die = 0; die < hal_power_nodes() && die < NODES; die++) {
		uint32_t peak;
		unsigned int oi, need, covered, cap;
		int k;
		hal_power_die_over(die, &peak, &oi);
		k = phase_index(oi);
		if (k < 0)
			continue;                       /* not an array phase (the bus, idle) */
		covered = node_rt[die][k] * 4096u / den;
		if (covered < nandlab_adapt_phases[k].peak)
			covered = nandlab_adapt_phases[k].peak;
		printf("die %d: %lu / 4096 x I_max in OI 0x%02x, its table covers %u%s\n", die, (unsigned long)peak, oi,
		       covered, peak <= covered ? "" : ": raise");
		if (peak <= covered)
			continue;
		detected++;
		cap = rt_cap(die);
		need = (unsigned int)((peak * den + 4095) / 4096);
		if (need > cap) {
			printf("die %d: needs %u tokens, more than its ring's %u: capped\n", die, need, cap);
			need = cap;
		}
		for (; k != 0xff; k = nandlab_adapt_phases[k].prev) {
			if (node_rt[die][k] >= need)
				continue;
			printf("die %d: OI 0x%02x RT %u -> %u\n", die, nandlab_adapt_phases[k].oi, node_rt[die][k], need);
			node_rt[die][k] = (unsigned char)need;
			write_one(die, nandlab_adapt_phases[k].oi, need);
			writes++;
		}
	}
	hal_power_die_peak_clear();
	printf("power adapt: %d die(s) above their tables, %d table write(s)\n", detected, writes);
	return 0;
}
#else
void power_adapt_reset(unsigned int tg) { (void)tg; }
int power_adapt(void)
{
	printf("error: no token tables in this firmware (SoC without emulated dies)\n");
	return -1;
}
#endif
