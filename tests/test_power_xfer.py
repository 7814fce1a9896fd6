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
    def __init__(self, free, grant_after, uop_cycles, sequencer=NandLabSequencer, release=RELEASE):
        from migen import Signal, If
        self.submodules.seq = seq = sequencer(WAYS, MODE_CYCLES, release_delay=release)
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


def _run_sequencer(op, free, grant_after=7, uop_cycles=4, sequencer=NandLabSequencer, release=RELEASE):
    """Descriptors `op` (a name, or several one after another) on way 1 through `_SequencerBench`;
    returns the events [(cycle, what, value)]."""
    top = _SequencerBench(free, grant_after, uop_cycles, sequencer, release)
    seq, events = top.seq, []
    ops = [op] if isinstance(op, str) else list(op)

    def bench():
        yield seq.sink.valid.eq(1)
        for name, value in dict(op=OPS[ops.pop(0)], way=1, tag=5, verdict=R["OK"], way_bit=2, len=8).items():
            yield getattr(seq.sink, name).eq(value)
        done_at, left = None, len(ops) + 1
        for cycle in range(400):
            if done_at is not None and cycle > done_at + 2 * release:
                break
            if (yield seq.sink.ready):
                if ops:
                    yield seq.sink.op.eq(OPS[ops.pop(0)])
                else:
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
            if (yield seq.source.valid):
                events.append((cycle, "complete", (yield seq.source.result)))
                left -= 1
                if left == 0:
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


def test_arbiter_array_and_transfers_share_the_node(verilog_wrapping_shift):
    """Two dies' sequencers (the MTPM paper's die, times / 20000) and two stand-in controllers asking for
    transfers at random, through PowerTransferArbiters on a ring of two nodes (the SoC's look-ahead
    table), KMTPM sub-atomic, TG 3, alpha 1 (TT 7: a pre-charge takes every token, a transfer 1): in
    every cycle the dies' current - the sequencers' and SOC_I_BUS while a granted transfer moves - is
    within the budget, a die never runs an array phase while its transfer holds the node, the tokens
    sum to TT, and no request waits for ever (each transfer and operation ends)."""
    from nandlab import tokens
    from nandlab.gateware.power.common import MODE_KMTPM_SUB
    from nandlab.gateware.power.hook import NandLabPowerHook
    from nandlab.gateware.power.ring import PowerRing
    from nandlab.gateware.power.xfer import PowerTransferArbiter, SOC_I_BUS, X_RUN
    from nandlab.nand_model.current import NandLabDieSequencer, PhaseTables
    from nandlab.nand_model.parts import MTPMPaperMLC

    n, tg, alpha, cycles = 2, 3, 1, 2500
    part = MTPMPaperMLC()
    table = tokens.with_transfers(tokens.compile_tables(part, tg=tg, alpha=alpha))
    phases = PhaseTables(part, 100e6, time_scale=20000)

    class Top(Module):
        def __init__(self):
            self.submodules.ring = PowerRing(n, oi_ahead=True)
            self.seqs = [NandLabDieSequencer(phases) for _ in range(n)]
            self.arbs = [PowerTransferArbiter(s) for s in self.seqs]
            self.submodules += self.seqs + self.arbs
            for seq, arb, node in zip(self.seqs, self.arbs, self.ring.nodes):
                self.comb += NandLabPowerHook(len(seq.current)).connect(arb, node)

    top = Top()
    ring, seqs, arbs = top.ring, top.seqs, top.arbs
    rng = random.Random(18)
    stats = dict(xfers=0, ops=0, over=0, overlap=0, cons=0, longest=0)

    def bench():
        for oi, rt, _ in table.words():
            yield ring.table_we.eq(1); yield ring.table_adr.eq(oi); yield ring.table_dat.eq(rt)
            yield
        yield ring.table_we.eq(0)
        yield ring.req_mode.eq(MODE_KMTPM_SUB); yield ring.req_tg.eq(tg); yield ring.req_alpha.eq(alpha)
        yield ring.apply.eq(1); yield; yield ring.apply.eq(0)
        for _ in range(8):
            yield
        # Stand-in controllers: idle, asking (until the grant), moving `left` cycles, then x_end.
        state, left, since = ["idle"] * n, [0] * n, [0] * n
        for cycle in range(cycles):
            quiesce = cycle > cycles - 600          # The end: no new work; everything must finish.
            total = 0
            for k in range(n):
                seq, arb = seqs[k], arbs[k]
                busy = (yield seq.busy)
                go = int(not busy and not quiesce and rng.random() < 0.05)
                yield seq.start.eq(go)
                yield seq.op.eq(rng.randrange(4))
                stats["ops"] += go
                yield arb.x_end.eq(0)
                if state[k] == "idle" and not quiesce and rng.random() < 0.01:
                    state[k], since[k] = "ask", 0
                    yield arb.x_request.eq(1); yield arb.x_out.eq(rng.randrange(2))
                elif state[k] == "ask":
                    since[k] += 1
                    stats["longest"] = max(stats["longest"], since[k])
                    if (yield arb.x_grant):
                        state[k], left[k] = "move", rng.randrange(5, 25)
                        yield arb.x_request.eq(0)
                elif state[k] == "move":
                    left[k] -= 1
                    if left[k] == 0:
                        state[k] = "idle"
                        yield arb.x_end.eq(1)
                        stats["xfers"] += 1
                moving = state[k] == "move"
                total += (yield seq.current) + (SOC_I_BUS if moving else 0)
                if (yield arb.x_state) == X_RUN and (yield seq.current):
                    stats["overlap"] += 1
            if total > alpha * 4096:
                stats["over"] += 1
            if (yield ring.running):
                s = 0
                for nd in ring.nodes:
                    s += (yield nd.ht) + (yield nd.ut) + (yield nd.tx_tokens)
                stats["cons"] += s != table.tt
            yield
        stats["busy_at_end"] = []
        for seq, st in zip(seqs, state):
            stats["busy_at_end"].append(((yield seq.busy), st))

    run_simulation(top, bench())
    assert stats["xfers"] > 15 and stats["ops"] > 8, stats
    assert stats["over"] == 0 and stats["overlap"] == 0 and stats["cons"] == 0, stats
    assert stats["busy_at_end"] == [(0, "idle")] * n, stats


def test_sequencer_data_during_a_release_waits_and_asks_again():
    """A READ then a READ STATUS on the same way, the tokens given back slowly (release_delay 30): the
    status byte's micro-op comes while the read's tokens are still being given back; it waits for the
    release, then asks again and is taken after that grant (never on the tokens being given back)."""
    ev = _run_sequencer(("READ", "READ_STATUS"), free=False, grant_after=2, release=30)
    assert [e[2] for e in ev if e[1] == "complete"] == [R["OK"]] * 2, ev
    grants = [c for c, w, _ in ev if w == "grant"]
    ends = [c for c, w, _ in ev if w == "end"]
    requests = [c for c, w, _ in ev if w == "request"]
    completes = [c for c, w, _ in ev if w == "complete"]
    moves = [c for c, w, u in ev if w == "take" and u in MOVES]
    assert len(grants) == len(ends) == len(requests) == len(moves) == 2, ev
    # The second descriptor reached its status byte before the first's release ended ...
    status_cmd = [c for c, w, u in ev if w == "take" and u == U["CMD"] and c > completes[0]][0]
    assert status_cmd + 4 + 2 < ends[0], ev
    # ... and asked only after it, its byte moving on the new grant.
    assert ends[0] < requests[1] <= grants[1] < moves[1] < ends[1], ev
