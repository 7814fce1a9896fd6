"""cocotb tests of the die emulator (NandLabDie) against the Python reference model and the ONFI rules."""

import os
import random

import cocotb
from cocotb.triggers import ClockCycles, FallingEdge, First, RisingEdge

from onfi_bfm import OnfiHost, IF_ASYNC, IF_NVDDR, IF_SYNC

from nandlab.nand_model import param_page as pp
from nandlab.nand_model.die import TIMING_CHECKS
from nandlab.nand_model.reference import ReferenceDie, flip_position, REASON_NAMES
from nandlab.testing import die_test_config as make_config

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


WB_MEMORY = None


class WishboneMemory:
    """Wishbone slave with 0-4 random wait states, starting full of garbage; word addressed."""
    def __init__(self, dut, seed=3):
        self.dut, self.rng, self.mem = dut, random.Random(seed), {}
        self.requests = 0

    async def serve(self):
        """Run for one test (cocotb ends a test's tasks with it; the memory stays)."""
        dut = self.dut
        dut.wb_ack.value = 0
        dut.wb_dat_r.value = 0
        wait = None
        while True:
            await FallingEdge(dut.sys_clk)
            if int(dut.wb_ack.value):
                dut.wb_ack.value = 0          # Taken at the rising edge just gone.
                wait = None
                continue
            if not (int(dut.wb_cyc.value) and int(dut.wb_stb.value)):
                wait = None
                # Nothing asked: sleep until the master raises CYC or STB (after a rising edge), then look
                # at the next falling edge as a per-cycle poll would.
                await First(RisingEdge(dut.wb_cyc), RisingEdge(dut.wb_stb))
                continue
            if wait is None:
                wait = self.rng.randrange(5)
            if wait:
                await ClockCycles(dut.sys_clk, wait, FallingEdge)
                wait = 0
                if not (int(dut.wb_cyc.value) and int(dut.wb_stb.value)):
                    wait = None
                    continue
            adr = int(dut.wb_adr.value)
            old = self.mem.get(adr, self.rng.randrange(1 << 32))
            if int(dut.wb_we.value):
                sel, new = int(dut.wb_sel.value), int(dut.wb_dat_w.value)
                mask = sum(0xFF << (8 * b) for b in range(4) if sel >> b & 1)
                self.mem[adr] = (old & ~mask) | (new & mask)
            else:
                self.mem[adr] = old
                dut.wb_dat_r.value = old
            self.requests += 1
            dut.wb_ack.value = 1


SIM_STORAGE = None


class SimStorage:
    """What the litex_sim module `nandstore` does for a die (storage="sim"): an asynchronous-read
    array outside the design, erased with the factory bad-block markers. Once a cycle, with the
    cycle's levels settled (the module: after the rising edge is evaluated; here: at the falling
    edge), the write is applied, then the word at the read address is driven back."""
    def __init__(self, dut):
        from nandlab.nand_model.die.common import bad_block_markers
        self.dut, self.mem = dut, dict(bad_block_markers(CFG))
        self.reads = self.writes = 0

    async def serve(self):
        """Run for one test (the array stays for the next)."""
        dut = self.dut
        while True:
            await FallingEdge(dut.sys_clk)
            if int(dut.sim_wr_en.value):
                self.mem[int(dut.sim_wr_adr.value)] = int(dut.sim_wr_data.value)
                self.writes += 1
            if int(dut.sim_rd_en.value):
                dut.sim_rd_data.value = self.mem.get(int(dut.sim_rd_adr.value), 0xFFFFFFFF)
                self.reads += 1


