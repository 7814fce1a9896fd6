"""cocotb tests of the channel controller's BCH ECC path (READ_ECC / PROGRAM_ECC) on emulated dies.

The judges are independent of the gateware: bchlib (the Linux kernel's BCH, which the project's
encoder matches bit for bit) gives each codeword's parity and decides, for every injected error
pattern, what a correct decoder must report; the spare layout is `nandlab.gateware.ecc.bch.layout`.
Errors are injected two ways: by programming a raw page (data and parity with chosen bits flipped,
as Linux's nandbiterrs test does) and by the dies' own read-flip injection (`flip_row`/`flip_count`,
whose positions the die reference model gives).
"""

import random

import bchlib
import cocotb

from nandlab.gateware.onfi import common as onfi
from nandlab.gateware.ecc.bch import layout
from nandlab.nand_model.reference import flip_position, ARCH_CNFM, ARCH_SDW

from controller_tb import Channel, CFG, PART, WAYS, WB, row, switch

T, M, CW = 8, 13, 512
LAY = layout(PART.page_size, PART.spare_size, data_bytes=CW, t=T, m=M)
DATA = PART.page_size
FULL = PART.page_size + PART.spare_size
W_BITS = (T + 1).bit_length()
UNCORRECTABLE = 2**W_BITS - 1


class EccChannel(Channel):
    """The channel driver, with the buffer's data area size set and the ECC counts decoded."""
    async def start(self, clock=True):
        await super().start(clock)
        self.dut.data_bytes.value = DATA

    def counts(self, tag):
        """Per codeword: bits corrected (UNCORRECTABLE: all ones)."""
        raw = self.ecc.pop(tag)
        return [raw >> (W_BITS * i) & UNCORRECTABLE for i in range(LAY.codewords)]

    async def run_ecc(self, op, way, **kw):
        tag = await self.submit(op, way, **kw)
        (cpl,) = await self.wait(tag)
        return cpl, self.counts(tag)


def spare_image(data, bch):
    """The spare the controller must write: reserved FFh, each slot's parity (then FFh), FFh after."""
    spare = bytearray(b"\xff" * PART.spare_size)
    for k in range(LAY.codewords):
        col = LAY.parity_columns[k] - DATA
        spare[col:col + LAY.parity_bytes] = bch.encode(bytes(data[k * CW:(k + 1) * CW]))
    return spare


def codeword_bits(k):
    """(column, bit) of every bit of codeword k: its data, then its parity in the spare."""
    cols = list(range(k * CW, (k + 1) * CW)) + list(range(LAY.parity_columns[k], LAY.parity_columns[k] + LAY.parity_bytes))
    return [(c, b) for c in cols for b in range(8)]


def expected(page, bch):
    """Per codeword, what bchlib makes of the page as stored: (flips it corrects, or None)."""
    out = []
    for k in range(LAY.codewords):
        data = bytearray(page[k * CW:(k + 1) * CW])
        ecc = bytearray(page[LAY.parity_columns[k]:LAY.parity_columns[k] + LAY.parity_bytes])
        n = bch.decode(data, ecc)
        out.append(None if n < 0 else n)
    return out


async def setup(dut, interface, mode):
    ch = EccChannel(dut)
    await ch.start()
    tags = [await ch.submit("RESET", w) for w in range(WAYS)]
    await ch.wait(*tags)
    if (interface, mode) != (onfi.IF_ASYNC_SDR, 0):
        await switch(ch, interface, mode)
    return ch


async def erase(ch, way, block):
    res = await ch.run("ERASE", way, row=row(block, 0))
    assert res == ("OK", way, 0xE0), res


async def program_raw(ch, way, r, page, addr):
    await ch.write_mem(addr, bytes(page))
    res = await ch.run("PROGRAM", way, row=r, length=FULL, addr=addr)
    assert res[0] == "OK", res


