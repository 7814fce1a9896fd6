"""ECC torture of the channel controller's BCH path, in the spirit of Linux's nandbiterrs (cocotb, emulated dies).

1. Incremental bit errors (nandbiterrs' "incremental" test): a page programmed with PROGRAM_ECC, then
   one more bit of one codeword cleared at a time by programming the raw page again (a program only
   clears bits, as on a real die), READ_ECC after each: 1..t flips are corrected and counted exactly,
   t + 1 is ECC_UNCORRECTABLE, and beyond it every outcome is named - uncorrectable, or miscorrected
   (a decoder cannot tell; the test knows the data written, and the shadow, bchlib, must agree).
   Flips in the data area, in the parity slot, and both.
2. Random flips on reads (the die's `flip_rate`: a word read from the array gets one flipped bit with
   probability rate / 65536): repeated READ_ECC of one page; the die's LFSR is replayed here, so every
   read's flips are known, and each codeword's count must be bchlib's for that pattern. A histogram of
   the corrected counts per codeword.

Nothing is ever silent: a codeword's data that differs from what was written while its count claims
a correction or none is a failure (`silent`), unless bchlib also miscorrects it (`miscorrected`).

Plan (NANDLAB_ECC_PLAN, JSON): seed, reads, rate, beyond (flips past t + 1 in part 1); the tables go
to NANDLAB_ECC_OUT (JSON) when set.
"""

import json
import os
import random
from collections import Counter

import bchlib
import cocotb

from nandlab.gateware.onfi import common as onfi
from nandlab.nand_model.common import LFSR_SEED, LFSR_TAPS

from controller_tb import PART, WB, row
from controller_ecc_tb import EccChannel, LAY, T, M, CW, DATA, FULL, UNCORRECTABLE, W_BITS, spare_image, switch

PLAN = dict(seed=1, reads=40, rate=2500, beyond=4)
PLAN.update(json.loads(os.environ.get("NANDLAB_ECC_PLAN", "{}")))
PAGE_WORDS = (FULL + 3) // 4


def cw_columns(k):
    """Columns of codeword k: its data, then its parity in the spare."""
    return list(range(k * CW, (k + 1) * CW)) + list(range(LAY.parity_columns[k], LAY.parity_columns[k] + LAY.parity_bytes))


CW_COLS = [set(cw_columns(k)) for k in range(LAY.codewords)]


def judge(bch, page, written):
    """What a correct decoder makes of the page as read, per codeword: (count or None, data after it)."""
    out = []
    for k in range(LAY.codewords):
        data = bytearray(page[k * CW:(k + 1) * CW])
        ecc = bytearray(page[LAY.parity_columns[k]:LAY.parity_columns[k] + LAY.parity_bytes])
        n = bch.decode(data, ecc)
        if n >= 0:
            bch.correct(data, ecc)
        out.append((None if n < 0 else n, bytes(data)))
    return out


def outcome(count, data, written):
    if count is None:
        return "uncorrectable"
    return "corrected" if data == written else "miscorrected"


async def start(dut):
    ch = EccChannel(dut)
    await ch.start()
    dut.time_scale_shift.value = 6
    tags = [await ch.submit("RESET", w) for w in range(2)]
    await ch.wait(*tags)
    await switch(ch, onfi.IF_NVDDR, 5)
    return ch


async def program_ecc(ch, way, block, page, data):
    assert (await ch.run("ERASE", way, row=row(block, 0)))[:1] == ("OK",)
    await ch.write_mem(0x1000, data)
    (res, _, status), _ = await ch.run_ecc("PROGRAM_ECC", way, row=row(block, page), length=DATA, addr=0x1000)
    assert (res, status) == ("OK", 0xE0), f"PROGRAM_ECC: {res} 0x{status:02x}"


async def read_ecc(ch, way, r):
    await ch.write_mem(0x5000, b"\x3c" * DATA)          # (so that a codeword never written shows)
    (res, w, _), counts = await ch.run_ecc("READ_ECC", way, row=r, length=DATA, addr=0x5000)
    assert w == way
    return res, counts, await ch.read_mem(0x5000, DATA)


def check_read(res, counts, back, judged, written, where):
    """The controller's answer against bchlib's for the page as read; returns each codeword's outcome."""
    want = [UNCORRECTABLE if c is None else c for c, _ in judged]
    assert counts == want, f"{where}: counts {counts}, bchlib {want}"
    assert res == ("ECC_UNCORRECTABLE" if None in [c for c, _ in judged] else "OK"), f"{where}: {res}"
    outs = []
    for k, (c, data) in enumerate(judged):
        got = back[k * CW:(k + 1) * CW]
        wk = written[k * CW:(k + 1) * CW]
        # Corrected as bchlib corrects it, or (uncorrectable) left exactly as read.
        assert got == data, f"{where}: codeword {k} ({'uncorrectable' if c is None else c}) is not what bchlib gives"
        # Data that differs from what was written under an OK count is a miscorrection (bchlib's too: the
        # pattern is nearer another codeword); it is named, never taken for a correction.
        outs.append(outcome(c, got, wk))
    return outs


