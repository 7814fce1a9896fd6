"""DCC with its firmware's scheduling time (policy dcc_fw of `nandlab experiment power`).

The harness's DCC (policy dcc) runs sw/firmware/dcc.c between clock ticks: a decision costs no time.
Policy dcc_fw charges each decision the cycles dcc.c measurably takes on the SoC's VexRiscv, serialised
on one CPU: a die's operation is decided when the CPU has finished the decisions before it and then
takes DECISION_CPU_CYCLES; the operation may start when its decision is taken, no earlier, and DCC
reserves it from the start it then gives (harness_main.cpp).

Measured with the firmware's `dcc bench` (sw/firmware/cmds_dcc.c) on the simulated SoC (VexRiscv
"standard", 100 MHz, the scheduler's state in main RAM, interrupts off):
`nandlab sim --dies 1 --non-interactive --no-server --run "dcc bench N R"` (the harness's default models:
MTPM-MLC, 200 MHz, one piece per atomic operation, alpha 4, 8 dies), cycles per dcc_schedule() call:

  R     N      mean     min      max
  0     500    99623    3090   157174
  25    500    87787    3090   145487
  50    2000   71157    3194   187910
  75    500    37582     877   100351
  100   500     2430     728     8833

(0.02 to 1 ms a decision at 100 MHz: dcc.c rebuilds the summed staircase of every reservation, up to 8
x 21 pieces, in 64-bit time on a 32-bit CPU at each decision, and retries after each conflict; programs'
21-piece models make it dear.) dcc_fw charges the mean at the trace's read ratio.
"""

import math

CPU_HZ = 100e6              # The SoC's sys clock, the VexRiscv's (soc/targets/sim.py SYS_CLK_FREQ).
# {read ratio: mean CPU cycles of one dcc_schedule() call in `dcc bench 2000 R`} (see the module's doc).
DECISION_CPU_CYCLES = {0: 99623, 25: 87787, 50: 71157, 75: 37582, 100: 2430}


def harness_cycles(cpu_cycles, clock_hz, time_scale=1):
    """A decision of `cpu_cycles` CPU cycles in the harness's cycles (`clock_hz`, times divided by
    `time_scale` as the array's are), at least one."""
    return max(1, math.ceil(cpu_cycles * clock_hz / CPU_HZ / time_scale - 1e-9))
