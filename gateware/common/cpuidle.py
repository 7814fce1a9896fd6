"""The soft CPU's wait for an event: the firmware's idle loop pauses the CPU until something happens.

The shell polls its console and the host's mailbox in a loop. A real part sleeps there (RISC-V WFI); the
simulated SoC instead evaluated the whole VexRiscv every cycle to spin through the loop (29 % of the
simulator's time at the idle shell with 8 dies). `CPUIdle` is that sleep, race-free the usual way:

* `arm` (write): forget the events seen so far. The firmware arms, polls every source it serves, then
  writes `sleep`.
* `sleep` (write): pause unless an event came since the arm. An event is any of the CPU's interrupt lines
  (enabled, pending sources: the UART, the timers, the controllers) or a cycle of another bus master (the
  host bridge writing the mailbox, a DMA).
* The CPU pauses only between bus cycles (its instruction and data buses both idle), so nothing is in
  flight while it is stopped, and it is clocked again in the cycle of the event.

In simulation (`gating=True`) the pause stops the CPU's clock (an IdleGate of its own: Verilator skips the
core); its registers keep their values, so the CPU goes on as if the pause had not been there, a few
cycles later. On FPGA targets no clock is derived from logic: the CPU is never stopped, `sleep` only
records the request and the firmware's loop polls on, which is also correct. `slept` counts the cycles the
CPU's clock was stopped (0 on FPGA targets).
"""

from functools import reduce
from operator import or_

from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect.csr import CSR, CSRStatus

from nandlab.gateware.common.idlegate import IdleGate

GATE_NAME = "cpu_run"        # The CPU's gated clock domain (simulation).


def wishbone_activity(masters):
    """1 while any of `masters` (wishbone interfaces) has a cycle open; a master of another kind is an
    error, not a wake-up the CPU would miss."""
    cycs = []
    for name, bus in masters:
        if not hasattr(bus, "cyc"):
            raise ValueError(f"CPU idle: bus master '{name}' is not Wishbone; its cycles cannot wake the CPU")
        cycs.append(bus.cyc)
    return reduce(or_, cycs, 0)


class CPUIdle(LiteXModule):
    """Pauses `cpu` (a LiteX VexRiscv, before it is finalized) while the firmware sleeps; `wake` is 1 in
    the cycles with an event (CPUIdle.wake_of). `gating`: stop the CPU's clock (simulation only)."""
    def __init__(self, cpu, wake, gating):
        self._arm   = CSR()           # Write: forget the events seen so far (then poll, then `sleep`).
        self._sleep = CSR()           # Write: pause the CPU until an event, unless one came since `arm`.
        self._slept = CSRStatus(32, description="Cycles the CPU's clock was stopped (simulation; 0 on FPGA).")
        self.asleep = asleep = Signal()
        event       = Signal()

        # # #

        self.sync += [
            event.eq(wake | (event & ~self._arm.re)),
            If(wake,
                asleep.eq(0),
            ).Elif(self._sleep.re & ~event,
                asleep.eq(1),
            ),
        ]
        # Paused: asleep, no event this cycle, neither of the CPU's buses in a cycle.
        self.pause = pause = Signal()
        self.comb += pause.eq(asleep & ~wake & ~cpu.ibus.cyc & ~cpu.dbus.cyc)
        self.gate = IdleGate(LiteXModule(), pause, GATE_NAME, enabled=gating)
        if gating:
            cpu.cpu_params.update(i_clk=ClockSignal(GATE_NAME))
            self.sync += If(self.gate.latched, self._slept.status.eq(self._slept.status + 1))

    @staticmethod
    def wake_of(cpu, masters):
        """The wake-up of `cpu`: any interrupt line, or a cycle of any bus master in `masters`
        ((name, interface) pairs: every master but the CPU's own)."""
        return (cpu.interrupt != 0) | wishbone_activity(masters)


def add_cpu_idle(soc):
    """The CPU's sleep for the firmware's idle loop, added to a LiteX `soc` (its `idle_gating`: simulation),
    woken by any interrupt or any other bus master's cycle: call it once every master is on the bus
    (NandLabSoC.finalize). Nothing without a VexRiscv, or when the SoC has one already."""
    cpu = getattr(soc, "cpu", None)
    if not hasattr(cpu, "cpu_params") or hasattr(soc, "cpu_idle"):
        return
    others = [(name, m) for name, m in soc.bus.masters.items() if not name.startswith("cpu_bus")]
    soc.add_module(name="cpu_idle", module=CPUIdle(cpu, CPUIdle.wake_of(cpu, others), gating=soc.idle_gating))
