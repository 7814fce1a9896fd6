"""The descriptor queue on its own (Migen simulation): its head follows Migen's SyncFIFOBuffered cycle for
cycle, and the verdict at the head follows the checks as the package documents them, with the geometry
and the DMA window as they are at the head (changed while descriptors wait)."""

import random

from migen import Module, Signal, run_simulation
from migen.genlib.fifo import SyncFIFOBuffered

from nandlab.gateware.onfi.controller.common import TEMPLATES, OPS, R
from nandlab.gateware.onfi.controller.queue import NandLabDescriptorQueue

WAYS, DMA_BYTES, DEPTH = 4, 4, 6
NAMES = list(TEMPLATES)
FIELDS = ("op", "way", "tag", "rsvd", "row", "col", "len", "addr", "param_word")


def reference_verdict(d, g):
    """The refusal of descriptor `d` under geometry `g` for a controller without ECC (the rules of
    nandlab.gateware.onfi.controller's docstring, in Python integers)."""
    checks = set(TEMPLATES[NAMES[d["op"]]][1]) if d["op"] < len(NAMES) else set()
    moves = "data" in checks or "len" in checks
    if d["op"] >= len(NAMES) or "ecc" in checks or d["rsvd"]:
        return "BAD_OP"
    if d["way"] >= WAYS or not g["ways_online"] >> d["way"] & 1:
        return "BAD_WAY"
    if "row" in checks and d["row"] >> g["page_bits"] >= g["blocks"]:
        return "BAD_ROW"
    if "data" in checks and (d["col"] >= g["page_bytes"] or d["col"] + d["len"] > g["page_bytes"]):
        return "BAD_COLUMN"
    if moves and (d["len"] == 0 or d["len"] % 2 or d["addr"] % DMA_BYTES):
        return "BAD_LENGTH"
    if "din" in checks and d["len"] % DMA_BYTES:
        return "BAD_LENGTH"
    words = -(-d["len"] // DMA_BYTES) * DMA_BYTES
    if moves and (d["addr"] < g["dma_base"] or d["addr"] + words - 1 > g["dma_limit"]):
        return "BAD_ADDRESS"
    return "OK"


def random_descriptor(rng, g):
    """A descriptor near the geometry's edges often (columns, lengths and addresses at the limits)."""
    page, top = g["page_bytes"], g["dma_limit"]
    n = rng.choice([0, 1, 2, 4, 6, 64, page, page - 2, page + 4, rng.randrange(2**16)])
    return dict(op=rng.choice([rng.randrange(len(NAMES)), rng.randrange(256)]),
                way=rng.choice([rng.randrange(WAYS), rng.randrange(256)]), tag=rng.randrange(256),
                rsvd=rng.choice([0] * 6 + [rng.randrange(256)]),
                row=rng.choice([rng.randrange(2**12), rng.randrange(2**32)]),
                col=rng.choice([0, 2, page - n, page - n + 2, page, rng.randrange(2**16)]) % 2**16, len=n,
                addr=rng.choice([g["dma_base"], top + 1 - n, top + 1 - ((n + 3) & ~3), top - 3,
                                 rng.randrange(2**32)]) % 2**32,
                param_word=rng.randrange(2**32))


def random_geometry(rng):
    base = rng.choice([0, 0x1000, rng.randrange(2**32) & ~3])
    return dict(ways_online=rng.randrange(1, 2**WAYS), page_bytes=rng.choice([2112, 4320, 128]),
                page_bits=rng.choice([6, 7]), blocks=rng.choice([8, 1024]), dma_base=base,
                dma_limit=rng.choice([2**32 - 1, base + 0x7FFF, base + rng.randrange(2**16)]) % 2**32)


class _Bench(Module):
    def __init__(self):
        self.geo = {name: Signal(width, name=name) for name, width in
                    (("ways_online", WAYS), ("page_bytes", 16), ("page_bits", 5), ("blocks", 24),
                     ("dma_base", 32), ("dma_limit", 32))}
        g = self.geo
        self.submodules.dut = NandLabDescriptorQueue(WAYS, DMA_BYTES, DEPTH, g["ways_online"], g["page_bytes"],
                                                     g["page_bits"], g["blocks"], data_bytes=Signal(16),
                                                     dma_base=g["dma_base"], dma_limit=g["dma_limit"])
        self.submodules.ref = ref = SyncFIFOBuffered(len(self.dut.sink.payload.raw_bits()), DEPTH)
        self.comb += [ref.din.eq(self.dut.sink.payload.raw_bits()), ref.we.eq(self.dut.sink.valid),
                      ref.re.eq(self.dut.source.ready)]


def test_descriptor_queue_head_and_verdicts():
    rng = random.Random(20)
    tb = _Bench()
    dut = tb.dut
    seen = {"verdicts": set(), "cycles": 0, "taken": 0}

    def bench():
        g = random_geometry(rng)
        for cycle in range(4000):
            if rng.random() < 0.02:                   # The geometry changes while descriptors wait.
                g = random_geometry(rng)
            for name, value in g.items():
                yield tb.geo[name].eq(value)
            d = random_descriptor(rng, g)
            for name in FIELDS:
                yield getattr(dut.sink, name).eq(d[name])
            yield dut.sink.valid.eq(rng.random() < 0.4)
            yield dut.source.ready.eq(rng.random() < 0.35)
            yield
            # (Values after the edge, settled: the inputs above hold until the next cycle's.)
            valid, ref_readable = (yield dut.source.valid), (yield tb.ref.readable)
            assert valid == ref_readable, f"cycle {cycle}: head valid {valid}, SyncFIFOBuffered {ref_readable}"
            assert (yield dut.sink.ready) == (yield tb.ref.writable), f"cycle {cycle}: sink ready"
            if valid:
                assert (yield dut.source.payload.raw_bits()) == (yield tb.ref.dout), f"cycle {cycle}: head"
                head = {}
                for name in FIELDS:
                    head[name] = (yield getattr(dut.source, name))
                want = reference_verdict(head, g)
                got = (yield dut.source.verdict)
                assert got == R[want], f"cycle {cycle}: {head} under {g}: verdict {got}, expected {R[want]} ({want})"
                seen["verdicts"].add(want)
                seen["taken"] += (yield dut.source.ready)
            seen["cycles"] += 1

    run_simulation(tb, bench())
    assert seen["cycles"] == 4000 and seen["taken"] > 300
    assert seen["verdicts"] >= {"OK", "BAD_OP", "BAD_WAY", "BAD_ROW", "BAD_COLUMN", "BAD_LENGTH", "BAD_ADDRESS"}, \
        seen["verdicts"]
