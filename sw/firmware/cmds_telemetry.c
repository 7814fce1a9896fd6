/* nandlab firmware telemetry commands: the frame stream's rate, counters and on/off. */
#include <stdio.h>
#include <string.h>
#include <stdint.h>

#include "hal.h"
#include "shell.h"

#define CTL_ENABLE 1u
#define CTL_CLEAR  2u
#define CTL_RESTART 4u
#define CTL_STOP   8u

static int telemetry_show(void)
{
	const struct hal_csr *ctl = hal_csr_find("telemetry_control"), *dec = hal_csr_find("telemetry_decimation");
	const struct hal_csr *fb = hal_csr_find("telemetry_frame_bytes"), *seq = hal_csr_find("telemetry_seq");
	const struct hal_csr *sent = hal_csr_find("telemetry_sent"), *drop = hal_csr_find("telemetry_dropped");
	const struct hal_csr *win = hal_csr_find("timebase_window");
	uint32_t d, w, ns;
	if (!ctl || !dec || !fb || !seq || !sent || !drop || !win) {
		printf("error: this SoC has no telemetry (no emulated dies?)\n");
		return -1;
	}
	d = hal_csr_read(dec);
	w = hal_csr_read(win);
	ns = (uint32_t)((uint64_t)(d ? d : 1) * (w ? w : 1) * 1000000000ull / hal_clock_hz());
	printf("telemetry: %s%s, a frame of %lu bytes every %lu windows (%lu ns); produced %lu, sent %lu, dropped %lu\n",
	       (hal_csr_read(ctl) & CTL_ENABLE) ? "on" : "off",
	       (hal_csr_find("telemetry_status") && !(hal_csr_read(hal_csr_find("telemetry_status")) & 1)) ? " (stopped)" : "",
	       (unsigned long)hal_csr_read(fb), (unsigned long)d,
	       (unsigned long)ns, (unsigned long)hal_csr_read(seq), (unsigned long)hal_csr_read(sent),
	       (unsigned long)hal_csr_read(drop));
	return 0;
}

static int cmd_telemetry(int argc, char **argv)
{
	const struct hal_csr *ctl = hal_csr_find("telemetry_control"), *dec = hal_csr_find("telemetry_decimation");
	unsigned int v;
	if (!ctl || !dec) {
		printf("error: this SoC has no telemetry (no emulated dies?)\n");
		return -1;
	}
	if (argc < 2 || strcmp(argv[1], "show") == 0)
		return telemetry_show();
	if (strcmp(argv[1], "on") == 0 || strcmp(argv[1], "off") == 0) {
		hal_csr_write(ctl, strcmp(argv[1], "on") == 0 ? CTL_ENABLE : 0);
		return telemetry_show();
	}
	if (strcmp(argv[1], "clear") == 0) {
		hal_csr_write(ctl, (hal_csr_read(ctl) & CTL_ENABLE) | CTL_CLEAR);
		return telemetry_show();
	}
	/* A capture: the telemetry and the current monitor restart together and stop together, so the
	 * host's recording and the monitor's counters cover the same windows. */
	if (strcmp(argv[1], "restart") == 0) {
		hal_csr_write(ctl, CTL_ENABLE | CTL_RESTART);
		return telemetry_show();
	}
	if (strcmp(argv[1], "stop") == 0) {
		const struct hal_csr *st = hal_csr_find("telemetry_status");
		int i;
		hal_csr_write(ctl, (hal_csr_read(ctl) & CTL_ENABLE) | CTL_STOP);
		for (i = 0; st && (hal_csr_read(st) & 1) && i < 1000; i++)
			hal_delay_ns(1000);
		return telemetry_show();
	}
	if (strcmp(argv[1], "rate") == 0) {
		if (argc < 3 || shell_parse_u32(argv[2], "windows per frame", &v))
			return -1;
		if (v < 1 || v > 65535) {
			printf("error: %u windows per frame is out of range 1..65535\n", v);
			return -1;
		}
		hal_csr_write(dec, v);
		return telemetry_show();
	}
	printf("error: unknown telemetry command '%s' (show, on, off, clear, restart, stop, rate <windows>)\n",
	       argv[1]);
	return -1;
}
SHELL_COMMAND("telemetry", "[show]|on|off|clear|restart|stop|rate <windows>", "Telemetry frame stream",
	cmd_telemetry);
