"""cocotb tests of the die emulator (NandLabDie) against the Python reference model and the ONFI rules."""

import os
import random

import cocotb
from cocotb.triggers import RisingEdge

from onfi_bfm import OnfiHost, IF_ASYNC, IF_NVDDR

from nandlab.nand_model import param_page as pp
from nandlab.nand_model.reference import ReferenceDie, flip_position, REASON_NAMES
from die_config import make_config

CFG = make_config()
from nandlab.nand_model.current import PhaseTables
CFG_TABLES = PhaseTables(CFG.part, CFG.sys_clk_freq, CFG.time_scale)
PART = CFG.part
PB = CFG.page_bytes
MODE = int(os.environ.get("NANDLAB_TB_MODE", "0"))


def row(block, page):
    return block << CFG.page_bits | page


def addr_bytes(column, r):
    cols = [column >> (8 * i) & 0xFF for i in range(PART.column_cycles)]
    rows = [r >> (8 * i) & 0xFF for i in range(PART.row_cycles)]
    return cols + rows


async def setup(dut):
    host = OnfiHost(dut)
    for name in ("inject_program_fail", "inject_erase_fail", "flip_row", "flip_count", "time_scale_shift"):
        getattr(dut, name).value = 0
    dut.oe.value = 1
    await host.reset()
    await host.idle(2)
    if MODE == IF_NVDDR:
        await host.set_interface(IF_NVDDR, 5)
    return host


async def read_page(host, r, column=0, n=PB):
    await host.command(0x00)
    await host.address(*addr_bytes(column, r))
    await host.command(0x30)
    await host.wait_ready()
    await host.command(0x00)                # Back to data output after the R/B# wait.
    return (await host.read_data(n))[:n]


async def program_page(host, r, data, column=0):
    await host.command(0x80)
    await host.address(*addr_bytes(column, r))
    await host.write_data(data)
    await host.command(0x10)
    await host.wait_ready()
    return await host.read_status()


async def erase_block(host, block):
    await host.command(0x60)
    await host.address(*addr_bytes(0, row(block, 0))[PART.column_cycles:])
    await host.command(0xD0)
    await host.wait_ready()
    return await host.read_status()


def violations(dut):
    return {n: int(getattr(dut, f"viol_{n}").value) for n in ("t_whr", "t_adl", "t_ccs", "t_rr", "t_wb")}


@cocotb.test()
async def read_id_and_parameter_page(dut):
    host = await setup(dut)
    ref = ReferenceDie(CFG)
    await host.command(0x90)
    await host.address(0x00)
    got = await host.read_data(5)
    ref.command(0x90); ref.address(0x00)
    assert list(got[:5]) == [ref.data_out() for _ in range(5)]
    await host.command(0x90)
    await host.address(0x20)
    assert (await host.read_data(4))[:4] == b"ONFI"
    await host.command(0xEC)
    await host.address(0x00)
    await host.wait_ready()
    data = (await host.read_data(768))[:768]
    # Three identical copies that the parser accepts, describing this die.
    assert data[:256] == data[256:512] == data[512:768]
    page = pp.parse(data)
    assert page.copy == 0
    assert (page.data_bytes_per_page, page.spare_bytes_per_page) == (PART.page_size, PART.spare_size)
    assert (page.pages_per_block, page.blocks_per_lun, page.planes) == (PART.pages_per_block, PART.blocks_per_lun, PART.planes)
    assert violations(dut) == dict.fromkeys(violations(dut), 0)


