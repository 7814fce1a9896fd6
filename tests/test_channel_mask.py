"""The simulated SoC's channel hides the bus from unselected dies (NandChannel's `prev`, dies built with
`bus_prev`: idle gating then lets a die sleep through other dies' traffic). Checked against the plain
channel: both behind the same registered bus mux, driven by the same random multi-die traffic (CE#
moving with the strobes, strobes and data changing while no die is selected, short pulses, commands
while busy), give the same bus answers (DQ, DQS, R/B#) in every cycle and the same statistics.

The traffic is written as a Migen generator (it only drives, never reads) and played cycle for cycle
into the Verilated top by tests/tb/channel_mask_tb.py (Migen's own simulator ran these four dies at
about 13 cycles a second)."""

import json
import random

import pytest
from migen import Cat
from migen.fhdl.structure import _Assign
from migen.genlib.record import DIR_M_TO_S

from nandlab.gateware.onfi.common import NandBus, NandBusMux, NandChannel, nand_bus_layout
from nandlab.nand_model.die import NandLabDie
from nandlab.testing import die_test_config, run_cocotb, PortedTop

DIES = 2


_OUT = [name for name, _, direction in nand_bus_layout() if direction == DIR_M_TO_S]
_ANSWERS = ("dq_i", "dqs_i", "rb_n")


class _Channels(PortedTop):
    """A registered mux's bus to a plain channel and, copied, to a masked one. Ports: the host's levels
    (`host_*`), each channel's answers (`plain_*`, `masked_*`), each die's statistics in one word
    (`plain{i}_stats`, `masked{i}_stats`)."""
    def __init__(self, config):
        PortedTop.__init__(self)
        self.host = NandBus(targets=DIES)
        self.bus, self.masked_bus = NandBus(targets=DIES), NandBus(targets=DIES)
        self.mux = mux = NandBusMux([self.host], self.bus, registered=True)
        self.plain = [NandLabDie(config) for _ in range(DIES)]
        self.masked = [NandLabDie(config, bus_prev=True) for _ in range(DIES)]
        for i, (p, m) in enumerate(zip(self.plain, self.masked)):
            setattr(self, f"plain{i}", p)
            setattr(self, f"masked{i}", m)
        self.plain_channel = NandChannel(self.bus, [d.bus for d in self.plain])
        seen = [mux.die_levels(i) for i in range(DIES)]
        die_prev = [(d.bus_prev_we, d.bus_prev_re, d.bus_prev_dq, d.bus_prev_dqs) for d in self.masked]
        self.masked_channel = NandChannel(self.masked_bus, [d.bus for d in self.masked], seen, die_prev)
        self.comb += [getattr(self.masked_bus, n).eq(getattr(self.bus, n)) for n in _OUT]
        for n in _OUT:
            self.port(f"host_{n}", getattr(self.host, n), False)
        for n in _ANSWERS:
            self.port(f"plain_{n}", getattr(self.bus, n), True)
            self.port(f"masked_{n}", getattr(self.masked_bus, n), True)
        for i, (p, m) in enumerate(zip(self.plain, self.masked)):
            self.port(f"plain{i}_stats", Cat(*_stats(p)), True)
            self.port(f"masked{i}_stats", Cat(*_stats(m)), True)


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


def _stimulus(steps):
    """The traffic as the host's levels to set before each clock edge: one {port: value} per cycle."""
    host = NandBus(targets=DIES)
    names = {id(getattr(host, n)): f"host_{n}" for n in _OUT}
    cycles, now = [], {}
    for statement in _traffic(host, random.Random(11), steps):
        if statement is None:
            cycles.append(now)
            now = {}
        else:
            assert isinstance(statement, _Assign) and id(statement.l) in names, statement
            now[names[id(statement.l)]] = statement.r.value
    return cycles


def _check(tmp_path, steps, min_dq, min_busy):
    stim, out = tmp_path / "stimulus.json", tmp_path / "seen.json"
    stim.write_text(json.dumps(dict(cycles=_stimulus(steps), dies=DIES)))
    top = _Channels(die_test_config())
    run_cocotb(top, top.ios, "nandlab_channel_mask", "channel_mask_tb", tmp_path,
               extra_env={"NANDLAB_MASK_STIMULUS": str(stim), "NANDLAB_MASK_SEEN": str(out)})
    seen = json.loads(out.read_text())        # (the tb asserted the answers and the counts equal)
    stats = seen["stats"]
    # The traffic did things: data out, busy dies, counted operations and violations on every die.
    assert seen["dq"] > min_dq and seen["busy"] > min_busy, seen
    assert all(p != 0 for p, _ in stats), stats


@pytest.mark.cocotb
def test_masked_channel_answers_like_the_plain_channel(tmp_path):
    _check(tmp_path, 25, 20, 300)


@pytest.mark.cocotb
@pytest.mark.slow
def test_masked_channel_answers_like_the_plain_channel_long(tmp_path):
    _check(tmp_path, 70, 100, 1000)
