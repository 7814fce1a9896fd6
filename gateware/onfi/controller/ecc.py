"""The channel controller's ECC path: the BCH encoder and decoder plugged between the beat engine and memory."""

from collections import namedtuple

from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from nandlab.gateware.ecc.bch import NandLabBchEncoder, NandLabBchDecoder, layout as ecc_layout
from nandlab.gateware.common.idlegate import IdleGate
from nandlab.gateware.onfi.controller.common import (U, DOUT_PARITY, DOUT_ECC, DOUT_FREE, COL_SPARE, COL_FREE, fits,
                                                     ECC_COUNTS_BITS, ECC_SUMMARY, RSVD_SMALL, micro_op_description,
                                                     operand_description, pair_description)

EccGeometry = namedtuple("EccGeometry", "code layout cw_bytes cw_shift count_bits summary bits data_beats slot_beats "
                                        "reserved pad max_len free_max long_free small")
# The small pages of an MPNFM part (plane 1 in MPNFM mode), where the controller is built for them:
# their layout, data area, page (data + spare) and free bytes.
EccSmall = namedtuple("EccSmall", "layout data_bytes page_bytes free_max")


def ecc_geometry(ecc, part, dma_bytes, small_pages=False):
    """The numbers of a BCH code (dict(data_bytes=, t=, m=)) on `part`'s pages (and, with
    `small_pages`, on its MPNFM small pages); raises ValueError naming the limit when the spare cannot
    hold the parity or the controller cannot carry the code.

    The completion reports each codeword's corrected bits while they fit its 64 bits (16 codewords
    at t = 8); a page of more codewords gets the summary (`ECC_SUMMARY`) instead."""
    lay = ecc_layout(part.page_size, part.spare_size, **ecc)
    cw_bytes = ecc["data_bytes"]
    if cw_bytes & (cw_bytes - 1) or cw_bytes % dma_bytes:
        raise ValueError(f"ECC codeword of {cw_bytes} B: must be a power of two and a multiple of the "
                         f"{dma_bytes}-byte DMA word")
    if part.page_size + part.spare_size > 0xFFFF:
        raise ValueError(f"pages of {part.page_size} + {part.spare_size} B: the descriptor's 16-bit column and "
                         f"length reach {0xFFFF} bytes")
    count_bits = bits_for(ecc["t"] + 1)                 # Per-codeword count; all ones: uncorrectable.
    summary = lay.codewords * count_bits > ECC_COUNTS_BITS
    small = None
    if small_pages:
        if not part.is_mpnfm:
            raise ValueError(f"{part.model} has no small pages (not an MPNFM part)")
        slay = ecc_layout(part.small_page_size, part.small_spare_size, **ecc)
        small = EccSmall(layout=slay, data_bytes=part.small_page_size,
                         page_bytes=part.small_page_size + part.small_spare_size,
                         free_max=slay.free_columns[1] - slay.free_columns[0])
    free_max = lay.free_columns[1] - lay.free_columns[0]
    return EccGeometry(
        code       = dict(ecc),
        layout     = lay,
        cw_bytes   = cw_bytes,
        cw_shift   = (cw_bytes - 1).bit_length(),
        count_bits = count_bits,
        summary    = summary,
        bits       = sum(w for _, w, _ in ECC_SUMMARY) if summary else lay.codewords * count_bits,
        data_beats = cw_bytes // 2,
        slot_beats = lay.slot_bytes // 2,
        reserved   = lay.parity_columns[0] - part.page_size,
        pad        = lay.parity_bytes % 2,              # The slot's last byte is padding (FFh).
        max_len    = lay.codewords * cw_bytes,
        free_max   = free_max,
        # Free bytes of a codeword's size or more: the length's bits below the codeword cannot count
        # them, the free bytes are then the length beyond the data area's codewords.
        long_free  = max(free_max, small.free_max if small else 0) >= cw_bytes,
        small      = small,
    )


def small_pages_fit(ecc, part):
    """Whether `part` has MPNFM small pages whose spare holds the code's parity (a controller for it can
    then be built `with_small_pages`)."""
    if not part.is_mpnfm:
        return False
    try:
        ecc_layout(part.small_page_size, part.small_spare_size, **ecc)
    except ValueError:
        return False
    return True


