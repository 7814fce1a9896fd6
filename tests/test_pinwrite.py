"""The write side of the pin-level model (NV-DDR data input at the die's pins) and the controller's DQS
placement: ONFI's tDS / tDH against the margins the placement leaves, and the gateware against the
margins computed here."""

import random

import pytest

from migen import *

from nandlab.gateware.onfi import common as onfi
from nandlab.gateware.onfi.controller.common import din_dqs_phases, mode_beats
from nandlab.gateware.onfi.pinphy import DQS_OUT_SHIFT_CYCLES
from nandlab.nand_model.pinmodel import SKEW_MAX_PS, phase_ps
from nandlab.nand_model.pinwrite import NVDDR_TDH_PS, NVDDR_TDS_PS, NandLabPinWrite, write_margins, write_ok

CLK = 100e6
P = phase_ps(CLK)
SHIFT = int(round(DQS_OUT_SHIFT_CYCLES * 1e12 / CLK))


def _bytes(mode):
    """[(k, n)] of the write beat's two bytes, early and late: the DQS edge's phase in the byte, the byte's phases."""
    b, lo = mode_beats(onfi.IF_NVDDR, mode, CLK)["w"]
    out = []
    for late in (0, 1):
        k0, k1 = din_dqs_phases(mode, CLK, late)
        out.append([(k0, lo), (k1 - lo, 2 * b - lo)])
    return out


def _passes(mode, late, dq_skew, dqs_skew):
    return write_ok(mode, late, dq_skew, dqs_skew, CLK)


@pytest.mark.unit
@pytest.mark.parametrize("mode", range(6))
def test_placement_meets_tds_tdh_at_every_skew_corner(mode):
    """With the PHY's quarter-cycle DQS, the controller's edge meets the die's tDS and tDH without skew for
    both placements; at each corner of the write skew (all of SKEW_MAX_PS on the DQ lanes or on DQS) one
    placement does (the write training's choice), and on odd-length bytes the default does at both."""
    n = _bytes(mode)[0][0][1]
    assert _passes(mode, 0, 0, 0) and _passes(mode, 1, 0, 0)
    for dq, dqs in ((SKEW_MAX_PS, 0), (0, SKEW_MAX_PS)):
        assert _passes(mode, 0, dq, dqs) or _passes(mode, 1, dq, dqs), (dq, dqs)
        if n % 2:
            assert _passes(mode, 0, dq, dqs)


@pytest.mark.unit
@pytest.mark.parametrize("mode", range(6))
def test_edge_aligned_dqs_fails_every_mode(mode):
    """The placement before this model (DQS toggled with the byte's first phase, no PHY shift: edge-aligned)
    leaves no setup time: the die's tDS fails in every mode."""
    rel, n = 0, _bytes(mode)[0][0][1]
    setup, hold = write_margins(rel, P, 0, n)
    assert setup < NVDDR_TDS_PS[mode] and hold >= NVDDR_TDH_PS[mode]


class _Registered(Module):
    """The model behind output registers, as in the SoC: the pins take `nxt` a cycle later, and the model sees
    `nxt` as its look-ahead (`dq_next`)."""
    def __init__(self, shift):
        self.nxt, self.nxt_dqs, self.nxt_oe = Signal(16), Signal(2), Signal()
        dq_o, dqs_o, dqs_oe, self.dq_die = Signal(16), Signal(2), Signal(), Signal(16)
        self.sync += dq_o.eq(self.nxt), dqs_o.eq(self.nxt_dqs), dqs_oe.eq(self.nxt_oe)
        self.submodules.w = NandLabPinWrite(dq_o, dqs_o, dqs_oe, self.dq_die, P, shift, dq_next=self.nxt)