async def setup(dut):
    host = OnfiHost(dut)
    global WB_MEMORY, SIM_STORAGE
    if hasattr(dut, "wb_cyc"):
        WB_MEMORY = WB_MEMORY or WishboneMemory(dut)
        cocotb.start_soon(WB_MEMORY.serve())
    if hasattr(dut, "sim_rd_en"):
        SIM_STORAGE = SIM_STORAGE or SimStorage(dut)
        cocotb.start_soon(SIM_STORAGE.serve())
    for name in ("inject_program_fail", "inject_erase_fail", "flip_row", "flip_count", "flip_rate", "time_scale_shift"):
        getattr(dut, name).value = 0
    dut.oe.value = 1
    dut.arch.value = 0
    dut.mpnfm.value = 0
    await host.reset()
    await host.wait_ready(honour=False)        # A die formatting its storage is busy after reset.
    await host.idle(2)
    if MODE in (IF_NVDDR, IF_SYNC):
        await host.set_interface(MODE, 5)
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
    return {n: int(getattr(dut, f"viol_{n}").value) for n in TIMING_CHECKS}


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
    assert p[0] == (MODE << 4 | (5 if MODE != IF_ASYNC else 0)), p
    assert int(dut.data_interface.value) == MODE
    # RESET keeps the data interface, clears the status.
    await host.command(0xFF)
    await host.wait_ready()
    assert await host.read_status() == 0xE0
    assert int(dut.data_interface.value) == MODE
    # READ STATUS ENHANCED: the status of the LUN the row address names.
    await host.command(0x78)
    await host.address(*addr_bytes(0, row(1, 0))[PART.column_cycles:])
    assert (await host.read_data(1))[0] == 0xE0


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
    await host.wait_ready()
    # A command the die cannot take while busy (after tWB: R/B# is low).
    await host.command(0x60)
    await host.address(*addr_bytes(0, row(6, 0))[PART.column_cycles:])
    await host.command(0xD0)
    await host.idle(host.ns(host.t["t_wb"]))
    await host.command(0x90)
    await host.wait_ready()
    # tCS: a command latched right after CE# fell.
    await host.deselect()
    host.honour_cs = False
    await host.command(0x70)
    host.honour_cs = True
    await host.read_data(1)
    assert violations(dut)["t_rhw"] == 0
    # tRHW: a command right after the end of a data output (and one that waits tRHW: no violation).
    host.honour_rhw = False
    await host.command(0x70)
    host.honour_rhw = True
    await host.read_data(1)
    await host.command(0x70)
    await host.read_data(1)
    got = violations(dut)
    assert got["t_whr"] >= 1 and got["t_adl"] == 1 and got["t_ccs"] == 1 and got["t_wb"] == 1, got
    assert got["busy"] == 1 and got["t_cs"] == 1 and got["t_rr"] == 0 and got["t_rhw"] == 1, got


