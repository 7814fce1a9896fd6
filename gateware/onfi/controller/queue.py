"""The channel controller's queues: descriptors in (checked against the geometry), completions out."""

from migen import *
from migen.genlib.fifo import SyncFIFO, SyncFIFOBuffered

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from nandlab.gateware.onfi.controller.common import (TEMPLATES, OPS, R, RSVD_SMALL, descriptor_description,
                                                     completion_description)
from nandlab.gateware.onfi.controller.ecc import ecc_split


class NandLabDescriptorQueue(LiteXModule):
    """Submission FIFO; `source` presents its head with the verdict of the checks (`R`: OK, or why
    the descriptor is refused) and the one-hot of its way.

    The checks read the geometry signals given (`ways_online`, `page_bytes`, `page_bits`, `blocks`,
    `data_bytes`) and the DMA window (`dma_base` to `dma_limit`, both included: every byte a
    descriptor's data moves must lie in it, else BAD_ADDRESS; this also refuses an address range
    that wraps past 2^32); `ecc` is the ECC geometry (`nandlab.gateware.onfi.controller.ecc.ecc_geometry`),
    or None: the ECC operations are then refused as BAD_OP. Where it has `small` pages, an ECC operation
    with SMALL (bit `RSVD_SMALL` of `rsvd`) is checked against the small page (its data area, its free
    bytes, its page for the columns); SMALL on another operation, or where the ECC has no small pages,
    is BAD_OP, as every other bit of `rsvd` is.

    A descriptor submitted while the FIFO is full is not lost unseen: it is held (tag and way) on
    `overflow` until the sequencer completes it as OVERFLOW; one more while that one is held is
    counted in `lost` (firmware that checks `ready` before submitting never sees either)."""
    def __init__(self, ways, dma_bytes, depth, ways_online, page_bytes, page_bits, blocks, data_bytes, ecc=None,
                 dma_base=0, dma_limit=2**32 - 1):
        self.sink     = stream.Endpoint(descriptor_description())
        self.source   = stream.Endpoint(stream.EndpointDescription(descriptor_description(),
                                                                   [("verdict", 4), ("way_bit", 16)]))
        self.overflow = stream.Endpoint([("tag", 8), ("way", 8)])
        self.lost     = Signal(32)

        # # #

        layout = descriptor_description()
        self.fifo = fifo = SyncFIFO(sum(w for _, w in layout), depth)
        head = self.source
        self.comb += [
            fifo.din.eq(self.sink.payload.raw_bits()),
            fifo.we.eq(self.sink.valid),
            self.sink.ready.eq(fifo.writable),
        ]
        sums = self._head_register(fifo, dma_bytes, ecc)

        # A submission into a full FIFO: held for its OVERFLOW completion, or counted when one is held.
        ovf = self.overflow
        self.sync += [
            If(ovf.valid & ovf.ready, ovf.valid.eq(0)),
            If(self.sink.valid & ~fifo.writable,
                If(~ovf.valid | ovf.ready,
                    ovf.valid.eq(1), ovf.tag.eq(self.sink.tag), ovf.way.eq(self.sink.way),
                ).Else(
                    self.lost.eq(self.lost + 1),
                ),
            ),
        ]

        checks = {name: set(c) for name, (_, c) in TEMPLATES.items()}
        need_row, need_data, need_din, need_len = Signal(), Signal(), Signal(), Signal()
        need_ecc, need_page, free_ok, free_needed = Signal(), Signal(), Signal(), Signal()
        self.comb += Case(head.op, {OPS[n]: [need_row.eq("row" in c), need_data.eq("data" in c),
                                             need_din.eq("din" in c), need_len.eq("len" in c),
                                             need_ecc.eq("ecc" in c), need_page.eq("ecc_page" in c),
                                             free_ok.eq("ecc_free" in c), free_needed.eq("free_needed" in c)]
                                    for n, c in checks.items()})
        row_block = Signal(24)
        self.comb += row_block.eq(head.row >> page_bits)
        # The page the descriptor addresses: an MPNFM small page with SMALL (ECC operations only).
        if ecc and ecc.small:
            small = head.rsvd[RSVD_SMALL]
            rsvd_bad = ((head.rsvd & (0xFF ^ (1 << RSVD_SMALL))) != 0) | small & ~need_ecc
            page_bytes = Mux(small, ecc.small.page_bytes, page_bytes)
            data_bytes = Mux(small, ecc.small.data_bytes, data_bytes)
            free_max = Mux(small, ecc.small.free_max, ecc.free_max)
        else:
            rsvd_bad = head.rsvd != 0
            free_max = ecc.free_max if ecc else 0
        if ecc:
            # ECC operations: whole codewords from column 0, no more than the data area (and the parity
            # buffer) holds; a program covers the whole data area (the parity slots follow it). The
            # length beyond the codewords is the spare's free bytes, where the operation moves them.
            bad_op = head.op >= len(TEMPLATES)
            cw_len, free_len, page_data = Signal(16), Signal(16), Signal(16)
            n_cw, n_free = ecc_split(ecc, head.len, page_data)
            self.comb += page_data.eq(data_bytes), cw_len.eq(n_cw << ecc.cw_shift), free_len.eq(n_free)
            ecc_checks = [
                (need_ecc & (head.col != 0), R["BAD_COLUMN"]),
                (need_ecc & ((cw_len == 0) | (cw_len > ecc.max_len) | (cw_len > page_data) |
                             (need_page & (cw_len != page_data)) | (free_len > free_max) |
                             ~free_ok & (free_len != 0) | free_needed & (free_len == 0) |
                             (free_len != 0) & ((head.param_word & (dma_bytes - 1)) != 0)), R["BAD_LENGTH"]),
            ]
        else:
            bad_op = (head.op >= len(TEMPLATES)) | need_ecc
            ecc_checks = []
            cw_len, free_len = head.len, Constant(0, 16)
        # The memory the data moves: at `addr` the data (an ECC operation's codewords; else the length,
        # the last DMA word whole), at the parameter word an ECC operation's free bytes (whole DMA words).
        # (The sums the head's fields alone give come from its register: `_head_register`.) Without ECC,
        # an ECC operation is BAD_OP before its data is checked.
        data_end, free_end = Signal(34), Signal(34)
        if ecc and ecc.long_free:
            sums["cw_end"] = head.addr + cw_len
            sums["free_end"] = head.param_word + self.round_up(free_len, dma_bytes)
        self.comb += [
            data_end.eq(Mux(need_ecc, sums["cw_end"], sums["data_end"]) if ecc else sums["data_end"]),
            free_end.eq(sums["free_end"] if ecc else head.param_word),
        ]
        bad_addr = (need_data | need_len) & ((head.addr < dma_base) | (data_end > dma_limit + 1)) | \
            need_ecc & (free_len != 0) & ((head.param_word < dma_base) | (free_end > dma_limit + 1))
        refusals = [
            (bad_op | rsvd_bad, R["BAD_OP"]),
            ((head.way >= ways) | ((head.way_bit & ways_online) == 0), R["BAD_WAY"]),
            (need_row & (row_block >= blocks), R["BAD_ROW"]),
            (need_data & ((head.col >= page_bytes) | (sums["col_end"] > page_bytes)), R["BAD_COLUMN"]),
            *ecc_checks,
            ((need_data | need_len) & ((head.len == 0) | head.len[0] | (head.addr & (dma_bytes - 1) != 0)),
                R["BAD_LENGTH"]),
            # (An ECC program's free bytes need not fill a DMA word: the rest of the word is not sent.)
            (need_din & ~need_ecc & ((head.len & (dma_bytes - 1)) != 0), R["BAD_LENGTH"]),
            (bad_addr, R["BAD_ADDRESS"]),
        ]
        verdict = head.verdict.eq(R["OK"])
        for cond, result in reversed(refusals):
            verdict = If(cond, head.verdict.eq(result)).Else(verdict)
        self.comb += head.way_bit.eq(1 << head.way), verdict

    @staticmethod
    def round_up(n, dma_bytes):
        """`n` bytes rounded up to whole DMA words."""
        shift = (dma_bytes - 1).bit_length()
        return ((n + dma_bytes - 1) >> shift) << shift

    def _head_register(self, fifo, dma_bytes, ecc):
        """The head (`source`): a register loaded from `fifo` (first-word-fall-through) when it is empty
        or taken, as SyncFIFOBuffered's output register (the same cycles). With it, registers the sums
        the address checks use that depend on the descriptor's fields alone (not on the geometry, which
        the checks read as it is at the head): the end of its column range, of its data (the length in
        whole DMA words; with ECC, the codewords) and of an ECC operation's free bytes (where the
        codewords do not depend on the data area: not `long_free`). The adders then run from the FIFO's
        memory, not between the head and the sequencer's start (the Colorlight's longest path, 20.2 ns).
        Returns the sums' registers by name."""
        head = self.source
        d = Record(descriptor_description())
        self.comb += d.raw_bits().eq(fifo.dout)
        sums = {"col_end": (17, d.col + d.len), "data_end": (34, d.addr + self.round_up(d.len, dma_bytes))}
        if ecc and not ecc.long_free:
            n_cw, n_free = ecc_split(ecc, d.len, None)      # (Not long_free: the data area is not read.)
            sums["cw_end"] = (34, d.addr + (n_cw << ecc.cw_shift))
            sums["free_end"] = (34, d.param_word + self.round_up(n_free, dma_bytes))
        regs = {name: Signal(width, name=f"head_{name}") for name, (width, _) in sums.items()}
        load = Signal()
        self.comb += load.eq(fifo.readable & (~head.valid | head.ready)), fifo.re.eq(load)
        self.sync += If(load,
            head.valid.eq(1),
            head.payload.raw_bits().eq(fifo.dout),
            *[regs[name].eq(value) for name, (_, value) in sums.items()],
        ).Elif(head.ready,
            head.valid.eq(0),
        )
        return regs


class NandLabCompletionQueue(LiteXModule):
    """Completion FIFO: `sink` from the sequencer (it never pushes into a full queue: `room` says
    whether one more fits beside the `reserved` completions the ways in flight will push), `source`
    to firmware; `completed` counts the completions."""
    def __init__(self, depth, ecc_bits=0):
        self.sink      = stream.Endpoint(completion_description(ecc_bits))
        self.source    = stream.Endpoint(completion_description(ecc_bits))
        self.reserved  = Signal(5)
        self.room      = Signal()
        self.completed = Signal(32)

        # # #

        self.fifo = fifo = SyncFIFOBuffered(len(self.sink.payload.raw_bits()), depth)
        self.comb += [
            fifo.we.eq(self.sink.valid), fifo.din.eq(self.sink.payload.raw_bits()),
            self.source.valid.eq(fifo.readable), fifo.re.eq(self.source.ready),
            self.source.payload.raw_bits().eq(fifo.dout),
            self.room.eq(fifo.level + self.reserved < fifo.depth),
        ]
        self.sync += If(self.sink.valid, self.completed.eq(self.completed + 1))
