"""The simulated SoC's channel hides the bus from unselected dies (NandChannel's `prev`, dies built with
`bus_prev`: idle gating then lets a die sleep through other dies' traffic). Checked against the plain
channel: both behind the same registered bus mux, driven by the same random multi-die traffic (CE#
moving with the strobes, strobes and data changing while no die is selected, short pulses, commands
while busy), give the same bus answers (DQ, DQS, R/B#) in every cycle and the same statistics."""

import random

import pytest
from migen import Module, run_simulation
from migen.sim import passive
from migen.genlib.record import DIR_M_TO_S

from nandlab.gateware.onfi.common import NandBus, NandBusMux, NandChannel, nand_bus_layout
from nandlab.nand_model.die import NandLabDie
from nandlab.testing import die_test_config

DIES = 2


class _Channels(Module):
    """A registered mux's bus to a plain channel and, copied, to a masked one."""
    def __init__(self, config):
        self.host = NandBus(targets=DIES)
        self.bus, self.masked_bus = NandBus(targets=DIES), NandBus(targets=DIES)
        self.submodules.mux = mux = NandBusMux([self.host], self.bus, registered=True)
        self.plain = [NandLabDie(config) for _ in range(DIES)]
        self.masked = [NandLabDie(config, bus_prev=True) for _ in range(DIES)]
        for i, (p, m) in enumerate(zip(self.plain, self.masked)):
            setattr(self.submodules, f"plain{i}", p)
            setattr(self.submodules, f"masked{i}", m)
        self.submodules.plain_channel = NandChannel(self.bus, [d.bus for d in self.plain])
        seen = [mux.die_levels(i) for i in range(DIES)]
        die_prev = [(d.bus_prev_we, d.bus_prev_re, d.bus_prev_dq, d.bus_prev_dqs) for d in self.masked]
        self.submodules.masked_channel = NandChannel(self.masked_bus, [d.bus for d in self.masked], seen, die_prev)
        out = [name for name, _, direction in nand_bus_layout() if direction == DIR_M_TO_S]
        self.comb += [getattr(self.masked_bus, n).eq(getattr(self.bus, n)) for n in out]


_COMMANDS = [0x00, 0x30, 0x05, 0xE0, 0x80, 0x10, 0x85, 0x60, 0xD0, 0x70, 0x78, 0x90, 0xEC, 0xFF]


def _traffic(host, rng, steps):
    """Commands, addresses, data in and out to random dies; between them cycles of random levels on
    every line (CE# of any dies, or none, strobes, DQ, DQS), so that strobe edges fall on CE# edges."""
    yield host.wp_n.eq(1)
    yield host.ce_n.eq(2**DIES - 1)
    yield host.we_n.eq(0b11)
    yield host.re_n.eq(0b11)
    for step in range(steps):
        die = rng.randrange(DIES)
        clean = rng.random() < 0.5
        kinds = [("cmd", 0xFF)] if step < DIES else [
            (rng.choice(["cmd", "addr", "din", "dout", "dout"]), rng.choice(_COMMANDS + [rng.randrange(256)]))
            for _ in range(rng.randrange(1, 6))]
        if step < DIES:
            die = step
        for kind, byte in kinds:
            yield host.ce_n.eq(~(1 << die) & (2**DIES - 1))
            yield host.cle.eq(kind == "cmd")
            yield host.ale.eq(kind == "addr")
            yield host.dq_o.eq(byte | byte << 8)
            yield host.dq_oe.eq(kind != "dout")
            strobe = host.re_n if kind == "dout" else host.we_n
            for _ in range(4 if clean else rng.choice([1, 2])):
                yield strobe.eq(rng.choice([0b00, 0b01, 0b10]) if not clean else 0)
                yield
            yield strobe.eq(0b11)
            yield
        for _ in range(rng.choice([0, 1, 3, 20, 120])):        # Noise, or a wait for the array.
            noisy = rng.random() < 0.5
            if noisy:
                yield host.ce_n.eq(rng.randrange(2**DIES))
                yield host.cle.eq(rng.randrange(2))
                yield host.ale.eq(rng.randrange(2))
                yield host.we_n.eq(rng.randrange(4))
                yield host.re_n.eq(rng.randrange(4))
                yield host.dq_o.eq(rng.randrange(2**16))
                yield host.dqs_o.eq(rng.randrange(4))
            else:
                yield host.ce_n.eq(2**DIES - 1)
            yield


def _stats(die):
    return [*die.violations.values(), *die.reasons, *die.ops.values(),
            *[s for by in die.mp_ops.values() for s in by.values()]]


def _check(steps, min_dq, min_busy):
    dut = _Channels(die_test_config())
    answers = [(dut.bus.dq_i, dut.masked_bus.dq_i), (dut.bus.dqs_i, dut.masked_bus.dqs_i),
               (dut.bus.rb_n, dut.masked_bus.rb_n)]
    seen = dict(cycles=0, dq=0, busy=0, differ=[])

    def traffic():
        yield from _traffic(dut.host, random.Random(11), steps)

    @passive
    def watch():
        while True:
            yield
            pairs = []
            for a, b in answers:
                pairs.append(((yield a), (yield b)))
            seen["cycles"] += 1
            seen["dq"] += pairs[0][0] != 0
            seen["busy"] += pairs[2][0] != 2**DIES - 1
            if any(a != b for a, b in pairs) and len(seen["differ"]) < 5:
                seen["differ"].append((seen["cycles"], pairs))

    stats = {}

    def final():
        yield from traffic()
        # Until every die is ready again (at most 1500 cycles: the longest array time of the scaled part),
        # then a few cycles for the counters.
        for _ in range(1500):
            if (yield dut.bus.rb_n) == 2**DIES - 1:
                break
            yield
        for _ in range(16):
            yield
        for i, (p, m) in enumerate(zip(dut.plain, dut.masked)):
            stats[i] = ([], [])
            for s, t in zip(_stats(p), _stats(m)):
                stats[i][0].append((yield s))
                stats[i][1].append((yield t))

    run_simulation(dut, [final(), watch()])
    assert seen["differ"] == [], seen["differ"]
    assert all(p == m for p, m in stats.values()), stats
    # The traffic did things: data out, busy dies, counted operations and violations on every die.
    assert seen["dq"] > min_dq and seen["busy"] > min_busy, seen
    assert all(sum(p) > 0 for p, _ in stats.values()), stats


@pytest.mark.unit
def test_masked_channel_answers_like_the_plain_channel():
    """A short run (1612 cycles, ~2.3 min of CPU in Migen's simulator; it waited a fixed 1500 cycles at the
    end before, 2597 cycles, with the same answers and counts compared)."""
    _check(25, 20, 300)


@pytest.mark.unit
@pytest.mark.slow
def test_masked_channel_answers_like_the_plain_channel_long():
    """(3 min 44 s of CPU.)"""
    _check(70, 100, 1000)
