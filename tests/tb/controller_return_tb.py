"""cocotb test: two channels of one top run the same descriptors, one controller behind the SoC's registered
bus mux (`plain_*` ports), the other behind the same mux with the dies' return path registered and its
read / R/B# latency one higher (`late_*`, the ECPIX-5's). Every completion (result, way, status, ECC counts),
every byte read back and the controllers' byte / completion / correction counters must be the same; the
data must also be what was written and the dies' timing checkers must stay at zero.
"""

import random

import cocotb
from cocotb.triggers import RisingEdge

from nandlab.gateware.onfi import common as onfi
from nandlab.nand_model.die import TIMING_CHECKS

from controller_tb import WAYS, WB, row, switch
from controller_ecc_tb import DATA, FULL, EccChannel

MODES = [(onfi.IF_ASYNC_SDR, 0), (onfi.IF_ASYNC_SDR, 5), (onfi.IF_SYNC_SDR, 5), (onfi.IF_NVDDR, 0),
         (onfi.IF_NVDDR, 5)]
COUNTERS = ("bytes_in", "bytes_out", "completed", "ecc_fixed")


class Half:
    """One channel of the pair: the top's ports named `prefix`..., the clock and reset shared."""
    def __init__(self, dut, prefix):
        self._dut, self._prefix = dut, prefix

    def __getattr__(self, name):
        return getattr(self._dut, name if name in ("sys_clk", "sys_rst") else self._prefix + name)


class LoggedChannel(EccChannel):
    """The channel driver that records what each descriptor gave and each read-back."""
    def __init__(self, dut):
        super().__init__(dut)
        self.log = []

    async def runs(self, op, ways, **kw):
        """`op` on every way of `ways` at once (interleaved); each completion with its ECC counts logged."""
        tags = [await self.submit(op, w, **{k: v(w) if callable(v) else v for k, v in kw.items()}) for w in ways]
        cpls = await self.wait(*tags)
        self.log += [(op, cpl, self.counts(tag)) for tag, cpl in zip(tags, cpls)]
        return cpls

    async def read_back(self, addr, n):
        data = await self.read_mem(addr, n)
        self.log.append(("mem", addr, data))
        return data


async def script(ch, rng):
    """Every command in every interface's slowest and fastest mode, ECC with the dies' read flips, a way
    stuck busy: the same stimulus on both channels."""
    ways = range(WAYS)
    await ch.runs("RESET", ways)
    for block, (interface, mode) in enumerate(MODES):
        if block:
            await switch(ch, interface, mode)
        name = f"{onfi.INTERFACE_NAMES[interface]} mode {mode}"
        await ch.runs("GET_FEATURES", [0], col=onfi.FEATURE_TIMING_MODE, length=4, addr=0x100)
        assert (await ch.read_back(0x100, 4))[0] == (interface << 4) | mode, name
        await ch.runs("READ_ID", [WAYS - 1], col=onfi.READ_ID_ONFI, length=4, addr=0x140)
        assert await ch.read_back(0x140, 4) == b"ONFI", name
        await ch.runs("READ_PARAM_PAGE", [0], length=256, addr=0x200)
        await ch.read_back(0x200, 256)
        await ch.runs("READ_STATUS", ways)
        await ch.runs("READ_STATUS_ENH", [0], row=row(block, 0))
        # Raw pages: erase, program, read on every way at once, a column change.
        await ch.runs("ERASE", ways, row=row(block, 0))
        data = [bytes(rng.randrange(256) for _ in range(FULL)) for _ in ways]
        for w in ways:
            await ch.write_mem(0x1000 + w * 0x1000, data[w] + bytes(-FULL % WB))
        await ch.runs("PROGRAM", ways, row=row(block, 1), length=FULL - FULL % WB, addr=lambda w: 0x1000 + w * 0x1000)
        await ch.runs("READ", ways, row=row(block, 1), length=FULL, addr=lambda w: 0x4000 + w * 0x1000)
        for w in ways:
            back = await ch.read_back(0x4000 + w * 0x1000, FULL)
            assert back[:FULL - FULL % WB] == data[w][:FULL - FULL % WB], f"{name}: way {w} read back differs"
        await ch.runs("READ_COLUMN", [1 % WAYS], col=102, length=62, addr=0x400)
        assert await ch.read_back(0x400, 62) == data[1 % WAYS][102:164], name
        # ECC: the raw page's random spare as parity (uncorrectable); a page programmed with its parity, read
        # back with none, some and the most read flips.
        await ch.runs("READ_ECC", [0], row=row(block, 1), length=DATA, addr=0x6000)
        await ch.read_back(0x6000, DATA)
        await ch.write_mem(0x1000, data[0][:DATA])
        await ch.runs("PROGRAM_ECC", [0], row=row(block, 2), length=DATA, addr=0x1000)
        for n in (0, 6, 2**len(ch.dut.flip_count.value) - 1):
            ch.dut.flip_row.value, ch.dut.flip_count.value = row(block, 2), n
            await ch.runs("READ_ECC", [0], row=row(block, 2), length=DATA, addr=0x6000)
            ch.dut.flip_count.value = 0
            back = await ch.read_back(0x6000, DATA)
            if n == 0:
                assert back == data[0][:DATA], f"{name}: READ_ECC data differs"
    # A way stuck busy: its ERASE times out; the other way's goes on.
    ch.dut.timeout.value = 4000
    ch.dut.rb_stuck.value = 1
    await ch.runs("ERASE", ways, row=row(len(MODES), 0))
    ch.dut.rb_stuck.value = 0
    ch.dut.timeout.value = 1 << 24
    while any(int(getattr(ch.dut, f"die{w}_busy").value) for w in ways):
        await RisingEdge(ch.dut.sys_clk)
    await ch.runs("READ_STATUS", ways)
    for _ in range(20):
        await RisingEdge(ch.dut.sys_clk)
    ch.log.append(("counters", {n: int(getattr(ch.dut, n).value) for n in COUNTERS}))
    viol = {(w, n): int(getattr(ch.dut, f"die{w}_viol_{n}").value) for w in ways for n in TIMING_CHECKS}
    assert not any(viol.values()), {k: v for k, v in viol.items() if v}


@cocotb.test()
async def return_register_changes_no_result(dut):
    chans = {p: LoggedChannel(Half(dut, p)) for p in ("plain_", "late_")}
    for i, ch in enumerate(chans.values()):
        await ch.start(clock=i == 0)
        ch.dut.time_scale_shift.value = 6
    runs = [cocotb.start_soon(script(ch, random.Random(5))) for ch in chans.values()]
    for run in runs:
        await run
    plain, late = (ch.log for ch in chans.values())
    for i, (a, b) in enumerate(zip(plain, late)):
        assert a == b, f"entry {i} differs: plain {a!r:.300}, registered return {b!r:.300}"
    assert len(plain) == len(late), (len(plain), len(late))
    # The stimulus reached what it aims at: ECC corrections and failures, a time-out, a bad block's failure.
    results = {r[1][0] for r in plain if r[0] not in ("mem", "counters")}
    assert {"OK", "TIMEOUT", "ECC_UNCORRECTABLE", "NAND_FAIL"} <= results, results
    assert any(r[0] == "READ_ECC" and r[1][0] == "OK" and any(r[2]) for r in plain), "no READ_ECC corrected a bit"
