"""cocotb tests of the channel controller's ECC on the MPNFM paper's part: 32 KiB pages (the completion's
summary) and the 4 KiB small pages of plane 1 (the SMALL bit).

MPNFM-32-4 pages hold 64 codewords of 512 B: more than the completion's 64 bits carry as per-codeword
counts, so it carries the summary {bits corrected, most in one codeword, uncorrectable codewords}
(`ECC_SUMMARY`), and the spare's 1150 free bytes (more than a codeword's size) follow the whole data
area. In MPNFM mode (the dies' `mpnfm`), plane 1 has 4096 + 256 B pages: an ECC descriptor with SMALL
uses their layout. Judges as in controller_ecc_tb.py: bchlib for the parity and what a decoder must
report, `nandlab.gateware.ecc.bch.layout` for where the parity and the free bytes go, the die reference
model's flip positions for the dies' own read flips.
"""

import random

import bchlib
import cocotb
from cocotb.triggers import RisingEdge, ReadOnly

from nandlab.gateware.onfi import common as onfi
from nandlab.gateware.onfi.controller.common import ECC_SUMMARY
from nandlab.gateware.ecc.bch import layout
from nandlab.nand_model.parts import MPNFMPaper32
from nandlab.nand_model.reference import DieConfig, flip_position

from controller_tb import Channel, switch


def mpnfm_test_config():
    """MPNFM-32-4 (32 KiB + 2 KiB pages on plane 0, 4 KiB + 256 B small pages on plane 1 in MPNFM
    mode) in 4 blocks of 2 pages, array times divided by 1000, no cache registers."""
    part = MPNFMPaper32().scaled(blocks_per_lun=4, pages_per_block=2)
    return DieConfig(part, time_scale=1000, with_cache=False)


CFG = mpnfm_test_config()
PART = CFG.part
T, M, CW = 8, 13, 512
WAYS = 1
WB = 8                                          # The sim top's 64-bit buffer words.
SUMMARY = {name: width for name, width, _ in ECC_SUMMARY}


class Page:
    """A page size's numbers: data area, whole page, ECC layout, free bytes."""
    def __init__(self, data, spare):
        self.data, self.full = data, data + spare
        self.lay = layout(data, spare, data_bytes=CW, t=T, m=M)
        self.free0, self.free_end = self.lay.free_columns
        self.n_free = self.free_end - self.free0

    def spare_image(self, data, bch, free=b""):
        """The spare the controller must write: reserved FFh, each slot's parity (then FFh), the free bytes
        given, FFh after."""
        spare = bytearray(b"\xff" * (self.full - self.data))
        for k in range(self.lay.codewords):
            col = self.lay.parity_columns[k] - self.data
            spare[col:col + self.lay.parity_bytes] = bch.encode(bytes(data[k * CW:(k + 1) * CW]))
        spare[self.free0 - self.data:self.free0 - self.data + len(free)] = free
        return spare

    def codeword_bits(self, k):
        """(column, bit) of every bit of codeword k: its data, then its parity in the spare."""
        p = self.lay.parity_columns[k]
        cols = list(range(k * CW, (k + 1) * CW)) + list(range(p, p + self.lay.parity_bytes))
        return [(c, b) for c in cols for b in range(8)]

    def codeword_of(self, col):
        if col < self.data:
            return col // CW
        for k, p in enumerate(self.lay.parity_columns):
            if p <= col < p + self.lay.parity_bytes:
                return k
        return None

    def expected(self, page, bch):
        """Per codeword, what bchlib makes of the page as stored: the flips it corrects, or None."""
        out = []
        for k in range(self.lay.codewords):
            p = self.lay.parity_columns[k]
            n = bch.decode(bytearray(page[k * CW:(k + 1) * CW]), bytearray(page[p:p + self.lay.parity_bytes]))
            out.append(None if n < 0 else n)
        return out


LARGE = Page(PART.page_size, PART.spare_size)
SMALL = Page(PART.small_page_size, PART.small_spare_size)


def summary(raw):
    """The completion's summary fields (ECC_SUMMARY, from bit 0 up)."""
    out, offset = {}, 0
    for name, width in SUMMARY.items():
        out[name] = raw >> offset & (1 << width) - 1
        offset += width
    assert raw >> offset == 0, f"bits above the summary set: {raw:#x}"
    return out


