/* nandlab firmware HAL: the one place that touches SoC hardware, through the generated csr.h. */
#ifndef NANDLAB_HAL_H
#define NANDLAB_HAL_H

#include <stdint.h>

/* Static state too large for the SRAM (8 KiB on boards): in main RAM, not zeroed at start (its code
 * initialises it). */
#ifdef NANDLAB_HOST
#define MAIN_BSS
#else
#define MAIN_BSS __attribute__((section(".main_bss")))
#endif

/* Code that runs between two of the multi-plane scheduler's decisions outside the FTL's phases (the replay driver's
 * loop, its completion and test pattern, the FTL's request entry, the clocks the replay reads, the port's multi-plane
 * groups): at fixed places on the instruction cache's sets that the FTL's phases use anyway and the decision's code
 * does not (linker.ld's .text.drv_hot .. drv_hot5, after the scheduler's stretch), so that what evicts the decision
 * between two decisions is the FTL's own path, not code that moves with the image. Nothing on the host. */
#if defined(__riscv)
#define DRV_HOT  __attribute__((section(".text.drv_hot")))
#define DRV_HOT2 __attribute__((section(".text.drv_hot2")))
#define DRV_HOT3 __attribute__((section(".text.drv_hot3")))
#define DRV_HOT4 __attribute__((section(".text.drv_hot4")))
#else
#define DRV_HOT
#define DRV_HOT2
#define DRV_HOT3
#define DRV_HOT4
#endif

struct hal_csr {
	const char *name;
	uint32_t    addr;
	uint8_t     words;    /* 32-bit CSR words, most significant first */
	uint8_t     writable;
};

void     hal_init(void);
/* SoC identifier string (target, git revision, build date). */
void     hal_ident(char *buf, int size);
const char *hal_target(void);
uint32_t hal_clock_hz(void);
/* Cycles since reset, from the NAND time base. */
uint64_t hal_timestamp(void);

/* A field of a CSR value, by the layout csr.h generates from the core's CSRFields:
 * HAL_FIELD_GET(POWER_RING_STATUS, MODE, v), HAL_FIELD_PUT(POWER_RING_CONFIG, TG, 4). */
#define HAL_FIELD_MASK(reg, field)   ((1u << CSR_##reg##_##field##_SIZE) - 1)
#define HAL_FIELD_GET(reg, field, v) (((uint32_t)(v) >> CSR_##reg##_##field##_OFFSET) & HAL_FIELD_MASK(reg, field))
#define HAL_FIELD_PUT(reg, field, x) (((uint32_t)(x) & HAL_FIELD_MASK(reg, field)) << CSR_##reg##_##field##_OFFSET)

/* Lists the SoC exports as one string constant (NANDLAB_POWER_POLICIES, NANDLAB_CTRL_RESULTS, ...:
 * the names joined by NANDLAB_LIST_SEPARATOR), split once into a table (hal_names.c: no hardware). */
#define HAL_NAMES_MAX 32
struct hal_names {
	int         n;
	const char *name[HAL_NAMES_MAX];
	char        text[256];
};
/* Split `list` into t (only the first time: t starts zeroed); returns t. */
const struct hal_names *hal_names(struct hal_names *t, const char *list);
const char *hal_name(const struct hal_names *t, int index);        /* "?" out of range */
int      hal_name_index(const struct hal_names *t, const char *name);  /* -1: not in the list */
void     hal_names_print(const struct hal_names *t);                 /* "a, b, c" (empty names left out) */

/* CSRs by name (table generated from csr.csv at build time). */
const struct hal_csr *hal_csr_find(const char *name);
const struct hal_csr *hal_csr_at(int index); /* NULL past the end */
uint64_t hal_csr_read(const struct hal_csr *csr);
void     hal_csr_write(const struct hal_csr *csr, uint64_t value);

/* A 32-bit word of the address space (mr, mw). The host build of the firmware (NANDLAB_HOST: the fuzz
 * targets in fuzz/) has no such address space: its HAL stub serves these two. */
#ifdef NANDLAB_HOST
uint32_t hal_read32(uint32_t addr);
void     hal_write32(uint32_t addr, uint32_t value);
#else
static inline uint32_t hal_read32(uint32_t addr) { return *(volatile uint32_t *)(uintptr_t)addr; }
static inline void hal_write32(uint32_t addr, uint32_t value) { *(volatile uint32_t *)(uintptr_t)addr = value; }
#endif