@cocotb.test()
async def program_read_erase(dut):
    host = await setup(dut)
    rng = random.Random(1)
    r = row(1, 2)
    # Erased pages read FFh (all of them, spare included).
    assert await read_page(host, r) == b"\xff" * PB
    data = bytes(rng.randrange(256) for _ in range(PB))
    status = await program_page(host, r, data)
    assert status & 0x61 == 0x60, hex(status)       # RDY, ARDY, no FAIL.
    assert await read_page(host, r) == data
    # Programming again only clears bits.
    more = bytes(rng.randrange(256) for _ in range(PB))
    await program_page(host, r, more)
    assert await read_page(host, r) == bytes(a & b for a, b in zip(data, more))
    # Partial page with CHANGE WRITE COLUMN; the rest stays FFh.
    r2 = row(1, 3)
    await host.command(0x80)
    await host.address(*addr_bytes(4, r2))
    await host.write_data(b"\x11\x22\x33")
    await host.command(0x85)
    await host.address(*[PART.page_size >> (8 * i) & 0xFF for i in range(PART.column_cycles)])
    await host.write_data(b"\x00\xa5", wait="t_ccs")
    await host.command(0x10)
    await host.wait_ready()
    page = await read_page(host, r2)
    expect = bytearray(b"\xff" * PB)
    expect[4:7] = b"\x11\x22\x33"
    expect[PART.page_size:PART.page_size + 2] = b"\x00\xa5"
    assert page == bytes(expect)
    # CHANGE READ COLUMN into the spare area of the page read last.
    await host.command(0x05)
    await host.address(*[PART.page_size >> (8 * i) & 0xFF for i in range(PART.column_cycles)])
    await host.command(0xE0)
    assert (await host.read_data(2, wait="t_ccs"))[:2] == b"\x00\xa5"
    # Erase brings the block back to FFh.
    assert await erase_block(host, 1) & 0x01 == 0
    assert await read_page(host, r) == b"\xff" * PB
    assert await read_page(host, r2) == b"\xff" * PB
    assert int(dut.ops_program.value) == 3 and int(dut.ops_erase.value) == 1
    assert violations(dut) == dict.fromkeys(violations(dut), 0)


@cocotb.test()
async def failures_and_fault_injection(dut):
    host = await setup(dut)
    reasons = lambda: [int(getattr(dut, f"reason{i}").value) for i in range(len(REASON_NAMES))]
    # Out of range: block past the end.
    bad_row = row(PART.blocks_per_lun, 0)
    await host.command(0x00)
    await host.address(*addr_bytes(0, bad_row))
    await host.command(0x30)
    await host.wait_ready()
    assert await host.read_status() & 0x01
    assert reasons()[0] == 1
    # WP# low: program fails, page unchanged.
    dut_wp = host._levels
    host._levels["wp_n"] = 0
    assert await program_page(host, row(0, 0), b"\x00" * 16) & 0x01
    host._levels["wp_n"] = 1
    assert await read_page(host, row(0, 0), n=16) == b"\xff" * 16
    assert reasons()[1] == 1
    # Factory bad block: marker in spare byte 0 of its first page; erase fails, marker stays.
    bb = CFG.bad_blocks[0]
    spare = await read_page(host, row(bb, 0), column=PART.page_size, n=4)
    assert spare[0] != 0xFF and spare[1:] == b"\xff\xff\xff"
    assert await erase_block(host, bb) & 0x01
    assert (await read_page(host, row(bb, 0), column=PART.page_size, n=1))[0] != 0xFF
    # Injected program and erase failures (the next one only).
    dut.inject_program_fail.value = 1
    await RisingEdge(dut.sys_clk)
    dut.inject_program_fail.value = 0
    assert await program_page(host, row(2, 0), b"\x5a" * 8) & 0x01
    assert await program_page(host, row(2, 0), b"\x5a" * 8) & 0x01 == 0
    dut.inject_erase_fail.value = 1
    await RisingEdge(dut.sys_clk)
    dut.inject_erase_fail.value = 0
    assert await erase_block(host, 2) & 0x01
    assert await erase_block(host, 2) & 0x01 == 0
    assert reasons()[3] == 2
    # Bit flips on reads of one row: exactly the documented positions differ.
    r = row(3, 1)
    data = bytes((i * 7) & 0xFF for i in range(PB))
    await program_page(host, r, data)
    dut.flip_row.value = r
    dut.flip_count.value = 5
    got = await read_page(host, r)
    expect = bytearray(data)
    for i in range(5):
        pos, bit = flip_position(i, PB)
        expect[pos] ^= 1 << bit
    assert got == bytes(expect)
    dut.flip_count.value = 0
    assert await read_page(host, r) == data
    assert violations(dut) == dict.fromkeys(violations(dut), 0)


@cocotb.test()
async def features_and_reset(dut):
    host = await setup(dut)
    await host.command(0xEE)
    await host.address(0x01)
    await host.wait_ready()
    p = await host.read_data(4)
    assert p[0] == (MODE << 4 | (5 if MODE == IF_NVDDR else 0)), p
    assert int(dut.data_interface.value) == MODE
    # RESET keeps the data interface, clears the status.
    await host.command(0xFF)
    await host.wait_ready()
    assert await host.read_status() == 0xE0
    assert int(dut.data_interface.value) == MODE