@cocotb.test()
async def rb_falls_at_twb_max(dut):
    """R/B# falls tWB max after the confirm's latching edge (as late as ONFI allows: a host that samples
    it earlier takes a busy die for ready), in the mode the die is in; the host that waits tWB sees it."""
    host = await setup(dut)
    t_wb = host.t["t_wb"]
    await host.command(0x60)
    await host.address(*addr_bytes(0, row(6, 0))[PART.column_cycles:])
    await host.command(0xD0)
    # The confirm was latched 2 cycles before the command returned (see OnfiHost._latch).
    n = 2
    while (await host.cycle())[2] & 1:
        n += 1
        assert n < 100, "R/B# never fell"
    assert n * host.period <= t_wb < (n + 1) * host.period, (n, t_wb)
    await host.wait_ready()
    assert await host.read_status() == 0xE0
    assert violations(dut) == dict.fromkeys(TIMING_CHECKS, 0), violations(dut)


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

    def ref_cmd(c, *addr, data=()):
        ref.command(c)
        for a in addr:
            ref.address(a)
        for d in data:
            ref.data_in(d)

    for step in range(int(os.environ.get("NANDLAB_TB_STEPS", "60"))):
        op = rng.choice(["read", "read", "program", "program", "erase", "status", "column",
                         "arch", "mp_program", "mp_read", "cache_read"])
        b, pg = rng.choice(blocks), rng.randrange(PART.pages_per_block)
        r = row(b, pg)
        where = (step, op, hex(r))
        if op == "arch":
            arch = rng.randrange(3)
            dut.arch.value = arch
            ref.set_arch(arch)
        elif op == "read":
            col = rng.randrange(PB)
            n = rng.randrange(1, 64)
            got = await read_page(host, r, column=col, n=n)
            ref_cmd(0x00, *addr_bytes(col, r))
            ref.command(0x30)
            ref.advance(10**9)
            ref.command(0x00)
            exp = bytes(ref.data_out() for _ in range(n))
            assert got == exp, (where, got.hex(), exp.hex())
        elif op == "program":
            col = rng.randrange(PB - 1)
            data = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 96)))[:PB - col]
            status = await program_page(host, r, data, column=col)
            ref_cmd(0x80, *addr_bytes(col, r), data=data)
            ref.command(0x10)
            ref.advance(10**9)
            assert status == ref.status(), (where, hex(status), hex(ref.status()))
        elif op == "erase":
            status = await erase_block(host, b)
            ref_cmd(0x60, *addr_bytes(0, row(b, 0))[PART.column_cycles:])
            ref.command(0xD0)
            ref.advance(10**9)
            assert status == ref.status(), where
        elif op == "status":
            assert await host.read_status() == ref.status(), where
        elif op in ("mp_program", "mp_read"):
            # Two to four pages at random: legal or not, die and model must agree.
            rows = [row(rng.choice(blocks), rng.randrange(PART.pages_per_block))
                    for _ in range(rng.randrange(2, 5))]
            kind = "program" if op == "mp_program" else "read"
            datas = [bytes(rng.randrange(256) for _ in range(16)) if kind == "program" else None for _ in rows]
            status = await _queue(host, kind, list(zip(rows, datas)), 0x10 if kind == "program" else 0x30)
            for k, (rr, d) in enumerate(zip(rows, datas)):
                last = k == len(rows) - 1
                ref_cmd(0x80 if kind == "program" else 0x00, *addr_bytes(0, rr), data=d or ())
                ref.command((0x10 if kind == "program" else 0x30) if last else (0x11 if kind == "program" else 0x32))
                ref.advance(10**9)
            assert status == ref.status(), (where, [hex(x) for x in rows], hex(status), hex(ref.status()))
            if kind == "read" and not status & 0x01:
                rr = rng.choice(rows)
                got = await _read_register(host, rr, 16)
                ref_cmd(0x06, *addr_bytes(0, rr))
                ref.command(0xE0)
                assert got == bytes(ref.data_out() for _ in range(16)), (where, hex(rr))
        elif op == "cache_read":
            pg0 = rng.randrange(PART.pages_per_block - 1)
            r0 = row(b, pg0)
            await host.command(0x00)
            await host.address(*addr_bytes(0, r0))
            await host.command(0x30)
            await host.wait_ready()
            ref_cmd(0x00, *addr_bytes(0, r0))
            ref.command(0x30)
            ref.advance(10**9)
            for k in range(PART.pages_per_block - pg0):
                c = 0x3F if k == PART.pages_per_block - pg0 - 1 else 0x31
                await host.command(c)
                await host.wait_ready()
                ref.command(c)
                ref.advance(10**9)
                got = (await host.read_data(16))[:16]
                assert got == bytes(ref.data_out() for _ in range(16)), (where, k)
        else:
            got = await read_page(host, r)
            exp = bytes(ref.pages.get(r, b"\xff" * PB))
            assert got == exp, (where, "page")
    # Every failure the model counted by reason, the die counted too (the counters started at
    # zero with this test's reset; the model saw only this test's stream).
    die_reasons = [int(getattr(dut, f"reason{i}").value) for i in range(len(REASON_NAMES))]
    assert die_reasons[:7] == ref.reasons[:7], (die_reasons, ref.reasons)
    assert sum(die_reasons[4:7]) > 0          # the stream did hit multi-plane rules
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
    await host.idle(host.ns(host.t["t_wb"]))    # (R/B# falls as late as tWB max)
    for _ in range(200):
        _, _, rb = await host.cycle()
        assert rb & 1 == 0
    assert int(dut.oi.value) == ATOMIC_IDS["E_A1"] << 4 | 1 and int(dut.oi_first.value) == 1
    assert int(dut.current.value) == 0
    # Granted: the phases run, each ends with a pulse, current follows the erase waveform.
    dut.oe.value = 1
    dut.arch.value = 0
    dut.mpnfm.value = 0
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


