"""The channel controller's memory side: byte pairs to and from DMA words, the Wishbone DMA reader and writer."""

from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream
from litex.soc.cores.dma import WishboneDMAReader, WishboneDMAWriter

from nandlab.gateware.onfi.controller.common import U, DOUT_FREE, fits, micro_op_description, pair_description


class NandLabDataPath(LiteXModule):
    """DOUT: pairs from `sink` -> FIFO -> DMA words -> memory at the descriptor's (`cur`) address.
    DIN: memory -> DMA words -> pairs on `source`. Each starts with the DIN / DOUT micro-op seen on
    `uop`. `room`: the FIFO has room for the pairs a DOUT has in flight (`dout_latency` cycles of them). `flush`:
    pad the last DMA word with FFh; `flushed`: memory holds every word of the DOUT, `dout_end` bytes
    (the descriptor's length unless the ECC path says otherwise). The spare's free bytes of the ECC
    operations are at the address in the descriptor's parameter word: a DOUT_FREE writes them there,
    and a DIN reads its last `din_free` bytes from there (whole DMA words: the ECC path drops the rest
    of the last). The DMA masters (`dma_wr.bus`, `dma_rd.bus`) are like `dma_bus`."""
    def __init__(self, dma_bus, dout_latency, cur):
        dw = len(dma_bus.dat_w)
        self.uop     = Record(micro_op_description())
        self.sink    = stream.Endpoint(pair_description())
        self.source  = stream.Endpoint(pair_description())
        self.room    = Signal()
        self.flush   = Signal()
        self.flushed = Signal()
        self.dout_end = Signal(16)
        self.din_free = Signal(16)

        # # #

        dma_bytes = dw // 8
        ratio = dw // 16
        shift = (dma_bytes - 1).bit_length()
        self.dout_fifo = dout_fifo = stream.SyncFIFO([("data", 16)], 64, buffered=True)
        self.dout_conv = dout_conv = stream.Converter(16, dw)
        # (The converter holds its input while a full word waits: a few words of FIFO after it let the
        # pairs flow every cycle while the DMA writes a word every other cycle.)
        self.dout_words = dout_words = stream.SyncFIFO([("data", dw)], 4, buffered=True)
        # The streams carry memory bytes in address order, first byte in the LSBs: LiteX's DMA calls
        # that "big" (it swaps bytes for "little").
        self.dma_wr   = dma_wr = WishboneDMAWriter(dma_bus.__class__(data_width=dw, adr_width=len(dma_bus.adr)),
                                                   endianness="big")
        self.din_conv = din_conv = stream.Converter(dw, 16)
        self.dma_rd   = dma_rd = WishboneDMAReader(dma_bus.__class__(data_width=dw, adr_width=len(dma_bus.adr)),
                                                   endianness="big", fifo_depth=32)
        wr_addr, wr_done_words = Signal(32), Signal(16)
        rd_addr, rd_left = Signal(32), Signal(16)
        fr_addr, fr_left = Signal(32), Signal(16)     # DIN: the free bytes' words (after the data's).
        # `rd_left` != 0 and `fr_left` != 0, kept in registers: the reader's request then starts at
        # flip-flops (the 16-bit compares before the SoC bus's arbiter and decoder were on the
        # Colorlight's longest path).
        rd_more, fr_more = Signal(), Signal()
        rd_init, fr_init = Signal(16), Signal(16)
        pairs = Signal(16)                    # DOUT: pairs pushed (the last DMA word is padded).
        pad = Signal()
        self.comb += [
            pad.eq(self.flush & ((pairs & (ratio - 1)) != 0)),
            dout_fifo.sink.valid.eq(self.sink.valid | pad),
            dout_fifo.sink.data.eq(Mux(pad, 0xFFFF, self.sink.data)),
            self.sink.ready.eq(dout_fifo.sink.ready),
            self.room.eq(fits(dout_fifo, dout_latency)),
            self.flushed.eq(((pairs & (ratio - 1)) == 0) & ((wr_done_words << shift) >= self.dout_end)),
            dout_fifo.source.connect(dout_conv.sink),
            dout_conv.source.connect(dout_words.sink, omit={"valid_token_count"}),
            dma_wr.sink.valid.eq(dout_words.source.valid),
            dma_wr.sink.data.eq(dout_words.source.data),
            dma_wr.sink.address.eq(wr_addr[shift:]),
            dout_words.source.ready.eq(dma_wr.sink.ready),
            dma_rd.sink.valid.eq(rd_more | fr_more),
            dma_rd.sink.address.eq(Mux(rd_more, rd_addr, fr_addr)[shift:]),
            rd_init.eq((cur.len - self.din_free) >> shift),
            fr_init.eq((self.din_free + dma_bytes - 1) >> shift),
            dma_rd.source.connect(din_conv.sink),
            din_conv.source.connect(self.source),
        ]
        uop = self.uop
        self.sync += [
            If(dout_fifo.sink.valid & dout_fifo.sink.ready, pairs.eq(pairs + 1)),
            If(dma_wr.sink.valid & dma_wr.sink.ready, wr_addr.eq(wr_addr + dma_bytes), wr_done_words.eq(wr_done_words + 1)),
            If(dma_rd.sink.valid & dma_rd.sink.ready,
                If(rd_more, rd_addr.eq(rd_addr + dma_bytes), rd_left.eq(rd_left - 1), rd_more.eq(rd_left != 1)
                ).Else(fr_addr.eq(fr_addr + dma_bytes), fr_left.eq(fr_left - 1), fr_more.eq(fr_left != 1)),
            ),
            # A data micro-op starts (listed last: a start wins over a count in the same cycle).
            If(uop.valid & (uop.op == U["DIN"]),
                rd_addr.eq(cur.addr), rd_left.eq(rd_init), rd_more.eq(rd_init != 0),
                fr_addr.eq(cur.param_word), fr_left.eq(fr_init), fr_more.eq(fr_init != 0),
            ),
            If(uop.valid & (uop.op == U["DOUT"]),
                pairs.eq(0), wr_addr.eq(Mux(uop.arg[:2] == DOUT_FREE, cur.param_word, cur.addr)), wr_done_words.eq(0),
            ),
        ]
