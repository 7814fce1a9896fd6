"""cocotb tests of the channel controller (NandLabChannelController) driving emulated dies.

Every descriptor goes in through the submission port and comes back as a completion; data goes
through the buffer memory (the controller's DMA target). The dies are the emulator (checked
against its reference model by the die tests); here their timing checkers and their contents
judge the controller.
"""

import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import Event, First, ReadOnly, RisingEdge, Timer
from cocotb.utils import get_sim_time

from nandlab.gateware.onfi import common as onfi
from nandlab.gateware.onfi.controller import OPS, RESULTS
from nandlab.nand_model import param_page as pp
from nandlab.nand_model.die import TIMING_CHECKS
from nandlab.nand_model.reference import JEDEC_MANUFACTURER
from nandlab.testing import die_test_config

import bus_trace

CFG = die_test_config()
PART = CFG.part
PAGE = CFG.page_bytes
WAYS = int(os.environ.get("NANDLAB_TB_WAYS", "4"))
DW = int(os.environ.get("NANDLAB_TB_DW", "64"))
WB = DW // 8
CLK_NS = 10                            # sys_clk: 100 MHz.
# (interface, timing mode) in the order the suite visits them (SET FEATURES from one to the next).
# The last step leaves NV-DDR mode 5 (SET FEATURES with two bytes a cycle) for another interface.
MODES = [(onfi.IF_ASYNC_SDR, 0), (onfi.IF_ASYNC_SDR, 5), (onfi.IF_SYNC_SDR, 5), (onfi.IF_NVDDR, 0),
         (onfi.IF_NVDDR, 3), (onfi.IF_NVDDR, 5), (onfi.IF_SYNC_SDR, 4)]


def row(block, page):
    return block << CFG.page_bits | page