async def _queue(host, kind, entries, final):
    """Multi-plane sequence: entries [(row, data or None)], each confirmed with the multi-plane
    command except the last (final command)."""
    mp = {"program": 0x11, "read": 0x32, "erase": 0xD1}[kind]
    for k, (r, data) in enumerate(entries):
        last = k == len(entries) - 1
        if kind == "erase":
            await host.command(0x60)
            await host.address(*addr_bytes(0, r)[PART.column_cycles:])
        else:
            await host.command(0x80 if kind == "program" else 0x00)
            await host.address(*addr_bytes(0, r))
            if data is not None:
                await host.write_data(data)
        await host.command(final if last else mp)
        await host.wait_ready()
    return await host.read_status()


async def _read_register(host, r, n):
    """CHANGE READ COLUMN ENHANCED: data out of the register that holds row r."""
    await host.command(0x06)
    await host.address(*addr_bytes(0, r))
    await host.command(0xE0)
    return (await host.read_data(n, wait="t_ccs"))[:n]


@cocotb.test()
async def multiplane_architectures(dut):
    from nandlab.nand_model.reference import REASON_PLANE_ADDR, REASON_PLANE_REPEAT
    host = await setup(dut)
    reasons = lambda: [int(getattr(dut, f"reason{i}").value) for i in range(len(REASON_NAMES))]
    # The die's multi-plane counters (mp_<op><pages>, 2 .. 8 page registers with SDW built).
    mp = lambda: {(op, k): int(getattr(dut, f"mp_{op}{k}").value)
                  for op in ("read", "program", "erase") for k in range(2, 9)}
    rng = random.Random(3)
    for b in (0, 1, 2, 3, 4, 6, 7):
        await erase_block(host, b)
    mp_before = mp()
    n = 64
    # CNFM: both planes at the same page address run together.
    dut.arch.value = 0
    a, b = row(0, 2), row(1, 2)
    da, db = bytes(rng.randrange(256) for _ in range(n)), bytes(rng.randrange(256) for _ in range(n))
    assert await _queue(host, "program", [(a, da), (b, db)], 0x10) & 0x01 == 0
    assert await _queue(host, "read", [(a, None), (b, None)], 0x30) & 0x01 == 0
    assert await _read_register(host, a, n) == da
    assert await _read_register(host, b, n) == db
    # CNFM refuses different page addresses; the pages stay erased.
    before = reasons()
    assert await _queue(host, "program", [(row(0, 1), da), (row(1, 3), db)], 0x10) & 0x01
    assert reasons()[REASON_PLANE_ADDR] == before[REASON_PLANE_ADDR] + 1
    assert await read_page(host, row(0, 1), n=n) == b"\xff" * n
    # DW-NFM: decoupled word lines, different pages of one type are fine.
    dut.arch.value = 1
    assert await _queue(host, "program", [(row(0, 1), da), (row(1, 3), db)], 0x10) & 0x01 == 0
    assert await read_page(host, row(1, 3), n=n) == db
    # The same plane twice is refused under every architecture.
    assert await _queue(host, "program", [(row(2, 0), da), (row(0, 0), db)], 0x10) & 0x01
    assert reasons()[REASON_PLANE_REPEAT] == before[REASON_PLANE_REPEAT] + 1
    # SDW-NFM: one page in each of the 8 subplanes (2 planes x 4), all at once.
    dut.arch.value = 2
    blocks = [0, 2, 4, 6, 1, 3, 7]        # block 5 is the factory bad block
    datas = [bytes(rng.randrange(256) for _ in range(n)) for _ in blocks]
    entries = [(row(bk, 0), d) for bk, d in zip(blocks, datas)]
    assert await _queue(host, "program", entries, 0x10) & 0x01 == 0
    assert await _queue(host, "read", [(r, None) for r, _ in entries], 0x30) & 0x01 == 0
    for r, d in entries:
        assert await _read_register(host, r, n) == d, hex(r)
    # Two pages in one subplane are refused in SDW-NFM (blocks 0 and 2 share plane 0... not a
    # subplane: they are in subplanes 0 and 1); blocks 0 and 0 would be the same register.
    assert await _queue(host, "read", [(row(0, 1), None), (row(0, 2), None)], 0x30) & 0x01
    # Multi-plane erase of two blocks.
    dut.arch.value = 0
    assert await _queue(host, "erase", [(row(0, 0), None), (row(1, 0), None)], 0xD0) & 0x01 == 0
    assert await read_page(host, row(0, 1), n=n) == b"\xff" * n
    assert await read_page(host, row(1, 3), n=n) == b"\xff" * n
    # Counted: the operations that ran, by page count; refused ones and single pages are not.
    started = {("program", 2): 2, ("read", 2): 1, ("program", 7): 1, ("read", 7): 1, ("erase", 2): 1}
    assert {k: v - mp_before[k] for k, v in mp().items() if v != mp_before[k]} == started
    assert violations(dut) == dict.fromkeys(violations(dut), 0)


