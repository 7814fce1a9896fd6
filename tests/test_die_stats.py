"""The die's statistics in one memory (nand_model/die/stats.py, the die's stats="memory"): every read
equals an independent count of the events, and equals the die's plain counters (stats="counters")
driven by the same bus."""

import random

import pytest
from migen import If, Module, Signal, run_simulation
from migen.genlib.record import DIR_M_TO_S

from nandlab.nand_model.die import NandLabDie
from nandlab.nand_model.die.stats import NandLabDieStats, stat_widths
from nandlab.testing import die_test_config


class _Bench(Module):
    def __init__(self, widths):
        self.events = [Signal(name=f"ev{i}") for i in range(len(widths))]
        self.submodules.stats = NandLabDieStats(self.events, widths)
        # The plain counters the memory replaces (the die's stats="counters").
        self.plain = [Signal(w, name=f"plain{i}") for i, w in enumerate(widths)]
        self.sync += [If(ev, c.eq(c + 1)) for ev, c in zip(self.events, self.plain)]


def _run_counts(widths, rates, cycles, seed):
    """Random events (counter i with probability rates[i] a cycle, and bursts of all), counter reads at
    random times; returns (index, value read, the plain counter's value when it was taken) for every
    read. The plain counters end equal to the bench's own count of the events it set."""
    rng = random.Random(seed)
    dut = _Bench(widths)
    reads = []

    def bench():
        counts = [0] * len(widths)        # Events set so far.
        plain = [0] * len(widths)         # The plain counters one cycle ago.
        reading = None                    # Index of the read under way.
        for _ in range(cycles):
            burst = rng.random() < 0.05
            fire = [1 if burst or rng.random() < r else 0 for r in rates]
            for ev, f in zip(dut.events, fire):
                yield ev.eq(f)
            counts = [c + f for c, f in zip(counts, fire)]
            request = reading is None and rng.random() < 0.1
            if request:
                index = rng.randrange(len(widths))
                yield dut.stats.index.eq(index)
            yield dut.stats.request.eq(request)
            yield
            if reading is not None and (yield dut.stats.ready):
                # The value latched at this edge counts what the plain counter held before it.
                reads.append((reading, (yield dut.stats.value), plain[reading]))
                reading = None
            elif reading is not None:
                wait += 1
                assert wait <= len(widths) + 2, "a read took longer than one pass over the counters"
            if request:
                reading, wait = index, 0
            plain = []
            for c in dut.plain:
                plain.append((yield c))
        for ev in dut.events:
            yield ev.eq(0)
        for _ in range(3):
            yield
        for c in dut.plain:
            final.append((yield c))
        assert final == [c % (1 << w) for c, w in zip(counts, widths)], "plain counters vs the bench's count"

    final = []
    run_simulation(dut, bench())
    return reads


@pytest.mark.unit
@pytest.mark.parametrize("seed", [1, 2])
def test_stats_memory_reads_equal_an_independent_count(seed):
    # Small widths wrap within the run, as the plain counters do; rate 1 counts every cycle.
    widths = [3, 16, 32, 5, 32, 16, 4]
    rates = [0.5, 0.2, 1.0, 0.9, 0.0, 0.05, 0.7]
    reads = _run_counts(widths, rates, cycles=3000, seed=seed)
    assert len(reads) > 100
    assert {i for i, _, _ in reads} == set(range(len(widths)))
    for index, value, plain in reads:
        assert value == plain, (index, value, plain)


class _TwoDies(Module):
    """A die with plain counters and one with its statistics in memory (CSRs in a bank), on two buses
    driven alike."""
    def __init__(self, config):
        from litex.soc.interconnect.csr_bus import CSRBankArray
        self.submodules.plain = NandLabDie(config)
        self.submodules.memory = NandLabDie(config, stats="memory")
        self.memory.add_csr()
        self.submodules.banks = CSRBankArray(self, lambda name, memory: 0 if name == "memory" else None,
                                             data_width=32)
        self.bus = self.banks.get_buses()[0]
        # Word of each CSR in the bank (a storage's one word is named with a 0 after it).
        self.csr_index = {c.name.removesuffix("0"): i for i, c in enumerate(self.banks.banks[0][3].simple_csrs)}
        self.inputs = [name for name, _, direction in self.plain.bus.layout if direction == DIR_M_TO_S]
        assert "we_n" in self.inputs and "dq_i" not in self.inputs
        for name in self.inputs:
            self.comb += getattr(self.memory.bus, name).eq(getattr(self.plain.bus, name))


# Command bytes the stimulus draws from (with the templates below and random bytes).
_COMMANDS = [0x00, 0x30, 0x32, 0x31, 0x3F, 0x05, 0xE0, 0x80, 0x10, 0x11, 0x15, 0x85, 0x60, 0xD0, 0xD1, 0x70,
             0x78, 0x90, 0xEC, 0xFF]