@cocotb.test()
async def incremental_bit_errors(dut):
    """1..t flips per codeword corrected and counted, t + 1 ECC_UNCORRECTABLE, beyond it every outcome
    named; flips in the data area, the parity slot, and both."""
    rng = random.Random(PLAN["seed"])
    bch = bchlib.BCH(T, m=M)
    ch = await start(dut)
    rows = []
    for i, area in enumerate(("data", "parity", "mixed")):
        way, block, page, k = i % 2, 1 + i, i % 4, rng.randrange(LAY.codewords)
        written = bytes(rng.randrange(256) for _ in range(DATA))
        await program_ecc(ch, way, block, page, written)
        stored = bytearray(written + spare_image(written, bch))
        cols = cw_columns(k)
        cols = {"data": cols[:CW], "parity": cols[CW:], "mixed": cols}[area]
        # Bits that are 1 as stored: a program can clear them (a 0 cannot be set without an erase).
        ones = [(c, b) for c in cols for b in range(8) if stored[c] >> b & 1]
        rng.shuffle(ones)
        for flips in range(1, T + 2 + PLAN["beyond"]):
            c, b = ones[flips - 1]
            stored[c] &= ~(1 << b)
            raw = bytearray(b"\xff" * FULL)
            raw[c] = stored[c]
            await ch.write_mem(0x3000, bytes(raw))
            assert (await ch.run("PROGRAM", way, row=row(block, page), length=FULL, addr=0x3000))[0] == "OK"
            res, counts, back = await read_ecc(ch, way, row(block, page))
            judged = judge(bch, stored, written)
            outs = check_read(res, counts, back, judged, written, f"{area} flips {flips}")
            if flips <= T:
                assert counts[k] == flips and outs[k] == "corrected", f"{area}: {flips} flips gave {counts[k]}"
            elif flips == T + 1:
                assert counts[k] == UNCORRECTABLE and res == "ECC_UNCORRECTABLE", f"{area}: t + 1 flips: {counts}"
            assert all(counts[j] == 0 for j in range(LAY.codewords) if j != k), f"{area}: other codewords {counts}"
            rows.append(dict(area=area, codeword=k, flips=flips, result=res,
                             count=None if counts[k] == UNCORRECTABLE else counts[k], outcome=outs[k]))
            dut._log.info(f"{area:6} codeword {k}: {flips:2} flips -> {res:17} count "
                          f"{'-' if counts[k] == UNCORRECTABLE else counts[k]:>2}  {outs[k]}")
    _save("incremental", rows)


class DieLfsr:
    """The die's random-flip LFSR (nand_model.die.engine): one step per word read into the register."""
    def __init__(self):
        self.state = LFSR_SEED

    def read(self, rate):
        """The (column, bit) flips of one page read at `rate`."""
        flips = []
        for w in range(PAGE_WORDS):
            s = self.state
            if (s & 0xFFFF) < rate:
                bit = (s >> 16) & 31
                if 4 * w + bit // 8 < FULL:
                    flips.append((4 * w + bit // 8, bit % 8))
            self.state = (s >> 1) ^ (LFSR_TAPS if s & 1 else 0)
        return flips


@cocotb.test()
async def random_flip_histogram(dut):
    """Repeated READ_ECC of one page with the die's random read flips: each codeword's count is
    bchlib's for the flips the die's LFSR gives; a histogram of the corrected counts."""
    rng = random.Random(PLAN["seed"] + 1)
    bch = bchlib.BCH(T, m=M)
    ch = await start(dut)                     # (a reset: the dies' LFSRs start from their seed)
    lfsr = DieLfsr()
    way, block, page = 0, 2, 1
    written = bytes(rng.randrange(256) for _ in range(DATA))
    await program_ecc(ch, way, block, page, written)
    stored = bytes(written + spare_image(written, bch))
    hist, per_read, flips_total = Counter(), [], 0
    dut.flip_rate.value = PLAN["rate"]
    for i in range(PLAN["reads"]):
        flips = lfsr.read(PLAN["rate"])
        page_read = bytearray(stored)
        for c, b in flips:
            page_read[c] ^= 1 << b
        res, counts, back = await read_ecc(ch, way, row(block, page))
        outs = check_read(res, counts, back, judge(bch, page_read, written), written, f"read {i}")
        in_cw = [sum(1 for c, _ in flips if c in CW_COLS[k]) for k in range(LAY.codewords)]
        for k, (n, o) in enumerate(zip(counts, outs)):
            hist["uncorrectable" if o == "uncorrectable" else "miscorrected" if o == "miscorrected" else n] += 1
        flips_total += len(flips)
        per_read.append(dict(flips=len(flips), per_codeword=in_cw, result=res,
                             counts=[None if n == UNCORRECTABLE else n for n in counts], outcomes=outs))
    dut.flip_rate.value = 0
    assert flips_total > 0, "no flips at this rate: raise it"
    # Histogram over every codeword of every read.
    dut._log.info(f"{PLAN['reads']} reads at rate {PLAN['rate']}/65536 per word, {flips_total} flips")
    for key in [n for n in range(T + 1)] + ["uncorrectable", "miscorrected"]:
        dut._log.info(f"  {key!s:>13}: {hist.get(key, 0)}")
    _save("histogram", dict(reads=PLAN["reads"], rate=PLAN["rate"], flips=flips_total,
                            histogram={str(k): v for k, v in hist.items()}, per_read=per_read))


def _save(key, value):
    out = os.environ.get("NANDLAB_ECC_OUT")
    if not out:
        return
    data = json.loads(open(out).read()) if os.path.exists(out) else {}
    data[key] = value
    data["t"], data["codeword_bytes"], data["codewords"] = T, CW, LAY.codewords
    with open(out, "w") as f:
        json.dump(data, f, indent=1)
