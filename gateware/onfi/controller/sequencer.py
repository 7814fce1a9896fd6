"""The channel controller's sequencer: starts descriptors, runs their microcode, yields the bus at WAIT_RB."""

from functools import reduce
from operator import or_

from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from nandlab.gateware.onfi import common as onfi
from nandlab.gateware.onfi.controller.common import (U, R, OPS, DELAYS, ARDY_FREE, ARDY_ENDS, microcode, descriptor_description,
                                                     completion_description, micro_op_description)


class NandLabReadyWatch(LiteXModule):
    """Per-way R/B# timers of the ways `waiting` at a WAIT_RB: a way is `resumable` once R/B# has been
    high for `t_rr` cycles and it has waited `t_wb` (both signals, at most `longest`); it has
    `timed_out` when R/B# stayed low longer than `timeout` cycles (counted in units of 1024)."""
    def __init__(self, ways, longest):
        self.waiting   = Signal(ways)
        self.rb        = Signal(ways)
        self.timeout   = Signal(32)
        self.t_rr      = Signal(bits_for(longest))
        self.t_wb      = Signal(bits_for(longest))
        self.resumable = Signal(ways)
        self.timed_out = Signal(ways)

        # # #

        # tWB after the way yielded (a fine count) and the timeout (a coarse count), tRR since R/B# rose.
        # The fine counts saturate above the longest wait.
        top = 2**bits_for(longest + 1) - 1
        waiting, rb, t_rr, t_wb = self.waiting, self.rb, self.t_rr, self.t_wb
        tick, prescaler = Signal(), Signal(10)
        # The prescaler runs while a way waits only: an idle controller changes no register (the
        # simulator then skips it, nandlab.gateware.common.idlegate); the timeout is coarse anyway.
        self.sync += If(waiting == 0,
            prescaler.eq(0), tick.eq(0),
        ).Else(
            prescaler.eq(prescaler + 1), tick.eq(prescaler == 0),
        )
        fine      = [Signal(max=top + 1, name=f"yield_fine{k}") for k in range(ways)]
        coarse    = [Signal(22, name=f"yield_coarse{k}") for k in range(ways)]
        ready_for = [Signal(max=top + 1, name=f"ready_for{k}") for k in range(ways)]
        for k in range(ways):
            self.sync += [
                If(~waiting[k], fine[k].eq(0), coarse[k].eq(0)).Else(
                    If(fine[k] != top, fine[k].eq(fine[k] + 1)),
                    If(tick, coarse[k].eq(coarse[k] + 1)),
                ),
                If(~rb[k], ready_for[k].eq(0)).Elif(ready_for[k] != top, ready_for[k].eq(ready_for[k] + 1)),
            ]
            self.comb += [
                self.resumable[k].eq(waiting[k] & rb[k] & (ready_for[k] >= t_rr) & (fine[k] >= t_wb)),
                self.timed_out[k].eq(waiting[k] & ~rb[k] & (coarse[k] > self.timeout[10:])),
            ]