/* Bus accesses nothing answered (LiteX's bus timeout acks them with all ones): a running count, so that
 * an access is checked by reading it before and after. 0 on SoCs without the counter. */
uint32_t hal_bus_errors(void);
/* The CPU's bus counters (gateware/common/busperf.py): cycles waiting on its instruction and data
 * buses and words moved, free running; all 0 on a SoC without them. */
struct hal_cpu_perf { uint32_t ibus_busy, ibus_acks, dbus_busy, dbus_acks; };
void hal_cpu_perf(struct hal_cpu_perf *p);

/* The idle loop's sleep (gateware/common/cpuidle.py): hal_idle_arm(), then poll every source, then
 * hal_idle_sleep(), which pauses the CPU until an interrupt or another bus master's cycle unless one came
 * since the arm (simulation: the CPU's clock stops; FPGA targets: returns at once). hal_idle_slept():
 * cycles the CPU's clock was stopped, free running. No-ops, and 0, on a SoC without the block. */
void     hal_idle_arm(void);
void     hal_idle_sleep(void);
uint32_t hal_idle_slept(void);

/* Busy-wait (cycles of the NAND time base). */
void     hal_delay_ns(uint32_t ns);

/* NAND bus bit-bang master (bring-up): levels held until the next call. Channel 0's (the emulated dies), or the
 * external socket's after hal_nand_use_socket(1) (-1: the SoC has no socket). */
int      hal_nand_use_socket(int on);
int      hal_nand_socket_in_use(void);
int      hal_nand_dies(void);                  /* dies (CE# lines) of the master in use, 0 when the SoC has none */
void     hal_nand_levels(uint32_t ce_mask, int cle, int ale, int we_low, int re_low, int oe);
void     hal_nand_dq(uint8_t value);
uint8_t  hal_nand_dq_in(void);
uint32_t hal_nand_ready(void);                 /* R/B# bits, 1 = ready */

/* The emulated dies' plane architecture and operation counters (nand_model/die/core.py). Dies are numbered
 * over every channel, channel 0's first (nand_die<d>, then nand_ch1_die<d>, ...). Through the CSRs by name
 * (hal_die.c), so the host build runs the same code on its CSR store. */
#define HAL_DIE_OPS            3      /* read, program, erase */
#define HAL_DIE_REGISTERS_MAX  8      /* page registers of a die: 2 planes x NANDLAB_DIE_SUBPLANES */
struct hal_die_counts {
	uint32_t ops[HAL_DIE_OPS];                             /* array operations started */
	uint32_t mp[HAL_DIE_OPS][HAL_DIE_REGISTERS_MAX + 1];   /* of those, the n-page ones (n >= 2) */
};
int      hal_die_count(void);                 /* emulated dies with CSRs, over every channel (0: none) */
int      hal_die_channel(int die, int *index);  /* die's channel (-1: no such die), *index its die there */
/* Most pages one operation of a die can take (its page registers); 1 without multi-plane counters. */
int      hal_die_registers(void);
int      hal_die_arch(int die);               /* index into NANDLAB_DIE_ARCHS; -1: no such die */
int      hal_die_set_arch(int die, int arch); /* 0, or -1: no such die / architecture */
/* The die's array times divided by 2**shift more than its build's time scale (the control register's
 * time_scale_shift; simulation and experiments: a long format at full speed, the measurement at the
 * part's own times). */
int      hal_die_time_shift(int die);         /* -1: no such die */
int      hal_die_set_time_shift(int die, int shift);  /* 0, or -1: no such die / shift out of range */
/* MPNFM mode (the die's plane 1 uses the part's small pages): 0/1, or -1 when there is no such die. */
int      hal_die_mpnfm(int die);
int      hal_die_set_mpnfm(int die, int on);
int      hal_die_counts(int die, struct hal_die_counts *c);   /* 0, or -1: no such die */
/* Statistics counter `name` of die `die` (viol_<check>, fail_reason<i>, ops_<op>, mp_<op><n>): 0, or -1. */
int      hal_die_stat(int die, const char *name, uint32_t *value);

/* NAND channel controllers: descriptors in, completions out, data by DMA (gateware/onfi/controller.py).
 * Channel `ch` (0 .. hal_ctrl_channels() - 1, not checked here) is the CSR block nand_ctrl<ch>
 * (nand_ctrl for 0); each has its own dies, DMA master and interrupt. */