def _run(wskew, shift, tds, tdh, phases, lookahead=False):
    """Drive the model with `phases` ([(dq bit of lane 0, dqs level)], two a cycle, DQS driven), then idle
    cycles; returns the die's lane-0 bit in every phase and the two counters. `lookahead`: behind output
    registers with `dq_next` (the die's bits then come a cycle later)."""
    if lookahead:
        top = _Registered(shift)
        dut, dq_o, dqs_o, dqs_oe, dq_die = top.w, top.nxt, top.nxt_dqs, top.nxt_oe, top.dq_die
    else:
        dq_o, dqs_o, dqs_oe, dq_die = Signal(16), Signal(2), Signal(), Signal(16)
        top = dut = NandLabPinWrite(dq_o, dqs_o, dqs_oe, dq_die, P, shift)
    got = []

    def gen():
        yield dut.enable.eq(1)
        yield dut.tds.eq(tds)
        yield dut.tdh.eq(tdh)
        for i, w in enumerate(wskew):
            yield dut.wskew[i].eq(w)
        for c in range(len(phases) // 2):
            (d0, s0), (d1, s1) = phases[2 * c], phases[2 * c + 1]
            yield dqs_oe.eq(1)
            yield dq_o.eq(d0 | d1 << 8)
            yield dqs_o.eq(s0 | s1 << 1)
            yield
            v = yield dq_die
            got.extend([v & 1, v >> 8 & 1])
        yield dqs_oe.eq(0)
        yield dq_o.eq(0)
        for _ in range(3):
            yield
            v = yield dq_die
            got.extend([v & 1, v >> 8 & 1])
        got.append(((yield dut.viol_setup), (yield dut.viol_hold)))

    run_simulation(top, gen())
    return got[2:-1] if lookahead else got[:-1], got[-1]


@pytest.mark.unit
@pytest.mark.parametrize("lookahead", [False, True], ids=["alone", "behind_registers"])
def test_gateware_takes_what_the_margins_say(lookahead):
    """Random DQ bits on lane 0 with a DQS edge every phase (mode 5's pattern) and random skews: the bit the
    die takes at each edge and the violation counts are those the margins imply (tDS/tDH raised in some
    trials so that both kinds occur)."""
    rng = random.Random(5)
    kinds = set()
    odd_hold_wrong = 0
    for trial in range(16):
        dq_skew, dqs_skew = rng.randint(0, SKEW_MAX_PS), rng.randint(0, SKEW_MAX_PS)
        tds, tdh = [(900, 900), (2600, 900), (900, 2600), (3000, 2400)][trial % 4]
        bits = [rng.randint(0, 1) for _ in range(40)]
        dqs = [1 - i % 2 for i in range(40)]                   # Toggles every phase, from the first.
        got, counts = _run([dq_skew] + [0] * 7 + [dqs_skew], SHIFT, tds, tdh, list(zip(bits, dqs)), lookahead)
        rel = SHIFT + dqs_skew - dq_skew
        assert 0 <= rel < P
        ext = [0] + bits + [0]                                 # (before and after: DQ low)
        setup = hold = 0
        for j in range(len(bits)):
            s_bad = ext[j + 1] != ext[j] and rel < tds
            h_bad = ext[j + 2] != ext[j + 1] and P - rel < tdh
            setup, hold = setup + s_bad, hold + h_bad
            # (alone, a hold after a phase-1 edge is counted a cycle late and leaves the bit)
            if not s_bad and not (h_bad and (lookahead or j % 2 == 0)):
                assert got[j] == bits[j], (trial, j, rel, tds, tdh)
            elif h_bad and j % 2 == 1 and not s_bad:
                odd_hold_wrong += got[j] != bits[j]
        assert counts == (setup, hold), (trial, rel, tds, tdh)
        kinds |= {"setup"} if setup else set()
        kinds |= {"hold"} if hold else set()
    assert kinds == {"setup", "hold"}
    # A hold violated after a phase-1 edge garbles the bit only when the model sees the next cycle's levels.
    assert (odd_hold_wrong > 0) == lookahead, odd_hold_wrong