class NandLabSequencer(LiteXModule):
    """Takes the checked head of the descriptor queue (`sink`), completes refused descriptors at once,
    and runs the programs of the others, one way at a time: the micro-op at the way's program counter
    goes to the engines on `uop`, `cur` is the descriptor of the way that runs, `sel` the ways whose
    CE# is low. A WAIT_RB parks the way and gives the bus to the others until its R/B# rises
    (`rb`; `timeout` in cycles). Completions go out on `source`, when the queue has `room`; `status`
    takes the NAND status byte of a STATUS, `ecc_uncorrectable` and `ecc_counts` the ECC result of
    the descriptor (controllers with ECC). A descriptor the queue could not take (`overflow`) completes
    as OVERFLOW. On a way whose array may still work after a PROGRAM_CACHE or READ_CACHE_SEQ
    (`cache_open`), an operation ONFI does not allow then (not in `ARDY_FREE`) first polls the status
    until ARDY (holding the bus; TIMEOUT after `timeout` cycles).

    `mode_cycles` maps (interface, timing mode) to the waits in cycles (t_whr, t_adl, t_ccs, t_wb, t_rr,
    t_cs); the row of `interface` and `timing_mode` is taken at run time (a register: a mode change
    applies a cycle later; an unknown mode waits the longest of every wait).

    Power (`power_*`, one bit per way; see "Power" in the package docstring): before a micro-op that
    moves bytes (DIN, DIN_PARAM, DOUT, STATUS) on a way whose `power_free` is low and whose transfer
    tokens are not held, the sequencer raises `power_request` (`power_out`: data output) and waits
    (POWER) for `power_grant`; the tokens are held to the end of the way's data (END, WAIT_RB, CORRECT,
    ARDY or TIMEOUT) and given back `release_delay` cycles later (`power_end`), once the last byte has
    reached the die (a data micro-op on the way meanwhile waits for that and asks again). Unconnected
    (`power_free` high) nothing is asked and no cycle added."""
    def __init__(self, ways, mode_cycles, ecc_bits=0, release_delay=2):
        self.sink      = stream.Endpoint(stream.EndpointDescription(descriptor_description(),
                                                                    [("verdict", 4), ("way_bit", 16)]))
        self.source    = stream.Endpoint(completion_description(ecc_bits))
        self.overflow  = stream.Endpoint([("tag", 8), ("way", 8)])   # Submitted into a full queue.
        self.room      = Signal()
        self.uop       = Record(micro_op_description())
        self.cur       = Record(descriptor_description())
        self.sel       = Signal(ways)
        self.rb        = Signal(ways)
        self.timeout   = Signal(32)
        self.status    = stream.Endpoint([("data", 8)])
        if ecc_bits:
            self.ecc_uncorrectable = Signal()
            self.ecc_counts        = Signal(ecc_bits)
        self.dout_timeout = Signal()             # The running descriptor's data output timed out.
        self.active    = Signal(ways)            # A descriptor is in flight.
        # Ways where a PROGRAM_CACHE / READ_CACHE_SEQ ran and ARDY was not seen high since.
        self.cache_open = {op: Signal(ways, name=f"open_{op.lower()}") for op in ARDY_FREE}
        self.n_active  = Signal(5)
        self.idle      = Signal()
        self.interface   = Signal(2)
        self.timing_mode = Signal(3)
        # Transfers under the dies' token rings (gateware/power/xfer.py).
        self.power_request = Signal(ways)        # Asks the way's die for a transfer's tokens.
        self.power_out     = Signal()            # The transfer asked for is data output (else input).
        self.power_grant   = Signal(ways)        # Pulse from the die: granted.
        self.power_end     = Signal(ways)        # Pulse to the die: the transfer is over.
        self.power_free    = Signal(ways, reset=2**ways - 1)    # The die's ring does not govern (NPM).
        self.power_held    = Signal(ways)        # The way holds a transfer's tokens.

        # # #

        # The waits of the mode in use, in cycles.
        names = ("t_whr", "t_adl", "t_ccs", "t_wb", "t_rr", "t_cs")
        longest = {n: max(c[n] for c in mode_cycles.values()) for n in names}
        self.waits = wait = {n: Signal(bits_for(longest[n]), name=f"mode_{n}", reset=longest[n]) for n in names}
        cases = {(interface << 3) | mode: [wait[n].eq(c[n]) for n in names]
                 for (interface, mode), c in mode_cycles.items()}
        cases["default"] = [wait[n].eq(longest[n]) for n in names]
        self.sync += Case(Cat(self.timing_mode, self.interface), cases)

        # Microcode ROM and entry points, padded with END to a power of two: every program counter value
        # addresses a word.
        code, entry, self.poll_entry = microcode(with_ecc=bool(ecc_bits))
        code += [0] * (2**bits_for(len(code) - 1) - len(code))
        rom = Memory(12, len(code), init=code)
        rom_port = rom.get_port(async_read=True)
        self.specials += rom, rom_port

        # Descriptors in flight, one per way (a small memory: written when started, read by way).
        ctx = Memory(len(self.cur), max(ways, 2))
        self.ctx_w = ctx_w = ctx.get_port(write_capable=True)
        ctx_r = ctx.get_port(async_read=True)
        self.specials += ctx, ctx_w, ctx_r
        self.pcs = pcs = Array(Signal(max=len(code), name=f"pc{k}") for k in range(ways))
        self.entry_rom = Array(Constant(e, len(pcs[0])) for e in entry)
        self.waiting = Signal(ways)                             # At a WAIT_RB.
        self.watch = watch = NandLabReadyWatch(ways, max(longest["t_rr"], longest["t_wb"]))
        self.comb += [watch.waiting.eq(self.waiting), watch.rb.eq(self.rb), watch.timeout.eq(self.timeout),
                      watch.t_rr.eq(wait["t_rr"]), watch.t_wb.eq(wait["t_wb"])]

        self.way = way = Signal(4)                              # Way whose program runs.
        self.pc  = pc  = Signal(len(pcs[0]))
        # The micro-op word is registered: the ROM is read at the program counter's next value, so
        # `uop` holds the word at `pc` from a flip-flop (the ROM's address decode and its fan-out to the
        # engines were the Colorlight's longest path) with no cycle added. Except when IDLE starts or
        # resumes a way: the ROM then reads `pc` (`rom_adr`), not the new value, whose start decision
        # (descriptor queue head, ways active, resume pick) was the next longest path; SELECT lasts at
        # least a cycle and reads the ROM at the new `pc`, so DISPATCH has its word as before.
        self.pc_next = pc_next = Signal(len(pc))
        self.rom_adr = rom_adr = Signal(len(pc))
        word = Signal(12, reset=code[0])
        self.comb += [
            ctx_r.adr.eq(way),
            self.cur.raw_bits().eq(ctx_r.dat_r),
            pc_next.eq(pc),                                     # (The FSM sets it when `pc` changes.)
            rom_adr.eq(pc),                                     # (Set with pc_next outside IDLE.)
            rom_port.adr.eq(rom_adr),
            self.uop.op.eq(word[8:12]),
            self.uop.arg.eq(word[:8]),
        ]
        self.sync += pc.eq(pc_next), word.eq(rom_port.dat_r)
        # The status byte of the descriptor: cleared when it starts or resumes (another way may have
        # read a status meanwhile).
        self.status_byte = Signal(8)
        self.sync += If(self.status.valid, self.status_byte.eq(self.status.data))

        self._fsm(ways, [wait[n] for n in DELAYS], wait["t_cs"], ecc_bits)
        self._power(ways, release_delay)

    def _complete(self, result, status, way, tag, counts=None):
        """Statements that push a completion."""
        cpl = self.source
        return [cpl.valid.eq(1), cpl.result.eq(result), cpl.status.eq(status), cpl.way.eq(way[:4]),
                cpl.tag.eq(tag[:8])] + ([cpl.ecc.eq(counts)] if counts is not None else [])

    def _finish(self, way):
        """Statements that retire the descriptor of `way`."""
        return [NextValue(self.active, self.active & ~(1 << way)), NextValue(self.n_active, self.n_active - 1)]

    def _fsm(self, ways, delays, t_cs, ecc_bits):
        head, uop, cur, way, pc, pcs = self.sink, self.uop, self.cur, self.way, self.pc, self.pcs
        pc_next, rom_adr = self.pc_next, self.rom_adr
        goto = lambda target: [pc_next.eq(target), rom_adr.eq(target)]   # pc and the word at once.
        ovf = self.overflow
        waiting, active, status = self.waiting, self.active, self.status_byte
        resumable, timed_out = self.watch.resumable, self.watch.timed_out
        cs_wait  = Signal(len(t_cs))
        wait_cnt = Signal(16)
        next_uop = [*goto(pc + 1), NextState("DISPATCH")]

        # IDLE: a timed-out way completes; else the queue's head starts (or is refused) when its way is
        # free - a command is short and starts an array operation that then overlaps the others' data;
        # else a way ready again resumes: the first after the way resumed last, in rotation (the ways
        # resume in the order they were started, as the submission queue serves them; lowest-first
        # let low ways overtake, and the queue's head then waited for a way still busy).
        resume_way   = Signal(4)
        timeout_way  = Signal(4)
        last_resumed = Signal(4)
        after = Signal(ways)
        pick_after, pick_any = Signal(4), Signal(4)
        self.comb += [
            [after[k].eq(resumable[k] & (last_resumed < k)) for k in range(ways)],
            [If(after[k], pick_after.eq(k)) for k in reversed(range(ways))],
            [If(resumable[k], pick_any.eq(k)) for k in reversed(range(ways))],
            resume_way.eq(Mux(after != 0, pick_after, pick_any)),
            [If(timed_out[k], timeout_way.eq(k)) for k in reversed(range(ways))],
        ]
        self.comb += [self.ctx_w.adr.eq(head.way), self.ctx_w.dat_w.eq(head.payload.raw_bits())]

        # The ARDY poll before a descriptor's program (see `POLL_ARDY`), bounded by `timeout`.
        poll_cycles, polling = Signal(32), Signal()
        head_bit, needs_poll, opened = head.way_bit[:ways], Signal(), []
        is_op = lambda names: reduce(or_, [head.op == OPS[name] for name in names])
        for op, vec in self.cache_open.items():
            self.comb += If(((vec & head_bit) != 0) & ~is_op(ARDY_FREE[op]), needs_poll.eq(1))
            opened.append(NextValue(vec, Mux(head.op == OPS[op], vec | head_bit,
                                             Mux(is_op(ARDY_ENDS[op]), vec & ~head_bit, vec))))
        self.sync += If(polling, poll_cycles.eq(poll_cycles + 1)).Else(poll_cycles.eq(0))

        self.fsm = fsm = FSM(reset_state="IDLE")
        self.comb += self.idle.eq(fsm.ongoing("IDLE"))
        fsm.act("IDLE",
            NextValue(self.sel, 0),
            NextValue(cs_wait, t_cs),
            If(timed_out != 0,
                NextValue(way, timeout_way),
                NextState("TIMEOUT"),
            ).Elif(ovf.valid & self.room,
                ovf.ready.eq(1),
                *self._complete(R["OVERFLOW"], 0, ovf.way, ovf.tag),
            ).Elif(head.valid & self.room & ((head.verdict != R["OK"]) | ~(active >> head.way)[0]),
                # A new descriptor first: its command starts an array operation while others move data.
                If(head.verdict != R["OK"],
                    head.ready.eq(1),
                    *self._complete(head.verdict, 0, head.way, head.tag),
                ).Else(
                    head.ready.eq(1),
                    self.ctx_w.we.eq(1),
                    NextValue(way, head.way),
                    If(needs_poll,
                        pc_next.eq(self.poll_entry), NextValue(polling, 1),
                    ).Else(
                        pc_next.eq(self.entry_rom[head.op]),
                        *opened,
                    ),
                    NextValue(active, active | head.way_bit),
                    NextValue(self.n_active, self.n_active + 1),
                    NextValue(status, 0),
                    NextState("SELECT"),
                ),
            ).Elif(resumable != 0,
                NextValue(way, resume_way),
                NextValue(last_resumed, resume_way),
                pc_next.eq(pcs[resume_way] + 1),
                NextValue(waiting, waiting & ~(1 << resume_way)),
                NextValue(status, 0),
                NextState("SELECT"),
            ),
        )
        fsm.act("TIMEOUT",
            NextValue(polling, 0),
            *self._complete(R["TIMEOUT"], 0, way, cur.tag),
            *self._finish(way),
            NextValue(waiting, waiting & ~(1 << way)),
            NextState("IDLE"),
        )
        # SELECT: CE# low for tCS before the first beat.
        fsm.act("SELECT",
            NextValue(self.sel, 1 << way),
            NextValue(cs_wait, cs_wait - 1),
            If(cs_wait == 0, NextState("DISPATCH")),
        )
        # DISPATCH: the sequencer's own micro-ops; the others go to the engine that takes them (none
        # takes an unknown one: it is skipped).
        if ecc_bits:
            result = Mux(self.ecc_uncorrectable, Constant(R["ECC_UNCORRECTABLE"], 4),
                         Mux(status[0], Constant(R["NAND_FAIL"], 4), Constant(R["OK"], 4)))
            counts = self.ecc_counts
        else:
            result, counts = Mux(status[0], Constant(R["NAND_FAIL"], 4), Constant(R["OK"], 4)), None
        result = Mux(self.dout_timeout, Constant(R["TIMEOUT"], 4), result)
        self.power_wait = Signal()         # DISPATCH: the micro-op moves bytes, its tokens are not held yet.
        fsm.act("DISPATCH",
            uop.valid.eq(~self.power_wait),
            If(self.power_wait, NextState("POWER")).Else(Case(uop.op, {
                U["END"]:     [*self._complete(result, status, way, cur.tag, counts), *self._finish(way),
                               NextState("IDLE")],
                U["WAIT"]:    [NextValue(wait_cnt, Array(delays)[uop.arg[:2]]),
                               NextState("WAIT")],
                U["WAIT_RB"]: [NextValue(pcs[way], pc), NextValue(waiting, waiting | (1 << way)), NextState("IDLE")],
                # ARDY high: the descriptor's own program (from a clean status); else poll again.
                U["ARDY"]:    If(status & onfi.STATUS_ARDY,
                                  NextValue(polling, 0), NextValue(status, 0),
                                  # (The array is idle: the way's cache sequences are over; this one may open one.)
                                  *[NextValue(vec, Mux(cur.op == OPS[op], vec | (1 << way), vec & ~(1 << way)))
                                    for op, vec in self.cache_open.items()],
                                  *goto(self.entry_rom[cur.op]), NextState("DISPATCH"),
                              ).Elif(poll_cycles >= self.timeout,
                                  NextState("TIMEOUT"),
                              ).Else(
                                  *goto(self.poll_entry), NextState("DISPATCH"),
                              ),
                "default":    If(uop.take, NextState("RUN")).Else(*next_uop),
            })),
        )
        fsm.act("POWER",                    # (power_request: _power)
            If(((self.power_request & self.power_grant) >> way)[0], NextState("DISPATCH")),
        )
        fsm.act("WAIT",
            NextValue(wait_cnt, wait_cnt - 1),
            If(wait_cnt <= 1, *next_uop),
        )
        fsm.act("RUN",
            If(uop.done, *next_uop),
        )

    def _power(self, ways, release_delay):
        """The ways' transfer tokens: asked for in POWER, held to the end of the way's data, given back
        `release_delay` cycles after it (a byte the controller drove reaches the die that much later).
        A data micro-op on a way whose tokens are being given back waits for that, then asks again
        (keeping them instead could hold the die's node through a whole ARDY poll, its array never
        getting it back between two polls)."""
        assert release_delay >= 1
        uop, way, fsm, held = self.uop, self.way, self.fsm, self.power_held
        moves, leaves = Signal(), Signal()
        releasing = Signal(ways)
        ops = lambda names: reduce(or_, [uop.op == U[n] for n in names])
        self.comb += [
            moves.eq(ops(("DIN", "DIN_PARAM", "DOUT", "STATUS"))),
            self.power_wait.eq(moves & ~((held & ~releasing) >> way)[0] & ~(self.power_free >> way)[0]),
            self.power_out.eq(ops(("DOUT", "STATUS"))),
            leaves.eq((fsm.ongoing("DISPATCH") & ops(("END", "WAIT_RB", "CORRECT", "ARDY"))) | fsm.ongoing("TIMEOUT")),
        ]
        for k in range(ways):
            count = Signal(max=release_delay + 1, name=f"power_release{k}")
            here = Signal(name=f"power_here{k}")
            self.comb += [
                here.eq(way == k),
                releasing[k].eq(count != 0),
                self.power_end[k].eq(count == 1),
                # POWER asks while the way holds nothing (and waits for a release to finish first).
                If(fsm.ongoing("POWER") & here & ~held[k], self.power_request[k].eq(1)),
            ]
            self.sync += [
                If(self.power_request[k] & self.power_grant[k], held[k].eq(1)),
                If(self.power_end[k], held[k].eq(0)),
                If(leaves & here & held[k] & (count == 0), count.eq(release_delay)
                ).Elif(count != 0, count.eq(count - 1)),
            ]
