"""cocotb tests of the channel controller behind a read latency: the dies' DQ/DQS reach it L cycles late.

The sim top delays what the dies drive by `NANDLAB_TB_READ_LATENCY` cycles and builds the controller
with the same `read_latency`, as behind a pin PHY. Data is checked byte for byte, the dies' timing
checkers must stay at zero, and an NV-DDR mode 5 page read must keep 2 bytes a cycle.
"""

import os
import random

import cocotb
from cocotb.triggers import RisingEdge

from nandlab.gateware.onfi import common as onfi
from nandlab.nand_model import param_page as pp

from controller_tb import CFG, PAGE, PART, WAYS, WB, Channel, ok, row, switch

LATENCY = int(os.environ["NANDLAB_TB_READ_LATENCY"])
MODES = [(onfi.IF_ASYNC_SDR, 0), (onfi.IF_ASYNC_SDR, 5), (onfi.IF_SYNC_SDR, 5), (onfi.IF_NVDDR, 0),
         (onfi.IF_NVDDR, 5)]
DATA = PAGE - PAGE % WB              # Bytes a PROGRAM moves (whole DMA words).
PAGE_CYCLES_MAX = int(2048 / 2 / 0.95)   # NV-DDR mode 5: 2 KiB at >= 95 % of 2 bytes a cycle.


async def start(dut):
    ch = Channel(dut)
    await ch.start()
    dut.mem_slow.value = 0
    if hasattr(dut, "dout_late"):       # (a top built for late answers, as the late suite left it: none)
        dut.dout_late.value = 0
    dut.time_scale_shift.value = 6
    tags = [await ch.submit("RESET", w) for w in range(WAYS)]
    assert all(r[0] == "OK" for r in await ch.wait(*tags))
    return ch


def no_violations(ch, name):
    viol = {k: v for k, v in ch.violations().items() if v}
    assert not viol, f"{name}, read latency {LATENCY}: timing violations {viol}"


async def reads(ch, rng, interface, mode, block):
    """Short reads (features, ID, status, parameter page), then a page per way and a column change."""
    name = f"{onfi.INTERFACE_NAMES[interface]} mode {mode}, read latency {LATENCY}"
    await ok(ch, "GET_FEATURES", 0, col=onfi.FEATURE_TIMING_MODE, length=4, addr=0x100)
    feat = await ch.read_mem(0x100, 4)
    assert feat == bytes([(interface << 4) | mode, 0, 0, 0]), f"{name}: GET FEATURES gave {feat.hex()}"
    await ok(ch, "READ_ID", WAYS - 1, col=onfi.READ_ID_ONFI, length=4, addr=0x140)
    assert await ch.read_mem(0x140, 4) == b"ONFI", name
    await ok(ch, "READ_ID", 0, col=onfi.READ_ID_ONFI, length=2, addr=0x180)
    assert await ch.read_mem(0x180, 2) == b"ON", name
    status = await ok(ch, "READ_STATUS", 0)
    assert status == onfi.STATUS_RDY | onfi.STATUS_ARDY | onfi.STATUS_WP_N, f"{name}: status 0x{status:02x}"
    await ok(ch, "READ_PARAM_PAGE", 0, length=256, addr=0x200)
    page = pp.parse(await ch.read_mem(0x200, 256))
    assert page.data_bytes_per_page == PART.page_size and page.spare_bytes_per_page == PART.spare_size, name

    tags = [await ch.submit("ERASE", w, row=row(block, 0)) for w in range(WAYS)]
    assert all(r == ("OK", w, 0xE0) for w, r in enumerate(await ch.wait(*tags))), name
    data = [bytes(rng.randrange(256) for _ in range(DATA)) for _ in range(WAYS)]
    src = [0x1000 + w * 0x1000 for w in range(WAYS)]
    dst = [0x1000 + (WAYS + w) * 0x1000 for w in range(WAYS)]
    for w in range(WAYS):
        await ch.write_mem(src[w], data[w])
    tags = [await ch.submit("PROGRAM", w, row=row(block, 1), length=DATA, addr=src[w]) for w in range(WAYS)]
    assert all(r == ("OK", w, 0xE0) for w, r in enumerate(await ch.wait(*tags))), name
    # Both ways read at once (interleaved), the whole page with its spare: the spare's programmed part
    # back, the rest FFh.
    tags = [await ch.submit("READ", w, row=row(block, 1), length=PAGE, addr=dst[w]) for w in range(WAYS)]
    assert all(r[0] == "OK" for r in await ch.wait(*tags)), name
    for w in range(WAYS):
        back = await ch.read_mem(dst[w], PAGE)
        want = data[w] + b"\xff" * (PAGE - DATA)
        assert back == want, f"{name}: way {w} differs at {[i for i in range(PAGE) if back[i] != want[i]][:8]}"
    await ok(ch, "READ_COLUMN", 1 % WAYS, col=102, length=62, addr=0x400)
    assert await ch.read_mem(0x400, 62) == data[1 % WAYS][102:164], name
    no_violations(ch, name)
    return data


