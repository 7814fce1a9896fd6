"""The die's statistics in one memory (nand_model/die/stats.py, the die's stats="memory"): every read
equals an independent count of the events, and equals the die's plain counters (stats="counters")
driven by the same bus."""

import random

import pytest
from migen import If, Module, Signal, run_simulation

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
