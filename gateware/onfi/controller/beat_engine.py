"""The channel controller's beat engine: the bus cycles of a micro-op (command, address, data in and out)."""

from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from nandlab.gateware.onfi import common as onfi
from nandlab.gateware.onfi.controller.common import (U, INTERFACES, cycles, din_dqs_phases, mode_beats, micro_op_description,
                                                     sdr_sample_phase, dqs_late_phases, dout_latency,
                                                     operand_description, pair_description)


class NandLabBeatEngine(LiteXModule):
    """Drives `bus` (a NandBus; CE# low for the ways in `sel`) for the micro-ops it takes from the
    sequencer (`uop`): CMD / ADDR* cycles, DIN / DIN_PARAM (pairs from `sink`, the parameter word of
    `cur`) and DOUT / STATUS (pairs to `source`, the status byte to `status`), in the beats of the
    `interface` and `timing_mode` (see "Interfaces and timing" and "Read latency" in the package).

    `operand` (`operand_description`) says what the micro-op moves. A DOUT asks the die for bytes only
    while `room` says the pairs in flight (`dout_latency` cycles of them) fit where they go; one whose
    pairs go to memory then flushes: it hands over an odd last byte (padded with FFh), raises `flush`
    and ends when `flushed`.
    `din_active` / `dout_active`: a data input / output is on the bus.

    NV-DDR reads wait for the die's DQS; a die that gives no byte for `timeout` cycles (while there is
    room for one: one not in data output, or absent) would hold the bus for ever. The output then
    raises `dout_timeout` (until the descriptor's END) and ends at once with FFh for the bytes left,
    so the data path and the ECC path end their operation as usual; the descriptor completes TIMEOUT.

    A command or address cycle starts `t_rhw` cycles (per (interface, timing mode); default ONFI's
    table) after the end of a data output at the earliest (ONFI's tRHW).

    `dqs_late_ns`: how late after the phase that asks for it (beyond `read_latency`) an NV-DDR byte may
    come (default ONFI's tDQSCK max and NVDDR_BOARD_NS); `dout_latency` is then the most cycles from an
    ask to its byte."""
    def __init__(self, bus, sys_clk_freq, col_cycles, row_cycles, read_latency, cur, t_rhw=None, dqs_late_ns=None):
        ways = len(bus.ce_n)
        self.uop         = Record(micro_op_description())
        self.operand     = Record(operand_description())
        self.interface   = Signal(2)
        self.timing_mode = Signal(3)
        self.sel         = Signal(ways)
        self.sink        = stream.Endpoint(pair_description())
        self.source      = stream.Endpoint(pair_description())
        self.room        = Signal()
        self.flush       = Signal()
        self.flushed     = Signal()
        self.status      = stream.Endpoint([("data", 8)])
        self.din_active  = Signal()
        self.dout_active = Signal()
        self.bytes_in    = Signal(32)        # Bytes written to the NAND.
        self.bytes_out   = Signal(32)        # Bytes read from the NAND.
        self.timeout     = Signal(32)        # Cycles a data output waits for a byte (NV-DDR: DQS).
        self.dout_timeout = Signal()         # A data output of the descriptor timed out.
        self.din_late    = Signal()          # NV-DDR data input: DQS a phase later in even-length bytes.

        # # #

        self.bus, self.cur, self.read_latency = bus, cur, read_latency
        self.dqs_late = (dqs_late_phases(sys_clk_freq) if dqs_late_ns is None
                         else dqs_late_phases(sys_clk_freq, dqs_late_ns))
        self.dout_latency = dout_latency(read_latency, self.dqs_late)
        uop = self.uop
        self.bc    = bc    = Signal(5)       # Cycle within the beat.
        self.count = count = Signal(16)      # Bytes (or address cycles) left in the micro-op.
        self.dqs_lvl  = Signal()             # Level of the controller's DQS.
        self.last_dqs = Signal()             # Level of the die's DQS in the last phase.
        self.din_hi   = Signal()             # DIN, a byte per beat: the pair's high byte is next.
        self.param_sh = Signal(32)
        self.pend     = Signal()             # DOUT: a byte waits for its pair.
        self.pend_b   = Signal(8)
        # DOUT: bytes not asked for yet (`count`: not received yet).
        self.ask_left = count if read_latency == 0 else Signal(16)

        # Mode -> beats.
        bw_cyc, bw_lo, br_cyc, br_lo = Signal(5), Signal(5), Signal(5), Signal(5)
        # NV-DDR data input: the phases of the beat whose DQS edge takes byte 0 / 1 (din_dqs_phases).
        self.din_k = din_k = [[Signal(6, name=f"din_k{b}_{late}") for b in range(2)] for late in range(2)]
        # Async SDR: the phase of the read beat whose end samples the byte (tREA max after RE# fell).
        self.sdr_smp = sdr_smp = Signal(6)
        cases = {}
        for interface in INTERFACES:
            for mode in range(6):
                mb = mode_beats(interface, mode, sys_clk_freq)
                assert mb["w"][0] < 32 and mb["r"][0] < 32, "system clock too fast for the beat counters"
                smp = sdr_sample_phase(mode, sys_clk_freq) if interface == onfi.IF_ASYNC_SDR else 0
                cases[(interface << 3) | mode] = [bw_cyc.eq(mb["w"][0]), bw_lo.eq(mb["w"][1]),
                                                  br_cyc.eq(mb["r"][0]), br_lo.eq(mb["r"][1]), sdr_smp.eq(smp)]
                if interface == onfi.IF_NVDDR:
                    cases[(interface << 3) | mode] += [din_k[late][b].eq(k) for late in range(2)
                                                       for b, k in enumerate(din_dqs_phases(mode, sys_clk_freq, late))]
        slow = mode_beats(onfi.IF_ASYNC_SDR, 0, sys_clk_freq)
        cases["default"] = [bw_cyc.eq(slow["w"][0]), bw_lo.eq(slow["w"][1]), br_cyc.eq(slow["r"][0]),
                            br_lo.eq(slow["r"][1]), sdr_smp.eq(sdr_sample_phase(0, sys_clk_freq))]
        # tRHW: cycles since the last data output cycle, saturating at the longest tRHW.
        if t_rhw is None:
            t_rhw = {(i, m): cycles(onfi.interface_timings(i, m).t_rhw, sys_clk_freq)
                     for i in INTERFACES for m in range(6)}
        longest_rhw = max(t_rhw.values())
        self.rhw = rhw = Signal(bits_for(longest_rhw), reset=longest_rhw)
        for (interface, mode), c in t_rhw.items():
            cases.setdefault((interface << 3) | mode, []).append(rhw.eq(c))
        cases["default"].append(rhw.eq(longest_rhw))
        self.sync += Case(Cat(self.timing_mode, self.interface), cases)
        self.since_dout = since_dout = Signal(bits_for(longest_rhw), reset=longest_rhw)
        self.rhw_ok = Signal()
        self.comb += self.rhw_ok.eq(since_dout >= rhw)
        self.async_if = Signal()
        self.nvddr    = Signal()
        self.comb += self.async_if.eq(self.interface == onfi.IF_ASYNC_SDR), self.nvddr.eq(self.interface == onfi.IF_NVDDR)

        # Beat shape: the strobe is low for the first `lo` phases of the beat's B cycles.
        is_read = Signal()
        self.b_cyc, self.b_lo = b_cyc, b_lo = Signal(5), Signal(5)
        self.ph = ph = [Signal(6, name=f"ph{p}") for p in range(2)]
        self.strobe = strobe = Signal(2)
        self.beat_end = beat_end = Signal()
        self.comb += [
            is_read.eq((uop.op == U["DOUT"]) | (uop.op == U["STATUS"])),
            b_cyc.eq(Mux(is_read, br_cyc, bw_cyc)),
            b_lo.eq(Mux(is_read, br_lo, bw_lo)),
            ph[0].eq(2 * bc), ph[1].eq(2 * bc + 1),
            strobe.eq(Cat(ph[0] >= b_lo, ph[1] >= b_lo)),
            beat_end.eq(bc == b_cyc - 1),
        ]
        self._beat_step = If(beat_end, NextValue(bc, 0)).Else(NextValue(bc, bc + 1))
        self._uop_done = [uop.done.eq(1), NextValue(bc, 0), NextState("IDLE")]

        # Bus defaults: idle levels, CE# low for the selected ways.
        self.comb += [
            bus.ce_n.eq(~self.sel),
            bus.cle.eq(0), bus.ale.eq(0),
            bus.we_n.eq(0b11), bus.re_n.eq(0b11), bus.wp_n.eq(1),
            bus.dq_oe.eq(0), bus.dq_o.eq(0),
            bus.dqs_o.eq(Replicate(self.dqs_lvl, 2)), bus.dqs_oe.eq(0),
        ]
        self.sync += self.last_dqs.eq(bus.dqs_i[1])

        self.fsm = fsm = FSM(reset_state="IDLE")
        self.comb += self.din_active.eq(fsm.ongoing("DIN")), self.dout_active.eq(fsm.ongoing("DOUT"))
        self.sync += If(fsm.ongoing("DOUT"), since_dout.eq(0)).Elif(since_dout != longest_rhw, since_dout.eq(since_dout + 1))
        self._take(col_cycles, row_cycles)
        self._cmdaddr(col_cycles, row_cycles)
        self._din()
        self._dout()

    def _take(self, col_cyc, row_cyc):
        """IDLE: take the micro-ops that move bytes on the bus, with what they move."""
        uop, op, count, L = self.uop, self.operand, self.count, self.read_latency
        take = uop.take.eq(1)
        cmdaddr = [take, NextValue(count, 1), NextState("CMDADDR")]
        self.fsm.act("IDLE",
            NextValue(self.bc, 0),
            If(uop.valid, Case(uop.op, {
                U["CMD"]:       cmdaddr,
                U["ADDR"]:      cmdaddr,
                U["ADDR_ARG"]:  cmdaddr,
                U["ADDR_COL"]:  [take, NextValue(count, col_cyc), NextState("CMDADDR")],
                U["ADDR_ROW"]:  [take, NextValue(count, row_cyc), NextState("CMDADDR")],
                U["DIN"]:       [take, NextValue(count, op.din_len), NextValue(self.din_hi, 0), NextState("DIN")],
                U["DIN_PARAM"]: [take, NextValue(count, 4), NextValue(self.din_hi, 0),
                                 NextValue(self.param_sh, self.cur.param_word), NextState("DIN")],
                U["DOUT"]:      [take, NextValue(count, op.dout_len), NextValue(self.pend, 0),
                                 *([NextValue(self.ask_left, op.dout_len)] if L else []), NextState("DOUT")],
                U["STATUS"]:    [take, NextValue(count, 1), *([NextValue(self.ask_left, 1)] if L else []),
                                 NextState("DOUT")],
            })),
        )

    def _cmdaddr(self, col_cyc, row_cyc):
        """Command and address cycles: CLE or ALE for the whole beat, the strobe's rising edge latches."""
        bus, uop, cur, count = self.bus, self.uop, self.cur, self.count
        n_addr    = Signal(3)
        addr_idx  = Signal(3)
        addr_byte = Signal(8)
        col = self.operand.column
        self.comb += [
            n_addr.eq(Mux(uop.op == U["ADDR_COL"], col_cyc, Mux(uop.op == U["ADDR_ROW"], row_cyc, 1))),
            addr_idx.eq(n_addr - count[:3]),
            addr_byte.eq(uop.arg),
            If(uop.op == U["ADDR_COL"], addr_byte.eq(Array(col[8 * i:8 * i + 8] for i in range(col_cyc))[addr_idx])),
            If(uop.op == U["ADDR_ROW"], addr_byte.eq(Array(cur.row[8 * i:8 * i + 8] for i in range(row_cyc))[addr_idx])),
            If(uop.op == U["ADDR_ARG"], addr_byte.eq(cur.col[:8])),
        ]
        # (The bus stays idle until tRHW has passed since the last data output.)
        self.fsm.act("CMDADDR", If(self.rhw_ok,
            bus.cle.eq(uop.op == U["CMD"]), bus.ale.eq(uop.op != U["CMD"]),
            bus.dq_oe.eq(1), bus.dq_o.eq(Replicate(addr_byte, 2)),
            bus.we_n.eq(self.strobe),
            self._beat_step,
            If(self.beat_end,
                NextValue(count, count - 1),
                If(count == 1, *self._uop_done),
            ),
        ))

    def _din(self):
        """Data in: pairs from `sink` (or the parameter word), a byte per beat in async / sync SDR, two
        per beat in NV-DDR."""
        bus, uop, count, bc, ph, b_lo = self.bus, self.uop, self.count, self.bc, self.ph, self.b_lo
        param_sh, dqs_lvl = self.param_sh, self.dqs_lvl
        from_param = Signal()
        have = Signal()
        pair = Signal(16)
        pop  = Signal()
        self.comb += [
            from_param.eq(uop.op == U["DIN_PARAM"]),
            have.eq(from_param | self.sink.valid),
            pair.eq(Mux(from_param, param_sh[:16], self.sink.data)),
            self.sink.ready.eq(pop & ~from_param),
        ]
        beat_b0, beat_b1, beat_n = Signal(8), Signal(8), Signal(2)
        nb_now = Signal(2)
        nv_b0, nv_b1, nv_n = Signal(8), Signal(8), Signal(2)
        toggle = Signal(2)
        lvl = Signal(2)
        k0, k1 = Signal(6), Signal(6)
        self.comb += [
            nb_now.eq(Mux(count >= 2, 2, 1)),
            nv_b0.eq(Mux(bc == 0, pair[:8], beat_b0)),
            nv_b1.eq(Mux(bc == 0, pair[8:], beat_b1)),
            nv_n.eq(Mux(bc == 0, nb_now, beat_n)),
            k0.eq(Mux(self.din_late, self.din_k[1][0], self.din_k[0][0])),
            k1.eq(Mux(self.din_late, self.din_k[1][1], self.din_k[0][1])),
            [toggle[p].eq(((ph[p] == k0) & (nv_n >= 1)) | ((ph[p] == k1) & (nv_n == 2))) for p in range(2)],
            lvl[0].eq(dqs_lvl ^ toggle[0]),
            lvl[1].eq(dqs_lvl ^ toggle[0] ^ toggle[1]),
        ]
        self.fsm.act("DIN",
            If(count == 0,
                *self._uop_done,
            ).Elif((bc != 0) | have,
                bus.dq_oe.eq(1),
                bus.we_n.eq(self.strobe),
                If(self.nvddr,
                    # Two bytes per beat (phases 0.. and lo..), one per DQS edge (phases k0 and k1).
                    bus.cle.eq(1), bus.ale.eq(1),
                    bus.dqs_oe.eq(1), bus.dqs_o.eq(lvl),
                    bus.dq_o.eq(Cat(Mux(ph[0] >= b_lo, nv_b1, nv_b0), Mux(ph[1] >= b_lo, nv_b1, nv_b0))),
                    NextValue(dqs_lvl, lvl[1]),
                    If(bc == 0,
                        pop.eq(1),
                        NextValue(beat_b0, pair[:8]), NextValue(beat_b1, pair[8:]), NextValue(beat_n, nb_now),
                        If(from_param, NextValue(param_sh, param_sh[16:])),
                    ),
                    If(self.beat_end, NextValue(count, count - nv_n)),
                    If(self.beat_end, NextValue(self.bytes_in, self.bytes_in + nv_n)),
                ).Else(
                    # One byte per beat: async SDR (WE#), sync SDR (CLK, W/R# high, CLE = ALE = 1).
                    bus.cle.eq(~self.async_if), bus.ale.eq(~self.async_if),
                    bus.dq_o.eq(Replicate(Mux(self.din_hi, pair[8:], pair[:8]), 2)),
                    If(self.beat_end,
                        NextValue(count, count - 1),
                        NextValue(self.bytes_in, self.bytes_in + 1),
                        NextValue(self.din_hi, ~self.din_hi),
                        If(self.din_hi,
                            pop.eq(1),
                            If(from_param, NextValue(param_sh, param_sh[16:])),
                        ),
                    ),
                ),
                self._beat_step,
            ),
        )

    def _dout(self):
        """Data out: bytes from the die paired for `source` (or the status byte), asked for ahead of
        their arrival by the read latency (see "Read latency")."""
        bus, uop, count, bc, ph, b_lo = self.bus, self.uop, self.count, self.bc, self.ph, self.b_lo
        L, ask_left, pend, pend_b, strobe = self.read_latency, self.ask_left, self.pend, self.pend_b, self.strobe
        # `ask`: the phases of this cycle in which a byte is due (the die's answer to this cycle's strobes);
        # `due`: the same L cycles later, when that answer is on dq_i / dqs_i.
        to_status = Signal()
        room = Signal()
        ask  = Signal(2)
        due  = Signal(2)
        got  = Signal(2)
        n_got = Signal(2)
        n_ask, n_missed = Signal(2), Signal(2)
        # A die that does not answer: after `timeout` cycles with room and no byte, FFh fill the rest.
        fill, stall = self.dout_timeout, Signal(32)
        self.sync += [
            If(~self.dout_active | (n_got != 0) | fill, stall.eq(0)).Elif(room, stall.eq(stall + 1)),
            If(self.dout_active & ~fill & (stall >= self.timeout), fill.eq(1)),
            If(uop.valid & (uop.op == U["END"]), fill.eq(0)),
        ]
        byte = [Mux(fill, 0xFF, bus.dq_i[0:8]), Mux(fill, 0xFF, bus.dq_i[8:16])]
        rx0, rx1 = Signal(8), Signal(8)
        self.comb += [
            to_status.eq(uop.op == U["STATUS"]),
            room.eq(to_status | self.room),
            n_got.eq(got[0] + got[1]),
            n_ask.eq(ask[0] + ask[1]),
            n_missed.eq((due[0] & ~got[0]) + (due[1] & ~got[1])),
            rx0.eq(Mux(got[0], byte[0], byte[1])),
            rx1.eq(byte[1]),
        ]
        if L == 0:
            self.comb += due.eq(ask)
        else:
            due_sr = [Signal(2, name=f"due_sr{k}") for k in range(L)]
            self.sync += [due_sr[0].eq(ask)] + [due_sr[k].eq(due_sr[k - 1]) for k in range(1, L)]
            self.comb += due.eq(due_sr[-1])
        hold = Signal()        # Async / sync SDR: no room for a byte (or none left to ask for), the next beat waits.
        self.comb += hold.eq((~room | (ask_left == 0)) & (bc == 0))
        req_ph0 = Signal()     # NV-DDR: phase 0 of this cycle is a W/R# low phase of the beat.
        self.comb += req_ph0.eq((ph[0] == 0) | (ph[0] == b_lo))
        nv_ask, nv_got = self._nvddr_answers(ask, room, req_ph0)
        self.fsm.act("DOUT",
            # (Async SDR samples inside the beat: the last beat runs to its end, RE# high for its tREH.)
            If((count == 0) & (~self.async_if | (bc == 0)),
                If(to_status | ~self.operand.to_memory, *self._uop_done).Else(NextState("FLUSH")),
            ).Else(
                If(fill,
                    got.eq(Mux(room, Mux(count >= 2, 3, 1), 0)),
                ).Elif(self.nvddr,
                    # W/R# low in the phases that ask for a byte (0 and lo of the beat); a byte is the
                    # DQ of a phase in which the die's DQS toggles (`_nvddr_answers`).
                    bus.cle.eq(1), bus.ale.eq(1),
                    bus.we_n.eq(strobe),
                    ask.eq(nv_ask),
                    bus.re_n.eq(~ask),
                    got.eq(nv_got),
                    self._beat_step,
                ).Elif(self.async_if,
                    # RE# low for lo phases; the byte is taken at the end of phase `sdr_smp` of the beat
                    # (tREA max and the board's delay after RE# fell; `sdr_sample_phase`).
                    bus.re_n.eq(strobe | Replicate(hold, 2)),
                    ask[0].eq(~hold & (ask_left != 0) & (ph[0] == self.sdr_smp)),
                    ask[1].eq(~hold & (ask_left != 0) & (ph[1] == self.sdr_smp)),
                    got.eq(due),
                    If(~hold, self._beat_step),
                ).Else(
                    # Sync SDR: W/R# low, the die gives a byte at the CLK rising edge (phase lo).
                    bus.cle.eq(1), bus.ale.eq(1),
                    bus.re_n.eq(0),
                    bus.we_n.eq(strobe | Replicate(hold, 2)),
                    ask[0].eq(~hold & (ph[0] == b_lo)),
                    ask[1].eq(~hold & (ph[1] == b_lo)),
                    got.eq(due),
                    If(~hold, self._beat_step),
                ),
                NextValue(count, count - n_got),
                # (A byte SDR asked for and the die did not give is asked for again.)
                *([If(~self.nvddr, NextValue(ask_left, ask_left - n_ask + n_missed))] if L else []),
                If(to_status & (n_got != 0), self.status.valid.eq(1), self.status.data.eq(rx0)),
                # Bytes pair up for `source` (a room check came first: it takes them).
                # (Inside the state's statements: Migen puts comb logic that tests fsm.ongoing() in the
                # FSM's own block before the state decode, where it would read the default.)
                If(~to_status,
                    If(pend & (n_got != 0), self.source.valid.eq(1), self.source.data.eq(Cat(pend_b, rx0))
                    ).Elif(~pend & (n_got == 2), self.source.valid.eq(1), self.source.data.eq(Cat(rx0, rx1))),
                ),
            ),
        )
        self.sync += If(self.dout_active & ~to_status & (n_got != 0),
            If(pend,
                If(n_got == 2, pend_b.eq(rx1)).Else(pend.eq(0)),
            ).Elif(n_got == 1, pend.eq(1), pend_b.eq(rx0)),
            self.bytes_out.eq(self.bytes_out + n_got),
        )
        # FLUSH: an odd last byte (padded), then memory takes over (`flush`) until it has every word.
        self.fsm.act("FLUSH",
            If(pend,
                self.source.valid.eq(1), self.source.data.eq(Cat(pend_b, Constant(0xFF, 8))),
                If(self.source.ready, NextValue(pend, 0)),
            ).Else(
                self.flush.eq(1),
                If(self.flushed, *self._uop_done),
            ),
        )

    def _nvddr_answers(self, ask, room, req_ph0):
        """NV-DDR data output: (the asks, the bytes got) of this cycle, 2 bits each, the phases' (see
        "Read latency"). `ask`: what the DOUT state drives.

        The die answers an ask (W/R# low in phase 0 or lo of the beat) with a DQS toggle `read_latency`
        cycles and 0 .. `dqs_late` phases later, in order, or never (no byte ready). Toggles are counted
        in every phase, each taking its phase's DQ byte. `inflight`: the asks that may still be answered,
        the asks of the last `dout_latency` cycles less the toggles since (the oldest taken as answered
        first: an ask older than that had no answer, and its byte is asked for again). A byte is asked for
        only while `inflight` does not cover the `count` still wanted, so no toggle comes after the last
        byte of the data output, through a pause for room as anywhere. A toggle is taken only while an ask
        may be answered, and from `read_latency` after the data output's first ask; that first ask comes
        more than `dqs_late` phases after CE# changed (the dies' DQS levels differ, and a level change
        from the select, as late as the answers, must show before the first answer)."""
        bus, count, L, M, D = self.bus, self.count, self.read_latency, self.dout_latency, self.dqs_late
        nv_ask, nv_got = Signal(2), Signal(2)
        n_ask, n_got = Signal(2), Signal(2)
        # `inflight` never exceeds the asks of M cycles (2 M), so it and the sums below are narrow, and
        # `count` is compared in as many bits plus a test of its high bits (the 16-bit carry chains were
        # the Colorlight's longest path).
        w = bits_for(2 * M + 2)
        self.inflight = inflight = Signal(w)
        count_lo, count_big = Signal(w), Signal()
        self.comb += count_lo.eq(count[:w]), count_big.eq(count[w:] != 0)
        tog = Signal(2)
        self.comb += tog.eq(Cat(bus.dqs_i[0] != self.last_dqs, bus.dqs_i[1] != bus.dqs_i[0]))
        # CE#: the first ask at least D // 2 + 1 cycles after a change (2 (D // 2 + 1) > D phases).
        sel_q, sel_age, sel_ok = Signal(len(self.sel)), Signal(bits_for(D // 2)), Signal()
        self.sync += sel_q.eq(self.sel), If(self.sel != sel_q, sel_age.eq(0)).Elif(sel_age < D // 2, sel_age.eq(sel_age + 1))
        # (The compares read registers only, so the asks and the bytes got below are a few LUTs deep.)
        short0, short1 = Signal(), Signal()     # `inflight` (+ 1) falls short of `count`.
        self.comb += [
            sel_ok.eq((self.sel == sel_q) & (sel_age >= D // 2)),
            short0.eq(count_big | (inflight < count_lo)),
            short1.eq(count_big | (inflight + 1 < count_lo)),
            nv_ask[0].eq(sel_ok & room & req_ph0 & short0),
            nv_ask[1].eq(sel_ok & room & (self.ph[1] == self.b_lo) & Mux(nv_ask[0], short1, short0)),
            n_ask.eq(Mux(self.nvddr, ask[0] + ask[1], 0)),
        ]
        # The asks of the last M cycles (ask_sr[k]: k + 1 cycles ago; `win`: their sum).
        ask_sr = [Signal(2, name=f"ask_sr{k}") for k in range(M)]
        win, win_after = Signal(bits_for(2 * M)), Signal(bits_for(2 * M) + 1)
        self.comb += win_after.eq(win + n_ask - ask_sr[-1]) if M else win_after.eq(0)
        armed, armed_q = Signal(), Signal()
        avail, left = Signal(w + 1), Signal(w + 1)
        # `avail` (inflight + n_ask) >= 1 and >= 2, from `inflight`'s bits and the asks (no adder).
        asked = Signal()
        avail1, avail2 = Signal(), Signal()
        self.comb += [
            armed.eq(armed_q | ((ask_sr[L - 1] != 0) if L else (n_ask != 0))),
            avail.eq(inflight + n_ask),
            asked.eq(n_ask != 0),
            avail1.eq((inflight != 0) | asked),
            avail2.eq((inflight[1:] != 0) | ((inflight != 0) & asked) | (n_ask == 2)),
            nv_got[0].eq(armed & tog[0] & avail1),
            nv_got[1].eq(armed & tog[1] & Mux(nv_got[0], avail2, avail1)),
            n_got.eq(nv_got[0] + nv_got[1]),
            left.eq(avail - n_got),
        ]
        self.sync += If(~self.dout_active,
            inflight.eq(0), armed_q.eq(0), win.eq(0), *[r.eq(0) for r in ask_sr],
        ).Else(
            inflight.eq(Mux(left < win_after, left, win_after)),
            armed_q.eq(armed),
            win.eq(win_after),
            *([ask_sr[0].eq(n_ask)] + [ask_sr[k].eq(ask_sr[k - 1]) for k in range(1, M)] if M else []),
        )
        return nv_ask, nv_got
