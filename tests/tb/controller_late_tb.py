"""cocotb tests of the channel controller against dies whose NV-DDR answers come phases late (tDQSCK).

The sim top delays what the dies drive on DQ and DQS by `dout_late` phases (a port, 0 .. 6: ONFI's tDQSCK
max of 25 ns is 5 phases at 100 MHz; 6 is the controller's own limit, 25 ns + 1 ns of board rounded up
to whole phases) on top of `NANDLAB_TB_READ_LATENCY` cycles, and builds the controller with that read
latency. Way 0 gives one status byte more than way 1 before each pair of page reads, so that the dies'
DQS levels differ at every other select (a level change as late as the answers). In every NV-DDR mode and at every lateness, page reads (two ways interleaved),
short reads and status come back byte for byte, also with memory slower than the bus (the controller
pauses for FIFO room with answers still on their way); the dies' timing checkers stay at zero.
"""

import os
import random

import cocotb
from cocotb.triggers import RisingEdge
from cocotb.utils import get_sim_time

from nandlab.gateware.onfi import common as onfi

from controller_tb import PAGE, WAYS, WB, Channel, ok, row, switch

LATENCY = int(os.environ["NANDLAB_TB_READ_LATENCY"])
LATE = range(7)                      # Phases of 5 ns.
DATA = PAGE - PAGE % WB


def differs(back, want):
    return [i for i in range(len(want)) if back[i] != want[i]][:8]


async def start(dut):
    ch = Channel(dut)
    await ch.start()
    dut.mem_slow.value = 0
    dut.dout_late.value = 0
    dut.time_scale_shift.value = 6
    tags = [await ch.submit("RESET", w) for w in range(WAYS)]
    assert all(r[0] == "OK" for r in await ch.wait(*tags))
    return ch


async def program_pages(ch, rng, block):
    """A page of random data on each way (in the interface in use); returns the pages as read back."""
    tags = [await ch.submit("ERASE", w, row=row(block, 0)) for w in range(WAYS)]
    assert all(r == ("OK", w, 0xE0) for w, r in enumerate(await ch.wait(*tags)))
    data = [bytes(rng.randrange(256) for _ in range(DATA)) for _ in range(WAYS)]
    for w in range(WAYS):
        await ch.write_mem(0x1000 + w * 0x1000, data[w])
    tags = [await ch.submit("PROGRAM", w, row=row(block, 1), length=DATA, addr=0x1000 + w * 0x1000)
            for w in range(WAYS)]
    assert all(r == ("OK", w, 0xE0) for w, r in enumerate(await ch.wait(*tags)))
    return [d + b"\xff" * (PAGE - DATA) for d in data]


async def late_reads(ch, pages, block, name, slow):
    """Both ways' pages at once, a column change, GET FEATURES, READ ID and status."""
    status = await ok(ch, "READ_STATUS", 0)
    assert status == onfi.STATUS_RDY | onfi.STATUS_ARDY | onfi.STATUS_WP_N, f"{name}: status 0x{status:02x}"
    dst = [0x8000 + w * 0x1000 for w in range(WAYS)]
    tags = [await ch.submit("READ", w, row=row(block, 1), length=PAGE, addr=dst[w]) for w in range(WAYS)]
    res = await ch.wait(*tags)
    assert all(r[0] == "OK" for r in res), f"{name}: {res}"
    for w in range(WAYS):
        back = await ch.read_mem(dst[w], PAGE)
        assert back == pages[w], f"{name}: way {w} page differs at {differs(back, pages[w])}"
    if slow:
        return
    await ok(ch, "READ_COLUMN", WAYS - 1, col=102, length=62, addr=0x400)
    back = await ch.read_mem(0x400, 62)
    assert back == pages[WAYS - 1][102:164], f"{name}: column read differs at {differs(back, pages[WAYS - 1][102:164])}"
    await ok(ch, "GET_FEATURES", 0, col=onfi.FEATURE_TIMING_MODE, length=4, addr=0x100)
    feat = await ch.read_mem(0x100, 4)
    assert feat[0] == (onfi.IF_NVDDR << 4) | int(ch.dut.timing_mode.value), f"{name}: GET FEATURES {feat.hex()}"
    await ok(ch, "READ_ID", 0, col=onfi.READ_ID_ONFI, length=4, addr=0x140)
    assert await ch.read_mem(0x140, 4) == b"ONFI", name
    for w in range(WAYS):
        status = await ok(ch, "READ_STATUS", w)
        assert status == onfi.STATUS_RDY | onfi.STATUS_ARDY | onfi.STATUS_WP_N, f"{name}: status 0x{status:02x}"


