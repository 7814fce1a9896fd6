/* nandlab firmware HAL: the emulated dies' plane architecture and operation counters (hal.h), through
 * the CSRs by name (nand_die<d>_control, _ops_<op>, _mp_<op><n>; nand_ch<k>_die<d>_... on channel k; or,
 * dies with their statistics in one memory, _stats_index / _ready / _value): no csr.h, so the host build
 * (fuzz targets) runs this file on its CSR store. */
#include <stdio.h>
#include <string.h>

#include <generated/soc.h>

#include "hal.h"

static const char *const op_names[HAL_DIE_OPS] = {"read", "program", "erase"};

/* Die `die` over every channel: channel 0's are nand_die<d>, channel k's nand_ch<k>_die<d>. */
static int per_channel = -1, channels;

static const struct hal_csr *csr_of(int ch, int d, const char *reg)
{
	char name[48];
	if (ch)
		snprintf(name, sizeof(name), "nand_ch%d_die%d_%s", ch, d, reg);
	else
		snprintf(name, sizeof(name), "nand_die%d_%s", d, reg);
	return hal_csr_find(name);
}

int hal_die_count(void)
{
	if (per_channel < 0) {
		for (per_channel = 0; csr_of(0, per_channel, "control") != NULL; per_channel++)
			;
		for (channels = per_channel ? 1 : 0; csr_of(channels, 0, "control") != NULL; channels++)
			;
	}
	return per_channel * channels;
}

int hal_die_channel(int die, int *index)
{
	if (die < 0 || die >= hal_die_count())
		return -1;
	*index = die % per_channel;
	return die / per_channel;
}

static const struct hal_csr *die_csr(int die, const char *reg)
{
	if (die < 0 || die >= hal_die_count())
		return NULL;
	return csr_of(die / per_channel, die % per_channel, reg);
}

#ifdef NANDLAB_DIE_STATS
/* Dies built with their statistics in one memory (SoC option nand_die_stats="memory"): counter `name`
 * is word hal_name_index(NANDLAB_DIE_STATS, name), read through stats_index / _ready / _value. */
static int stats_index(const char *name)
{
	static struct hal_names t;
	return hal_name_index(hal_names(&t, NANDLAB_DIE_STATS), name);
}

static int stats_read(int die, int index, uint32_t *value)
{
	const struct hal_csr *sel = die_csr(die, "stats_index"), *ready = die_csr(die, "stats_ready"),
	                     *val = die_csr(die, "stats_value");
	int tries;
	if (index < 0 || sel == NULL || ready == NULL || val == NULL)
		return -1;
	hal_csr_write(sel, (uint64_t)index);
	/* The die serves the read within one pass over its counters (a few dozen cycles). */
	for (tries = 0; tries < 1000; tries++)
		if (hal_csr_read(ready)) {
			*value = (uint32_t)hal_csr_read(val);
			return 0;
		}
	return -1;
}
#endif

int hal_die_stat(int die, const char *name, uint32_t *value)
{
	char reg[32];
	const struct hal_csr *csr;
	if (die < 0 || die >= hal_die_count())
		return -1;
	snprintf(reg, sizeof(reg), "%s", name);
	if ((csr = die_csr(die, reg)) != NULL) {
		*value = (uint32_t)hal_csr_read(csr);
		return 0;
	}
#ifdef NANDLAB_DIE_STATS
	return stats_read(die, stats_index(name), value);
#else
	return -1;
#endif
}

/* Whether the dies count operations of `name` (a counter the first die has). */
static int has_stat(const char *name)
{
	if (die_csr(0, name) != NULL)
		return 1;
#ifdef NANDLAB_DIE_STATS
	return stats_index(name) >= 0;
#else
	return 0;
#endif
}

int hal_die_registers(void)
{
	static int n = 0;
	char reg[24];
	if (!n)
		for (n = 1; n < HAL_DIE_REGISTERS_MAX; n++) {
			snprintf(reg, sizeof(reg), "mp_read%d", n + 1);
			if (!has_stat(reg))
				break;
		}
	return n;
}

/* A field of die `die`'s control register: read (value < 0) or written. */
static int control_field(int die, int offset, int size, int value)
{
	const struct hal_csr *csr = die_csr(die, "control");
	uint32_t mask = ((1u << size) - 1) << offset, v;
	if (csr == NULL || (value >= 0 && (uint32_t)value > mask >> offset))
		return -1;
	v = (uint32_t)hal_csr_read(csr);
	if (value < 0)
		return (int)((v & mask) >> offset);
	hal_csr_write(csr, (v & ~mask) | (uint32_t)value << offset);
	return 0;
}

#ifdef NANDLAB_DIE_CONTROL_ARCH_OFFSET
int hal_die_arch(int die)
{
	return control_field(die, NANDLAB_DIE_CONTROL_ARCH_OFFSET, NANDLAB_DIE_CONTROL_ARCH_SIZE, -1);
}

int hal_die_set_arch(int die, int arch)
{
	return arch < 0 ? -1 : control_field(die, NANDLAB_DIE_CONTROL_ARCH_OFFSET, NANDLAB_DIE_CONTROL_ARCH_SIZE, arch);
}

int hal_die_time_shift(int die)
{
	return control_field(die, NANDLAB_DIE_CONTROL_TIME_SHIFT_OFFSET, NANDLAB_DIE_CONTROL_TIME_SHIFT_SIZE, -1);
}

int hal_die_set_time_shift(int die, int shift)
{
	return shift < 0 ? -1 : control_field(die, NANDLAB_DIE_CONTROL_TIME_SHIFT_OFFSET,
	                                      NANDLAB_DIE_CONTROL_TIME_SHIFT_SIZE, shift);
}

int hal_die_mpnfm(int die)
{
	return control_field(die, NANDLAB_DIE_CONTROL_MPNFM_OFFSET, 1, -1);
}

int hal_die_set_mpnfm(int die, int on)
{
	return control_field(die, NANDLAB_DIE_CONTROL_MPNFM_OFFSET, 1, on ? 1 : 0);
}
#else
int hal_die_arch(int die) { (void)die; return -1; }
int hal_die_set_arch(int die, int arch) { (void)die; (void)arch; return -1; }
int hal_die_time_shift(int die) { (void)die; return -1; }
int hal_die_set_time_shift(int die, int shift) { (void)die; (void)shift; return -1; }
int hal_die_mpnfm(int die) { (void)die; return -1; }
int hal_die_set_mpnfm(int die, int on) { (void)die; (void)on; return -1; }
#endif

int hal_die_counts(int die, struct hal_die_counts *c)
{
	char reg[24];
	int op, n;
	memset(c, 0, sizeof(*c));
	if (die < 0 || die >= hal_die_count())
		return -1;
	for (op = 0; op < HAL_DIE_OPS; op++) {
		snprintf(reg, sizeof(reg), "ops_%s", op_names[op]);
		hal_die_stat(die, reg, &c->ops[op]);
		for (n = 2; n <= hal_die_registers(); n++) {
			snprintf(reg, sizeof(reg), "mp_%s%d", op_names[op], n);
			hal_die_stat(die, reg, &c->mp[op][n]);
		}
	}
	return 0;
}
