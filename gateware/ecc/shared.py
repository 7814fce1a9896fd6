"""One BCH decoder for several channel controllers' ECC paths.

A decoder (`NandLabBchDecoder`) is the larger part of a controller's ECC (about nine in ten of its
LUTs at t = 8: the Berlekamp-Massey multipliers and the 16-position Chien search); it works only
while a READ_ECC streams a page out, and then one codeword at a time. A SoC with several channels
builds one (`NandLabSharedBchDecoder`) and gives each controller a port (`port()`), which looks to
the ECC path like the decoder itself: `sink`, `source`, `code`.

Arbitration is by codeword, at the only moments where nothing of a client is inside the decoder
(`NandLabBchDecoder.empty`: no beat of a codeword taken, no codeword waiting for or in stage 2):
there, if the client that owns the decoder has no beat to give and another has, the other becomes
the owner (round robin from the owner on), its first beat taken in the next cycle. Everything the
decoder sends (corrections, status) therefore belongs to the owner, and a lone client (one channel
reading) keeps the decoder: its codewords go through exactly as with a decoder of its own. Two
channels reading ECC pages at the same time take turns: a waiting client's pairs wait in its ECC
path's FIFO, which holds its beat engine's data output (`bus_room`) as memory's back-pressure does.

A client's `restart` (its ECC path's state clearing: a descriptor's END, a new page's parity) restarts
the decoder while that client owns it: a read stopped mid-codeword would otherwise leave the decoder
never empty again, owned for ever, and every other channel's ECC reads waiting. A client that does not
own the decoder has nothing in it, so its `restart` does nothing.
"""

from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from nandlab.gateware.ecc.bch import NandLabBchDecoder, bch_stream_description, bch_correction_description
from nandlab.gateware.common.idlegate import IdleGate


class BchDecoderPort:
    """A client's view of the shared decoder (the signals of `NandLabBchDecoder` an ECC path uses)."""
    def __init__(self, code):
        self.code   = code
        self.restart = Signal()
        self.sink   = stream.Endpoint(bch_stream_description())
        self.source = stream.Endpoint(bch_correction_description(code))


class NandLabSharedBchDecoder(LiteXModule):
    """The decoder of `code` (dict(data_bytes=, t=, m=)) shared by the ports handed out by `port()`
    (before the module is finalized). `idle_gating`: simulation, see nandlab.gateware.common.idlegate.
    `decoder`: the decoder's size options (NandLabBchDecoder's `chien`, `serial_bm`)."""
    def __init__(self, code, idle_gating=False, **decoder):
        self.decoder = NandLabBchDecoder(**code, **decoder)
        self.decoder_gate = IdleGate(self.decoder, self.decoder.idle, "bch_dec_shared", enabled=idle_gating)
        self.ports = []

    def port(self):
        p = BchDecoderPort(self.decoder.code)
        self.ports.append(p)
        return p

    def do_finalize(self):
        dec, ports = self.decoder, self.ports
        n = len(ports)
        assert n >= 1
        self.owner = owner = Signal(max=max(n, 2))
        for i, p in enumerate(ports):
            mine = owner == i
            self.comb += [
                p.sink.ready.eq(mine & dec.sink.ready),
                p.source.valid.eq(mine & dec.source.valid),
                p.source.last.eq(dec.source.last),
                p.source.word.eq(dec.source.word), p.source.mask.eq(dec.source.mask),
                p.source.count.eq(dec.source.count), p.source.uncorrectable.eq(dec.source.uncorrectable),
                If(mine,
                    dec.sink.valid.eq(p.sink.valid), dec.sink.data.eq(p.sink.data), dec.sink.be.eq(p.sink.be),
                    dec.source.ready.eq(p.source.ready), dec.restart.eq(p.restart),
                ),
            ]
        if n == 1:
            return
        # The next owner: the first client after the owner (round robin) with a beat to give.
        owner_valid = Array(p.sink.valid for p in ports)[owner]
        nxt = owner
        for step in range(n - 1, 0, -1):        # Built from the farthest, so the nearest wins.
            i = Signal(max=n, name=f"next{step}")
            self.comb += i.eq(Mux(owner + step >= n, owner + step - n, owner + step))
            nxt = Mux(Array(p.sink.valid for p in ports)[i], i, nxt)
        self.sync += If(dec.empty & ~owner_valid, owner.eq(nxt))
