"""DCC with its firmware's scheduling time (policy dcc_fw of `nandlab experiment power`).

The harness's DCC (policy dcc) runs sw/firmware/dcc.c between clock ticks: a decision costs no time.
Policy dcc_fw charges each decision the cycles dcc.c measurably takes on the SoC's VexRiscv, serialised
on one CPU: a die's operation is decided when the CPU has finished the decisions before it and then
takes DECISION_CPU_CYCLES; the operation may start when its decision is taken, no earlier, and DCC
reserves it from the start it then gives (harness_main.cpp).

Measured with the firmware's `dcc bench` (sw/firmware/cmds_dcc.c) on the simulated SoC:
`nandlab sim --dies 1 --non-interactive --no-server --run "dcc bench 2000 R"` for R = 0, 25, 50, 75, 100
(the harness's default models: MTPM-MLC, 200 MHz, one piece per atomic operation, alpha 4).
"""

import math

CPU_HZ = 100e6              # The SoC's sys clock, the VexRiscv's (soc/targets/sim.py SYS_CLK_FREQ).
# {read ratio: mean CPU cycles of one dcc_schedule() call in `dcc bench 2000 R`} (see the module's doc).
DECISION_CPU_CYCLES = {}


def harness_cycles(cpu_cycles, clock_hz, time_scale=1):
    """A decision of `cpu_cycles` CPU cycles in the harness's cycles (`clock_hz`, times divided by
    `time_scale` as the array's are), at least one."""
    return max(1, math.ceil(cpu_cycles * clock_hz / CPU_HZ / time_scale - 1e-9))
