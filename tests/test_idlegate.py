"""Idle gating (nandlab.gateware.common.idlegate) changes nothing but the work: the die test suite
run on a gated die gives the same bus, cycle for cycle, as on the plain die, and the gate did skip
cycles.

Slow: make test checks the same on the dies the simulated SoC builds (their arrays in the nandstore
module, gated), against plain block RAM dies, in tests/test_die_sim_storage.py."""

import sys
from pathlib import Path

import pytest

from nandlab.testing import run_cocotb, TB_DIR, die_test_config

sys.path.insert(0, str(Path(__file__).resolve().parent / "tools"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import bus_traces  # noqa: E402
from test_die import DieTop, BUS_INPUTS, CONTROLS, die_trace  # noqa: E402


class TwinDieTop(DieTop):
    """The plain die of DieTop and an idle-gated twin on the same bus and controls (its latch in the shared
    falling-edge domain, as the simulated SoC builds it); what the twin drives as `twin_trace`. With
    `seq_apart` the twin's current sequencer sits beside it, gated on its own, as in the simulated SoC."""
    def __init__(self, config, seq_apart=False):
        from nandlab.gateware.common.idlegate import IdleGate, QuiescenceGate
        from nandlab.nand_model.die import NandLabDie
        DieTop.__init__(self, config)
        self.twin = twin = NandLabDie(config, storage="bram", storage_base=0x1000, seq_apart=seq_apart)
        self.gate = QuiescenceGate(twin, "twin_clk", count_ticks=True)
        if seq_apart:
            self.twin_seq = twin.seq
            self.seq_gate = IdleGate(twin.seq, twin.seq.quiet, "twin_seq_clk")
        self.idle_gating = True
        self.comb += [getattr(twin.bus, n).eq(getattr(self.die.bus, n)) for n in BUS_INPUTS]
        self.comb += [getattr(twin, n).eq(getattr(self.die, n)) for n in CONTROLS]
        self.port("twin_trace", die_trace(twin), True)
        self.port("gate_ticks", self.gate.ticks, True)


@pytest.mark.cocotb
@pytest.mark.slow
@pytest.mark.parametrize("mode", ["0", "1"])   # async SDR, NV-DDR
def test_gated_die_bus_identical(tmp_path, monkeypatch, mode):
    traces = {}
    for gated in (False, True):
        name = "gated" if gated else "plain"
        traces[name] = tmp_path / f"traces_{name}" / "die"
        monkeypatch.setenv("NANDLAB_BUS_TRACE", str(traces[name]))
        top = DieTop(die_test_config(), idle_gating=gated)
        assert run_cocotb(top, top.ios, "nandlab_die", "die_tb", tmp_path / name,
                          extra_env={"NANDLAB_TB_MODE": mode}) == 13
    n, cycles, bad = bus_traces.compare(traces["plain"].parent, traces["gated"].parent)
    assert n >= 12 and cycles > 10_000 and bad == []
    # The gate skipped cycles and clocked the die in others: not a gate stuck open or shut. (The
    # suite keeps its die busy: it is clocked in about 98 % of the cycles; in the simulated SoC a
    # die waiting for commands is not clocked at all.)
    ticks, total = bus_traces.gate_ticks(traces["gated"], n)
    assert 0 < ticks < total - 1000, (ticks, total)


@pytest.mark.cocotb
def test_gated_die_waiting_with_the_bus_quiet(tmp_path):
    """A die held at an array phase for thousands of cycles with the bus deselected, then through an erase
    on R/B# alone: its idle-gated twin drives the same in every cycle (tests/tb/die_quiet_tb.py) and its
    gate was shut in the hold (the die suite above keeps its die busy: a gate losing a tick on waking from a
    long rest passed it)."""
    top = TwinDieTop(die_test_config())
    assert run_cocotb(top, top.ios, "nandlab_die", "die_quiet_tb", tmp_path,
                      extra_env={"NANDLAB_TB_MODE": "0"}) == 1


@pytest.mark.cocotb
def test_gated_die_beside_its_sequencer(tmp_path):
    """The same waits with the twin's sequencer apart from it (as the simulated SoC builds its dies) and the
    part's own array times: the twin still drives what the plain die drives in every cycle, and its gate
    stayed shut through the program's array phases, its sequencer counting them on its own (the die reads
    only the sequencer's `busy`, and the sum of the sequencer's current and its own is an output only)."""
    from dataclasses import replace
    top = TwinDieTop(replace(die_test_config(), time_scale=1), seq_apart=True)
    assert run_cocotb(top, top.ios, "nandlab_die", "die_quiet_tb", tmp_path,
                      extra_env={"NANDLAB_TB_MODE": "0", "NANDLAB_TB_SEQ_APART": "1"}) == 1


@pytest.mark.unit
def test_sim_soc_gates_the_sequencers_apart_at_the_parts_own_array_times():
    """The simulated SoC puts each die's sequencer under a gate of its own at time scale 1 (long array phases:
    there it pays) and leaves it inside the die's gate at the default time scale (soc/targets/sim.py
    SEQ_APART_TIME_SCALE); the board targets never (no idle gating)."""
    from nandlab.gateware.common.idlegate import IdleGate
    from nandlab.soc.targets.sim import NandLabSimSoC, NAND_TIME_SCALE, SEQ_APART_TIME_SCALE
    assert NAND_TIME_SCALE > SEQ_APART_TIME_SCALE
    for scale, apart in ((1, True), (NAND_TIME_SCALE, False)):
        soc = NandLabSimSoC(nand_dies=2, nand_storage="bram", nand_blocks=8, nand_pages=4, with_bridge=False,
                            nand_time_scale=scale)
        assert soc.nand_seq_apart is apart
        for i in range(2):
            die = getattr(soc, f"nand_die{i}")
            gate = getattr(soc, f"nand_die{i}_seq_gate", None)
            assert (gate is not None) is apart
            # The sequencer is the die's submodule exactly when it is not apart.
            assert any(m is die.seq for _, m in die._submodules) is not apart
            if apart:
                assert isinstance(gate, IdleGate) and getattr(soc, f"nand_die{i}_seq") is die.seq
    soc = NandLabSimSoC(nand_dies=1, nand_storage="bram", nand_blocks=8, nand_pages=4, with_bridge=False,
                        nand_time_scale=1, idle_gating=False)
    assert not soc.nand_seq_apart and not hasattr(soc, "nand_die0_seq_gate")


def _csr_bank_trace(case_decode, seed=1, cycles=3000):
    """Every strobe, `r` value and the read data of a CSR bank (LiteX's, or built under
    CSRBankCaseDecode) over random bus traffic, cycle by cycle, and the registers' storage."""
    import random
    from migen import Module, run_simulation
    from litex.soc.interconnect import csr_bus
    from litex.soc.interconnect.csr import CSR, CSRStatus, CSRStorage, CSRField
    from nandlab.gateware.common.idlegate import CSRBankCaseDecode

    class Top(Module):
        def __init__(self):
            self.csrs = [
                CSRStorage(32, name="a", reset=0x1234),
                CSRStorage(fields=[CSRField("x", size=3), CSRField("y", size=9, offset=8)], name="b"),
                CSRStatus(32, name="c", reset=0xdeadbeef),
                CSR(8, name="d"),
                CSRStorage(48, name="e"),            # Two words.
                CSRStatus(40, name="f", reset=0x12_3456_789a),
            ]
            self.bus = csr_bus.Interface(data_width=32, address_width=14)
            if case_decode:
                with CSRBankCaseDecode():
                    self.submodules.bank = csr_bus.CSRBank(self.csrs, address=3, bus=self.bus)
            else:
                self.submodules.bank = csr_bus.CSRBank(self.csrs, address=3, bus=self.bus)
    top = Top()
    assert type(top.bank).__name__ == "CSRBank" and (type(top.bank) is not csr_bus.CSRBank) == case_decode
    simple = top.bank.simple_csrs
    rng, trace = random.Random(seed), []

    def gen():
        for _ in range(cycles):
            # Mostly this bank (3) and its neighbours, registers 0..9 (some beyond the bank's 8).
            bank = rng.choice([3, 3, 3, 2, 4, 0, 31])
            yield top.bus.adr.eq((bank << 9) | rng.randrange(10))
            yield top.bus.we.eq(rng.random() < 0.3)
            yield top.bus.re.eq(rng.random() < 0.3)
            yield top.bus.dat_w.eq(rng.getrandbits(32))
            yield
            row = [(yield top.bus.dat_r)]
            for c in simple:
                row += [(yield c.re), (yield c.we), (yield c.r)]
            for c in top.csrs:
                if isinstance(c, CSRStorage):
                    row.append((yield c.storage))
            trace.append(tuple(row))
    run_simulation(top, gen())
    return trace


@pytest.mark.unit
def test_csr_bank_case_decode_identical():
    plain, case = _csr_bank_trace(False), _csr_bank_trace(True)
    assert len(plain) == 3000 and plain == case
    # The traffic did write and read the registers (not a comparison of two idle banks).
    assert len({row[-1] for row in plain}) > 10 and len({row[0] for row in plain}) > 10


@pytest.mark.unit
def test_quiescence_gate_state_leaves_nested_latches_out():
    """A block holding a gated block of its own: the outer gate compares the inner block's registers
    and its own, not the inner gate's latch (a function of those registers and the inputs in the same
    cycle, updated at every falling edge: in the state, the comparison ran at every falling edge)."""
    from migen import Module, Signal, If
    from migen.fhdl.tools import list_targets
    from nandlab.gateware.common.idlegate import IdleGate, QuiescenceGate

    class Inner(Module):
        def __init__(self, go):
            self.count = Signal(8)
            self.sync += If(self.count != 0, self.count.eq(self.count - 1)).Elif(go, self.count.eq(5))

    class Outer(Module):
        def __init__(self):
            self.go, self.seen = Signal(), Signal(8)
            self.submodules.inner = inner = Inner(self.go)
            self.submodules.gate = IdleGate(inner, (inner.count == 0) & ~self.go, "inner_clk")
            self.sync += self.seen.eq(inner.count)

    outer = Outer()
    gate = QuiescenceGate(outer, "outer_clk")
    gate.finalize()
    state = set(gate.state_signals)
    assert outer.inner.count in state and outer.seen in state
    assert outer.gate.latched not in state
    assert outer.go in set(gate.input_signals)
    # The latch is still the inner gate's: clocked at the falling edge, in the outer block's fragment.
    f = outer.get_fragment()
    assert outer.gate.latched in set(list_targets(f.sync["inner_clk_n"]))


@pytest.mark.unit
def test_gate_inputs_held_by_other_gated_blocks_are_not_compared():
    """resolve_gate_inputs: an input that only another gated block's registers drive (through logic) is
    copied in that block's domain and watched through that block's gate (not compared every cycle); a
    constant input is left out; an
    input read from a `sys` register is still compared with its copy; the cycle after a reset is clocked."""
    from migen import Module, Signal, If
    from migen.fhdl.tools import list_signals, list_targets
    from nandlab.gateware.common.idlegate import QuiescenceGate, resolve_gate_inputs

    class Producer(Module):
        def __init__(self, go):
            self.count = Signal(8)
            self.sync += If(go, self.count.eq(self.count + 1))

    class Consumer(Module):
        def __init__(self, level, fixed, free):
            self.seen = Signal(8)
            self.sync += self.seen.eq(level + fixed + free)

    class Top(Module):
        def __init__(self):
            self.go, self.free, self.fixed, level = Signal(), Signal(8), Signal(8, reset=3), Signal(8)
            self.submodules.producer = producer = Producer(self.go)
            self.submodules.consumer = Consumer(level, self.fixed, self.free)
            self.comb += level.eq(producer.count ^ 0x55)
            self.sync += self.free.eq(self.free + 1)
            self.submodules.pgate = QuiescenceGate(producer, "p_clk", late_inputs=True)
            self.submodules.cgate = QuiescenceGate(self.consumer, "c_clk", late_inputs=True)

    top = Top()
    f = top.get_fragment()
    resolve_gate_inputs(top, f, outside={top.go})
    assert top.cgate.compared_signals == [top.free]
    assert top.pgate.compared_signals == [top.go]
    latch = set(list_signals(f.sync["c_clk_n"]))
    assert top.pgate.gate.latched in latch and top.producer.count not in latch
    assert any(s.backtrace[-1][0] == "c_clk_p_clk_inputs_same" for s in latch)
    copies = set(list_targets(f.sync["p_clk"])) - set(top.pgate.state_signals)
    assert any(s.backtrace[-1][0] == "c_clk_p_clk_q0" for s in copies)
    assert any(s.backtrace[-1][0] == "sys_gates_rst_q" for s in latch)
    # A second call (LiteX finalizes an SoC twice) adds nothing: one latch statement and one set of copies a gate.
    before = {d: len(stmts) for d, stmts in f.sync.items()}
    resolve_gate_inputs(top, f, outside={top.go})
    assert {d: len(stmts) for d, stmts in f.sync.items()} == before
    assert len(f.sync["c_clk_n"]) == 1 and len(f.sync["p_clk_n"]) == 1


@pytest.mark.unit
def test_inputs_of_several_gated_blocks_are_compared_only_when_one_moved():
    """resolve_gate_inputs: an input that registers of two other gated blocks drive is copied in the
    consumer's own gated domain (the value of the last cycle the consumer was clocked) and compared with
    that copy only when one of the two blocks changed its registers (a Mux on their `state_same`); before,
    any change of either woke the consumer. Inputs compared every cycle are copied in the gated domain too,
    not in `sys`."""
    from migen import Module, Signal, If, Mux
    from migen.fhdl.structure import _Operator
    from migen.fhdl.tools import list_signals, list_targets
    from nandlab.gateware.common.idlegate import QuiescenceGate, resolve_gate_inputs

    class Producer(Module):
        def __init__(self, go):
            self.count = Signal(8)
            self.sync += If(go, self.count.eq(self.count + 1))

    class Consumer(Module):
        def __init__(self, level, free):
            self.seen = Signal(8)
            self.sync += self.seen.eq(level + free)

    class Top(Module):
        def __init__(self):
            self.go, self.free, level = Signal(), Signal(8), Signal(8)
            self.submodules.p1, self.submodules.p2 = p1, p2 = Producer(self.go), Producer(~self.go)
            self.submodules.consumer = Consumer(level, self.free)
            self.comb += level.eq(p1.count[:4] + p2.count[4:])
            self.sync += self.free.eq(self.free + 1)
            self.submodules.g1 = QuiescenceGate(p1, "p1_clk", late_inputs=True)
            self.submodules.g2 = QuiescenceGate(p2, "p2_clk", late_inputs=True)
            self.submodules.cgate = QuiescenceGate(self.consumer, "c_clk", late_inputs=True)
            self.level = level

    top = Top()
    f = top.get_fragment()
    resolve_gate_inputs(top, f, outside={top.go})
    r = top.cgate.resolution
    assert r["compared"] == [top.free] and r["by_domain"] == {}
    assert r["watched"] == {frozenset({"p1_clk", "p2_clk"}): [top.level]}
    # The copies of both inputs are registers of the consumer's gated domain, none of `sys`.
    copies = {s.backtrace[-1][0] for s in list_targets(f.sync["c_clk"])}
    assert {"c_clk_w0_q0", "c_clk_ip0"} <= copies
    assert not {"c_clk_w0_q0", "c_clk_ip0"} & {s.backtrace[-1][0] for s in list_targets(f.sync.get("sys", []))}
    # The latch reads both producers' state_same and the copy, the comparison under a Mux.
    (latch,) = f.sync["c_clk_n"]
    read = set(list_signals(latch))
    assert {top.g1.state_same, top.g2.state_same, top.level} <= read
    muxes = []
    def walk(e):
        if isinstance(e, _Operator):
            if e.op == "m":
                muxes.append(e)
            for o in e.operands:
                walk(o)
    walk(latch.r)
    assert muxes and any(top.level in set(list_signals(m.operands[2])) for m in muxes)


@pytest.mark.unit
def test_gate_latches_share_one_falling_edge_domain():
    """share_gate_latches: every gate's latch statement (nested IdleGates' and QuiescenceGates' after
    resolve_gate_inputs), the same statements, in one domain clocked by the inverted `sys` clock; the gates'
    own latch domains and the wires clocking them are gone; a second call adds nothing."""
    from migen import Module, Signal, If
    from migen.fhdl.structure import _Assign
    from migen.fhdl.tools import list_targets
    from migen.fhdl.verilog import convert
    from nandlab.gateware.common.idlegate import IdleGate, QuiescenceGate, resolve_gate_inputs, share_gate_latches

    class Counter(Module):
        def __init__(self, go):
            self.count = Signal(8)
            self.sync += If(self.count != 0, self.count.eq(self.count - 1)).Elif(go, self.count.eq(5))

    class Top(Module):
        def __init__(self):
            self.go, self.seen = Signal(), Signal(8)
            self.submodules.p1, self.submodules.p2 = p1, p2 = Counter(self.go), Counter(~self.go)
            self.submodules.inner = inner = Counter(p1.count[0])
            self.submodules.igate = IdleGate(inner, (inner.count == 0) & ~p1.count[0], "inner_clk")
            self.sync += self.seen.eq(p1.count + p2.count + inner.count)
            self.submodules.g1 = QuiescenceGate(p1, "p1_clk", late_inputs=True)
            self.submodules.g2 = QuiescenceGate(p2, "p2_clk", late_inputs=True)

    top = Top()
    f = top.get_fragment()
    resolve_gate_inputs(top, f, outside={top.go})
    latches = {d: list(f.sync[d]) for d in ("p1_clk_n", "p2_clk_n", "inner_clk_n")}
    assert all(len(stmts) == 1 for stmts in latches.values())
    assert share_gate_latches(top, f) == {"sys": "sys_gates_n"}
    shared = f.sync["sys_gates_n"]
    assert sorted(map(id, shared)) == sorted(id(s) for stmts in latches.values() for s in stmts)
    assert set(list_targets(shared)) == {top.g1.gate.latched, top.g2.gate.latched, top.igate.latched}
    assert not set(latches) & set(f.sync)
    names = [cd.name for cd in f.clock_domains]
    assert "sys_gates_n" in names and not set(latches) & set(names)
    gone = {g.cd_latch.clk for g in (top.g1.gate, top.g2.gate, top.igate)}
    assert not any(isinstance(s, _Assign) and s.l in gone for s in f.comb)
    before = {d: len(stmts) for d, stmts in f.sync.items()}
    share_gate_latches(top, f)
    assert {d: len(stmts) for d, stmts in f.sync.items()} == before
    # One falling-edge block in the Verilog, on the inverted system clock.
    v = str(convert(f, ios={top.go, top.seen}))
    assert "assign sys_gates_n_clk = (~sys_clk);" in v
    assert v.count("always @(posedge sys_gates_n_clk)") == 1 and "_clk_n" not in v