@cocotb.test()
async def cache_read_and_program(dut):
    host = await setup(dut)
    dut.arch.value = 0
    rng = random.Random(11)
    n = 48
    await erase_block(host, 2)
    await erase_block(host, 3)
    pages = [bytes(rng.randrange(256) for _ in range(n)) for _ in range(PART.pages_per_block)]
    # PROGRAM CACHE: pages 0..2 with 15h, the last with 10h.
    for pg, data in enumerate(pages):
        await host.command(0x80)
        await host.address(*addr_bytes(0, row(2, pg)))
        await host.write_data(data)
        await host.command(0x15 if pg < len(pages) - 1 else 0x10)
        await host.wait_ready()
    assert await host.read_status() & 0x01 == 0
    # READ CACHE SEQUENTIAL through the block, READ CACHE END for the last page.
    await host.command(0x00)
    await host.address(*addr_bytes(0, row(2, 0)))
    await host.command(0x30)
    await host.wait_ready()
    got = []
    for pg in range(len(pages)):
        last = pg == len(pages) - 1
        seq0 = int(dut.reason7.value)
        await host.command(0x3F if last else 0x31)
        await host.idle(2)
        assert int(dut.reason7.value) == seq0, "cache command refused"
        await host.wait_ready()
        if pg == 0:
            # The next page is still moving into the other register: ready, array busy.
            assert await host.read_status() & 0x60 == 0x40
            await host.command(0x00)
        got.append((await host.read_data(n))[:n])
    assert got == pages
    # Without a READ first, 31h is a sequence error and changes nothing.
    seq_before = int(dut.reason7.value)
    await host.command(0x80)
    await host.address(*addr_bytes(0, row(3, 0)))
    await host.command(0x31)
    await host.idle(2)
    assert int(dut.reason7.value) == seq_before + 1
    await host.command(0xFF)
    await host.wait_ready()
    assert violations(dut) == dict.fromkeys(violations(dut), 0)


@cocotb.test()
async def random_flips_at_a_rate(dut):
    host = await setup(dut)                  # reset: the LFSR starts from its seed
    ref = ReferenceDie(CFG)
    r = row(4, 1)
    await erase_block(host, 4)
    data = bytes((i * 13 + 5) & 0xFF for i in range(PB))
    await program_page(host, r, data)
    ref.pages[r] = bytearray(data)
    rate = 0x2000                            # 1 word in 8
    dut.flip_rate.value = rate
    ref.flip_rate = rate
    flipped_bits = 0
    for _ in range(3):
        got = await read_page(host, r)
        ref.command(0x00)
        for a in addr_bytes(0, r):
            ref.address(a)
        ref.command(0x30)
        ref.advance(10**9)
        ref.command(0x00)
        exp = bytes(ref.data_out() for _ in range(PB))
        assert got == exp
        flipped_bits += sum(bin(a ^ b).count("1") for a, b in zip(got, data))
    words = 3 * PB // 4
    assert 0.5 * words / 8 < flipped_bits < 1.5 * words / 8, flipped_bits
    dut.flip_rate.value = 0
    assert await read_page(host, r) == data