struct hal_ctrl_desc {
	uint8_t  op, way, tag;
	uint8_t  small;      /* MPNFM: the ECC operation is on a small page (controllers built with SMALL) */
	uint32_t row;
	uint16_t col, len;
	uint32_t addr, param;
};
struct hal_ctrl_cpl {
	uint8_t tag, way, result, status;
	uint64_t ecc;        /* READ_ECC: corrected bits per codeword (NANDLAB_CTRL_ECC_COUNT_BITS each) */
};
int      hal_ctrl_channels(void);                /* controllers in the SoC, 0 when it has none */
int      hal_ctrl_present(void);
/* Channel `ch`'s bus: 1 its controller drives it, 0 its bit-bang master (channel 0, whose dies the bit-bang
 * commands reach, and the external socket; other channels have only their controller). */
void     hal_ctrl_own_bus(int ch, int controller);
/* The channel of the external NAND socket (SoCs built with --nand-socket: the last channel), else -1. */
int      hal_ctrl_socket_channel(void);
/* Ways (CE# lines) of channel `ch`: the emulated dies per channel, or the socket's targets. */
int      hal_ctrl_ways(int ch);
int      hal_ctrl_submit(int ch, const struct hal_ctrl_desc *d);   /* 0, or -1 when the queue is full */
int      hal_ctrl_complete(int ch, struct hal_ctrl_cpl *c);         /* 1 when a completion was taken */
/* The same in parts, for the FTL port's per-page path: a page operation's descriptor (column 0, large
 * page) from registers; the completion at the queue's head (1 if one waits), its ECC counts (only READ_ECC
 * has any: a program's completion skips their CSR reads), and its removal from the queue. */
int      hal_ctrl_submit_page(int ch, int op, int way, int tag, uint32_t row, uint32_t len, uint32_t addr, uint32_t param);
int      hal_ctrl_cpl_peek(int ch, struct hal_ctrl_cpl *c);
void     hal_ctrl_cpl_ecc(int ch, struct hal_ctrl_cpl *c);
void     hal_ctrl_cpl_pop(int ch);
void     hal_ctrl_mode(int ch, int interface, int timing_mode, uint32_t ways_online);
/* NV-DDR data input: DQS edge a phase later in bytes of an even number of phases (the write training's choice;
 * kept across hal_ctrl_mode). */
void     hal_ctrl_dqs_late(int ch, int late);
int      hal_ctrl_dqs_late_get(int ch);
void     hal_ctrl_geometry(int ch, uint32_t page_total, int page_bits, uint32_t blocks);
uint32_t hal_ctrl_in_flight(int ch);
/* Waiting for a completion: polled (the default: reads the completion CSR until one waits) or by
 * interrupt (the controller's `done` event: without a time limit the CPU reads no CSR while it waits).
 * The mode holds for every channel; each channel's interrupt has its own handler and count. */
int      hal_ctrl_irq_present(void);          /* every controller's interrupt reaches the CPU */
int      hal_ctrl_irq_mode(int on);           /* 1: wait by interrupt, 0: poll; returns the mode set */
int      hal_ctrl_irq_on(void);
uint32_t hal_ctrl_irq_count(int ch);          /* channel ch's interrupts taken since reset */
/* Return once a completion waits on channel ch (0), or -1 after timeout_us microseconds. */
int      hal_ctrl_wait(int ch, uint32_t timeout_us);
void     hal_ctrl_counters(int ch, uint32_t *busy, uint32_t *data, uint32_t *bytes_in, uint32_t *bytes_out);
/* R/B# timeout of channel ch's controller (its `timeout` CSR), in microseconds. */
uint32_t hal_ctrl_timeout_us(int ch);
/* Before the CPU reads memory a DMA wrote: the whole data cache (and an L2's) flushed. */
void     hal_dma_sync(void);
/* Before the CPU reads [p, p + bytes) that a DMA wrote: a short range's lines alone are evicted from the
 * data cache (the rest of it stays), a longer one flushes it whole (hal_dma_sync). */
void     hal_dma_sync_range(const void *p, uint32_t bytes);
/* The data cache of LiteX's prebuilt VexRiscv cores (standard and imac alike: GenCoreDefault's 4 KiB, one way,
 * 32-byte lines, write-through). It has no instruction to drop one line: a load of another address on the
 * line's set replaces it. hal_dcache_evict_line is that load, for a p outside the firmware's first 4 KiB of
 * code (where the loads go: never a DMA's target); hal_dma_sync_range checks, this inline one does not. */
