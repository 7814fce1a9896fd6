"""Data transfers under the token ring in the SoC (issue 18): the channel controller's sequencer asks for a
transfer's tokens and moves no byte before the grant (gateware/onfi/controller/sequencer.py), and a die's
ring node serves its array and its transfers in turn (gateware/power/xfer.py)."""

import random

import pytest
from migen import Module, run_simulation

from nandlab.gateware.onfi.controller.common import OPS, U, R
from nandlab.gateware.onfi.controller.sequencer import NandLabSequencer

pytestmark = pytest.mark.unit

WAYS, RELEASE = 2, 3
MOVES = {U["DIN"], U["DIN_PARAM"], U["DOUT"], U["STATUS"]}
OWN = {U["END"], U["WAIT"], U["WAIT_RB"], U["ARDY"]}          # The sequencer's own micro-ops.
MODE_CYCLES = {(i, m): dict(t_whr=2, t_adl=2, t_ccs=2, t_wb=2, t_rr=2, t_cs=1, t_rhw=1) for i in (0, 1, 3) for m in range(6)}


class _SequencerBench(Module):
    """A NandLabSequencer whose engines are a stand-in that takes every bus micro-op when offered and
    finishes it `uop_cycles` later, and whose ways' dies grant `grant_after` cycles after a request
    (never: -1)."""
    def __init__(self, free, grant_after, uop_cycles, sequencer=NandLabSequencer):
        from migen import Signal, If
        self.submodules.seq = seq = sequencer(WAYS, MODE_CYCLES, release_delay=RELEASE)
        busy, asked = Signal(8), Signal(8)
        own = 0
        for u in OWN:
            own = own | (seq.uop.op == u)
        self.comb += [
            seq.uop.take.eq(seq.uop.valid & ~own & (busy == 0)),
            seq.uop.done.eq(busy == 1),
            seq.power_free.eq((2**WAYS - 1) if free else 0),
            If((seq.power_request != 0) & (asked >= grant_after) & (grant_after >= 0),
               seq.power_grant.eq(seq.power_request)),
            seq.room.eq(1), seq.rb.eq(2**WAYS - 1),
        ]
        self.sync += [
            If(seq.uop.take, busy.eq(uop_cycles)).Elif(busy != 0, busy.eq(busy - 1)),
            If(seq.power_request != 0, asked.eq(asked + 1)).Else(asked.eq(0)),
        ]


def _run_sequencer(op, free, grant_after=7, uop_cycles=4, sequencer=NandLabSequencer):
    """One descriptor `op` on way 1 through `_SequencerBench`; returns the events [(cycle, what, value)]."""
    top = _SequencerBench(free, grant_after, uop_cycles, sequencer)
    seq, events = top.seq, []

    def bench():
        yield seq.sink.valid.eq(1)
        for name, value in dict(op=OPS[op], way=1, tag=5, verdict=R["OK"], way_bit=2, len=8).items():
            yield getattr(seq.sink, name).eq(value)
        done_at = None
        for cycle in range(400):
            if done_at is not None and cycle > done_at + 2 * RELEASE:
                break
            if (yield seq.sink.ready):
                yield seq.sink.valid.eq(0)
            if (yield seq.uop.take):
                events.append((cycle, "take", (yield seq.uop.op)))
            req = (yield seq.power_request)
            if req and (not events or events[-1][1] != "request"):
                events.append((cycle, "request", (req, (yield seq.power_out))))
            for what in ("grant", "end"):
                v = (yield getattr(seq, f"power_{what}"))
                if v:
                    events.append((cycle, what, v))
            if (yield seq.source.valid) and done_at is None:
                events.append((cycle, "complete", (yield seq.source.result)))
                done_at = cycle
            yield
    run_simulation(top, bench())
    return events


@pytest.mark.parametrize("op, outs", [("PROGRAM", [0, 1]), ("READ", [1]), ("READ_STATUS", [1])])
def test_sequencer_moves_no_byte_before_the_grant(op, outs):
    """Each bus turn's first micro-op that moves bytes waits for the die's grant (none is taken before
    it), is asked for as data input (0) or output (1) on its way only, and the tokens go back
    `release_delay` cycles after the turn's data ends (END, WAIT_RB), once per grant; the descriptor
    completes OK."""
    ev = _run_sequencer(op, free=False)
    assert ("complete", R["OK"]) in [e[1:] for e in ev], ev
    requests = [v for _, w, v in ev if w == "request"]
    grants = [c for c, w, _ in ev if w == "grant"]
    ends = [c for c, w, _ in ev if w == "end"]
    assert requests == [(2, out) for out in outs], ev
    assert len(grants) == len(ends) == len(outs) and all(g < e for g, e in zip(grants, ends)), ev
    moves = [c for c, w, uop in ev if w == "take" and uop in MOVES]
    assert len(moves) == len(outs), ev
    for c in moves:
        # Taken only while a grant is held: after one, before its end.
        assert any(g < c < e for g, e in zip(grants, ends)), (c, ev)
    # The release: RELEASE cycles after the END or WAIT_RB that follows the data is dispatched, the cycle
    # after the last bus micro-op's done (uop_cycles = 4 after its take).
    takes = [c for c, w, _ in ev if w == "take"]
    for e in ends:
        last = max(c for c in takes if c < e)
        assert e == last + 4 + 1 + RELEASE, (e, ev)


# The micro-ops' take cycles and the completion of the sequencer before transfers came under the ring
# (commit 49fcf10), recorded on the same bench: the reference for "no cycle added".
BEFORE = {"PROGRAM": ([(4, 1), (9, 3), (14, 4), (22, 8), (27, 1), (38, 1), (46, 11)], 51),
          "READ":    ([(4, 1), (9, 3), (14, 4), (19, 1), (30, 10)], 35)}


@pytest.mark.parametrize("op", sorted(BEFORE))
def test_sequencer_free_ring_asks_nothing_and_adds_no_cycle(op):
    """With the ring not governing (NPM) nothing is asked, and every micro-op is taken in the cycle it
    was before; a ring that governs, granting at once, costs cycles."""
    ev = _run_sequencer(op, free=True)
    assert not [e for e in ev if e[1] in ("request", "grant", "end")], ev
    assert ([(c, u) for c, w, u in ev if w == "take"], [c for c, w, _ in ev if w == "complete"][0]) == BEFORE[op]
    governed = _run_sequencer(op, free=False, grant_after=0)
    assert [u for _, w, u in governed if w == "take"] == [u for u, _ in [(u, c) for c, u in BEFORE[op][0]]]
    assert [c for c, w, _ in governed if w == "complete"][0] > BEFORE[op][1]


def test_sequencer_waits_for_a_grant_that_does_not_come():
    """No grant: the data micro-op is never taken, the bus stays with the way (no completion)."""
    ev = _run_sequencer("PROGRAM", free=False, grant_after=-1)
    assert [v for _, w, v in ev if w == "request"] == [(2, 0)], ev
    assert not [e for e in ev if e[1] == "complete" or (e[1] == "take" and e[2] in MOVES)], ev