@cocotb.test()
async def reads_in_every_interface(dut):
    """Every read path (DOUT of a few bytes to a page, STATUS) in async SDR modes 0 and 5, sync SDR mode
    5, NV-DDR modes 0 and 5, through the read latency; then slow memory: the controller waits for room
    for the bytes in flight, none is lost."""
    ch = await start(dut)
    rng = random.Random(11)
    for i, (interface, mode) in enumerate(MODES):
        if i:
            await switch(ch, interface, mode)
        data = await reads(ch, rng, interface, mode, block=2 * (i % 2))
        dut._log.info(f"{onfi.INTERFACE_NAMES[interface]} mode {mode}, read latency {LATENCY}: reads passed")

    # Back-pressure: memory slower than the bus (its FIFO fills), NV-DDR mode 5 then sync SDR mode 5.
    dut.mem_slow.value = 1
    for interface, mode in ((onfi.IF_NVDDR, 5), (onfi.IF_SYNC_SDR, 5)):
        if (interface, mode) != MODES[-1]:
            await switch(ch, interface, mode)
        await ok(ch, "READ", 0, row=row(2 * ((len(MODES) - 1) % 2), 1), length=PAGE, addr=0x8000)
        back = await ch.read_mem(0x8000, DATA)
        assert back == data[0], (f"{onfi.INTERFACE_NAMES[interface]} mode {mode} with slow memory: differs at "
                                 f"{[i for i in range(DATA) if back[i] != data[0][i]][:8]}")
        status = await ok(ch, "READ_STATUS", 1 % WAYS)
        assert status == 0xE0, f"status 0x{status:02x}"
    dut.mem_slow.value = 0
    no_violations(ch, "slow memory")


@cocotb.test()
async def nvddr_page_read_rate(dut):
    """NV-DDR mode 5: a 2 KiB page read moves 2 bytes a cycle (>= 95 % of 200 MB/s at 100 MHz): the
    DOUT takes at most PAGE_CYCLES_MAX cycles, the read latency only adds to its end."""
    ch = await start(dut)
    await switch(ch, onfi.IF_NVDDR, 5)
    rng = random.Random(12)
    data = bytes(rng.randrange(256) for _ in range(2048))
    await ch.write_mem(0x1000, data)
    await ok(ch, "ERASE", 0, row=row(3, 0))
    await ok(ch, "PROGRAM", 0, row=row(3, 0), length=2048, addr=0x1000)
    cycles = []
    for _ in range(2):
        before = int(dut.data_cycles.value)
        await ok(ch, "READ", 0, row=row(3, 0), length=2048, addr=0x3000)
        await RisingEdge(dut.sys_clk)
        cycles.append(int(dut.data_cycles.value) - before)
        assert await ch.read_mem(0x3000, 2048) == data
    rate = 2048 / (max(cycles) * 10e-9) / 1e6
    dut._log.info(f"NV-DDR mode 5, read latency {LATENCY}: 2048-byte page DOUT in {cycles} cycles ({rate:.1f} MB/s)")
    assert cycles[0] == cycles[1], cycles
    assert max(cycles) <= PAGE_CYCLES_MAX, f"read latency {LATENCY}: {cycles} cycles for 2048 bytes ({rate:.1f} MB/s)"
    no_violations(ch, "NV-DDR mode 5 page reads")