#define HAL_DCACHE_BYTES 4096u
#define HAL_DCACHE_LINE  32u
/* Where the eviction loads go: the firmware's first whole 4 KiB of code. */
static inline uintptr_t hal_dcache_evict_base(void)
{
	extern char _ftext[];
	return ((uintptr_t)_ftext + HAL_DCACHE_BYTES - 1) & ~(uintptr_t)(HAL_DCACHE_BYTES - 1);
}
static inline void hal_dcache_evict_line(const void *p)
{
	(void)*(volatile const uint32_t *)(hal_dcache_evict_base() + ((uintptr_t)p & (HAL_DCACHE_BYTES - HAL_DCACHE_LINE)));
}

/* Power ring (gateware/power/ring.py), current monitor (monitor.py) and telemetry
 * (gateware/telemetry/telemetry.py), in hal_power.c. A SoC without emulated dies has none of them:
 * hal_power_present() / hal_telemetry_present() say so; the other calls then do nothing and read zeros. */
struct hal_power_status { unsigned int running, error, mode, tt, nbits, table_max; };
struct hal_power_config { unsigned int mode, tg, alpha, pause; };
struct hal_power_node   { unsigned int ht, ut, key, key_used, tx_tokens; uint32_t waited, grants; };
struct hal_monitor      { uint32_t windows, violations, max, pb; };   /* max, pb: I_max / 2^NANDLAB_CURRENT_FRAC_BITS */
int      hal_power_present(void);
void     hal_power_status(struct hal_power_status *s);
void     hal_power_requested(struct hal_power_config *c);   /* the configuration written, applied or not */
/* Every token table entry back to 0; returns once the ring has cleared them. */
void     hal_power_table_clear(void);
void     hal_power_table_write(unsigned int oi, unsigned int rt);
/* Table writes from now on go to ring node `node` alone (the others keep their tables: table_keep);
 * -1: to every node again (the reset state). */
void     hal_power_table_only(int node);
/* Request a configuration and apply it: the ring checks it (error in the status), lets running
 * operations finish, clears and injects TT tokens; poll hal_power_status() for the outcome. */
void     hal_power_apply(unsigned int mode, unsigned int tg, unsigned int alpha);
void     hal_power_node(int node, struct hal_power_node *n);
void     hal_monitor_read(struct hal_monitor *m);
void     hal_monitor_clear(void);
/* The rings over every channel (gateware/power/rings.py): how many, one ring's state (its home share,
 * the tokens its dies use now and at most since the last apply, its exchange node's counters), the
 * global token sum and the cycles it differed from the global TT. Nodes and dies are numbered over
 * all channels (channel x NANDLAB_DIES + die). */
struct hal_power_ring   { unsigned int running, ut, ut_peak, share; uint32_t lent, borrowed; };
int      hal_power_rings(void);
void     hal_power_ring(int ring, struct hal_power_ring *r);
void     hal_power_tokens(uint32_t *tokens, uint32_t *cons_errors);
int      hal_power_nodes(void);
/* Per-die peak current in a phase since the last clear and its OI (gateware/power/diepeak.py). */
void     hal_power_die_peak(int die, uint32_t *current, unsigned int *oi);
/* Where the die drew most above what its ring node's RT pays for (current x (2^TG - 1) > RT x 4096) since
 * the last clear: that current and its OI; both 0 when it never did. */
void     hal_power_die_over(int die, uint32_t *current, unsigned int *oi);
void     hal_power_die_peak_clear(void);

struct hal_telemetry { unsigned int enabled, counting; uint32_t decimation, frame_bytes, seq, sent, dropped; };
enum hal_telemetry_pulse { HAL_TELEMETRY_NONE, HAL_TELEMETRY_CLEAR, HAL_TELEMETRY_RESTART, HAL_TELEMETRY_STOP };
int      hal_telemetry_present(void);
void     hal_telemetry_read(struct hal_telemetry *t);
/* Frames on or off, with at most one pulse: clear the counters, restart a capture (the monitor
 * restarts with it), stop it at the next window. */
void     hal_telemetry_control(int enable, enum hal_telemetry_pulse pulse);
void     hal_telemetry_rate(uint32_t windows_per_frame);
uint32_t hal_telemetry_rate_max(void);
/* Cycles per window of the NAND time base. */
uint32_t hal_timebase_window(void);

#endif
