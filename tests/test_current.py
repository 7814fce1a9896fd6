"""Die sequencer: current per cycle equals the waveform tables; OI/OE handshake; phases and loops."""

import random

import pytest
from migen import Module, run_simulation

from nandlab.nand_model.current import PhaseTables, NandLabDieSequencer, OPS
from nandlab.nand_model.parts import MTPMPaperMLC

pytestmark = pytest.mark.unit

# The MTPM paper's die at 100 MHz; times divided by 200 to keep the simulation short.
TABLES = PhaseTables(MTPMPaperMLC(), sys_clk_freq=100e6, time_scale=200)


def _run(op, oe_pattern=None, max_cycles=200_000, seg_rom="logic"):
    dut = NandLabDieSequencer(TABLES, seg_rom=seg_rom)
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


@pytest.mark.parametrize("seg_rom", ["logic", "memory"])
@pytest.mark.parametrize("op", ["read", "erase", "program_lsb"])
def test_current_follows_the_table_cycle_by_cycle(op, seg_rom):
    t = _run(op, seg_rom=seg_rom)
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


@pytest.mark.parametrize("seg_rom", ["logic", "memory"])
def test_oe_low_holds_each_phase(seg_rom):
    # OE only every 50th cycle: the die waits with OI up and no current.
    t = _run("erase", oe_pattern=lambda c: c % 50 == 0, seg_rom=seg_rom)
    assert t["waiting"] > 0
    assert sum(1 for c in t["current"] if c) == sum(1 for c in TABLES.expand("erase") if c)
    assert t["ends"] == len(TABLES.phases("erase"))


class _TwoSequencers(Module):
    def __init__(self, tables, variants):
        self.submodules.logic = NandLabDieSequencer(tables, variants=variants, seg_rom="logic")
        self.submodules.memory = NandLabDieSequencer(tables, variants=variants, seg_rom="memory")
        self.inputs = ("start", "op", "variant", "oe", "time_scale_shift")
        for name in self.inputs:
            self.comb += getattr(self.memory, name).eq(getattr(self.logic, name))


@pytest.mark.parametrize("seed", [1, 2])
def test_segment_table_in_memory_is_cycle_identical(seed):
    """The segment table read a cycle ahead from a memory (seg_rom="memory", the ECPIX-5's dies) gives
    the logic table's outputs cycle for cycle: every operation, both variants, OE withheld at random,
    time shifts that cut segments to one cycle, starts in the cycle the previous operation ends."""
    rng = random.Random(seed)
    part = MTPMPaperMLC()
    dut = _TwoSequencers(PhaseTables(part, time_scale=200), [PhaseTables(part, time_scale=200,
                                                                         percent={"read": 75, "program": 85})])
    outputs = ("busy", "oi", "oi_next", "oi_first", "request", "waiting", "phase_end", "atomic_end", "current")
    compared = {"cycles": 0, "ops": 0, "current": 0}
    seen = set()

    def gen():
        oe_rate = 1.0
        for _ in range(16_000):
            busy = yield dut.logic.busy
            start = not busy and rng.random() < 0.3
            if start:
                compared["ops"] += 1
                oe_rate = rng.choice([1.0, 0.5, 0.2])
                op = rng.randrange(len(OPS))
                seen.add(op)
                yield dut.logic.op.eq(op)
                yield dut.logic.variant.eq(rng.randrange(2))
                yield dut.logic.time_scale_shift.eq(rng.choice([0, 1, 3, 8, 16]))
            yield dut.logic.start.eq(start)
            yield dut.logic.oe.eq(rng.random() < oe_rate)
            yield
            for name in outputs:
                a, b = (yield getattr(dut.logic, name)), (yield getattr(dut.memory, name))
                assert a == b, (name, a, b, compared)
            compared["cycles"] += 1
            compared["current"] += (yield dut.logic.current) != 0
    run_simulation(dut, gen())
    assert compared["ops"] >= 10 and seen == set(range(len(OPS))) and compared["current"] > 1000


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


