/* nandlab firmware HAL: the power ring, the current monitor and the telemetry, through csr.h's accessors and field layouts. */
#include <generated/csr.h>
#include <generated/soc.h>

#include "hal.h"

/* The ring and the monitor come with the emulated dies; so does the telemetry. A SoC without dies
 * has neither: this is the one place that knows (the commands ask hal_*_present()). */
#ifdef CSR_POWER_RING_BASE
int hal_power_present(void) { return 1; }

void hal_power_status(struct hal_power_status *s)
{
	uint32_t v = power_ring_status_read();
	s->running   = HAL_FIELD_GET(POWER_RING_STATUS, RUNNING, v);
	s->error     = HAL_FIELD_GET(POWER_RING_STATUS, ERROR, v);
	s->mode      = HAL_FIELD_GET(POWER_RING_STATUS, MODE, v);
	s->tt        = HAL_FIELD_GET(POWER_RING_STATUS, TT, v);
	s->nbits     = HAL_FIELD_GET(POWER_RING_STATUS, NBITS, v);
	s->table_max = HAL_FIELD_GET(POWER_RING_STATUS, TABLE_MAX, v);
}

void hal_power_requested(struct hal_power_config *c)
{
	uint32_t v = power_ring_config_read();
	c->mode  = HAL_FIELD_GET(POWER_RING_CONFIG, MODE, v);
	c->tg    = HAL_FIELD_GET(POWER_RING_CONFIG, TG, v);
	c->alpha = HAL_FIELD_GET(POWER_RING_CONFIG, ALPHA, v);
	c->pause = HAL_FIELD_GET(POWER_RING_CONFIG, PAUSE, v);
}

void hal_power_table_clear(void)
{
	/* The ring zeroes one entry per cycle, an entry per OI: wait twice that. */
	uint32_t cycles = 2u << CSR_POWER_RING_TABLE_OI_SIZE;
	power_ring_config_write(HAL_FIELD_PUT(POWER_RING_CONFIG, TABLE_CLEAR, 1));
	hal_delay_ns((uint32_t)((uint64_t)cycles * 1000000000u / hal_clock_hz()) + 1);
}

void hal_power_table_write(unsigned int oi, unsigned int rt)
{
	power_ring_table_write(HAL_FIELD_PUT(POWER_RING_TABLE, OI, oi) | HAL_FIELD_PUT(POWER_RING_TABLE, RT, rt));
}

/* table_keep has a bit per node, CSR_POWER_RING_TABLE_KEEP_SIZE 32-bit words of it, the most significant
 * word first (LiteX's CSR ordering); the register takes the value at the last word's write. */
void hal_power_table_only(int node)
{
	int w, words = CSR_POWER_RING_TABLE_KEEP_SIZE, nodes = hal_power_nodes();
	for (w = 0; w < words; w++) {
		int lo = (words - 1 - w) * 32, b;
		uint32_t v = 0;
		for (b = 0; b < 32 && lo + b < nodes; b++)
			if (node >= 0 && lo + b != node)
				v |= 1u << b;
		csr_write_simple(v, CSR_POWER_RING_TABLE_KEEP_ADDR + 4 * w);
	}
}

void hal_power_apply(unsigned int mode, unsigned int tg, unsigned int alpha)
{
	power_ring_config_write(HAL_FIELD_PUT(POWER_RING_CONFIG, MODE, mode) | HAL_FIELD_PUT(POWER_RING_CONFIG, TG, tg) |
	                        HAL_FIELD_PUT(POWER_RING_CONFIG, ALPHA, alpha) |
	                        HAL_FIELD_PUT(POWER_RING_CONFIG, APPLY, 1));
}

void hal_power_node(int node, struct hal_power_node *n)
{
	uint32_t v;
	power_ring_node_sel_write((uint32_t)node);
	v = power_ring_node_state_read();
	n->ht        = HAL_FIELD_GET(POWER_RING_NODE_STATE, HT, v);
	n->ut        = HAL_FIELD_GET(POWER_RING_NODE_STATE, UT, v);
	n->key       = HAL_FIELD_GET(POWER_RING_NODE_STATE, KEY, v);
	n->key_used  = HAL_FIELD_GET(POWER_RING_NODE_STATE, KEY_USED, v);
	n->tx_tokens = HAL_FIELD_GET(POWER_RING_NODE_STATE, TX_TOKENS, v);
	n->waited    = power_ring_node_waited_read();
	n->grants    = power_ring_node_grants_read();
}

void hal_monitor_read(struct hal_monitor *m)
{
	m->windows    = power_monitor_windows_read();
	m->violations = power_monitor_violations_read();
	m->max        = power_monitor_max_read();
	m->pb         = power_monitor_pb_read();
}

void hal_monitor_clear(void)
{
	power_monitor_clear_write(1);
}

int hal_power_rings(void) { return NANDLAB_POWER_RINGS; }
int hal_power_nodes(void) { return NANDLAB_DIES * NANDLAB_CHANNELS; }

void hal_power_ring(int ring, struct hal_power_ring *r)
{
	uint32_t v;
	power_ring_ring_sel_write((uint32_t)ring);
	v = power_ring_ring_status_read();
	r->running  = HAL_FIELD_GET(POWER_RING_RING_STATUS, RUNNING, v);
	r->ut       = HAL_FIELD_GET(POWER_RING_RING_STATUS, UT, v);
	r->ut_peak  = HAL_FIELD_GET(POWER_RING_RING_STATUS, UT_PEAK, v);
	r->share    = HAL_FIELD_GET(POWER_RING_RING_STATUS, SHARE, v);
	r->lent     = power_ring_ring_lent_read();
	r->borrowed = power_ring_ring_borrowed_read();
}