def want_summary(exp):
    """The summary a decoder reporting `exp` (per codeword: corrected bits, None uncorrectable) must give."""
    ok = [n for n in exp if n is not None]
    return dict(corrected=sum(ok), max=max(ok, default=0), uncorrectable=exp.count(None))


def row(block, page):
    return block << CFG.page_bits | page


class MpnfmChannel(Channel):
    async def start(self):
        await super().start()
        dut = self.dut
        dut.page_bytes.value, dut.page_bits.value = CFG.page_bytes, CFG.page_bits
        dut.blocks.value, dut.data_bytes.value = PART.blocks_per_lun, PART.page_size
        dut.mpnfm.value = 0

    async def read_mem(self, addr, n):
        """The buffer from `addr`, one word a cycle (the port's read is registered): pages of 32 KiB."""
        dut = self.dut
        out = bytearray()
        words = -(-n // WB)
        await RisingEdge(dut.sys_clk)
        dut.mem_adr.value = addr // WB
        await RisingEdge(dut.sys_clk)
        for i in range(words):
            if i + 1 < words:
                dut.mem_adr.value = addr // WB + i + 1
            await ReadOnly()
            out += int(dut.mem_dat_r.value).to_bytes(WB, "little")
            await RisingEdge(dut.sys_clk)
        return bytes(out[:n])

    async def run_ecc(self, op, way, **kw):
        tag = await self.submit(op, way, **kw)
        (cpl,) = await self.wait(tag)
        return cpl, summary(self.ecc.pop(tag))


async def setup(dut):
    ch = MpnfmChannel(dut)
    await ch.start()
    (res, _, _), = await ch.wait(await ch.submit("RESET", 0))
    assert res == "OK"
    await switch(ch, onfi.IF_NVDDR, 5)
    return ch


async def erase(ch, block):
    res = await ch.run("ERASE", 0, row=row(block, 0))
    assert res == ("OK", 0, 0xE0), res


async def read_raw(ch, r, full, addr):
    assert (await ch.run("READ", 0, row=r, length=full, addr=addr))[0] == "OK"
    return await ch.read_mem(addr, full)


async def program_raw(ch, r, page, addr):
    await ch.write_mem(addr, bytes(page) + bytes(-len(page) % WB))
    res = await ch.run("PROGRAM", 0, row=r, length=len(page) - len(page) % WB, addr=addr)
    assert res[0] == "OK", res


async def round_trip(ch, rng, bch, pg, r, rsvd, name):
    """PROGRAM_ECC with every free byte, the page as stored against the layout, READ_ECC_FREE back:
    nothing to correct. Returns (data, free bytes)."""
    data = bytes(rng.randrange(256) for _ in range(pg.data))
    free = bytes(rng.randrange(256) for _ in range(pg.n_free))
    await ch.write_mem(0x0000, data)
    await ch.write_mem(0x3F000, free + bytes(-pg.n_free % WB))
    (res, _, status), _ = await ch.run_ecc("PROGRAM_ECC", 0, row=r, length=pg.data + pg.n_free, addr=0x0000,
                                           param=0x3F000, rsvd=rsvd)
    assert (res, status) == ("OK", 0xE0), f"{name}: PROGRAM_ECC {res} status 0x{status:02x}"
    stored = await read_raw(ch, r, pg.full, 0x10000)
    assert stored[:pg.data] == data, f"{name}: data area differs"
    assert stored[pg.data:] == pg.spare_image(data, bch, free), f"{name}: spare differs from the layout"
    (res, _, _), s = await ch.run_ecc("READ_ECC_FREE", 0, row=r, length=pg.data + pg.n_free, addr=0x20000,
                                      param=0x3E000, rsvd=rsvd)
    assert res == "OK" and s == want_summary([0] * pg.lay.codewords), f"{name}: READ_ECC_FREE {res} {s}"
    assert await ch.read_mem(0x20000, pg.data) == data, f"{name}: READ_ECC_FREE data differs"
    assert (await ch.read_mem(0x3E000, pg.n_free)) == free, f"{name}: free bytes differ"
    return data, free


async def check_flips(ch, rng, bch, pg, r, rsvd, flips, name):
    """A raw page with `flips[k]` flipped bits in codeword k (data and parity) read through READ_ECC: the
    summary is what bchlib makes of it, the data corrected, an uncorrectable codeword left as read."""
    data = bytes(rng.randrange(256) for _ in range(pg.data))
    page = bytearray(data + pg.spare_image(data, bch))
    for k, n in enumerate(flips):
        for col, bit in rng.sample(pg.codeword_bits(k), n):
            page[col] ^= 1 << bit
    exp = pg.expected(page, bch)
    # bchlib corrects exactly the flips up to t and refuses t + 1 here (no miscorrection).
    assert exp == [n if n <= T else None for n in flips], f"{name}: bchlib {exp}"
    await program_raw(ch, r, page, 0x10000)
    (res, _, _), s = await ch.run_ecc("READ_ECC", 0, row=r, length=pg.data, addr=0x20000, rsvd=rsvd)
    want = want_summary(exp)
    assert s == want, f"{name}: summary {s}, injected {want}"
    assert res == ("ECC_UNCORRECTABLE" if None in exp else "OK"), f"{name}: {res}"
    back = await ch.read_mem(0x20000, pg.data)
    for k, e in enumerate(exp):
        assert back[k * CW:(k + 1) * CW] == (page if e is None else data)[k * CW:(k + 1) * CW], f"{name}: codeword {k}"


@cocotb.test()
async def ecc_summary_on_32k_pages(dut):
    """A 32 KiB page through PROGRAM_ECC (its 64 parity slots and 1150 free bytes where the layout puts
    them) and READ_ECC_FREE; then raw pages with flips up to t in several codewords, and t + 1 in one:
    the summary's three fields are what was injected (bchlib's verdict on the page)."""
    rng = random.Random(41)
    bch = bchlib.BCH(T, m=M)
    ch = await setup(dut)
    assert LARGE.lay.codewords == 64 and LARGE.n_free > CW
    await erase(ch, 0)
    await round_trip(ch, rng, bch, LARGE, row(0, 0), 0, "32 KiB page")
    flips = [0] * LARGE.lay.codewords
    for k, n in ((0, 1), (7, T), (21, 3), (38, T), (50, 5), (63, 2)):
        flips[k] = n
    await check_flips(ch, rng, bch, LARGE, row(0, 1), 0, flips, "up to t")
    flips[30] = T + 1
    await erase(ch, 0)
    await check_flips(ch, rng, bch, LARGE, row(0, 1), 0, flips, "t + 1 in codeword 30")
    assert not any(ch.violations().values()), ch.violations()


@cocotb.test()
async def ecc_small_pages_with_small(dut):
    """MPNFM mode: PROGRAM_ECC / READ_ECC_FREE with SMALL on a small page of plane 1 use its layout (8
    codewords, the parity after 4096 B, 142 free bytes), as stored; the dies' read flips (positions from
    the reference model) and raw flips up to t and t + 1 are corrected and summed; a 2-plane ECC program
    and read of a large page (plane 0) and a small page (plane 1); SMALL where it means nothing, other
    reserved bits, and lengths of the large page with SMALL are refused."""
    rng = random.Random(43)
    bch = bchlib.BCH(T, m=M)
    ch = await setup(dut)
    dut.mpnfm.value = 1
    await erase(ch, 1)
    data, _ = await round_trip(ch, rng, bch, SMALL, row(1, 0), 1, "small page")
    # The dies' read flips: positions from the reference model, counted per codeword of the small page.
    for n in (5, 12, 15):
        exp = [0] * SMALL.lay.codewords
        for i in range(n):
            col, _ = flip_position(i, CFG.page_bytes)
            k = SMALL.codeword_of(col) if col < SMALL.full else None
            if k is not None:
                exp[k] += 1
        dut.flip_row.value, dut.flip_count.value = row(1, 0), n
        (res, _, _), s = await ch.run_ecc("READ_ECC", 0, row=row(1, 0), length=SMALL.data, addr=0x20000, rsvd=1)
        dut.flip_count.value = 0
        exp = [e if e <= T else None for e in exp]
        assert s == want_summary(exp), f"{n} read flips: summary {s}, reference {exp}"
        assert res == ("ECC_UNCORRECTABLE" if None in exp else "OK"), f"{n} read flips: {res}"
        back = await ch.read_mem(0x20000, SMALL.data)
        for k, e in enumerate(exp):
            if e is not None:
                assert back[k * CW:(k + 1) * CW] == data[k * CW:(k + 1) * CW], f"{n} read flips: codeword {k}"
    flips = [1, T, 0, 4, T, 2, 0, 7]
    await check_flips(ch, rng, bch, SMALL, row(1, 1), 1, flips, "small page, up to t")
    flips[2] = T + 1
    await erase(ch, 1)
    await check_flips(ch, rng, bch, SMALL, row(1, 1), 1, flips, "small page, t + 1 in codeword 2")
    # Two planes at once: a large page on plane 0 (queued), a small page on plane 1 (SMALL).
    await erase(ch, 0)
    await erase(ch, 1)
    pages = []
    for k, (pg, block, rsvd) in enumerate(((LARGE, 0, 0), (SMALL, 1, 1))):
        d = bytes(rng.randrange(256) for _ in range(pg.data))
        f = bytes(rng.randrange(256) for _ in range(pg.n_free))
        await ch.write_mem(k * 0x8000, d)
        await ch.write_mem(0x3F000 + k * 0x800, f + bytes(-len(f) % WB))
        op = "PROGRAM_ECC_MULTIPLANE" if k == 0 else "PROGRAM_ECC"
        res, _, status = await ch.run(op, 0, row=row(block, 0), length=pg.data + pg.n_free, addr=k * 0x8000,
                                      param=0x3F000 + k * 0x800, rsvd=rsvd)
        assert (res, status) == ("OK", 0 if k == 0 else 0xE0), f"2 planes: {op} {res} 0x{status:02x}"
        pages.append((pg, block, rsvd, d, f))
    for pg, block, rsvd, d, f in pages:
        stored = await read_raw(ch, row(block, 0), pg.full, 0x10000)
        assert stored == d + pg.spare_image(d, bch, f), f"2 planes: plane {block} as stored differs"
    assert (await ch.run("READ_ECC_MULTIPLANE", 0, row=row(0, 0), length=LARGE.data))[0] == "OK"
    for op, (pg, block, rsvd, d, f) in (("READ_ECC_FREE", pages[1]), ("READ_ECC_ENH_FREE", pages[0])):
        (res, _, _), s = await ch.run_ecc(op, 0, row=row(block, 0), length=pg.data + pg.n_free, addr=0x20000,
                                          param=0x3E000, rsvd=rsvd)
        assert res == "OK" and s == want_summary([0] * pg.lay.codewords), f"2 planes: {op} {res} {s}"
        assert await ch.read_mem(0x20000, pg.data) == d, f"2 planes: {op} data differs"
        assert await ch.read_mem(0x3E000, pg.n_free) == f, f"2 planes: {op} free bytes differ"
    # Refused before the bus.
    before = int(dut.bytes_out.value), int(dut.bytes_in.value)
    cases = [("READ", dict(length=64, rsvd=1), "BAD_OP"), ("PROGRAM", dict(length=64, rsvd=1), "BAD_OP"),
             ("ERASE", dict(rsvd=1), "BAD_OP"), ("READ_ECC", dict(length=CW, rsvd=2), "BAD_OP"),
             ("READ_ECC", dict(length=CW, rsvd=3), "BAD_OP"),
             ("PROGRAM_ECC", dict(length=LARGE.data, rsvd=1), "BAD_COLUMN"),
             ("PROGRAM_ECC", dict(length=SMALL.data, rsvd=0), "BAD_LENGTH"),
             ("READ_ECC", dict(length=SMALL.data + CW, rsvd=1), "BAD_COLUMN"),
             ("READ_ECC_FREE", dict(length=SMALL.data + SMALL.n_free + 2, rsvd=1), "BAD_LENGTH"),
             ("PROGRAM_ECC", dict(length=SMALL.data + SMALL.n_free + 2, rsvd=1), "BAD_LENGTH"),
             ("READ_ECC_FREE", dict(length=LARGE.data + LARGE.n_free + 2, rsvd=0), "BAD_LENGTH")]
    for op, kw, want in cases:
        res = await ch.run(op, 0, row=row(1, 0), addr=0x1000, param=0x3F000, **kw)
        assert res[0] == want, f"{op} {kw}: {res[0]}, want {want}"
    assert (int(dut.bytes_out.value), int(dut.bytes_in.value)) == before
    dut.mpnfm.value = 0
    assert not any(ch.violations().values()), ch.violations()