@cocotb.test()
async def timing_checker_counts_violations(dut):
    host = await setup(dut)
    base = violations(dut)
    assert base == dict.fromkeys(base, 0)
    # tWHR: data out right after the command.
    await host.command(0x70)
    await host.read_data(1, honour=False)
    # tADL: data in right after the last address cycle of PROGRAM.
    await host.command(0x80)
    await host.address(*addr_bytes(0, row(4, 0)))
    await host.write_data(b"\x00", honour=False)
    # tCCS: data in right after CHANGE WRITE COLUMN.
    await host.command(0x85)
    await host.address(*[0] * PART.column_cycles)
    await host.write_data(b"\x00", honour=False)
    # tWB: status polled right after the confirm.
    await host.command(0x10)
    await host.command(0x70)
    await host.wait_ready(honour=False)
    got = violations(dut)
    assert got["t_whr"] >= 1 and got["t_adl"] == 1 and got["t_ccs"] == 1 and got["t_wb"] == 1, got


@cocotb.test()
async def random_stream_against_reference(dut):
    host = await setup(dut)
    ref = ReferenceDie(CFG)
    ref.interface = MODE
    rng = random.Random(int(os.environ.get("NANDLAB_TB_SEED", "7")))
    blocks = [b for b in range(PART.blocks_per_lun) if b not in CFG.bad_blocks]
    # The array keeps what earlier tests wrote: start both from erased blocks.
    for b in blocks:
        assert await erase_block(host, b) & 0x01 == 0
    for step in range(int(os.environ.get("NANDLAB_TB_STEPS", "40"))):
        op = rng.choice(["read", "read", "program", "program", "erase", "status", "column"])
        b, pg = rng.choice(blocks), rng.randrange(PART.pages_per_block)
        r = row(b, pg)
        if op == "read":
            col = rng.randrange(PB)
            n = rng.randrange(1, 64)
            got = await read_page(host, r, column=col, n=n)
            ref.command(0x00)
            for a in addr_bytes(col, r):
                ref.address(a)
            ref.command(0x30)
            ref.advance(10**9)
            ref.command(0x00)
            exp = bytes(ref.data_out() for _ in range(n))
            assert got == exp, (step, op, r, col, got.hex(), exp.hex())
        elif op == "program":
            col = rng.randrange(PB - 1)
            data = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 96)))
            data = data[:PB - col]
            status = await program_page(host, r, data, column=col)
            ref.command(0x80)
            for a in addr_bytes(col, r):
                ref.address(a)
            for d in data:
                ref.data_in(d)
            ref.command(0x10)
            ref.advance(10**9)
            assert status == ref.status(), (step, hex(status), hex(ref.status()))
        elif op == "erase":
            status = await erase_block(host, b)
            ref.command(0x60)
            for a in addr_bytes(0, row(b, 0))[PART.column_cycles:]:
                ref.address(a)
            ref.command(0xD0)
            ref.advance(10**9)
            assert status == ref.status()
        elif op == "status":
            assert await host.read_status() == ref.status()
        else:
            # Full-page comparison of one page.
            got = await read_page(host, r)
            exp = bytes(ref.pages.get(r, b"\xff" * PB))
            assert got == exp, (step, "page", r)
    assert violations(dut) == dict.fromkeys(violations(dut), 0)


@cocotb.test()
async def power_hook_and_current(dut):
    from nandlab.nand_model.current import ATOMIC_IDS
    host = await setup(dut)
    assert int(dut.current.value) == 0          # Idle die, no bus traffic.
    # OE low: the erase waits at its first phase with OI up, R/B# low, no array current.
    dut.oe.value = 0
    await host.command(0x60)
    await host.address(*addr_bytes(0, row(6, 0))[PART.column_cycles:])
    await host.command(0xD0)
    for _ in range(200):
        _, _, rb = await host.cycle()
        assert rb & 1 == 0
    assert int(dut.oi.value) == ATOMIC_IDS["E_A1"] << 4 | 1 and int(dut.oi_first.value) == 1
    assert int(dut.current.value) == 0
    # Granted: the phases run, each ends with a pulse, current follows the erase waveform.
    dut.oe.value = 1
    ends, peak, seen = 0, 0, set()
    while True:
        _, _, rb = await host.cycle()
        ends += int(dut.phase_end.value)
        peak = max(peak, int(dut.current.value))
        seen.add(int(dut.oi.value) >> 4)
        if rb & 1:
            break
    assert ends == len(CFG_TABLES.phases("erase"))
    assert peak == max(CFG_TABLES.expand("erase"))
    assert seen >= {ATOMIC_IDS["E_A1"], ATOMIC_IDS["E_A2"]}
    # Bus transfers add current while data moves.
    await host.command(0x90)
    await host.address(0x00)
    assert (await host.read_data(1))[0] == 0x9A
