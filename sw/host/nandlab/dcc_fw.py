"""DCC with its firmware's scheduling time (policy dcc_fw of `nandlab experiment power`).

The harness's DCC (policy dcc) runs sw/firmware/dcc.c between clock ticks: a decision costs no time.
Policy dcc_fw charges each decision the cycles dcc.c measurably takes on the SoC's VexRiscv, serialised
on one CPU: a die's operation is decided when the CPU has finished the decisions before it and then
takes DECISION_CPU_CYCLES; the operation may start when its decision is taken, no earlier, and DCC
reserves it from the start it then gives (harness_main.cpp).

Measured with the firmware's `dcc bench` (sw/firmware/cmds_dcc.c) on the simulated SoC (VexRiscv
"standard", 100 MHz, the scheduler's state in main RAM, interrupts off):
`nandlab sim --dies 1 --non-interactive --no-server --run "dcc bench N R"` (the harness's default models:
MTPM-MLC, 200 MHz, one piece per atomic operation, alpha 4, 8 dies), cycles per dcc_schedule() call,
the incremental dcc.c (wip/dcc: the summed staircase kept between decisions, 32-bit times) beside the
first one (rebuilt the staircase of every reservation in 64-bit time at each decision):

  R     N      mean     min      max    first dcc.c: mean     min      max
  0     500    15941    5298    34137                 99623    3090   157174
  25    500    14046    4959    37968                 87787    3090   145487
  50    2000   11651    3006    37825                 71157    3194   187910
  75    500     7813    1957    24981                 37582     877   100351
  100   500     2510    1776     5271                  2430     728     8833

(0.03 to 0.16 ms a decision at 100 MHz. Reads alone are no cheaper than before: a read's model is three
pieces and keeping the staircase costs about what rebuilding so small a one did.) dcc_fw charges the
mean at the trace's read ratio.
"""

import math

CPU_HZ = 100e6              # The SoC's sys clock, the VexRiscv's (soc/targets/sim.py SYS_CLK_FREQ).
# {read ratio: mean CPU cycles of one dcc_schedule() call in `dcc bench N R`} (see the module's doc).
DECISION_CPU_CYCLES = {0: 15941, 25: 14046, 50: 11651, 75: 7813, 100: 2510}


def harness_cycles(cpu_cycles, clock_hz, time_scale=1):
    """A decision of `cpu_cycles` CPU cycles in the harness's cycles (`clock_hz`, times divided by
    `time_scale` as the array's are), at least one."""
    return max(1, math.ceil(cpu_cycles * clock_hz / CPU_HZ / time_scale - 1e-9))
