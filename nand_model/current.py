"""Array-operation sequencer of a die: plays the current waveform phase by phase, with the power hook.

An array operation (read, LSB/MSB program, erase) is the sequence of sub-atomic phases of its
atomic operations (waveforms.py; a program repeats its loop `ispp_loops` times). Before each
phase the die presents OI (the phase id) and waits for OE; it pulses `phase_end` when the phase is
over. With OE tied high the die runs free. The die's current comes out every cycle in units of
I_max / 4096 (12-bit fraction), linear segments stepping every cycle in 12.12 fixed point.

The tables are built here in Python (`PhaseTables`) from the part and the time scale; the same
tables give the reference current (`PhaseTables.expand`) that tests compare with the gateware.
"""

import math
from dataclasses import dataclass

from migen import *
from migen.fhdl.decorators import CEInserter

from litex.gen import LiteXModule

from nandlab.nand_model import waveforms as wf

I_FRAC_BITS = 12          # Current unit: I_max / 4096.
ACC_FRAC    = 12          # Extra fraction bits of the ramp accumulator.
OPS = ["read", "program_lsb", "program_msb", "erase"]
OP_READ_ARRAY, OP_PROGRAM_LSB, OP_PROGRAM_MSB, OP_ERASE_ARRAY = range(4)
ATOMIC_IDS = {name: i + 1 for i, name in enumerate(wf.LEVELS)}   # P_A1 = 1, ... (0: idle)


@dataclass
class Phase:
    oi         : int      # (atomic id << 4) | sub-atomic index + 1
    first      : bool     # First sub-atomic phase of an atomic operation.
    segments   : list     # [(cycles, i0 (12.12), slope (12.12 per cycle))]