@cocotb.test()
async def mpnfm_two_page_sizes(dut):
    host = await setup(dut)
    small = PART.small_page_size + PART.small_spare_size
    # The parameter page announces the small pages of plane 1 (nandlab's vendor extension).
    await host.command(0xEC)
    await host.address(0x00)
    await host.wait_ready()
    page = pp.parse((await host.read_data(768))[:768])
    assert page.mpnfm == (PART.small_page_size, PART.small_spare_size, 1)
    await erase_block(host, 2)                 # plane 0
    await erase_block(host, 3)                 # plane 1
    dut.mpnfm.value = 1
    data = bytes((i * 3 + 1) & 0xFF for i in range(small + 64))
    # Plane 1 (small pages): bytes past the small page are ignored on input and read as 00h.
    await program_page(host, row(3, 0), data)
    got = await read_page(host, row(3, 0), n=small + 64)
    assert got[:small] == data[:small] and got[small:] == bytes(64)
    # Plane 0 keeps the large page.
    await program_page(host, row(2, 0), data)
    assert await read_page(host, row(2, 0), n=small + 64) == data
    # Off again: plane 1 is a full page (the bytes ignored before are erased, FFh).
    dut.mpnfm.value = 0
    got = await read_page(host, row(3, 0), n=small + 64)
    assert got[:small] == data[:small] and got[small:] == b"\xff" * 64


@cocotb.test()
async def page_register_generations(dut):
    """The page register clear of 80h is a generation step: stale words read FFh however many clears
    have passed (the scrubber re-stamps them), and a burst of clears faster than the scrubber is
    counted, never silent."""
    host = await setup(dut)
    rng = random.Random(7)
    full = bytes(rng.randrange(256) for _ in range(PB))
    # Plane 0's register: a full page, then fifteen partial programs of other pages and one more of
    # the first page, no reads between (a read refills the register): the sixteenth clear brings
    # the full page's generation round again.
    blocks = [b for b in range(0, PART.blocks_per_lun, 2) if b not in CFG.bad_blocks][:4]
    pages = [row(b, p) for b in blocks for p in range(PART.pages_per_block)]
    assert len(pages) == 16
    for b in blocks:
        await erase_block(host, b)
    assert await program_page(host, pages[0], full) & 0x01 == 0
    await erase_block(host, blocks[0])
    expected = {}
    for k, r in enumerate(pages[1:] + [pages[0]]):
        column = (k * 131) % (PB - 8)
        chunk = bytes(rng.randrange(256) for _ in range(5))
        assert await program_page(host, r, chunk, column=column) & 0x01 == 0
        expect = bytearray(b"\xff" * PB)
        expect[column:column + 5] = chunk
        expected[r] = bytes(expect)
    for r, expect in expected.items():
        assert await read_page(host, r) == expect, hex(r)
    assert int(dut.reg_overruns.value) == 0
    # Program setups without data, back to back: more clears than two scrubber sweeps allow. With
    # the program below, 48 clears since the last pass stamped every word: a multiple of 16.
    for _ in range(47):
        await host.command(0x80)
        await host.address(*addr_bytes(0, pages[1]))
    await host.command(0xFF)
    await host.wait_ready()
    assert int(dut.reg_overruns.value) > 0
    # After a sweep the register is clean again: the words of the last partial program, stamped
    # 48 clears ago, read FFh.
    await host.idle(4 * PB)
    await erase_block(host, blocks[0])
    assert await program_page(host, pages[0], b"\x12\x34", column=100) & 0x01 == 0
    expect = bytearray(b"\xff" * PB)
    expect[100:102] = b"\x12\x34"
    assert await read_page(host, pages[0]) == bytes(expect)
    assert violations(dut) == dict.fromkeys(violations(dut), 0)
