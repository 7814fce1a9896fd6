/* nandlab firmware telemetry commands: the frame stream's rate, counters and on/off. */
#include <stdio.h>
#include <string.h>
#include <stdint.h>

#include "hal.h"
#include "shell.h"

static int telemetry_show(void)
{
	struct hal_telemetry t;
	uint32_t w = hal_timebase_window(), ns;
	hal_telemetry_read(&t);
	ns = (uint32_t)((uint64_t)(t.decimation ? t.decimation : 1) * (w ? w : 1) * 1000000000ull / hal_clock_hz());
	printf("telemetry: %s%s, a frame of %lu bytes every %lu windows (%lu ns); produced %lu, sent %lu, dropped %lu\n",
	       t.enabled ? "on" : "off", t.counting ? "" : " (stopped)", (unsigned long)t.frame_bytes,
	       (unsigned long)t.decimation, (unsigned long)ns, (unsigned long)t.seq, (unsigned long)t.sent,
	       (unsigned long)t.dropped);
	return 0;
}

/* A capture ends at the next window: wait for it (a window is tens of cycles), 1 ms at most. */
static void telemetry_stop(void)
{
	struct hal_telemetry t;
	int i;
	hal_telemetry_read(&t);
	hal_telemetry_control((int)t.enabled, HAL_TELEMETRY_STOP);
	for (i = 0; i < 1000; i++) {
		hal_telemetry_read(&t);
		if (!t.counting)
			break;
		hal_delay_ns(1000);
	}
}

static int cmd_telemetry(int argc, char **argv)
{
	struct hal_telemetry t;
	unsigned int v;
	if (!hal_telemetry_present()) {
		printf("error: this SoC has no telemetry (no emulated dies?)\n");
		return -1;
	}
	if (argc < 2 || strcmp(argv[1], "show") == 0)
		return telemetry_show();
	hal_telemetry_read(&t);
	if (strcmp(argv[1], "on") == 0 || strcmp(argv[1], "off") == 0)
		hal_telemetry_control(strcmp(argv[1], "on") == 0, HAL_TELEMETRY_NONE);
	else if (strcmp(argv[1], "clear") == 0)
		hal_telemetry_control((int)t.enabled, HAL_TELEMETRY_CLEAR);
	/* A capture: the telemetry and the current monitor restart together and stop together, so the
	 * host's recording and the monitor's counters cover the same windows. */
	else if (strcmp(argv[1], "restart") == 0)
		hal_telemetry_control(1, HAL_TELEMETRY_RESTART);
	else if (strcmp(argv[1], "stop") == 0)
		telemetry_stop();
	else if (strcmp(argv[1], "rate") == 0) {
		if (argc < 3 || shell_parse_u32(argv[2], "windows per frame", &v))
			return -1;
		if (v < 1 || v > hal_telemetry_rate_max()) {
			printf("error: %u windows per frame is out of range 1..%lu\n", v, (unsigned long)hal_telemetry_rate_max());
			return -1;
		}
		hal_telemetry_rate(v);
	} else {
		printf("error: unknown telemetry command '%s' (show, on, off, clear, restart, stop, rate <windows>)\n",
		       argv[1]);
		return -1;
	}
	return telemetry_show();
}
SHELL_COMMAND("telemetry", "[show]|on|off|clear|restart|stop|rate <windows>", "Telemetry frame stream",
	cmd_telemetry);