@pytest.mark.unit
@pytest.mark.slow
def test_ring_oi_ahead_is_cycle_identical(verilog_wrapping_shift):
    """The ring nodes' look-ahead token table (`oi_ahead`: read at the die's `oi_next` into a register,
    for timing) and registered sender (`tx_ahead`: each packet bit loaded a cycle early; the SoC builds
    both) give the same grants, tokens, packet bits and die currents in every cycle as the table read at `oi`:
    two copies of four sequencers and a ring, random operations, table writes (also while dies run)
    and every mode, compared cycle by cycle; and `oi_next` is always the next cycle's `oi`. (make
    test-slow, 2 min of Migen simulation: make test runs the look-ahead ring in the simulated SoC's
    power tests and the ring fault injection.)"""
    import random
    from migen import Module, run_simulation
    from nandlab.gateware.power.hook import NandLabPowerHook
    from nandlab.gateware.power.ring import PowerRing, MODES
    from nandlab.nand_model.current import NandLabDieSequencer, PhaseTables
    from nandlab.nand_model.parts import MTPMPaperMLC

    n, PER_MODE = 4, 700
    tables = PhaseTables(MTPMPaperMLC(), 100e6, time_scale=2000)
    ois = sorted({ph.oi for phases, _ in tables.ops.values() for ph in phases})

    class Top(Module):
        def __init__(self):
            self.systems = []
            for ahead in (False, True):
                ring = PowerRing(n, oi_ahead=ahead, tx_ahead=ahead)
                seqs = [NandLabDieSequencer(tables) for _ in range(n)]
                self.submodules += ring, *seqs
                for i, seq in enumerate(seqs):
                    hook = NandLabPowerHook(len(seq.current))
                    self.comb += hook.connect(seq, ring.nodes[i])
                self.systems.append((ring, seqs))

    top = Top()
    rng = random.Random(20)
    node_obs = ("oe", "ht", "ut", "key", "tx_tokens", "tx_valid", "grant", "in_atomic", "rt_now", "rt_q")
    mismatches, lookahead_errors, grants, modes_granting = [], [], [0], set()

    def both(attr, value):
        for ring, _ in top.systems:
            yield getattr(ring, attr).eq(value)

    def gen():
        prev_next = None
        for cycle in range(PER_MODE * len(MODES)):
            if cycle % PER_MODE == 0:                # A new configuration: mode, TG, alpha, table.
                mode = cycle // PER_MODE
                for oi in ois:
                    yield from both("table_we", 1); yield from both("table_adr", oi)
                    yield from both("table_dat", rng.randrange(1, 12))
                    yield
                yield from both("table_we", 0)
                yield from both("req_mode", mode); yield from both("req_tg", 4); yield from both("req_alpha", 4)
                yield from both("apply", 1); yield; yield from both("apply", 0)
                prev_next = None
            # Table writes while dies run (the look-ahead passes a write to the next OI through).
            we = rng.random() < 0.05
            yield from both("table_we", int(we))
            if we:
                yield from both("table_adr", rng.choice(ois)); yield from both("table_dat", rng.randrange(1, 12))
            for k in range(n):
                idle = (yield top.systems[0][1][k].busy) == 0
                go = int(idle and rng.random() < 0.02)
                op = rng.randrange(4)
                for _, seqs in top.systems:
                    yield seqs[k].start.eq(go)
                    yield seqs[k].op.eq(op)
            yield
            for k in range(n):
                obs = []
                for ring, seqs in top.systems:
                    nd, row = ring.nodes[k], []
                    for sig in [getattr(nd, s) for s in node_obs] + [seqs[k].oi, seqs[k].current]:
                        row.append((yield sig))
                    row.append((yield nd.tx_data) if (yield nd.tx_valid) else None)    # Looked at while valid.
                    obs.append(row)
                if obs[0] != obs[1]:
                    mismatches.append((cycle, k, obs))
                grants[0] += obs[0][node_obs.index("grant")]
                if obs[0][node_obs.index("grant")]:
                    modes_granting.add(mode)
            now, nxt = [], []
            for seq in top.systems[1][1]:
                now.append((yield seq.oi))
                nxt.append((yield seq.oi_next))
            if prev_next is not None and now != prev_next:
                lookahead_errors.append((cycle, prev_next, now))
            prev_next = nxt

    run_simulation(top, gen())
    assert not mismatches, mismatches[:3]
    assert not lookahead_errors, lookahead_errors[:3]
    assert grants[0] > 20          # The ring did grant: the comparison covered real decisions.
    assert modes_granting == set(range(1, len(MODES)))