class Channel:
    """Drives the controller's ports: descriptors, completions, the buffer memory."""
    def __init__(self, dut):
        self.dut = dut
        self.tag = 0
        self.done = {}
        self.ecc = {}          # Tag -> the completion's raw per-codeword ECC counts (cpl_ecc).
        self.completed = Event()

    async def start(self, clock=True):
        """`clock`: start the clock (and the bus trace); False for a second channel of the same top."""
        dut = self.dut
        if clock:
            cocotb.start_soon(Clock(dut.sys_clk, CLK_NS, unit="ns").start())
            bus_trace.start(dut, "channel")
        for name in ("submit", "cpl_pop", "rb_stuck", "mem_stall", "mem_we", "flip_count", "flip_row", "d_op", "d_way",
                     "d_tag", "d_row", "d_col", "d_len", "d_addr", "d_param", "time_scale_shift"):
            getattr(dut, name).value = 0
        dut.bus_interface.value = onfi.IF_ASYNC_SDR
        dut.timing_mode.value = 0
        dut.ways_online.value = 2**WAYS - 1
        dut.page_bytes.value = PAGE
        dut.page_bits.value = CFG.page_bits
        dut.blocks.value = PART.blocks_per_lun
        dut.timeout.value = 1 << 24
        if hasattr(dut, "flip_rate"):
            dut.flip_rate.value = 0
        if hasattr(dut, "dma_limit"):
            dut.dma_limit.value = 2**32 - 1       # DMA window: all (the register's reset value)
        dut.sys_rst.value = 1
        for _ in range(3):
            await RisingEdge(dut.sys_clk)
        dut.sys_rst.value = 0
        cocotb.start_soon(self._completions())

    async def _completions(self):
        # Event-driven: while no completion waits, the simulator runs without Python on every cycle (a
        # per-cycle poll cost more than the simulation). It pops on the cycles a per-cycle poll did.
        dut = self.dut
        while True:
            await RisingEdge(dut.sys_clk)
            dut.cpl_pop.value = 0
            await ReadOnly()
            if not int(dut.cpl_valid.value):
                await RisingEdge(dut.cpl_valid)
                await ReadOnly()
            fields = [int(s.value) for s in (dut.cpl_tag, dut.cpl_result, dut.cpl_way, dut.cpl_status, dut.cpl_ecc)]
            await RisingEdge(dut.sys_clk)
            self.record(*fields)
            self.completed.set()
            dut.cpl_pop.value = 1

    def record(self, tag, result, way, status, raw_ecc):
        """Keeps a completion, on the clock edge it is popped (a subclass keeps more)."""
        self.ecc[tag] = raw_ecc
        self.done[tag] = (RESULTS[result], way, status)

    async def next_completion(self, limit):
        """Waits for the next completion, at most `limit` cycles; False if none came."""
        self.completed.clear()
        await First(self.completed.wait(), Timer(limit * CLK_NS, unit="ns"))
        return self.completed.is_set()

    async def submit(self, op, way, row=0, col=0, length=0, addr=0, param=0, rsvd=0):
        dut = self.dut
        self.tag = (self.tag + 1) & 0xFF
        tag = self.tag
        self.done.pop(tag, None)
        while True:
            await RisingEdge(dut.sys_clk)
            await ReadOnly()
            if int(dut.submit_ready.value):
                break
        await RisingEdge(dut.sys_clk)
        dut.d_op.value = OPS[op] if isinstance(op, str) else op
        dut.d_way.value, dut.d_tag.value, dut.d_row.value = way, tag, row
        dut.d_col.value, dut.d_len.value, dut.d_addr.value, dut.d_param.value = col, length, addr, param
        dut.d_rsvd.value = rsvd
        dut.submit.value = 1
        await RisingEdge(dut.sys_clk)
        dut.submit.value = 0
        return tag

    async def wait(self, *tags, limit=2_000_000):
        """The completions of `tags`, on the clock edge after the last of them (as a per-cycle poll saw
        them); AssertionError after `limit` cycles."""
        deadline = get_sim_time("ns") + limit * CLK_NS
        while not all(t in self.done for t in tags):
            left = -(-(deadline - get_sim_time("ns")) // CLK_NS)
            if left <= 0:
                raise AssertionError(f"no completion for tags {tags} after {limit} cycles")
            if await self.next_completion(left):
                await RisingEdge(self.dut.sys_clk)
        return [self.done.pop(t) for t in tags]

    async def run(self, op, way, **kw):
        return (await self.wait(await self.submit(op, way, **kw)))[0]

    async def write_mem(self, addr, data):
        dut = self.dut
        assert addr % WB == 0 and len(data) % WB == 0
        await RisingEdge(dut.sys_clk)
        for i in range(0, len(data), WB):
            dut.mem_adr.value = (addr + i) // WB
            dut.mem_dat_w.value = int.from_bytes(data[i:i + WB], "little")
            dut.mem_we.value = 1
            await RisingEdge(dut.sys_clk)
        dut.mem_we.value = 0

    async def read_mem(self, addr, n):
        dut = self.dut
        out = bytearray()
        for i in range(0, n, WB):
            dut.mem_adr.value = (addr + i) // WB
            await RisingEdge(dut.sys_clk)
            await RisingEdge(dut.sys_clk)
            await ReadOnly()
            out += int(dut.mem_dat_r.value).to_bytes(WB, "little")
            await RisingEdge(dut.sys_clk)
        return bytes(out[:n])

    def violations(self):
        return {(w, n): int(getattr(self.dut, f"die{w}_viol_{n}").value) for w in range(WAYS) for n in TIMING_CHECKS}


async def ok(ch, op, way, **kw):
    res, w, status = await ch.run(op, way, **kw)
    assert res == "OK" and w == way, f"{op} on way {way}: {res} (way {w}, status 0x{status:02x})"
    return status


async def switch(ch, interface, mode):
    """SET FEATURES (timing mode) on every way, then the controller follows."""
    p1 = (interface << 4) | mode
    tags = [await ch.submit("SET_FEATURES", w, col=onfi.FEATURE_TIMING_MODE, param=p1) for w in range(WAYS)]
    for w, (res, way, _) in enumerate(await ch.wait(*tags)):
        assert res == "OK" and way == w
    ch.dut.bus_interface.value = interface
    ch.dut.timing_mode.value = mode
    await RisingEdge(ch.dut.sys_clk)
    for w in range(WAYS):
        assert int(getattr(ch.dut, f"die{w}_interface").value) == interface
        assert int(getattr(ch.dut, f"die{w}_timing_mode").value) == mode


async def command_suite(ch, rng, interface, mode, block):
    """Every command once in the current mode; data checked byte for byte."""
    name = f"{onfi.INTERFACE_NAMES[interface]} mode {mode}"
    # GET FEATURES reads back the mode.
    await ok(ch, "GET_FEATURES", 0, col=onfi.FEATURE_TIMING_MODE, length=4, addr=0x100)
    feat = await ch.read_mem(0x100, 4)
    assert feat[0] == (interface << 4) | mode, f"{name}: GET FEATURES gave {feat.hex()}"
    # READ ID: ONFI signature and the JEDEC bytes.
    await ok(ch, "READ_ID", 1 % WAYS, col=onfi.READ_ID_ONFI, length=4, addr=0x140)
    assert await ch.read_mem(0x140, 4) == b"ONFI", name
    await ok(ch, "READ_ID", 0, col=onfi.READ_ID_JEDEC, length=2, addr=0x180)
    assert (await ch.read_mem(0x180, 2))[0] == JEDEC_MANUFACTURER, name
    # READ PARAMETER PAGE: three copies, the first one's CRC good, the part's geometry.
    await ok(ch, "READ_PARAM_PAGE", WAYS - 1, length=768, addr=0x200)
    page = pp.parse(await ch.read_mem(0x200, 768))
    assert page.data_bytes_per_page == PART.page_size and page.spare_bytes_per_page == PART.spare_size, name
    # READ STATUS: ready, array ready, not write protected.
    status = await ok(ch, "READ_STATUS", 0)
    assert status == onfi.STATUS_RDY | onfi.STATUS_ARDY | onfi.STATUS_WP_N, f"{name}: status 0x{status:02x}"
    status = await ok(ch, "READ_STATUS_ENH", 0, row=row(block, 0))
    assert status & onfi.STATUS_RDY, name

    # ERASE, PROGRAM, READ on every way at once (interleaved), then CHANGE READ COLUMN.
    tags = [await ch.submit("ERASE", w, row=row(block, 0)) for w in range(WAYS)]
    assert all(r == ("OK", w, 0xE0) for w, r in enumerate(await ch.wait(*tags))), name
    data = [bytes(rng.randrange(256) for _ in range(PAGE)) for _ in range(WAYS)]
    src = [0x1000 + w * 0x1000 for w in range(WAYS)]
    dst = [0x1000 + (WAYS + w) * 0x1000 for w in range(WAYS)]
    for w in range(WAYS):
        await ch.write_mem(src[w], data[w] + bytes(-PAGE % WB))
    tags = [await ch.submit("PROGRAM", w, row=row(block, 1), length=PAGE - PAGE % WB, addr=src[w]) for w in range(WAYS)]
    assert all(r == ("OK", w, 0xE0) for w, r in enumerate(await ch.wait(*tags))), name
    tags = [await ch.submit("READ", w, row=row(block, 1), length=PAGE, addr=dst[w]) for w in range(WAYS)]
    assert all(r[0] == "OK" for r in await ch.wait(*tags)), name
    for w in range(WAYS):
        back = await ch.read_mem(dst[w], PAGE)
        n = PAGE - PAGE % WB
        assert back[:n] == data[w][:n], f"{name}: way {w} read back differs at {[i for i in range(n) if back[i] != data[w][i]][:8]}"
    await ok(ch, "READ_COLUMN", 0, col=100, length=64, addr=0x400)
    assert await ch.read_mem(0x400, 64) == data[0][100:164], name

    # Cache program then cache read (15h then 10h; 31h then 3Fh).
    pages = [bytes(rng.randrange(256) for _ in range(PAGE - PAGE % WB)) for _ in range(2)]
    await ch.write_mem(src[0], pages[0])
    await ch.write_mem(src[1], pages[1])
    assert (await ch.run("PROGRAM_CACHE", 0, row=row(block, 2), length=len(pages[0]), addr=src[0]))[0] == "OK", name
    assert (await ch.run("PROGRAM", 0, row=row(block, 3), length=len(pages[1]), addr=src[1]))[0] == "OK", name
    await ok(ch, "READ", 0, row=row(block, 2), length=64, addr=0x400)
    await ok(ch, "READ_CACHE_SEQ", 0, length=len(pages[0]), addr=dst[0])
    await ok(ch, "READ_CACHE_END", 0, length=len(pages[1]), addr=dst[1])
    assert await ch.read_mem(dst[0], len(pages[0])) == pages[0], f"{name}: READ CACHE (31h)"
    assert await ch.read_mem(dst[1], len(pages[1])) == pages[1], f"{name}: READ CACHE (3Fh)"

    # Multi-plane: program a page on each plane (11h then 10h), read both (32h then 30h, 06h-E0h).
    if PART.planes == 2:
        b0, b1 = block & ~1, block | 1
        for b in (b0, b1):
            if b != block:
                await ok(ch, "ERASE", 0, row=row(b, 0))
        pages = [bytes(rng.randrange(256) for _ in range(PAGE - PAGE % WB)) for _ in range(2)]
        await ch.write_mem(src[0], pages[0])
        await ch.write_mem(src[1], pages[1])
        await ok(ch, "PROGRAM_MULTIPLANE", 0, row=row(b0, 0), length=len(pages[0]), addr=src[0])
        status = await ok(ch, "PROGRAM", 0, row=row(b1, 0), length=len(pages[1]), addr=src[1])
        assert status == 0xE0, f"{name}: multi-plane program status 0x{status:02x}"
        await ok(ch, "READ_MULTIPLANE", 0, row=row(b0, 0))
        await ok(ch, "READ", 0, row=row(b1, 0), length=len(pages[1]), addr=dst[1])
        await ok(ch, "READ_COLUMN_ENH", 0, row=row(b0, 0), length=len(pages[0]), addr=dst[0])
        assert await ch.read_mem(dst[1], len(pages[1])) == pages[1], f"{name}: multi-plane read, plane 1"
        assert await ch.read_mem(dst[0], len(pages[0])) == pages[0], f"{name}: multi-plane read, plane 0"
        # Erase both planes together (D1h then D0h).
        await ok(ch, "ERASE_MULTIPLANE", 0, row=row(b0, 0))
        status = await ok(ch, "ERASE", 0, row=row(b1, 0))
        assert status == 0xE0, name
        await ok(ch, "READ", 0, row=row(b0, 0), length=64, addr=0x400)
        assert await ch.read_mem(0x400, 64) == b"\xff" * 64, f"{name}: multi-plane erase"

    viol = {k: v for k, v in ch.violations().items() if v}
    assert not viol, f"{name}: timing violations {viol}"


@cocotb.test()
async def every_command_in_every_mode(dut):
    """RESET, READ ID, READ PARAMETER PAGE, SET/GET FEATURES, READ STATUS (+ENHANCED), ERASE,
    PROGRAM, READ, CHANGE READ COLUMN (+ENHANCED), cache and multi-plane commands, on every way, in
    async SDR modes 0 and 5, sync SDR modes 5 and 4 and NV-DDR modes 0, 3 and 5."""
    ch = Channel(dut)
    await ch.start()
    dut.time_scale_shift.value = 6
    rng = random.Random(5)
    tags = [await ch.submit("RESET", w) for w in range(WAYS)]
    assert all(r[0] == "OK" for r in await ch.wait(*tags))
    for i, (interface, mode) in enumerate(MODES):
        if i:
            await switch(ch, interface, mode)
        await command_suite(ch, rng, interface, mode, block=2 * (i % 2))
        dut._log.info(f"{onfi.INTERFACE_NAMES[interface]} mode {mode}: every command passed")


@cocotb.test()
async def refusals_timeout_and_backpressure(dut):
    """Impossible descriptors are refused without touching the bus; a way that never becomes ready
    times out by name while the others keep working; DMA under memory wait states keeps the data."""
    ch = Channel(dut)
    await ch.start()
    dut.time_scale_shift.value = 6
    tags = [await ch.submit("RESET", w) for w in range(WAYS)]
    await ch.wait(*tags)
    await switch(ch, onfi.IF_NVDDR, 5)
    busy = int(dut.busy_cycles.value)
    bad = [
        ("READ", dict(way=WAYS, row=0, length=64, addr=0), "BAD_WAY"),
        ("READ", dict(way=0, row=row(PART.blocks_per_lun, 0), length=64, addr=0), "BAD_ROW"),
        ("READ", dict(way=0, row=0, col=PAGE - 8, length=64, addr=0), "BAD_COLUMN"),
        ("READ", dict(way=0, row=0, col=PAGE, length=2, addr=0), "BAD_COLUMN"),
        ("READ", dict(way=0, row=0, length=63, addr=0), "BAD_LENGTH"),
        ("READ", dict(way=0, row=0, length=0, addr=0), "BAD_LENGTH"),
        ("READ", dict(way=0, row=0, length=64, addr=4), "BAD_LENGTH"),
        ("PROGRAM", dict(way=0, row=0, length=PAGE - 4, addr=0), "BAD_LENGTH"),
        (31, dict(way=0), "BAD_OP"),
    ]
    for op, kw, want in bad:
        way = kw.pop("way")
        res = await ch.run(op, way, **kw)
        assert res[0] == want, f"{op} {kw}: {res}, expected {want}"
    dut.ways_online.value = 2**WAYS - 2
    assert (await ch.run("READ_STATUS", 0))[0] == "BAD_WAY"
    dut.ways_online.value = 2**WAYS - 1
    assert int(dut.busy_cycles.value) == busy, "a refused descriptor reached the bus"

    # Way 1 never becomes ready: its erase times out, way 0 keeps working meanwhile.
    dut.timeout.value = 64 * 1024
    dut.rb_stuck.value = 0b10
    t_bad = await ch.submit("ERASE", 1, row=row(1, 0))
    assert (await ch.run("READ_STATUS", 0))[0] == "OK"
    res, way, _ = (await ch.wait(t_bad))[0]
    assert (res, way) == ("TIMEOUT", 1)
    dut.rb_stuck.value = 0
    await ch.run("RESET", 1)

    # Back-pressure: the memory inserts wait states; data still round-trips intact.
    dut.mem_stall.value = 1
    rng = random.Random(9)
    data = bytes(rng.randrange(256) for _ in range(PAGE - PAGE % WB))
    await ch.write_mem(0x1000, data)
    await ok(ch, "ERASE", 2 % WAYS, row=row(4, 0))
    await ok(ch, "PROGRAM", 2 % WAYS, row=row(4, 0), length=len(data), addr=0x1000)
    await ok(ch, "READ", 2 % WAYS, row=row(4, 0), length=len(data), addr=0x3000)
    dut.mem_stall.value = 0
    assert await ch.read_mem(0x3000, len(data)) == data
    viol = {k: v for k, v in ch.violations().items() if v}
    assert not viol, f"timing violations {viol}"
