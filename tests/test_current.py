"""Die sequencer: current per cycle equals the waveform tables; OI/OE handshake; phases and loops."""

import pytest
from migen import run_simulation

from nandlab.nand_model.current import PhaseTables, NandLabDieSequencer, OPS
from nandlab.nand_model.parts import MTPMPaperMLC

pytestmark = pytest.mark.unit

# The MTPM paper's die at 100 MHz; times divided by 200 to keep the simulation short.
TABLES = PhaseTables(MTPMPaperMLC(), sys_clk_freq=100e6, time_scale=200)


def _run(op, oe_pattern=None, max_cycles=200_000):
    dut = NandLabDieSequencer(TABLES)
    trace = {"current": [], "oi": [], "ends": 0, "waiting": 0}

    def gen():
        if oe_pattern is not None:
            yield dut.oe.eq(0)
        yield dut.op.eq(OPS.index(op))
        yield dut.start.eq(1)
        yield
        yield dut.start.eq(0)
        cycle = 0
        while True:
            if oe_pattern is not None:
                yield dut.oe.eq(oe_pattern(cycle))
            yield
            busy = yield dut.busy
            if not busy:
                break
            trace["current"].append((yield dut.current))
            trace["oi"].append((yield dut.oi))
            trace["ends"] += (yield dut.phase_end)
            trace["waiting"] += (yield dut.waiting)
            cycle += 1
            assert cycle < max_cycles
    run_simulation(dut, gen())
    return trace


@pytest.mark.parametrize("op", ["read", "erase", "program_lsb"])
def test_current_follows_the_table_cycle_by_cycle(op):
    t = _run(op)
    assert t["current"] == TABLES.expand(op)
    assert len(t["current"]) == TABLES.cycles(op)
    assert t["ends"] == len(TABLES.phases(op))


def test_program_loops_and_phase_ids():
    t = _run("program_msb")
    phases = TABLES.phases("program_msb")
    assert t["ends"] == len(phases) == 10 * (3 + 3 * 3)   # 10 loops: P_A1 (3) + 3 x P_A2 (3)
    # OI names the atomic operation (high nibble) and the sub-atomic step (low nibble).
    seen = [oi for k, oi in enumerate(t["oi"]) if k == 0 or t["oi"][k - 1] != oi]
    assert seen[:6] == [0x11, 0x12, 0x13, 0x21, 0x22, 0x23]


def test_peak_is_i_max_and_read_peak_is_published():
    assert max(_run("program_lsb")["current"]) == 4096
    assert max(_run("read")["current"]) == round(0.8543 * 4096)


def test_oe_low_holds_each_phase():
    # OE only every 50th cycle: the die waits with OI up and no current.
    t = _run("erase", oe_pattern=lambda c: c % 50 == 0)
    assert t["waiting"] > 0
    assert sum(1 for c in t["current"] if c) == sum(1 for c in TABLES.expand("erase") if c)
    assert t["ends"] == len(TABLES.phases("erase"))


def test_sdw_tables_shorten_read_and_program():
    part = MTPMPaperMLC()
    base = PhaseTables(part, time_scale=10)
    sdw = PhaseTables(part, time_scale=10, percent={"read": 75, "program": 85})
    decide = lambda t, op: len(t.phases(op))        # one decision cycle per phase
    for op, pct in (("read", 75), ("program_lsb", 85), ("erase", 100)):
        work = lambda t: t.cycles(op) - decide(t, op)
        assert work(sdw) / work(base) == pytest.approx(pct / 100, rel=0.01), op
    # Same phases, same OIs: only durations change.
    assert [p.oi for p in sdw.phases("read")] == [p.oi for p in base.phases("read")]


def test_sequencer_fast_input_selects_the_sdw_durations():
    part = MTPMPaperMLC()
    base = PhaseTables(part, time_scale=200)
    sdw = PhaseTables(part, time_scale=200, percent={"read": 75, "program": 85})
    dut = NandLabDieSequencer(base, variants=[sdw])
    counts = {}

    def run(fast):
        yield dut.op.eq(OPS.index("read"))
        yield dut.variant.eq(fast)
        yield dut.start.eq(1)
        yield
        yield dut.start.eq(0)
        n = 0
        while True:
            yield
            if not (yield dut.busy):
                break
            n += 1
        counts[fast] = n

    def gen():
        yield from run(0)
        yield from run(1)
    run_simulation(dut, gen())
    assert counts[0] == base.cycles("read") and counts[1] == sdw.cycles("read")
    assert counts[1] < counts[0]
