"""cocotb tests of the channel controller's per-mode ONFI timings against dies that pull R/B# low as late
as tWB max allows and check the minima of the mode they are in (tests/test_controller_timing.py).

NANDLAB_TB_EXPECT = "clean": the controller built with ONFI's table (the default) must leave every die's
checker at zero in async SDR mode 0 and in the fastest modes. "flagged": the controller built with the
old waits (SDR mode 5's everywhere, R/B# latency not allowed for) must be caught by the dies' checks in
async SDR mode 0 - a check that cannot fail proves nothing.
"""

import os
import random

import cocotb
from cocotb.triggers import RisingEdge

from nandlab.gateware.onfi import common as onfi

from controller_tb import Channel, WAYS, PAGE, WB, row, ok, switch

EXPECT = os.environ.get("NANDLAB_TB_EXPECT", "clean")


async def reset_all(ch):
    """RESET on every way; at its completion the die must be ready (R/B# has risen again)."""
    early = []
    for w in range(WAYS):
        res, way, _ = await ch.run("RESET", w)
        assert (res, way) == ("OK", w), res
        if int(getattr(ch.dut, f"die{w}_busy").value):
            early.append(w)
    return early


async def operations(ch, rng, block):
    """READ ID, READ STATUS, ERASE, PROGRAM and READ on every way; returns what went wrong (empty: all
    right), so that the "flagged" build can run the same sequence."""
    wrong = []
    for w in range(WAYS):
        res = await ch.run("READ_ID", w, col=onfi.READ_ID_ONFI, length=4, addr=0x100)
        if res[0] != "OK" or await ch.read_mem(0x100, 4) != b"ONFI":
            wrong.append(f"way {w}: READ ID {res[0]} {(await ch.read_mem(0x100, 4)).hex()}")
        res = await ch.run("READ_STATUS", w)
        if res != ("OK", w, 0xE0):
            wrong.append(f"way {w}: READ STATUS {res}")
        res = await ch.run("ERASE", w, row=row(block, 0))
        if res != ("OK", w, 0xE0):
            wrong.append(f"way {w}: ERASE {res}")
        n = PAGE - PAGE % WB
        data = bytes(rng.randrange(256) for _ in range(n))
        await ch.write_mem(0x1000, data)
        res = await ch.run("PROGRAM", w, row=row(block, 1), length=n, addr=0x1000)
        if res != ("OK", w, 0xE0):
            wrong.append(f"way {w}: PROGRAM {res}")
        res = await ch.run("READ", w, row=row(block, 1), length=n, addr=0x3000)
        if res[0] != "OK" or await ch.read_mem(0x3000, n) != data:
            wrong.append(f"way {w}: READ {res[0]}, data {'differs' if res[0] == 'OK' else 'not checked'}")
    return wrong


def nonzero(ch):
    return {k: v for k, v in ch.violations().items() if v}


@cocotb.test()
async def slowest_and_fastest_modes(dut):
    """Async SDR mode 0 (power-up: tWB 200 ns, tWHR 120, tRR 40, tCS 70), then async SDR 5, sync SDR 5
    and NV-DDR 5: RESET, READ ID, READ STATUS, ERASE, PROGRAM, READ on every way, against dies whose
    R/B# falls tWB max after the confirm."""
    if EXPECT != "clean":
        return
    ch = Channel(dut)
    await ch.start()
    dut.time_scale_shift.value = 6
    rng = random.Random(21)
    for i, (interface, mode) in enumerate([(onfi.IF_ASYNC_SDR, 0), (onfi.IF_ASYNC_SDR, 5), (onfi.IF_SYNC_SDR, 5),
                                           (onfi.IF_NVDDR, 5)]):
        name = f"{onfi.INTERFACE_NAMES[interface]} mode {mode}"
        if i:
            await switch(ch, interface, mode)
        assert await reset_all(ch) == [], f"{name}: RESET completed while the die was busy"
        wrong = await operations(ch, rng, block=i % 4)
        assert not wrong, f"{name}: {wrong}"
        assert not nonzero(ch), f"{name}: timing violations {nonzero(ch)}"
        dut._log.info(f"{name}: clean")


@cocotb.test()
async def old_waits_are_flagged(dut):
    """The controller built with SDR mode 5's waits in every mode and no allowance for R/B#'s latency,
    driven in async SDR mode 0: RESET completes while the die is busy, and the dies see commands and
    data out while they are busy."""
    if EXPECT != "flagged":
        return
    ch = Channel(dut)
    await ch.start()
    dut.time_scale_shift.value = 6
    early = await reset_all(ch)
    await operations(ch, random.Random(21), block=0)
    viol = nonzero(ch)
    dut._log.info(f"RESET completed early on ways {early}; violations {viol}")
    per_check = {n: sum(v for (_, c), v in viol.items() if c == n) for _, n in viol}
    # In async SDR mode 0 the 100 ns beats themselves cover mode 5's tWHR, tCS and tRR (the CMD beat's
    # second half, the half beat of WE# low after CE# falls): the shortfall is at R/B#. RESET completes
    # before R/B# falls, and what follows reaches a busy die.
    assert early == list(range(WAYS)), f"RESET should complete while R/B# is about to fall: {early}"
    assert all(viol.get((w, "busy"), 0) > 0 for w in range(WAYS)), per_check
    await RisingEdge(dut.sys_clk)