async def check_round_trip(ch, rng, bch, way, block, name):
    data = bytes(rng.randrange(256) for _ in range(DATA))
    await erase(ch, way, block)
    await ch.write_mem(0x1000, data)
    (res, w, status), counts = await ch.run_ecc("PROGRAM_ECC", way, row=row(block, 0), length=DATA, addr=0x1000)
    assert (res, w, status) == ("OK", way, 0xE0), f"{name}: PROGRAM_ECC {res} status 0x{status:02x}"
    # The page as stored: the data, then the spare exactly as the layout says.
    assert (await ch.run("READ", way, row=row(block, 0), length=FULL, addr=0x3000))[0] == "OK"
    stored = await ch.read_mem(0x3000, FULL)
    assert stored[:DATA] == data, f"{name}: data area differs"
    assert stored[DATA:] == spare_image(data, bch), \
        f"{name}: spare {stored[DATA:].hex()} != layout {spare_image(data, bch).hex()}"
    # Read back through the decoder: nothing to correct.
    (res, w, _), counts = await ch.run_ecc("READ_ECC", way, row=row(block, 0), length=DATA, addr=0x5000)
    assert res == "OK" and counts == [0] * LAY.codewords, f"{name}: READ_ECC {res} {counts}"
    assert await ch.read_mem(0x5000, DATA) == data, f"{name}: READ_ECC data differs"
    return data


@cocotb.test()
async def ecc_round_trip_every_interface(dut):
    """PROGRAM_ECC writes the data and the bchlib parity where the layout puts it; READ_ECC returns
    the data with zero corrections; async SDR, sync SDR and NV-DDR mode 5."""
    rng = random.Random(11)
    bch = bchlib.BCH(T, m=M)
    ch = await setup(dut, onfi.IF_ASYNC_SDR, 0)
    for i, (interface, mode) in enumerate([(onfi.IF_ASYNC_SDR, 0), (onfi.IF_ASYNC_SDR, 5), (onfi.IF_SYNC_SDR, 5),
                                           (onfi.IF_NVDDR, 5)]):
        if i:
            await switch(ch, interface, mode)
        name = f"{onfi.INTERFACE_NAMES[interface]} mode {mode}"
        await check_round_trip(ch, rng, bch, i % WAYS, 1 + i % 2, name)
    assert not any(ch.violations().values()), ch.violations()