def _sequences(rng):
    """A random ONFI-ish command sequence as [(kind, byte)]: kind "cmd", "addr", "din" or "dout"."""
    row = lambda: [("addr", rng.choice([rng.randrange(32), rng.randrange(256)])), ("addr", rng.randrange(2)),
                   ("addr", 0)]
    col = [("addr", 0), ("addr", 0)]
    data = [("din", rng.randrange(256)) for _ in range(rng.randrange(4))]
    pick = rng.randrange(7)
    if pick == 0:
        return [("cmd", 0x60), *row(), ("cmd", rng.choice([0xD0, 0xD1]))]
    if pick == 1:
        return [("cmd", 0x00), *col, *row(), ("cmd", rng.choice([0x30, 0x32, 0x31])),
                *[("dout", 0)] * rng.randrange(4)]
    if pick == 2:
        return [("cmd", 0x80), *col, *row(), *data, ("cmd", rng.choice([0x10, 0x11, 0x15]))]
    if pick == 3:
        return [("cmd", 0x70), *[("dout", 0)] * rng.randrange(1, 3)]
    if pick == 4:
        return [("cmd", rng.choice(_COMMANDS))] + [("addr", rng.randrange(256)) for _ in range(rng.randrange(3))]
    if pick == 5:
        return [("dout", 0)] * rng.randrange(1, 4)
    return [("cmd", 0xFF)]


def _drive(dut, rng, steps):
    bus = dut.plain.bus
    yield bus.ce_n.eq(0)
    yield bus.wp_n.eq(1)
    yield bus.re_n.eq(0b11)
    yield bus.we_n.eq(0b11)
    for step in range(steps):
        clean = step == 0 or rng.random() < 0.5            # Host timings kept: operations start.
        for kind, byte in [("cmd", 0xFF)] if step == 0 else _sequences(rng):
            yield bus.cle.eq(kind == "cmd")
            yield bus.ale.eq(kind == "addr")
            yield bus.dq_o.eq(byte | byte << 8)
            yield bus.dq_oe.eq(kind != "dout")
            strobe = bus.re_n if kind == "dout" else bus.we_n
            for _ in range(6 if clean else rng.choice([1, 1, 2, 4])):      # Short pulses and gaps: violations.
                yield strobe.eq(0)
                yield
            yield strobe.eq(0b11)
            for _ in range(12 if clean else rng.choice([0, 1, 3, 8])):
                yield
        if clean or rng.random() < 0.5:                     # Wait for R/B# (or not: busy violations).
            for _ in range(3000):
                if (yield bus.rb_n):
                    break
                yield
    yield bus.cle.eq(0)
    yield bus.ale.eq(0)
    for _ in range(5000):                                   # Idle until both dies are done.
        if (yield bus.rb_n) and (yield dut.memory.bus.rb_n):
            break
        yield
    for _ in range(10):
        yield


def _csr_read(bus, adr):
    """A CSR bus read (the bank's data is registered: it follows the address a cycle later, and a
    generator's writes take effect at the next edge)."""
    yield bus.adr.eq(adr)
    yield
    yield
    return (yield bus.dat_r)


@pytest.mark.unit
@pytest.mark.slow       # (~4 min of Migen simulation; make test keeps the independent count above)
def test_die_statistics_in_memory_equal_the_plain_counters():
    """Two dies, one with plain counters and one with its statistics in memory read through its CSRs
    (stats_index / stats_ready / stats_value, as the firmware reads them), take the same random bus
    traffic (commands, addresses, data, short strobes and gaps, commands while busy): every statistic
    reads the same, and the traffic made violations, failures and operations count."""
    config = die_test_config()
    dut = _TwoDies(config)
    names = list(stat_widths(config))
    plain = {f"viol_{n}": s for n, s in dut.plain.violations.items()}
    plain.update({f"fail_reason{i}": s for i, s in enumerate(dut.plain.reasons)})
    plain.update({f"ops_{n}": s for n, s in dut.plain.ops.items()})
    plain.update({f"mp_{op}{n}": s for op, by in dut.plain.mp_ops.items() for n, s in by.items()})
    assert list(plain) == names
    got = {}

    def bench():
        yield from _drive(dut, random.Random(5), 40)
        for index, name in enumerate(names):
            yield from dut.bus.write(dut.csr_index["stats_index"], index)
            for _ in range(len(names) + 4):
                if (yield from _csr_read(dut.bus, dut.csr_index["stats_ready"])):
                    break
            else:
                raise AssertionError(f"stats_ready stayed 0 reading {name}")
            got[name] = ((yield from _csr_read(dut.bus, dut.csr_index["stats_value"])), (yield plain[name]))

    run_simulation(dut, bench())
    assert all(v == p for v, p in got.values()), got
    counted = [n for n, (v, _) in got.items() if v]
    assert {"viol_busy", "viol_t_whr", "fail_reason7"} <= set(counted), got
    assert any(n.startswith("ops_") for n in counted), got
