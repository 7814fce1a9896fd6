"""The CPU's idle sleep (nandlab.gateware.common.cpuidle) keeps the protocol the firmware relies on:
arm, poll, sleep. Random stimuli (Migen's simulator, the pause logic without the clock gate), and
properties stated from the firmware's side, not the implementation:

* no lost wake-up: after an event that came between `arm` and `sleep`, that sleep never pauses the CPU;
* the CPU never pauses with a bus cycle open, nor in a cycle with an event;
* a sleep with no event since its arm pauses the CPU once both of its buses are idle, and the pause lasts
  until the next event.

The whole SoC (the CPU's clock stopped, woken by its console and the host bridge) is checked in
tests/test_sim_soc.py::test_idle_cpu_sleeps_and_wakes."""

import random

import pytest
from migen import Module, Signal, run_simulation
from litex.soc.interconnect import wishbone

from nandlab.gateware.common.cpuidle import CPUIdle, wishbone_activity


class FakeCPU:
    def __init__(self):
        self.ibus, self.dbus = wishbone.Interface(), wishbone.Interface()
        self.interrupt = Signal(32)
        self.cpu_params = {}


class Top(Module):
    def __init__(self):
        self.cpu = FakeCPU()
        self.bridge = wishbone.Interface()
        self.submodules.idle = CPUIdle(self.cpu, CPUIdle.wake_of(self.cpu, [("bridge", self.bridge)]), gating=False)


def stimulus(top, seed, cycles, log):
    """Random arms, sleeps, interrupts, bridge cycles and CPU bus cycles; logs what each cycle saw."""
    rng = random.Random(seed)
    for _ in range(cycles):
        arm = rng.random() < 0.08
        sleep = not arm and rng.random() < 0.15   # (two CSR writes: never in the same cycle)
        irq = rng.choice([0, 0, 0, 0, 0, 0, 0, 1 << rng.randrange(32)])
        bridge = int(rng.random() < 0.05)
        icyc, dcyc = int(rng.random() < 0.3), int(rng.random() < 0.2)
        yield top.idle._arm.re.eq(arm)
        yield top.idle._sleep.re.eq(sleep)
        yield top.cpu.interrupt.eq(irq)
        yield top.bridge.cyc.eq(bridge)
        yield top.cpu.ibus.cyc.eq(icyc)
        yield top.cpu.dbus.cyc.eq(dcyc)
        yield                                     # (the inputs settle)
        pause = yield top.idle.pause
        log.append(dict(arm=arm, sleep=sleep, event=bool(irq) or bool(bridge), busy=bool(icyc or dcyc), pause=pause))


@pytest.mark.parametrize("seed", range(3))
def test_protocol_properties(seed):
    top, log = Top(), []
    run_simulation(top, stimulus(top, seed, 2000, log))
    seen = asleep = False               # the firmware's view: an event since the last arm (reset arms)
    pauses = 0
    for i, c in enumerate(log[:-1]):
        nxt = log[i + 1]
        if c["pause"]:
            assert not c["busy"] and not c["event"], (i, c)
        # What this cycle's strobes and events mean from the next cycle on.
        if c["event"]:
            asleep, seen = False, True
        if c["arm"]:
            seen = c["event"]
        if c["sleep"] and not seen and not c["event"]:
            asleep = True
        if nxt["pause"]:
            assert asleep, f"cycle {i + 1}: paused without a sleep since the last event"
        if asleep and not nxt["busy"] and not nxt["event"]:
            assert nxt["pause"], f"cycle {i + 1}: a sleep with no event since its arm did not pause"
            pauses += 1
    assert pauses > 50         # the stimulus reached the paused state often enough to mean something


def test_a_master_other_than_wishbone_is_refused():
    class Axi:
        pass
    with pytest.raises(ValueError, match="'dma' is not Wishbone"):
        wishbone_activity([("dma", Axi())])