def ecc_split(g, length, data_bytes):
    """(codewords, free bytes) of an ECC descriptor's `length` on a page of `data_bytes` of data
    (expressions): the length's bits below the codeword count the free bytes; where the free bytes
    can reach a codeword's size (`long_free`), the codewords stop at the data area's and the rest of
    the length is free bytes (more than a codeword's size of them only after the whole data area)."""
    if not g.long_free:
        return length[g.cw_shift:], length[:g.cw_shift]
    n_cw = Mux(length[g.cw_shift:] > data_bytes[g.cw_shift:], data_bytes[g.cw_shift:], length[g.cw_shift:])
    return n_cw, length - (n_cw << g.cw_shift)


class NandLabEccPath(LiteXModule):
    """The ECC of READ_ECC and PROGRAM_ECC (see "ECC" in the package), `geometry` from `ecc_geometry`.

    It sits between the beat engine (`bus_sink`: DOUT pairs, `bus_source`: DIN pairs, `bus_room`,
    `operand`, and the engine's `din_active` / `dout_active`) and the datapath (`mem_sink`: DIN pairs
    from memory, `mem_source`: DOUT pairs to memory, `mem_room`), and sees the micro-ops on `uop`:
    a DIN_ECC goes through the encoder followed by the spare's reserved bytes, the parity and the
    descriptor's free bytes (its length beyond whole codewords, from memory at the address in its
    parameter word: `din_free` tells the datapath); a DOUT_PARITY fills the parity buffer; a DOUT_ECC
    goes to memory and to the decoder, a DOUT_FREE to memory at the parameter word's address; it
    runs CORRECT itself, fixing memory words on `fix_bus` (a master like `dma_bus`). `uncorrectable`
    and `counts` are the result of the descriptor's codewords, `fixed` counts the memory words
    corrected; `dout_end` is the bytes of the data output under way (the datapath's FLUSH). With the
    geometry's `small` pages, a descriptor with SMALL (`cur.rsvd`) uses their layout: their data area
    instead of `data_bytes`, the parity slots and free bytes after it. `decoder`: a port of a decoder
    shared with other controllers (nandlab.gateware.ecc.shared), instead of a decoder of its own."""
    def __init__(self, geometry, dma_bus, dout_latency, cur, data_bytes, idle_gating=False, decoder=None):
        g = geometry
        self.uop         = Record(micro_op_description())
        self.bus_sink    = stream.Endpoint(pair_description())
        self.bus_source  = stream.Endpoint(pair_description())
        self.bus_room    = Signal()
        self.operand     = Record(operand_description())
        self.din_active  = Signal()
        self.dout_active = Signal()
        self.mem_sink    = stream.Endpoint(pair_description())
        self.mem_source  = stream.Endpoint(pair_description())
        self.mem_room    = Signal()
        self.fix_bus     = dma_bus.__class__(data_width=len(dma_bus.dat_w), adr_width=len(dma_bus.adr))
        self.uncorrectable = Signal()
        self.counts      = Signal(g.bits)       # Per codeword `count_bits` each, or the summary (ECC_SUMMARY).
        self.fixed       = Signal(32)           # Memory words corrected.
        self.dout_end    = Signal(16)
        self.din_free    = Signal(16)

        # # #

        self.geometry, self.cur, self.dout_latency = g, cur, dout_latency
        uop = self.uop
        self.encoder = NandLabBchEncoder(**g.code)
        # A shared decoder's port is not a module (the SoC builds the decoder and gates it).
        self.decoder = dec = NandLabBchDecoder(**g.code) if decoder is None else decoder
        # Simulation: the BCH cores are evaluated only while they work (most of the decoder's logic
        # is combinational over its registers).
        self.encoder_gate = IdleGate(self.encoder, self.encoder.idle, "bch_enc", enabled=idle_gating)
        if decoder is None:
            self.decoder_gate = IdleGate(dec, dec.idle, "bch_dec", enabled=idle_gating)
        assert dec.code.beats == g.data_beats + g.slot_beats and g.reserved % 2 == 0
        # Parity of a page (written by the encoder or read from the spare), data pairs on their way
        # to the decoder, corrections waiting to be applied.
        self.parity_buf = stream.SyncFIFO([("data", 16)], g.layout.codewords * g.slot_beats)
        self.dec_fifo = stream.SyncFIFO([("data", 16)], 32)
        self.fix_fifo = stream.SyncFIFO([("cw", 8), ("word", len(dec.source.word)), ("mask", 16)],
                                        max(g.code["t"] * g.layout.codewords, 2))

        self.dest  = Signal(2)                  # DOUT: where the pairs go (DOUT_*).
        self.clear = Signal()                   # A page's ECC state starts afresh.
        self.dec_mode = Signal()                # A READ_ECC's data (and parity) go to the decoder.
        self.n_cw  = Signal(8)                  # Codewords in the descriptor.
        # Free bytes in the descriptor (its length beyond the codewords).
        self.n_free = Signal(max=max(g.cw_bytes, g.free_max + 1, g.small.free_max + 1 if g.small else 0))
        self.cw_done = Signal(8)                # Codewords decoded (status beats received).
        # The data area of the descriptor's page: a small page's with SMALL.
        self.page_data = Signal(16)
        if g.small:
            self.comb += self.page_data.eq(Mux(cur.rsvd[RSVD_SMALL], g.small.data_bytes, data_bytes))
        else:
            self.comb += self.page_data.eq(data_bytes)
        n_cw, n_free = ecc_split(g, cur.len, self.page_data)
        self.comb += [
            self.dest.eq(Mux(uop.op == U["DOUT"], uop.arg[:2], 0)),
            self.clear.eq(uop.valid & ((uop.op == U["END"]) |
                                       (uop.op == U["DOUT"]) & (uop.arg[:2] == DOUT_PARITY))),
            self.n_cw.eq(n_cw),
            self.n_free.eq(n_free),
            self.dout_end.eq(Mux(self.dest == DOUT_ECC, self.n_cw << g.cw_shift,
                                 Mux(self.dest == DOUT_FREE, self.n_free, cur.len))),
            self.din_free.eq(Mux(uop.arg[0], self.n_free, 0)),
        ]
        self.sync += If(uop.valid & (uop.op == U["DOUT"]) & (uop.arg[:2] == DOUT_ECC), self.dec_mode.eq(1))
        self._operands(self.page_data)
        self._encoder()
        self._decoder()
        self._correct(dma_bus)

    def _operands(self, data_bytes):
        """The spare's parity slots and free bytes: the column of ADDR_COL COL_SPARE and COL_FREE, the
        bytes a DIN_ECC adds (reserved and slots; the free bytes are in the length), those of each DOUT."""
        g, uop, cur, op = self.geometry, self.uop, self.cur, self.operand
        spare_col = Signal(16)                  # Column of the first parity slot.
        free_col  = Signal(16)                  # Column of the first free byte (after every slot of the page).
        ecc_extra = Signal(16)                  # DIN_ECC: bytes after the data (reserved + slots).
        n_parity  = Signal(16)                  # DOUT_PARITY: bytes of the slots.
        self.comb += [
            spare_col.eq(data_bytes + g.reserved),
            free_col.eq(spare_col + (data_bytes >> g.cw_shift) * g.layout.slot_bytes),
            ecc_extra.eq(g.reserved + self.n_cw * g.layout.slot_bytes),
            n_parity.eq(self.n_cw * g.layout.slot_bytes),
            op.column.eq(Mux(uop.arg[:2] == COL_FREE, free_col, Mux(uop.arg[:2] == COL_SPARE, spare_col, cur.col))),
            op.din_len.eq(cur.len + Mux(uop.arg[0], ecc_extra, 0)),
            op.dout_len.eq(Mux(uop.arg[:2] == DOUT_PARITY, n_parity,
                           Mux(uop.arg[:2] == DOUT_ECC, self.n_cw << g.cw_shift,
                           Mux(uop.arg[:2] == DOUT_FREE, self.n_free, cur.len)))),
            op.to_memory.eq(self.dest != DOUT_PARITY),
        ]

    def _encoder(self):
        """DIN_ECC: memory pairs through the encoder to the bus, then the reserved pairs (FFh FFh), then the
        parity slots from the parity buffer (the encoder's parity beats wait there), then the free bytes'
        pairs from memory (the rest of their last DMA word is dropped). Other data inputs and all data
        outputs pass; a DOUT_PARITY's pairs go to the parity buffer."""
        g, uop, enc, pfifo = self.geometry, self.uop, self.encoder, self.parity_buf
        mem, bus = self.mem_sink, self.bus_source
        ecc_din = Signal()                      # DIN through the encoder.
        enc_in_left   = Signal(16)              # DIN_ECC: data pairs still to give the encoder.
        din_data_left = Signal(16)              # DIN_ECC: data pairs still to send.
        din_res_left  = Signal(4)               # DIN_ECC: reserved pairs (FFh FFh) still to send.
        din_par_left  = Signal(16)              # DIN_ECC: parity pairs still to send.
        din_free_left = Signal(len(self.n_free))  # DIN_ECC: free-byte pairs still to send.
        drop_left     = Signal(max=8)           # Pairs of the last DMA word beyond the free bytes (dropped).
        dma_pairs     = len(self.fix_bus.dat_w) // 16
        enc_have, enc_pair = Signal(), Signal(16)
        enc_beat = Signal(max=g.data_beats + g.slot_beats)
        enc_par  = Signal()
        slot_i   = Signal(max=max(g.slot_beats, 2))
        phase_data, phase_res, phase_par, phase_free, drop = Signal(), Signal(), Signal(), Signal(), Signal()
        pf_pop_din = Signal()
        self.comb += [
            ecc_din.eq(self.din_active & (uop.op == U["DIN"]) & uop.arg[0]),
            enc.sink.valid.eq(ecc_din & mem.valid & (enc_in_left != 0)),
            enc.sink.data.eq(mem.data), enc.sink.be.eq(0b11),
            drop.eq((drop_left != 0) & ~phase_data & ~phase_res & ~phase_par & ~phase_free),
            mem.ready.eq(drop | Mux(ecc_din, Mux(enc_in_left != 0, enc.sink.ready, phase_free & bus.ready), bus.ready)),
            bus.valid.eq(Mux(ecc_din, enc_have, mem.valid)),
            bus.data.eq(Mux(ecc_din, enc_pair, mem.data)),
            enc_par.eq(enc_beat >= g.data_beats),
            phase_data.eq(din_data_left != 0),
            phase_res.eq(~phase_data & (din_res_left != 0)),
            phase_par.eq(~phase_data & ~phase_res & (din_par_left != 0)),
            phase_free.eq(~phase_data & ~phase_res & ~phase_par & (din_free_left != 0)),
            If(phase_data,
                enc_have.eq(enc.source.valid & ~enc_par), enc_pair.eq(enc.source.data),
            ).Elif(phase_res,
                enc_have.eq(1), enc_pair.eq(0xFFFF),
            ).Elif(phase_par,
                enc_have.eq(pfifo.source.valid),
                enc_pair.eq(Cat(pfifo.source.data[:8],
                                Mux((slot_i == g.slot_beats - 1) & g.pad, 0xFF, pfifo.source.data[8:]))),
            ).Else(
                enc_have.eq(phase_free & mem.valid & (enc_in_left == 0)), enc_pair.eq(mem.data),
            ),
            If(ecc_din,
                If(enc_par, enc.source.ready.eq(pfifo.sink.ready)
                ).Elif(phase_data, enc.source.ready.eq(bus.ready)),
            ),
            pf_pop_din.eq(ecc_din & bus.ready & phase_par),
            # The parity buffer takes the encoder's parity beats, or a DOUT_PARITY's pairs.
            If(ecc_din & enc_par,
                pfifo.sink.valid.eq(enc.source.valid), pfifo.sink.data.eq(enc.source.data),
            ).Elif(self.dest == DOUT_PARITY,
                pfifo.sink.valid.eq(self.bus_sink.valid), pfifo.sink.data.eq(self.bus_sink.data),
            ),
        ]
        self.pf_pop_din = pf_pop_din
        self.sync += [
            If(enc.source.valid & enc.source.ready,
                If(enc_beat == g.data_beats + g.slot_beats - 1, enc_beat.eq(0)).Else(enc_beat.eq(enc_beat + 1)),
            ),
            If(ecc_din & bus.ready,
                If(phase_data, din_data_left.eq(din_data_left - 1)
                ).Elif(phase_res, din_res_left.eq(din_res_left - 1)
                ).Elif(phase_par,
                    din_par_left.eq(din_par_left - 1),
                    slot_i.eq(Mux(slot_i == g.slot_beats - 1, 0, slot_i + 1)),
                ).Elif(phase_free & mem.valid, din_free_left.eq(din_free_left - 1)),
            ),
            If(enc.sink.valid & enc.sink.ready, enc_in_left.eq(enc_in_left - 1)),
            If(drop & mem.valid, drop_left.eq(drop_left - 1)),
            # A DIN starts (listed last: it wins over a count in the same cycle). Only a DIN_ECC has phases.
            If(uop.valid & (uop.op == U["DIN"]),
                If(uop.arg[0],
                    enc_in_left.eq(self.n_cw << (g.cw_shift - 1)), din_data_left.eq(self.n_cw << (g.cw_shift - 1)),
                    din_res_left.eq(g.reserved // 2), din_par_left.eq(self.n_cw * g.slot_beats),
                    din_free_left.eq(self.n_free[1:]),
                    drop_left.eq((dma_pairs - self.n_free[1:]) & (dma_pairs - 1)),
                ).Else(
                    enc_in_left.eq(0), din_data_left.eq(0), din_res_left.eq(0), din_par_left.eq(0),
                    din_free_left.eq(0), drop_left.eq(0),
                ),
            ),
        ]

    def _decoder(self):
        """DOUT_ECC: the pairs go to memory and, through a small FIFO, to the decoder, which then takes the
        codeword's parity slot from the parity buffer; corrections of data beats queue for CORRECT (those
        of parity beats only count), the status beats fill the per-codeword counts."""
        g, dec, pfifo, dfifo, cfifo = self.geometry, self.decoder, self.parity_buf, self.dec_fifo, self.fix_fifo
        dest, clear, dec_mode, cw_done = self.dest, self.clear, self.dec_mode, self.cw_done
        bus, mem = self.bus_sink, self.mem_source
        # A shared decoder's port: the page's ECC state clearing frees the decoder of a codeword left
        # half-read (nandlab.gateware.ecc.shared). A decoder of its own is never restarted (as before).
        self.comb += dec.restart.eq(clear if not isinstance(dec, NandLabBchDecoder) else 0)
        self.comb += [
            mem.valid.eq(Mux(dest == DOUT_PARITY, 0, bus.valid)), mem.data.eq(bus.data),
            bus.ready.eq(Mux(dest == DOUT_PARITY, pfifo.sink.ready, mem.ready)),
            dfifo.sink.valid.eq(self.dout_active & (dest == DOUT_ECC) & bus.valid), dfifo.sink.data.eq(bus.data),
            # (The parity buffer holds a page's slots: it has room for every byte of a DOUT_PARITY.)
            self.bus_room.eq(Mux(dest == DOUT_PARITY, pfifo.sink.ready,
                                 self.mem_room & ((dest != DOUT_ECC) | fits(dfifo, self.dout_latency)))),
        ]
        code = dec.code
        pf_pop_dec = Signal()
        dec_cnt = Signal(max=code.beats)
        self.comb += If(dec_cnt < g.data_beats,
            dec.sink.valid.eq(dfifo.source.valid), dec.sink.data.eq(dfifo.source.data), dec.sink.be.eq(0b11),
            dfifo.source.ready.eq(dec.sink.ready),
        ).Else(
            dec.sink.valid.eq(pfifo.source.valid & dec_mode), dec.sink.data.eq(pfifo.source.data),
            dec.sink.be.eq(Mux(dec_cnt == code.beats - 1, 0b01 if g.pad else 0b11, 0b11)),
            pf_pop_dec.eq(dec.sink.ready & dec_mode),
        )
        self.comb += pfifo.source.ready.eq(self.pf_pop_din | pf_pop_dec)
        self.sync += If(clear, dec_cnt.eq(0)).Elif(dec.sink.valid & dec.sink.ready,
            If(dec_cnt == code.beats - 1, dec_cnt.eq(0)).Else(dec_cnt.eq(dec_cnt + 1)),
        )
        self.comb += [
            dec.source.ready.eq(dec.source.last | cfifo.sink.ready),
            cfifo.sink.valid.eq(dec.source.valid & ~dec.source.last & (dec.source.word < g.data_beats)),
            cfifo.sink.cw.eq(cw_done), cfifo.sink.word.eq(dec.source.word), cfifo.sink.mask.eq(dec.source.mask),
        ]
        w = g.count_bits
        if g.summary:
            # The sum, the most and the uncorrectable codewords (ECC_SUMMARY's fields, from bit 0 up).
            fields, offset = {}, 0
            for name, width, _ in ECC_SUMMARY:
                fields[name] = self.counts[offset:offset + width]
                offset += width
            n = dec.source.count
            result = If(dec.source.uncorrectable,
                fields["uncorrectable"].eq(fields["uncorrectable"] + 1),
            ).Else(
                fields["corrected"].eq(fields["corrected"] + n),
                If(n > fields["max"], fields["max"].eq(n)),
            )
        else:
            result = Case(cw_done, {i: self.counts[i * w:(i + 1) * w].eq(
                Mux(dec.source.uncorrectable, 2**w - 1, dec.source.count)) for i in range(g.layout.codewords)})
        self.sync += If(clear,
            cw_done.eq(0), self.counts.eq(0), self.uncorrectable.eq(0),
        ).Elif(dec.source.valid & dec.source.last,
            cw_done.eq(cw_done + 1),
            If(dec.source.uncorrectable, self.uncorrectable.eq(1)),
            result,
        )

    def _correct(self, dma_bus):
        """CORRECT: once memory holds the data (FLUSH came first), flip the bits of each correction by a
        read-modify-write of its memory word; done when every codeword has its status."""
        g, uop, cfifo, fix_bus = self.geometry, self.uop, self.fix_fifo, self.fix_bus
        dw = len(dma_bus.dat_w)
        ratio = dw // 16
        shift = (dw // 8 - 1).bit_length()
        fix_adr, fix_mask, fix_dat = Signal(len(dma_bus.adr)), Signal(dw), Signal(dw)
        lane = cfifo.source.word[:(ratio - 1).bit_length()] if ratio > 1 else 0
        self.fsm = fsm = FSM(reset_state="IDLE")
        fsm.act("IDLE",
            If(uop.valid & (uop.op == U["CORRECT"]), uop.take.eq(1), NextState("CORRECT")),
        )
        fsm.act("CORRECT",
            If(cfifo.source.valid,
                cfifo.source.ready.eq(1),
                NextValue(fix_adr, (self.cur.addr + (cfifo.source.cw << g.cw_shift) + (cfifo.source.word << 1))[shift:]),
                NextValue(fix_mask, Array(cfifo.source.mask << (16 * i) for i in range(ratio))[lane]),
                NextState("FIX_RD"),
            ).Elif(self.cw_done == self.n_cw,
                NextValue(self.dec_mode, 0),
                uop.done.eq(1),
                NextState("IDLE"),
            ),
        )
        fsm.act("FIX_RD",
            fix_bus.cyc.eq(1), fix_bus.stb.eq(1), fix_bus.we.eq(0), fix_bus.adr.eq(fix_adr),
            fix_bus.sel.eq(2**(dw // 8) - 1),
            If(fix_bus.ack, NextValue(fix_dat, fix_bus.dat_r ^ fix_mask), NextState("FIX_WR")),
        )
        fsm.act("FIX_WR",
            fix_bus.cyc.eq(1), fix_bus.stb.eq(1), fix_bus.we.eq(1), fix_bus.adr.eq(fix_adr),
            fix_bus.sel.eq(2**(dw // 8) - 1), fix_bus.dat_w.eq(fix_dat),
            If(fix_bus.ack, NextState("CORRECT")),
        )
        self.sync += If(fsm.ongoing("FIX_WR") & fix_bus.ack, self.fixed.eq(self.fixed + 1))