@cocotb.test()
async def nvddr_reads_at_every_lateness(dut):
    """NV-DDR modes 0-5, the dies answering 0-6 phases late: reads byte for byte; then slow memory."""
    ch = await start(dut)
    rng = random.Random(21)
    pages = await program_pages(ch, rng, block=1)
    for mode in range(6):
        await switch(ch, onfi.IF_NVDDR, mode)
        for slow in (0, 1):
            dut.mem_slow.value = slow
            for late in LATE:
                dut.dout_late.value = late
                name = f"NV-DDR mode {mode}, read latency {LATENCY}, {late} phases late{', slow memory' if slow else ''}"
                before = int(dut.bytes_out.value)
                await late_reads(ch, pages, 1, name, slow)
                dut._log.info(f"{name}: {int(dut.bytes_out.value) - before} bytes read right")
        dut.mem_slow.value = 0
        dut.dout_late.value = 0
        viol = {k: v for k, v in ch.violations().items() if v}
        assert not viol, f"NV-DDR mode {mode}, read latency {LATENCY}: timing violations {viol}"


@cocotb.test()
async def nvddr_mode5_rate_when_late(dut):
    """NV-DDR mode 5, 5 phases late: a 2 KiB page still moves 2 bytes a cycle (lateness only adds to
    the end of the data output)."""
    ch = await start(dut)
    await switch(ch, onfi.IF_NVDDR, 5)
    rng = random.Random(22)
    data = bytes(rng.randrange(256) for _ in range(2048))
    await ch.write_mem(0x1000, data)
    await ok(ch, "ERASE", 0, row=row(3, 0))
    await ok(ch, "PROGRAM", 0, row=row(3, 0), length=2048, addr=0x1000)
    dut.dout_late.value = 5
    before = int(dut.data_cycles.value)
    await ok(ch, "READ", 0, row=row(3, 0), length=2048, addr=0x3000)
    await RisingEdge(dut.sys_clk)
    cycles = int(dut.data_cycles.value) - before
    assert await ch.read_mem(0x3000, 2048) == data
    dut._log.info(f"NV-DDR mode 5, read latency {LATENCY}, 5 phases late: 2048 bytes in {cycles} cycles")
    assert cycles <= int(2048 / 2 / 0.95), cycles


@cocotb.test()
async def silent_die_times_out_when_late(dut):
    """NV-DDR mode 5, 6 phases late: a data output the die never answers (31h with no READ before it)
    still completes TIMEOUT within `timeout`, FFh in memory; the same way then reads its page right
    (no toggle or ask left over)."""
    ch = await start(dut)
    await switch(ch, onfi.IF_NVDDR, 5)
    dut.dout_late.value = max(LATE)
    limit = 20_000
    dut.timeout.value = limit
    pages = await program_pages(ch, random.Random(23), block=2)
    await ch.write_mem(0x3000, b"\x55" * 512)
    await ok(ch, "RESET", 0)
    start_ns = get_sim_time("ns")
    res, way, _ = await ch.run("READ_CACHE_SEQ", 0, length=300, addr=0x3000)
    took = int(get_sim_time("ns") - start_ns) // 10
    assert (res, way) == ("TIMEOUT", 0), f"READ_CACHE_SEQ without a READ: {res} on way {way}"
    assert limit <= took < limit + 2_000, f"completed after {took} cycles (timeout {limit})"
    assert await ch.read_mem(0x3000, 304) == b"\xff" * 304 and await ch.read_mem(0x3000 + 304, 8) == b"\x55" * 8
    dut.timeout.value = 1 << 24
    await ok(ch, "READ", 0, row=row(2, 1), length=PAGE, addr=0x4000)
    back = await ch.read_mem(0x4000, PAGE)
    assert back == pages[0], f"after the timeout: page differs at {differs(back, pages[0])}"
    dut._log.info(f"6 phases late, read latency {LATENCY}: TIMEOUT after {took} cycles (timeout {limit})")