class PhaseTables:
    """Phases of every operation of a part, in cycles of `sys_clk_freq` divided by `time_scale`."""
    def __init__(self, part, sys_clk_freq=100e6, time_scale=1, percent=None):
        """`percent` shortens operations ({"read": 75, "program": 85}: SDW-NFM's tR/tPROG)."""
        self.part = part
        self.ops = {}      # op -> (phases of one loop, loops)
        for op in OPS:
            pct = (percent or {}).get("program" if op.startswith("program") else op, 100)
            cyc = lambda ns, pct=pct: max(1, int(round(ns * pct / 100 * 1e-9 * sys_clk_freq / time_scale)))
            if op == "program_msb" and part.t_prog_msb is None:
                atomics = wf.operation(part, "program_lsb")
            else:
                atomics = wf.operation(part, op)
            if op == "read":
                atomics = atomics[:2]          # R_A3 (data out) is bus current while data moves.
            loops = part.ispp_loops if op.startswith("program") else 1
            per_loop = len(atomics) // loops
            phases = []
            for atomic in atomics[:per_loop]:
                for k, (t0, t1, _) in enumerate(wf.subatomic_split(atomic)):
                    segs = self._clip(atomic, t0, t1, cyc)
                    phases.append(Phase((ATOMIC_IDS[atomic.name] << 4) | (k + 1), k == 0, segs))
            self.ops[op] = (phases, loops)

    @staticmethod
    def _clip(atomic, t0, t1, cyc):
        """Segments of `atomic` inside [t0, t1), in cycles, as (cycles, i0, slope) fixed point."""
        out, t = [], 0
        for seg in atomic.segments:
            a, b = max(t, t0), min(t + seg.duration_ns, t1)
            if a < b:
                i0, i1 = seg.at(a - t), seg.at(b - t)
                n = cyc(b - a)
                fx0 = int(round(i0 * (1 << (I_FRAC_BITS + ACC_FRAC))))
                fx1 = int(round(i1 * (1 << (I_FRAC_BITS + ACC_FRAC))))
                out.append((n, fx0, (fx1 - fx0) // n))
            t += seg.duration_ns
        return out

    def phases(self, op):
        phases, loops = self.ops[op]
        return phases * loops

    def cycles(self, op):
        """Cycles the operation keeps the array busy (one decision cycle per phase included)."""
        return sum(1 + sum(n for n, _, _ in ph.segments) for ph in self.phases(op))

    def expand(self, op):
        """Reference current per cycle of an operation (OE always granted), in I_max / 4096.

        Every phase starts with one cycle at 0 in which the die decides on OE.
        """
        out = []
        for ph in self.phases(op):
            out.append(0)
            for n, i0, slope in ph.segments:
                acc = i0
                for _ in range(n):
                    out.append(acc >> ACC_FRAC)
                    acc += slope
        return out


def _flatten(tables, variants):
    """The tables as rows: segments, phases (first segment, segments, OI, first of an atomic
    operation) and operations (first phase, phases per loop, loops); the variants' durations."""
    seg_rows, phase_rows, op_rows = [], [], []
    var_durs = [[] for _ in variants]
    for op in OPS:
        for durs, t in zip(var_durs, variants):
            durs += [n for ph in t.ops[op][0] for n, _, _ in ph.segments]
        phases, loops = tables.ops[op]
        op_rows.append((len(phase_rows), len(phases), loops))
        for ph in phases:
            phase_rows.append((len(seg_rows), len(ph.segments), ph.oi, int(ph.first)))
            seg_rows.extend(ph.segments)
    return seg_rows, phase_rows, op_rows, var_durs


class NandLabDieSequencer(LiteXModule):
    """Runs an operation's phases: OI/OE handshake, current output, busy."""
    def __init__(self, tables, variants=(), with_skip=False, seg_rom="logic"):
        """`variants`: more PhaseTables with the same phases and other durations (SDW-NFM, the
        MPNFM small-page array); `variant` picks one with `start` (0: `tables`). `with_skip`: the
        jump input of the power harness (gateware/power/skip.py), simulation only. `seg_rom`: the
        segment table as logic, or as a memory read a cycle ahead ("memory", cycle-identical: _add_last_cycle)."""
        assert seg_rom in ("logic", "memory") and not (with_skip and seg_rom == "memory")
        self.start   = Signal()            # Pulse with `op`.
        self.variant = Signal(max=max(len(variants) + 1, 2))
        self.op      = Signal(2)
        self.busy    = Signal()
        self.oi      = Signal(8)           # Phase id while waiting for OE and running (0 = none).
        self.oi_next = Signal(8)           # What `oi` is in the next cycle (the ring node looks ahead).
        self.oi_first = Signal()           # The phase starts an atomic operation.
        self.oe      = Signal(reset=1)     # Grant from the power manager (tie high to run free).
        self.request = Signal()            # Presenting OI (OE is looked at in this cycle).
        self.waiting = Signal()            # Presenting OI, OE not yet given.
        self.phase_end = Signal()          # Pulse: the phase just finished.
        self.atomic_end = Signal()         # Pulse with phase_end: ...and with it its atomic operation.
        self.current = Signal(I_FRAC_BITS + 2)
        self.time_scale_shift = Signal(5)

        # # #

        seg_rows, phase_rows, op_rows, var_durs = _flatten(tables, variants)
        dur_w   = max([n for n, _, _ in seg_rows] + [n for d in var_durs for n in d]).bit_length()
        acc_w   = I_FRAC_BITS + ACC_FRAC + 2
        slope_w = acc_w + 1
        self.tables = tables
        segs_dur   = Array(Constant(n, dur_w) for n, _, _ in seg_rows)
        var_dur    = []
        for durs in var_durs:
            assert len(durs) == len(seg_rows), "variant tables must have the same phases"
            var_dur.append(Array(Constant(n, dur_w) for n in durs))
        segs_i0    = Array(Constant(i0, acc_w) for _, i0, _ in seg_rows)
        segs_slope = Array(Constant(s, (slope_w, True)) for _, _, s in seg_rows)
        ph_first   = Array(Constant(r[0], max(len(seg_rows).bit_length(), 1)) for r in phase_rows)
        ph_nseg    = Array(Constant(r[1], 8) for r in phase_rows)
        op_first   = Array(Constant(r[0], 16) for r in op_rows)
        op_len     = Array(Constant(r[1], 16) for r in op_rows)
        op_loops   = Array(Constant(r[2], 8) for r in op_rows)

        cur_op  = Signal(2)
        phase   = Signal(16)       # Index into the phase rows.
        ph_left = Signal(16)       # Phases left in this loop.
        loops   = Signal(8)        # Loops left after this one.
        seg     = Signal(16)
        seg_left = Signal(8)
        count   = Signal(dur_w + 1)
        acc     = Signal((acc_w + 1, True))
        slope   = Signal((slope_w, True))
        running = Signal()         # Inside a phase (segments playing).

        # The phase's OI and atomic flag are looked up when `phase` is written, from tables of the
        # value it is written with (each operation's first phase, the phase after each phase), and
        # kept in registers: the OI feeds the ring node's token lookup and arithmetic, and the ROM
        # lookup in front of them made the die -> ring path the ECP5 builds' longest.
        n_ph      = len(phase_rows)
        first_oi  = Array(Constant(phase_rows[r[0]][2], 8) for r in op_rows)
        first_at  = Array(Constant(phase_rows[r[0]][3], 1) for r in op_rows)
        next_oi   = Array(Constant(phase_rows[min(p + 1, n_ph - 1)][2], 8) for p in range(n_ph))
        next_at   = Array(Constant(phase_rows[min(p + 1, n_ph - 1)][3], 1) for p in range(n_ph))
        phase_oi  = Signal(8, reset=phase_rows[0][2])         # ph_oi[phase], registered.
        phase_at  = Signal(reset=phase_rows[0][3])            # ph_atomic[phase], registered.
        def goto_first(op):
            return [NextValue(phase, op_first[op]), NextValue(phase_oi, first_oi[op]),
                    NextValue(phase_at, first_at[op])]
        def goto_next():
            return [NextValue(phase, phase + 1), NextValue(phase_oi, next_oi[phase]),
                    NextValue(phase_at, next_at[phase])]

        self.comb += [
            self.current.eq(Mux(running, acc[ACC_FRAC:ACC_FRAC + len(self.current)], 0)),
            self.oi_first.eq(phase_at),
        ]

        use_variant = Signal(max=max(len(variants) + 1, 2))
        # One segment-table lookup a cycle, shared by REQUEST (the phase's first) and RUN (the next).
        self.submodules.fsm = fsm = FSM(reset_state="IDLE")
        last_cycle = Signal()
        if seg_rom == "logic":
            seg_idx = Signal(len(seg) + 1)
            self.comb += seg_idx.eq(Mux(fsm.ongoing("REQUEST"), ph_first[phase], seg + 1))
            seg_dur = self._duration(segs_dur[seg_idx], [vd[seg_idx] for vd in var_dur], use_variant)
            seg_i0, seg_slope = segs_i0[seg_idx], segs_slope[seg_idx]
        else:
            seg_dur, seg_i0, seg_slope = self._seg_memory(
                fsm, (seg_rows, phase_rows, op_rows, var_durs), [dur_w] * (1 + len(var_durs)) + [acc_w, slope_w],
                use_variant, (phase, seg, seg_left, ph_left, loops, cur_op, last_cycle), ph_first)
        fsm.act("IDLE",
            If(self.start,
                NextValue(cur_op, self.op),
                NextValue(use_variant, self.variant),
                *goto_first(self.op),
                NextValue(ph_left, op_len[self.op]),
                NextValue(loops, op_loops[self.op] - 1),
                NextState("REQUEST"),
            ),
        )
        busy = self.busy if seg_rom == "logic" else Signal()     # "memory": from a register, below.
        fsm.act("REQUEST", busy.eq(1),
            self.request.eq(1),
            self.waiting.eq(~self.oe),
            self.oi.eq(phase_oi),
            If(self.oe,
                NextValue(running, 1),
                NextValue(seg_left, ph_nseg[phase] - 1),
                NextValue(seg, ph_first[phase]),
                NextValue(count, seg_dur),
                NextValue(acc, seg_i0),
                NextValue(slope, seg_slope),
                NextState("RUN"),
            ),
        )
        self._add_last_cycle(seg_rom, fsm, count, seg_dur, seg_left, last_cycle)
        fsm.act("RUN",
            busy.eq(1),
            self.oi.eq(phase_oi),
            NextValue(count, count - 1),
            NextValue(acc, acc + slope),
            If(last_cycle,
                If(seg_left != 0,
                    NextValue(seg_left, seg_left - 1),
                    NextValue(seg, seg + 1),
                    NextValue(count, seg_dur),
                    NextValue(acc, seg_i0),
                    NextValue(slope, seg_slope),
                ).Else(
                    self.phase_end.eq(1),
                    # The next phase starts an atomic operation, or the operation is over.
                    self.atomic_end.eq((ph_left == 1) | next_at[phase]),
                    NextValue(running, 0),
                    If(ph_left > 1,
                        *goto_next(),
                        NextValue(ph_left, ph_left - 1),
                        NextState("REQUEST"),
                    ).Elif(loops != 0,
                        NextValue(loops, loops - 1),
                        *goto_first(cur_op),
                        NextValue(ph_left, op_len[cur_op]),
                        NextState("REQUEST"),
                    ).Else(
                        NextState("IDLE"),
                    ),
                ),
            ),
        )
        self._add_oi_next(fsm, last_cycle, seg_left, ph_left, loops, phase, cur_op, first_oi, next_oi)
        self._add_quiet(fsm, with_skip)
        if with_skip:
            self._add_skip(fsm, count, acc, slope, running, last_cycle)

    def _add_quiet(self, fsm, with_skip):
        """`quiet`: no register can change in this cycle, whatever else the inputs do (IDLE without a start,
        REQUEST without OE; never with_skip): the one-bit `idle` of an IdleGate, in place of a comparison of
        every register."""
        self.quiet = Signal()
        self.comb += self.quiet.eq(0 if with_skip else fsm.ongoing("IDLE") & ~self.start | fsm.ongoing("REQUEST") & ~self.oe)

    def _seg_memory(self, fsm, flat, widths, use_variant, state, ph_first):
        """seg_rom="memory": the segment rows (`widths` bits each: durations, I0, slope) in a memory
        whose read address is registered (`idx`): the row the FSM loads in this cycle if it loads one
        (REQUEST: the phase's first, `ph_first[phase]`; RUN: the next, `seg + 1`), set with the
        moves that make it so: a start or a new phase (`op_seg`, `next_seg`: the first segment of each
        operation, of the phase after each phase), the move into RUN, a segment's end. Returns the
        duration (variant chosen, time scale applied), I0 and slope of that row."""
        phase, seg, seg_left, ph_left, loops, cur_op, last_cycle = state
        seg_rows, phase_rows, op_rows, var_durs = flat
        rows = [(n, *(d[k] for d in var_durs), i0, s) for k, (n, i0, s) in enumerate(seg_rows)]
        op_seg = [phase_rows[r[0]][0] for r in op_rows]
        next_seg = [phase_rows[min(p + 1, len(phase_rows) - 1)][0] for p in range(len(phase_rows))]
        mem = Memory(sum(widths), len(rows), name="seg_rom",
                     init=[sum((v & ((1 << w) - 1)) << sum(widths[:k]) for k, (v, w) in enumerate(zip(row, widths)))
                           for row in rows])
        port = mem.get_port()
        self.specials += mem, port
        idx, idx_next = Signal(len(seg) + 1), Signal(len(seg) + 1)
        op_seg, next_seg = Array(Constant(v, len(idx)) for v in op_seg), Array(Constant(v, len(idx)) for v in next_seg)
        self.comb += [
            idx_next.eq(idx),
            If(fsm.ongoing("IDLE") & self.start, idx_next.eq(op_seg[self.op])),
            If(fsm.ongoing("REQUEST") & self.oe, idx_next.eq(ph_first[phase] + 1)),
            If(fsm.ongoing("RUN") & last_cycle,
                If(seg_left != 0, idx_next.eq(seg + 2)
                ).Elif(ph_left > 1, idx_next.eq(next_seg[phase])
                ).Elif(loops != 0, idx_next.eq(op_seg[cur_op])),
            ),
            port.adr.eq(idx_next),
        ]
        self.sync += idx.eq(idx_next)
        fields, at = [], 0
        for w in widths:
            fields.append(port.dat_r[at:at + w])
            at += w
        return self._duration(fields[0], fields[1:-2], use_variant), fields[-2], fields[-1]

    def _add_last_cycle(self, seg_rom, fsm, count, seg_dur, seg_left, last_cycle):
        """`last_cycle`: `count` == 1. With seg_rom="memory" (the ECPIX-5's dies, for timing) a register set
        with every write of `count` (the same writes as the FSM's): the segment ROM's output and the count's
        comparison are then not in front of the ring node (phase_end, atomic_end, oi_next) or the ROM's next
        address; and `busy` (not IDLE) a register set from the FSM's next state: the die's array-busy logic
        (its command decoder, page registers, block-RAM addresses) then starts at a flip-flop."""
        if seg_rom == "logic":
            self.comb += last_cycle.eq(count == 1)
            return
        self.sync += self.busy.eq(Mux(fsm.ongoing("IDLE"), fsm.before_leaving("IDLE"), ~fsm.before_entering("IDLE")))
        load = seg_dur == 1
        self.sync += [
            If(fsm.ongoing("REQUEST") & self.oe,
                last_cycle.eq(load),
            ).Elif(fsm.ongoing("RUN"),
                If(last_cycle & (seg_left != 0),
                    last_cycle.eq(load),
                ).Else(
                    last_cycle.eq(count == 2),
                ),
            ),
        ]

    def _duration(self, nominal, variants, use_variant):
        """A segment's duration in cycles: the variant's, divided by 2**time_scale_shift, at least 1."""
        d = nominal
        for k, vd in enumerate(variants):
            d = Mux(use_variant == k + 1, vd, d)
        d = d >> self.time_scale_shift
        return Mux(d == 0, 1, d)

    def _add_oi_next(self, fsm, last_cycle, seg_left, ph_left, loops, phase, cur_op, first_oi, next_oi):
        """The OI of the next cycle, from the same decisions as the FSM's: a start presents the
        operation's first phase; the last cycle of a phase presents the next one, or none."""
        self.comb += [
            self.oi_next.eq(self.oi),
            If(fsm.ongoing("IDLE") & self.start, self.oi_next.eq(first_oi[self.op])),
            If(fsm.ongoing("RUN") & last_cycle & (seg_left == 0),
                If(ph_left > 1, self.oi_next.eq(next_oi[phase])
                ).Elif(loops != 0, self.oi_next.eq(first_oi[cur_op])
                ).Else(self.oi_next.eq(0)),
            ),
        ]

    def _add_skip(self, fsm, count, acc, slope, running, last_cycle):
        """The jump of the power harness: a cycle with `skip` > 0 stands for that many cycles of the
        running segment (the FSM stands still, the count and the current's accumulator move on as
        that many cycles would); `quiet` and `room` say when and how far the die may jump. Nothing
        combinational depends on `skip` (Verilator evaluates logic on inputs twice per cycle)."""
        self.skip  = Signal(32)            # Cycles this cycle stands for (0: one); at most `room`.
        self.room  = Signal(len(count))    # Cycles the die can jump now (all ones: any number).
        self.quiet = Signal()              # A jump is exact: inside a segment, waiting for OE, or idle
                                           # (the driver does not jump while `start` is due).
        self.acc, self.slope, self.running = acc, slope, running     # The current's ramp, for the driver.
        CEInserter()(fsm)
        self.comb += [
            fsm.ce.eq(self.skip == 0),
            self.room.eq(Mux(fsm.ongoing("RUN"), count - 1, 2**len(count) - 1)),
            self.quiet.eq((fsm.ongoing("RUN") & ~last_cycle) | (fsm.ongoing("REQUEST") & ~self.oe) |
                          fsm.ongoing("IDLE")),
        ]
        self.comb += If(self.skip != 0, self.oi_next.eq(self.oi))     # The FSM stands still.
        self.sync += If(self.skip != 0,
            count.eq(count - self.skip),
            acc.eq(acc + self.skip * slope),
        )