@cocotb.test()
async def ecc_corrects_up_to_t_and_flags_t_plus_1(dut):
    """Raw pages with 0, 1, t/2 and t flipped bits per codeword (data and parity) read back intact
    with each codeword's count; t + 1 flips in a codeword: ECC_UNCORRECTABLE, that codeword marked,
    the others still corrected. Memory under wait states, two ways interleaved."""
    rng = random.Random(5)
    bch = bchlib.BCH(T, m=M)
    ch = await setup(dut, onfi.IF_NVDDR, 5)
    dut.mem_stall.value = 1
    for trial, flips in enumerate([(0, 1, T // 2, T), (T, T, T, T), (1, T + 1, 0, T), (T + 1, T + 1, T + 1, 2)]):
        pages, want = [], []
        for way in range(WAYS):
            await erase(ch, way, 2 + trial % 2)
            data = bytes(rng.randrange(256) for _ in range(DATA))
            page = bytearray(data + spare_image(data, bch))
            for k, n in enumerate(flips if way == 0 else flips[::-1]):
                for col, bit in rng.sample(codeword_bits(k), n):
                    page[col] ^= 1 << bit
            exp = expected(page, bch)
            # bchlib corrects exactly the flips up to t and refuses t + 1 here (no miscorrection).
            assert exp == [n if n <= T else None for n in (flips if way == 0 else flips[::-1])], exp
            await program_raw(ch, way, row(2 + trial % 2, 3), page, 0x1000 + way * 0x1000)
            pages.append((data, page))
            want.append(exp)
        # Both ways' reads queued together (interleaved on the bus, decoded in turn).
        tags = [await ch.submit("READ_ECC", w, row=row(2 + trial % 2, 3), length=DATA, addr=0x6000 + w * 0x1000)
                for w in range(WAYS)]
        cpls = await ch.wait(*tags)
        for way, ((res, w, _), tag) in enumerate(zip(cpls, tags)):
            counts = ch.counts(tag)
            exp = want[way]
            name = f"trial {trial} way {way}"
            assert counts == [UNCORRECTABLE if e is None else e for e in exp], f"{name}: counts {counts}, bchlib {exp}"
            assert res == ("ECC_UNCORRECTABLE" if None in exp else "OK"), f"{name}: {res}"
            back = await ch.read_mem(0x6000 + way * 0x1000, DATA)
            data, page = pages[way]
            for k, e in enumerate(exp):
                got = back[k * CW:(k + 1) * CW]
                if e is None:
                    # Never half-corrected: an uncorrectable codeword is left as read.
                    assert got == page[k * CW:(k + 1) * CW], f"{name}: codeword {k} altered"
                else:
                    assert got == data[k * CW:(k + 1) * CW], f"{name}: codeword {k} not corrected"
    dut.mem_stall.value = 0
    assert not any(ch.violations().values()), ch.violations()


@cocotb.test()
async def ecc_corrects_the_dies_read_flips(dut):
    """The dies' read-flip injection (positions from the reference model) corrected on READ_ECC:
    each codeword reports the flips that fell into it, and the data comes back intact."""
    rng = random.Random(9)
    bch = bchlib.BCH(T, m=M)
    ch = await setup(dut, onfi.IF_NVDDR, 5)
    data = await check_round_trip(ch, rng, bch, 0, 3, "flip setup")
    cw_of = {}
    for k in range(LAY.codewords):
        for col in range(k * CW, (k + 1) * CW):
            cw_of[col] = k
        for col in range(LAY.parity_columns[k], LAY.parity_columns[k] + LAY.parity_bytes):
            cw_of[col] = k
    max_flips = 2**len(dut.flip_count.value) - 1
    for n in (6, 11, max_flips):
        per_cw = [0] * LAY.codewords
        for i in range(n):
            col, _ = flip_position(i, CFG.page_bytes)
            if col in cw_of:
                per_cw[cw_of[col]] += 1
        dut.flip_row.value = row(3, 0)
        dut.flip_count.value = n
        (res, _, _), counts = await ch.run_ecc("READ_ECC", 0, row=row(3, 0), length=DATA, addr=0x5000)
        dut.flip_count.value = 0
        want = [c if c <= T else UNCORRECTABLE for c in per_cw]
        assert counts == want, f"{n} flips: counts {counts}, reference {want}"
        assert res == ("ECC_UNCORRECTABLE" if UNCORRECTABLE in want else "OK"), f"{n} flips: {res}"
        back = await ch.read_mem(0x5000, DATA)
        for k in range(LAY.codewords):
            if want[k] != UNCORRECTABLE:
                assert back[k * CW:(k + 1) * CW] == data[k * CW:(k + 1) * CW], f"{n} flips: codeword {k}"
    assert sum(per_cw) > 0


@cocotb.test()
async def ecc_refuses_impossible_descriptors(dut):
    """ECC descriptors must cover whole codewords from column 0 (and the whole data area to
    program); they are refused without reaching the bus. SMALL (bit 0 of the reserved byte) on a
    controller built without small pages is BAD_OP, as any reserved bit."""
    ch = await setup(dut, onfi.IF_ASYNC_SDR, 0)
    before = int(dut.bytes_out.value), int(dut.bytes_in.value)
    cases = [("READ_ECC", dict(col=2, length=CW), "BAD_COLUMN"), ("READ_ECC", dict(length=CW + 2), "BAD_LENGTH"),
             ("READ_ECC", dict(length=DATA + CW), "BAD_COLUMN"), ("READ_ECC", dict(length=0), "BAD_LENGTH"),
             ("PROGRAM_ECC", dict(length=CW), "BAD_LENGTH"), ("PROGRAM_ECC", dict(col=CW, length=DATA - CW), "BAD_COLUMN"),
             ("PROGRAM_ECC_MULTIPLANE", dict(length=CW), "BAD_LENGTH"),
             ("READ_ECC_MULTIPLANE", dict(col=2, length=DATA), "BAD_COLUMN"),
             ("READ_ECC_MULTIPLANE", dict(length=DATA + 2), "BAD_LENGTH"),
             ("READ_ECC_MULTIPLANE", dict(length=0), "BAD_LENGTH"),
             ("READ_ECC_ENH_FREE", dict(length=DATA), "BAD_LENGTH"),
             ("READ_ECC", dict(length=DATA, rsvd=1), "BAD_OP"), ("PROGRAM_ECC", dict(length=DATA, rsvd=1), "BAD_OP"),
             ("READ", dict(length=DATA, rsvd=1), "BAD_OP"), ("READ_ECC", dict(length=DATA, rsvd=0x80), "BAD_OP")]
    for op, kw, want in cases:
        res = await ch.run(op, 0, row=row(1, 0), addr=0x1000, **kw)
        assert res[0] == want, f"{op} {kw}: {res[0]}, want {want}"
    assert (int(dut.bytes_out.value), int(dut.bytes_in.value)) == before



@cocotb.test()
async def ecc_moves_the_spares_free_bytes(dut):
    """PROGRAM_ECC's length beyond the data area is the spare's free bytes (the layout's
    `free_columns`), taken from memory at the address in the parameter word; the rest of the spare
    is exactly as before, the rest of their DMA word is not sent, and the next data input is not
    disturbed by it. READ_ECC_FREE returns the data through the decoder and writes the free bytes as
    stored at the parameter word's address (the last word padded with FFh), nothing after the data;
    lengths the spare cannot hold and unaligned addresses are refused."""
    rng = random.Random(21)
    bch = bchlib.BCH(T, m=M)
    ch = await setup(dut, onfi.IF_NVDDR, 5)
    free0, free_end = LAY.free_columns
    n_free = free_end - free0
    for way, n in ((0, n_free), (1, 2), (0, 4)):
        block = 1 + way
        await erase(ch, way, block)
        data = bytes(rng.randrange(256) for _ in range(DATA))
        tag = bytes(rng.randrange(256) for _ in range(n))
        await ch.write_mem(0x1000, data + b"\x5a" * 8)
        # The rest of the free bytes' DMA word, and the word after, carry bytes that must not reach the page.
        await ch.write_mem(0x7000, tag + b"\xa5" * (-n % WB + WB))
        (res, _, status), _ = await ch.run_ecc("PROGRAM_ECC", way, row=row(block, 1), length=DATA + n, addr=0x1000,
                                               param=0x7000)
        assert (res, status) == ("OK", 0xE0), f"{n} free bytes: PROGRAM_ECC {res} 0x{status:02x}"
        # A plain program right after: its data input starts with its own first byte.
        other = bytes(rng.randrange(256) for _ in range(FULL - FULL % 4))
        await ch.write_mem(0x8000, other)
        assert (await ch.run("PROGRAM", way, row=row(block, 2), length=len(other), addr=0x8000))[0] == "OK"
        assert (await ch.run("READ", way, row=row(block, 2), length=len(other), addr=0x3000))[0] == "OK"
        assert await ch.read_mem(0x3000, len(other)) == other, f"{n} free bytes: the next program was disturbed"
        # The page as stored: data, the layout's spare, the free bytes given (FFh after them).
        assert (await ch.run("READ", way, row=row(block, 1), length=FULL, addr=0x3000))[0] == "OK"
        stored = await ch.read_mem(0x3000, FULL)
        spare = spare_image(data, bch)
        spare[free0 - DATA:free0 - DATA + n] = tag
        assert stored[:DATA] == data and stored[DATA:] == spare, f"{n} free bytes: spare {stored[DATA:].hex()}"
        # Back through READ_ECC_FREE: the data, and every free byte as stored, the last word padded.
        await ch.write_mem(0x5000, b"\x3c" * (DATA + 16))
        await ch.write_mem(0x7000, b"\x3c" * 16)
        want_free = bytes(spare[free0 - DATA:])
        (res, _, _), counts = await ch.run_ecc("READ_ECC_FREE", way, row=row(block, 1), length=DATA + n_free,
                                               addr=0x5000, param=0x7000)
        assert res == "OK" and counts == [0] * LAY.codewords, f"READ_ECC_FREE {res} {counts}"
        back, free = await ch.read_mem(0x5000, DATA + 16), await ch.read_mem(0x7000, 16)
        pad = -n_free % WB             # (the DMA word's rest, FFh)
        assert back == data + b"\x3c" * 16, "READ_ECC_FREE: data differs, or written past the data"
        assert free[:n_free] == want_free, f"free bytes {free[:n_free].hex()}"
        assert free[n_free:] == b"\xff" * pad + b"\x3c" * (16 - n_free - pad), f"after the free bytes {free.hex()}"
    # One codeword and the free bytes (the last page programmed: way 0, block 1).
    (res, _, _), counts = await ch.run_ecc("READ_ECC_FREE", 0, row=row(1, 1), length=CW + n_free, addr=0x6000,
                                           param=0x7100)
    back, free = await ch.read_mem(0x6000, CW), await ch.read_mem(0x7100, n_free + pad)
    assert res == "OK" and counts[0] == 0 and back == data[:CW], f"one codeword: {res} {counts}"
    assert free[:n_free] == want_free, f"one codeword: free bytes {free.hex()}"
    cases = [("PROGRAM_ECC", DATA + n_free + 2, 0x7000), ("PROGRAM_ECC", DATA + 3, 0x7000),
             ("PROGRAM_ECC", DATA + 2, 0x7002), ("READ_ECC", DATA + 2, 0x7000), ("READ_ECC_FREE", DATA, 0x7000),
             ("READ_ECC_FREE", n_free, 0x7000), ("READ_ECC_FREE", DATA + n_free + 2, 0x7000),
             ("READ_ECC_FREE", DATA + n_free, 0x7001)]
    before = int(dut.bytes_out.value), int(dut.bytes_in.value)
    for op, length, param in cases:
        res = await ch.run(op, 0, row=row(1, 0), addr=0x1000, length=length, param=param)
        assert res[0] == "BAD_LENGTH", f"{op} length {length} free bytes at 0x{param:x}: {res[0]}"
    assert (int(dut.bytes_out.value), int(dut.bytes_in.value)) == before
    assert not any(ch.violations().values()), ch.violations()


async def multiplane_read(ch, groups, addr, param):
    """Every way's group read at once with ECC: READ_ECC_MULTIPLANE on each plane but the last,
    READ_ECC_FREE on the last (its 30h reads them all), then READ_ECC_ENH_FREE for the others, the
    ways' descriptors interleaved. Returns per way and plane (result, counts, data, free bytes)."""
    free0, free_end = LAY.free_columns
    n_free = free_end - free0
    steps = []
    for k in range(max(len(rows) for rows in groups.values())):
        for way, rows in groups.items():
            if k < len(rows) - 1:
                steps.append((way, k, "READ_ECC_MULTIPLANE", dict(length=DATA)))
            elif k == len(rows) - 1:
                steps.append((way, k, "READ_ECC_FREE", dict(length=DATA + n_free)))
    steps += [(way, k, "READ_ECC_ENH_FREE", dict(length=DATA + n_free))
              for way, rows in groups.items() for k in range(len(rows) - 1)]
    tags = []
    for way, k, op, kw in steps:
        slot = way * 4 + k
        if op != "READ_ECC_MULTIPLANE":
            kw.update(addr=addr + slot * DATA, param=param + slot * 64)
        tags.append(await ch.submit(op, way, row=groups[way][k], **kw))
    out = {}
    for (way, k, op, _), tag, (res, w, _) in zip(steps, tags, await ch.wait(*tags)):
        assert w == way, f"{op} way {way}: completed for way {w}"
        counts = ch.counts(tag)
        if op == "READ_ECC_MULTIPLANE":
            assert res == "OK", f"way {way} plane {k}: {op} {res}"
            continue
        slot = way * 4 + k
        out[way, k] = (res, counts, await ch.read_mem(addr + slot * DATA, DATA),
                       (await ch.read_mem(param + slot * 64, -(-n_free // WB) * WB))[:n_free])
    return out


@cocotb.test()
async def ecc_multiplane_groups(dut):
    """Multi-plane programs and reads with ECC on two ways at once, under CNFM (both planes, one page
    address) and SDW-NFM (four subplane registers): PROGRAM_ECC_MULTIPLANE queues each plane's page
    (data, bchlib's parity, the free bytes) and PROGRAM_ECC on the last plane programs them all
    (status E0h); READ_ECC_MULTIPLANE / READ_ECC_FREE / READ_ECC_ENH_FREE bring every plane's page
    back through the decoder with its free bytes. Then raw pages with flips (up to t, and t + 1 in
    one codeword) on every plane of a group: each plane's counts are bchlib's, the data corrected,
    an uncorrectable codeword reported and left as read."""
    rng = random.Random(31)
    bch = bchlib.BCH(T, m=M)
    ch = await setup(dut, onfi.IF_NVDDR, 5)
    free0, free_end = LAY.free_columns
    n_free = free_end - free0
    flip_sets = [(1, T, 0, 2), (0, 0, T + 1, 1), (T, T, T, T), (2, 0, 0, 0)]
    for arch, blocks in ((ARCH_CNFM, (2, 3)), (ARCH_SDW, (0, 2, 1, 3))):
        dut.arch.value = arch
        name = "CNFM" if arch == ARCH_CNFM else "SDW-NFM"
        for way in range(WAYS):
            for b in blocks:
                await erase(ch, way, b)
        # Programs: each way's group, the ways interleaved on the bus.
        pages, steps = {}, []
        for k, b in enumerate(blocks):
            for way in range(WAYS):
                data = bytes(rng.randrange(256) for _ in range(DATA))
                tag = bytes(rng.randrange(256) for _ in range(n_free))
                slot = way * 4 + k
                await ch.write_mem(0x1000 + slot * DATA, data)
                await ch.write_mem(0x9000 + slot * 64, tag + b"\0" * (-n_free % WB))
                op = "PROGRAM_ECC" if k == len(blocks) - 1 else "PROGRAM_ECC_MULTIPLANE"
                steps.append((way, k, op, await ch.submit(op, way, row=row(b, 1), length=DATA + n_free,
                                                           addr=0x1000 + slot * DATA, param=0x9000 + slot * 64)))
                pages[way, k] = (data, tag)
        for (way, k, op, _), (res, w, status) in zip(steps, await ch.wait(*[s[3] for s in steps])):
            want = ("OK", 0xE0) if op == "PROGRAM_ECC" else ("OK", 0)
            assert (res, status) == want, f"{name} way {way} plane {k}: {op} {res} status 0x{status:02x}"
        # As stored (plain READ of each page): data, the layout's spare, the free bytes given.
        for (way, k), (data, tag) in pages.items():
            assert (await ch.run("READ", way, row=row(blocks[k], 1), length=FULL, addr=0x6000))[0] == "OK"
            stored = await ch.read_mem(0x6000, FULL)
            spare = spare_image(data, bch)
            spare[free0 - DATA:free0 - DATA + n_free] = tag
            assert stored == data + spare, f"{name} way {way} block {blocks[k]}: page as stored differs"
        # Back through the multi-plane ECC read: nothing to correct, every free byte.
        got = await multiplane_read(ch, {w: [row(b, 1) for b in blocks] for w in range(WAYS)}, 0xA000, 0x9800)
        for (way, k), (data, tag) in pages.items():
            res, counts, back, free = got[way, k]
            assert (res, counts) == ("OK", [0] * LAY.codewords), f"{name} way {way} plane {k}: {res} {counts}"
            assert back == data and free == tag, f"{name} way {way} plane {k}: data or free bytes differ"
        # Raw pages with flips on page 2 of every block of the group, then the same multi-plane read.
        raw = {}
        for way in range(WAYS):
            for k, b in enumerate(blocks):
                data = bytes(rng.randrange(256) for _ in range(DATA))
                page = bytearray(data + spare_image(data, bch))
                page[free0:free_end] = bytes(rng.randrange(256) for _ in range(n_free))
                flips = flip_sets[(k + way) % len(flip_sets)]
                for c, n in enumerate(flips):
                    for col, bit in rng.sample(codeword_bits(c), n):
                        page[col] ^= 1 << bit
                exp = expected(page, bch)
                assert exp == [n if n <= T else None for n in flips], exp
                await program_raw(ch, way, row(b, 2), page, 0x1000)
                raw[way, k] = (data, page, exp)
        got = await multiplane_read(ch, {w: [row(b, 2) for b in blocks] for w in range(WAYS)}, 0xA000, 0x9800)
        for (way, k), (data, page, exp) in raw.items():
            res, counts, back, free = got[way, k]
            what = f"{name} way {way} plane {k} (flips {flip_sets[(k + way) % len(flip_sets)]})"
            assert counts == [UNCORRECTABLE if e is None else e for e in exp], f"{what}: counts {counts}, bchlib {exp}"
            assert res == ("ECC_UNCORRECTABLE" if None in exp else "OK"), f"{what}: {res}"
            assert free == page[free0:free_end], f"{what}: free bytes differ"
            for c, e in enumerate(exp):
                want = (page if e is None else data)[c * CW:(c + 1) * CW]
                assert back[c * CW:(c + 1) * CW] == want, f"{what}: codeword {c}"
    dut.arch.value = ARCH_CNFM
    assert not any(ch.violations().values()), ch.violations()