void hal_power_tokens(uint32_t *tokens, uint32_t *cons_errors)
{
	*tokens = power_ring_tokens_read();
	*cons_errors = power_ring_cons_errors_read();
}

void hal_power_die_peak(int die, uint32_t *current, unsigned int *oi)
{
	uint32_t v;
	power_monitor_die_sel_write((uint32_t)die);
	v = power_monitor_die_peak_read();
	*current = HAL_FIELD_GET(POWER_MONITOR_DIE_PEAK, CURRENT, v);
	*oi      = HAL_FIELD_GET(POWER_MONITOR_DIE_PEAK, OI, v);
}

void hal_power_die_over(int die, uint32_t *current, unsigned int *oi)
{
	uint32_t v;
	power_monitor_die_sel_write((uint32_t)die);
	v = power_monitor_die_over_peak_read();
	*current = HAL_FIELD_GET(POWER_MONITOR_DIE_OVER_PEAK, CURRENT, v);
	*oi      = HAL_FIELD_GET(POWER_MONITOR_DIE_OVER_PEAK, OI, v);
}

void hal_power_die_peak_clear(void)
{
	power_monitor_die_clear_write(1);
}
#else
int hal_power_present(void) { return 0; }
void hal_power_status(struct hal_power_status *s) { *s = (struct hal_power_status){0}; }
void hal_power_requested(struct hal_power_config *c) { *c = (struct hal_power_config){0}; }
void hal_power_table_clear(void) {}
void hal_power_table_write(unsigned int oi, unsigned int rt) { (void)oi; (void)rt; }
void hal_power_table_only(int node) { (void)node; }
void hal_power_apply(unsigned int mode, unsigned int tg, unsigned int alpha) { (void)mode; (void)tg; (void)alpha; }
void hal_power_node(int node, struct hal_power_node *n) { (void)node; *n = (struct hal_power_node){0}; }
void hal_monitor_read(struct hal_monitor *m) { *m = (struct hal_monitor){0}; }
void hal_monitor_clear(void) {}
int hal_power_rings(void) { return 0; }
int hal_power_nodes(void) { return 0; }
void hal_power_ring(int ring, struct hal_power_ring *r) { (void)ring; *r = (struct hal_power_ring){0}; }
void hal_power_tokens(uint32_t *tokens, uint32_t *cons_errors) { *tokens = *cons_errors = 0; }
void hal_power_die_peak(int die, uint32_t *current, unsigned int *oi) { (void)die; *current = 0; *oi = 0; }
void hal_power_die_over(int die, uint32_t *current, unsigned int *oi) { (void)die; *current = 0; *oi = 0; }
void hal_power_die_peak_clear(void) {}
#endif

#ifdef CSR_TELEMETRY_BASE
int hal_telemetry_present(void) { return 1; }

void hal_telemetry_read(struct hal_telemetry *t)
{
	t->enabled     = HAL_FIELD_GET(TELEMETRY_CONTROL, ENABLE, telemetry_control_read());
	t->counting    = HAL_FIELD_GET(TELEMETRY_STATUS, COUNTING, telemetry_status_read());
	t->decimation  = HAL_FIELD_GET(TELEMETRY_DECIMATION, WINDOWS, telemetry_decimation_read());
	t->frame_bytes = telemetry_frame_bytes_read();
	t->seq         = telemetry_seq_read();
	t->sent        = telemetry_sent_read();
	t->dropped     = telemetry_dropped_read();
}

void hal_telemetry_control(int enable, enum hal_telemetry_pulse pulse)
{
	telemetry_control_write(HAL_FIELD_PUT(TELEMETRY_CONTROL, ENABLE, enable != 0) |
	                        HAL_FIELD_PUT(TELEMETRY_CONTROL, CLEAR, pulse == HAL_TELEMETRY_CLEAR) |
	                        HAL_FIELD_PUT(TELEMETRY_CONTROL, RESTART, pulse == HAL_TELEMETRY_RESTART) |
	                        HAL_FIELD_PUT(TELEMETRY_CONTROL, STOP, pulse == HAL_TELEMETRY_STOP));
}

void hal_telemetry_rate(uint32_t windows_per_frame)
{
	telemetry_decimation_write(HAL_FIELD_PUT(TELEMETRY_DECIMATION, WINDOWS, windows_per_frame));
}

uint32_t hal_telemetry_rate_max(void)
{
	return HAL_FIELD_MASK(TELEMETRY_DECIMATION, WINDOWS);
}
#else
int hal_telemetry_present(void) { return 0; }
void hal_telemetry_read(struct hal_telemetry *t) { *t = (struct hal_telemetry){0}; }
void hal_telemetry_control(int enable, enum hal_telemetry_pulse pulse) { (void)enable; (void)pulse; }
void hal_telemetry_rate(uint32_t windows_per_frame) { (void)windows_per_frame; }
uint32_t hal_telemetry_rate_max(void) { return 0; }
#endif

uint32_t hal_timebase_window(void)
{
	return timebase_window_read();
}
