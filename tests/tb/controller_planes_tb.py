"""cocotb tests of the channel controller's multi-plane operations and way interleaving.

Multi-plane: under each plane architecture (CNFM, DW-NFM, SDW-NFM) every way runs its own script of
multi-plane programs, reads and erases, the ways' descriptors interleaved on the bus. Each descriptor
also runs, as the ONFI sequence it stands for, on a reference die per way (nand_model/reference.py):
completions, status bytes and data must match it; every case says whether the architecture accepts
it (and if not, for which reason), which the reference must confirm; pages read back must hold what
a plain model of the array (program ANDs, erase clears) says. A refused multi-plane program or erase
completes NAND_FAIL; a refused multi-plane READ completes like any READ (it reads no status, its data
is what the registers held), so its FAIL is checked with READ STATUS, as firmware has to.

Every completion's result matches the reference's exactly, including descriptors that read no
status (they complete OK), and every page is compared whole (all PAGE bytes, spare included), the
registers a multi-plane READ filled besides the last one as well.

Two regression tests, each on the smallest case showing a former bug:
* no_status_from_another_way: a READ on one way completes OK with status 00h while another way's
  program fails meanwhile (the controller once completed a descriptor that reads no status with the
  status byte another way had read).
* multiplane_read_whole_registers: every register a multi-plane READ fills holds the whole page, its
  last 32-bit word included (the die emulator once wrote that word of every register but the last
  one's into the next plane's register).

Interleaving: batches of page programs and reads spread round robin over N ways are timed against the
part's array times and the bus rate, the dies' busy outputs are sampled every cycle while data moves,
and the data read back is compared.
"""

import os
import random
from itertools import zip_longest

import cocotb
from cocotb.triggers import RisingEdge, ReadOnly
from cocotb.utils import get_sim_time

from controller_tb import Channel, ok, switch

from nandlab.gateware.onfi import common as onfi
from nandlab.gateware.onfi.controller import transfer_bytes_per_s
from nandlab.nand_model.current import PhaseTables
from nandlab.nand_model.parts import DWSDWPaperMLC
from nandlab.nand_model.reference import DieConfig, ReferenceDie, ARCH_CNFM, ARCH_DW, ARCH_SDW, ARCH_NAMES, \
    REASON_PLANE_ADDR, REASON_PAGE_TYPE, REASON_PLANE_REPEAT, REASON_BAD_BLOCK, REASON_NAMES


def planes_test_config():
    """The DW/SDW-NFM paper's MLC part (even pages LSB, odd pages MSB; its tR, tPROG and tBERS, not
    scaled: tests divide them at run time), with the die tests' 2 KiB pages and 8 blocks of 4 pages
    to keep the simulation short; SDW-NFM subplane registers built (one block per subplane), block 5
    factory bad."""
    part = DWSDWPaperMLC(page_size=2048, spare_size=64).scaled(blocks_per_lun=8, pages_per_block=4)
    return DieConfig(part, bad_blocks=(5,), with_sdw=True)


CFG = planes_test_config()
PART = CFG.part
PAGE = CFG.page_bytes
WAYS = int(os.environ.get("NANDLAB_TB_WAYS", "4"))
MEM_BYTES = int(os.environ.get("NANDLAB_TB_MEM_BYTES", "131072"))
CLK_HZ = CFG.sys_clk_freq
ERASED = b"\xff" * PAGE
FAIL = onfi.STATUS_FAIL


def row(block, page=0):
    return block << CFG.page_bits | page


def cyc(ns):
    """Cycles the controller waits for `ns` (rounded up, as it rounds its delays)."""
    return max(1, -(-int(ns * CLK_HZ) // 10**9))


async def setup(dut, arch=ARCH_CNFM):
    """Clock, reset, RESET on every way, then NV-DDR mode 5 on dies and controller."""
    ch = Channel(dut)
    await ch.start()
    dut.page_bytes.value, dut.page_bits.value, dut.blocks.value = PAGE, CFG.page_bits, PART.blocks_per_lun
    dut.arch.value = arch
    tags = [await ch.submit("RESET", w) for w in range(WAYS)]
    assert all(r[0] == "OK" for r in await ch.wait(*tags))
    await switch(ch, onfi.IF_NVDDR, 5)
    return ch


def no_violations(ch, where):
    viol = {k: v for k, v in ch.violations().items() if v}
    assert not viol, f"{where}: timing violations {viol}"


# Multi-plane -----------------------------------------------------------------------------------------

class Scoreboard:
    """A reference die per way; `run` plays a descriptor's ONFI sequence on the way's die and gives
    the completion it should have: (result, status byte or None, data out)."""
    def __init__(self, ways):
        self.dies = [ReferenceDie(CFG) for _ in range(ways)]

    def set_arch(self, arch):
        for die in self.dies:
            die.set_arch(arch)

    def run(self, op, way, row=0, col=0, length=0, data=b""):
        die = self.dies[way]
        c = onfi
        cols = [col >> 8 * i & 0xFF for i in range(PART.column_cycles)]
        rows = [row >> 8 * i & 0xFF for i in range(PART.row_cycles)]

        def seq(*cmd_addr):
            die.command(cmd_addr[0])
            for a in cmd_addr[1:]:
                die.address(a)

        def ready():                            # The controller waits for R/B#.
            die.advance(10**9)

        def status():
            die.command(c.CMD_READ_STATUS)
            return die.data_out()

        st, out = None, b""
        if op == "RESET":
            die.command(c.CMD_RESET)
            ready()
        elif op in ("READ", "READ_MULTIPLANE"):
            seq(c.CMD_READ, *cols, *rows)
            die.command(c.CMD_READ_CONFIRM if op == "READ" else c.CMD_READ_MULTIPLANE)
            ready()
            out = bytes(die.data_out() for _ in range(length)) if op == "READ" else b""
        elif op == "READ_COLUMN_ENH":
            seq(c.CMD_CHANGE_READ_COL_ENH, *cols, *rows)
            die.command(c.CMD_CHANGE_READ_COL_2)
            out = bytes(die.data_out() for _ in range(length))
        elif op in ("PROGRAM", "PROGRAM_MULTIPLANE"):
            seq(c.CMD_PROGRAM, *cols, *rows)
            for b in data:
                die.data_in(b)
            die.command(c.CMD_PROGRAM_CONFIRM if op == "PROGRAM" else c.CMD_PROGRAM_MULTIPLANE)
            ready()
            st = status() if op == "PROGRAM" else None
        elif op in ("ERASE", "ERASE_MULTIPLANE"):
            seq(c.CMD_ERASE, *rows)
            die.command(c.CMD_ERASE_CONFIRM if op == "ERASE" else c.CMD_ERASE_MULTIPLANE)
            ready()
            st = status() if op == "ERASE" else None
        elif op == "READ_STATUS":
            st = status()
        else:
            raise ValueError(op)
        return ("NAND_FAIL" if st is not None and st & FAIL else "OK"), st, out


class Checked:
    """The channel and the scoreboard side by side: `batch` submits descriptors in order (the ways'
    programs interleave on the bus), then checks every completion (way; result and status byte where
    the operation reads the status) and every data out against the reference."""
    def __init__(self, ch, ways):
        self.ch = ch
        self.ref = Scoreboard(ways)

    async def batch(self, descs, where):
        ch, pending, addr = self.ch, [], 0
        for op, way, kw in descs:
            kw = dict(kw)
            data = kw.pop("data", b"")
            length = kw.pop("length", len(data))
            if data:
                await ch.write_mem(addr, data)
            exp = self.ref.run(op, way, length=length, data=data, **kw)
            tag = await ch.submit(op, way, length=length, addr=addr, **kw)
            pending.append((tag, op, way, kw, addr, exp))
            addr += -(-length // 8) * 8
            assert addr <= MEM_BYTES, f"{where}: the batch needs more buffer memory"
        cpls = await ch.wait(*[p[0] for p in pending])
        outs = []
        for (tag, op, way, kw, addr, (res, st, out)), (got_res, got_way, got_st) in zip(pending, cpls):
            what = f"{where}: {op} way {way} row 0x{kw.get('row', 0):x}"
            assert got_way == way, f"{what}: completed for way {got_way}"
            if st is not None:
                assert (got_res, got_st) == (res, st), \
                    f"{what}: {got_res}, status 0x{got_st:02x}; reference {res}, 0x{st:02x}"
            else:
                # No status read: the result is the reference's (OK) whatever other ways read meanwhile.
                assert got_res == res, f"{what}: {got_res}, status 0x{got_st:02x}; reference {res}"
            got = await ch.read_mem(addr, len(out)) if out else b""
            if got != out:
                bad = [i for i in range(len(out)) if got[i] != out[i]]
                raise AssertionError(f"{what}: data differs from the reference at {len(bad)} bytes, first "
                                     f"{[(i, hex(got[i]), hex(out[i])) for i in bad[:8]]} (byte, got, reference)")
            outs.append((got_res, got_st, got))
        return outs


# Per architecture, a script per way: cases run in rounds (case k of every way together, their
# descriptors interleaved). A case: (kind, [(block, page), ...], None if the architecture accepts the
# combination, else the reason it refuses it). One entry is a single-plane operation (fills pages).
# Planes are block & 1, subplanes (SDW-NFM) block >> 1, page type page & 1; block 5 is bad.
OK_ = None
SCRIPTS = {
    ARCH_CNFM: [
        [("program", [(2, 1), (3, 1)], OK_), ("read", [(2, 1), (3, 1)], OK_), ("erase", [(2, 0), (3, 0)], OK_)],
        [("program", [(0, 0), (1, 2)], REASON_PLANE_ADDR), ("program", [(0, 0)], OK_), ("program", [(1, 2)], OK_),
         ("read", [(0, 0), (1, 2)], REASON_PLANE_ADDR), ("erase", [(0, 0), (2, 0)], REASON_PLANE_REPEAT)],
        [("program", [(0, 1), (2, 1)], REASON_PLANE_REPEAT), ("program", [(4, 0)], OK_),
         ("erase", [(4, 0), (5, 0)], REASON_BAD_BLOCK), ("read", [(4, 0), (7, 0)], OK_)],
        [("program", [(6, 3), (7, 3)], OK_), ("read", [(7, 3), (6, 3)], OK_),
         ("read", [(6, 3), (7, 2)], REASON_PLANE_ADDR), ("erase", [(7, 0), (6, 0)], OK_)],
    ],
    ARCH_DW: [
        # Different pages of one type on the two planes: refused by CNFM above, accepted here.
        [("program", [(0, 0), (1, 2)], OK_), ("read", [(1, 2), (0, 0)], OK_), ("erase", [(0, 0), (1, 0)], OK_)],
        [("program", [(0, 1), (1, 2)], REASON_PAGE_TYPE), ("program", [(0, 1)], OK_), ("program", [(1, 2)], OK_),
         ("read", [(0, 1), (1, 2)], REASON_PAGE_TYPE)],
        [("program", [(0, 1), (2, 3)], REASON_PLANE_REPEAT), ("program", [(0, 3)], OK_), ("program", [(2, 3)], OK_),
         ("erase", [(0, 0), (2, 0)], REASON_PLANE_REPEAT), ("read", [(0, 3), (2, 3)], REASON_PLANE_REPEAT)],
        [("program", [(6, 1), (7, 3)], OK_), ("read", [(7, 3), (6, 1)], OK_),
         ("erase", [(5, 0), (6, 0)], REASON_BAD_BLOCK)],
    ],
    ARCH_SDW: [
        # Four subplanes of plane 0 and two of plane 1 at once, pages of one type at any address.
        [("program", [(0, 1), (2, 3), (4, 1), (6, 3), (1, 1), (3, 3)], OK_),
         ("read", [(6, 3), (0, 1), (3, 3), (4, 1), (1, 1), (2, 3)], OK_),
         ("erase", [(0, 0), (2, 0), (4, 0), (6, 0), (1, 0), (3, 0)], OK_)],
        [("program", [(0, 0), (2, 1)], REASON_PAGE_TYPE), ("program", [(0, 0)], OK_), ("program", [(2, 1)], OK_),
         ("read", [(0, 0), (2, 1)], REASON_PAGE_TYPE)],
        # One block twice is one subplane twice.
        [("program", [(0, 0), (0, 2)], REASON_PLANE_REPEAT), ("program", [(0, 2)], OK_), ("program", [(2, 2)], OK_),
         ("read", [(0, 2), (2, 0)], OK_), ("erase", [(0, 0), (2, 0)], OK_)],
        # Two blocks of one plane (refused by CNFM and DW-NFM above).
        [("program", [(2, 0), (4, 2)], OK_), ("read", [(4, 2), (2, 0)], OK_),
         ("erase", [(4, 0), (5, 0)], REASON_BAD_BLOCK)],
    ],
}
OPS_OF = {"program": ("PROGRAM_MULTIPLANE", "PROGRAM"), "read": ("READ_MULTIPLANE", "READ"),
          "erase": ("ERASE_MULTIPLANE", "ERASE")}


def case_descs(way, kind, pages, rng):
    """Descriptors of a case: the multi-plane form for every page but the last; a read then checks the
    status (FAIL when refused) and takes every other page's data with CHANGE READ COLUMN ENHANCED."""
    mp, final = OPS_OF[kind]
    rows = [row(b, p) for b, p in pages]
    descs = []
    for k, r in enumerate(rows):
        op = final if k == len(rows) - 1 else mp
        if kind == "program":
            descs.append((op, way, dict(row=r, data=bytes(rng.randrange(256) for _ in range(PAGE)))))
        elif kind == "read":
            descs.append((op, way, dict(row=r, length=PAGE if op == "READ" else 0)))
        else:
            descs.append((op, way, dict(row=r)))
    if kind == "read":
        descs.append(("READ_STATUS", way, {}))
        descs += [("READ_COLUMN_ENH", way, dict(row=r, length=PAGE)) for r in rows[:-1]]
    return descs


async def run_architecture(checked, arch, rng):
    ch, ref, name = checked.ch, checked.ref, ARCH_NAMES[arch]
    ch.dut.arch.value = arch
    ref.set_arch(arch)
    scripts = SCRIPTS[arch]
    assert len(scripts) <= WAYS
    good = [b for b in range(PART.blocks_per_lun) if b not in CFG.bad_blocks]
    # Start from erased blocks (single-plane erases, every way at once).
    await checked.batch([("ERASE", w, dict(row=row(b))) for b in good for w in range(len(scripts))], f"{name} erase")
    # What the array should hold, kept here apart from the reference: programs AND, erases clear;
    # factory bad blocks carry 00h in the first spare byte of their first page.
    bad = bytearray(ERASED)
    bad[PART.page_size] = 0x00
    model = [{row(b): bytearray(bad) for b in CFG.bad_blocks} for _ in scripts]
    for k in range(max(len(s) for s in scripts)):
        cases = {w: s[k] for w, s in enumerate(scripts) if k < len(s)}
        descs = {w: case_descs(w, kind, pages, rng) for w, (kind, pages, _) in cases.items()}
        reasons = {w: list(ref.dies[w].reasons) for w in cases}
        order = [d for group in zip_longest(*descs.values()) for d in group if d is not None]
        outs = dict(zip(map(id, order), await checked.batch(order, f"{name} round {k}")))
        checks = []
        for w, (kind, pages, refuse) in cases.items():
            what = f"{name}, way {w}: {kind} {pages}"
            mine = [outs[id(d)] for d in descs[w]]
            rows = [row(b, p) for b, p in pages]
            # The reference agrees with the case: accepted, or refused for its reason (counted once).
            grown = [a - b for a, b in zip(ref.dies[w].reasons, reasons[w])]
            want = [0] * len(REASON_NAMES)
            if refuse is not None:
                want[refuse] = 1
            assert grown == want, f"{what}: reference counted {grown}, the case expects {want}"
            # The controller reports the die's verdict (status of the final program/erase; a read's
            # is polled with READ STATUS, since READ itself completes without one).
            final = mine[len(rows)] if kind == "read" else mine[len(rows) - 1]
            assert bool(final[1] & FAIL) == (refuse is not None), f"{what}: status 0x{final[1]:02x}"
            if kind == "program":
                assert final[0] == ("NAND_FAIL" if refuse is not None else "OK"), f"{what}: {final[0]}"
                if refuse is None:
                    for r, (op, _, kw) in zip(rows, descs[w]):
                        page = model[w].setdefault(r, bytearray(ERASED))
                        for i, b in enumerate(kw["data"]):
                            page[i] &= b
            elif kind == "erase":
                assert final[0] == ("NAND_FAIL" if refuse is not None else "OK"), f"{what}: {final[0]}"
                if refuse is None:
                    for b, _ in pages:
                        for p in range(PART.pages_per_block):
                            model[w].pop(row(b, p), None)
            elif refuse is None:
                # Every plane's page: the last from READ, the others from CHANGE READ COLUMN ENHANCED.
                got = [mine[len(rows) - 1][2]] + [o[2] for o in mine[len(rows) + 1:]]
                for r, data in zip([rows[-1]] + rows[:-1], got):
                    assert data == bytes(model[w].get(r, ERASED)), f"{what}: row 0x{r:x} read differs"
            # Every page the case named (every page of an erased block) is read back.
            for b, p in pages:
                for pg in (range(PART.pages_per_block) if kind == "erase" else (p,)):
                    checks.append((w, row(b, pg)))
        back = await checked.batch([("READ", w, dict(row=r, length=PAGE)) for w, r in checks], f"{name} read back {k}")
        for (w, r), (_, _, data) in zip(checks, back):
            assert data == bytes(model[w].get(r, ERASED)), f"{name}, way {w}: row 0x{r:x} holds other data than written"


@cocotb.test()
async def multiplane_per_architecture(dut):
    """Multi-plane PROGRAM (11h-10h), READ (32h-30h, 06h-E0h) and ERASE (D1h-D0h) on four ways at
    once under CNFM, DW-NFM and SDW-NFM: combinations each architecture accepts move the data; the
    ones it refuses complete NAND_FAIL (or show FAIL in READ STATUS) and leave the array as it was."""
    ch = await setup(dut)
    checked = Checked(ch, WAYS)
    for w in range(WAYS):
        checked.ref.run("RESET", w)
    dut.time_scale_shift.value = 6
    rng = random.Random(17)
    for arch in (ARCH_CNFM, ARCH_DW, ARCH_SDW):
        await run_architecture(checked, arch, rng)
        no_violations(ch, ARCH_NAMES[arch])
        dut._log.info(f"{ARCH_NAMES[arch]}: multi-plane cases agree with the reference")


@cocotb.test()
async def no_status_from_another_way(dut):
    """A descriptor that reads no status (READ) completes OK with status 00h, whatever status another
    way reads meanwhile: way 0 reads a page (tR at full length); way 1's program of the factory bad
    block fails (status FAIL) while way 0 waits for tR; way 0's READ completes OK, its data good."""
    ch = await setup(dut)
    dut.time_scale_shift.value = 8
    data = bytes(random.Random(5).randrange(256) for _ in range(PAGE))
    await ch.write_mem(0, data)
    await ok(ch, "ERASE", 0, row=row(1))
    await ok(ch, "PROGRAM", 0, row=row(1), length=PAGE, addr=0)
    dut.time_scale_shift.value = 0
    t_read = await ch.submit("READ", 0, row=row(1), length=PAGE, addr=0x4000)
    t_bad = await ch.submit("PROGRAM", 1, row=row(5), length=PAGE, addr=0)
    (res_read, way_read, st_read), (res_bad, way_bad, st_bad) = await ch.wait(t_read, t_bad)
    assert (way_bad, res_bad, st_bad & FAIL) == (1, "NAND_FAIL", FAIL), \
        f"way 1's program of the bad block: way {way_bad}, {res_bad}, status 0x{st_bad:02x}"
    assert (way_read, res_read, st_read) == (0, "OK", 0), \
        f"way 0's READ completed for way {way_read}, {res_read} with status 0x{st_read:02x}"
    assert await ch.read_mem(0x4000, PAGE) == data, "way 0 read other data"
    no_violations(ch, "no status from another way")


@cocotb.test()
async def multiplane_read_whole_registers(dut):
    """A multi-plane READ fills every plane's register with the whole page: plane 0's register held
    FFh (an erased page read before), and after the multi-plane read of the programmed page of plane
    0 and an erased one of plane 1, both registers read back byte for byte (the last word too)."""
    ch = await setup(dut)
    dut.time_scale_shift.value = 8
    data = bytes(random.Random(6).randrange(256) for _ in range(PAGE))
    await ch.write_mem(0, data)
    await ok(ch, "ERASE", 0, row=row(4))
    await ok(ch, "ERASE", 0, row=row(7))
    await ok(ch, "PROGRAM", 0, row=row(4, 0), length=PAGE, addr=0)
    await ok(ch, "READ", 0, row=row(4, 3), length=PAGE, addr=0x1000)    # Plane 0's register: FFh.
    assert await ch.read_mem(0x1000, PAGE) == ERASED, "block 4 page 3 is not erased"
    await ok(ch, "READ_MULTIPLANE", 0, row=row(4, 0))
    await ok(ch, "READ", 0, row=row(7, 0), length=PAGE, addr=0x2000)
    await ok(ch, "READ_COLUMN_ENH", 0, row=row(4, 0), length=PAGE, addr=0x3000)
    assert await ch.read_mem(0x2000, PAGE) == ERASED, "plane 1's page is not erased"
    got = await ch.read_mem(0x3000, PAGE)
    bad = [i for i in range(PAGE) if got[i] != data[i]]
    assert not bad, (f"plane 0's page differs at {len(bad)} bytes, first "
                     f"{[(i, hex(got[i]), hex(data[i])) for i in bad[:8]]} (byte, got, written)")
    no_violations(ch, "multi-plane read")


# Way interleaving ---------------------------------------------------------------------------------

TABLES = PhaseTables(PART, CLK_HZ, CFG.time_scale)
READ_SHIFT, PROGRAM_SHIFT = 0, 5          # tR 45 us = 4506 cycles; tPROG 700 us / 32 = 2230 cycles.
PAGES_PER_WAY = 2
# Over the ideal schedule: command, status and turnaround cycles the estimate leaves out.
MARGIN = 0.15


def array_cycles(op, shift):
    """Cycles the die's array is busy for `op` at `time_scale_shift` = shift: every phase of the part's
    waveform with its segments divided by 2**shift (at least a cycle each) and a cycle to start it."""
    return sum(1 + sum(max(1, n >> shift) for n, _, _ in ph.segments) for ph in TABLES.phases(op))


def transfer_cycles():
    """Cycles to move one page at the bus rate of NV-DDR mode 5 (controller.transfer_bytes_per_s)."""
    return -(-PAGE * int(CLK_HZ) // int(transfer_bytes_per_s(onfi.IF_NVDDR, 5, CLK_HZ)))


def overhead_cycles(op):
    """Bus cycles of a descriptor besides its data: command and address beats (a cycle each in NV-DDR
    mode 5), the waits it contains (tCS on both selections, tWB and tRR around R/B#, tADL and tWHR for
    a program), and 32 cycles for the sequencer's states and the DMA pipeline."""
    beats = 2 + PART.column_cycles + PART.row_cycles
    t = onfi.interface_timings(onfi.IF_NVDDR, 5)
    waits = 2 * cyc(t.t_cs) + cyc(t.t_wb) + cyc(t.t_rr)
    if op == "PROGRAM":
        beats += 2
        waits += cyc(PART.t_adl) + cyc(t.t_whr)
    return beats + waits + 32


class BusMonitor:
    """Every cycle: does the bus move data (the controller's byte counters advance), and which dies
    are busy (die{i}_busy, i.e. R/B# low)."""
    def __init__(self, dut, ways):
        self.dut = dut
        self.busy = [getattr(dut, f"die{i}_busy") for i in range(ways)]
        self.moving = 0                     # Cycles data moved.
        self.overlap = 0                    # ... while some die was busy.
        self.per_way = [0] * ways           # ... while die i was busy.
        self.all_busy = 0                   # ... while every die was busy (data to or from a busy die).

    async def run(self):
        dut, last = self.dut, None
        while True:
            await RisingEdge(dut.sys_clk)
            await ReadOnly()
            n = int(dut.bytes_in.value) + int(dut.bytes_out.value)
            if last is not None and n != last:
                busy = [int(b.value) for b in self.busy]
                self.moving += 1
                self.overlap += any(busy)
                self.all_busy += all(busy)
                for i, b in enumerate(busy):
                    self.per_way[i] += b
            last = n


async def timed_batch(ch, descs, ways):
    """Submit descriptors (op, way, row, addr) at once; returns (elapsed cycles from the first submit
    to the last completion, the bus monitor, the completions)."""
    mon = BusMonitor(ch.dut, ways)
    task = cocotb.start_soon(mon.run())
    t0 = get_sim_time("ns")
    tags = [await ch.submit(op, w, row=r, length=PAGE, addr=a) for op, w, r, a in descs]
    cpls = await ch.wait(*tags)
    elapsed = round((get_sim_time("ns") - t0) * CLK_HZ / 1e9)
    task.cancel()
    return elapsed, mon, cpls


def overlap_ways():
    return [int(n) for n in os.environ.get("NANDLAB_TB_OVERLAP_WAYS", "1,2,4").split(",")]


@cocotb.test()
async def way_interleaving_overlaps_array_time(dut):
    """N ways (NANDLAB_TB_OVERLAP_WAYS), two pages each round robin, in NV-DDR mode 5: programs then
    reads take about max(N x transfer, array + transfer) a round, far below one way at a time; the
    bus moves data while other dies are busy; no timing violation; the data reads back."""
    ch = await setup(dut)
    rng = random.Random(23)
    xfer, slot = transfer_cycles(), -(-PAGE // 8) * 8
    mem_slots = MEM_BYTES // slot
    for n in overlap_ways():
        assert n <= WAYS and 2 * n * PAGES_PER_WAY <= mem_slots
        where = [(k % n, k // n) for k in range(n * PAGES_PER_WAY)]      # (way, page): round robin
        data = {wp: bytes(rng.randrange(256) for _ in range(PAGE)) for wp in where}
        src = {wp: i * slot for i, wp in enumerate(where)}
        dst = {wp: (len(where) + i) * slot for i, wp in enumerate(where)}
        for wp in where:
            await ch.write_mem(src[wp], data[wp])
            await ch.write_mem(dst[wp], bytes(slot))
        dut.time_scale_shift.value = 8
        tags = [await ch.submit("ERASE", w, row=row(0)) for w in range(n)]
        assert all(r[0] == "OK" for r in await ch.wait(*tags)), f"{n} ways: erase"

        for op, shift, addr, kinds in (("PROGRAM", PROGRAM_SHIFT, src, ("program_lsb", "program_msb")),
                                       ("READ", READ_SHIFT, dst, ("read",))):
            dut.time_scale_shift.value = shift
            array, c = max(array_cycles(k, shift) for k in kinds), overhead_cycles(op)
            elapsed, mon, cpls = await timed_batch(ch, [(op, w, row(0, p), addr[(w, p)]) for w, p in where], n)
            assert all(r[0] == "OK" for r in cpls), f"{n} ways {op}: {cpls}"
            p = PAGES_PER_WAY
            serial = p * n * (array + xfer)                                 # One way at a time.
            lower = max(p * n * xfer, p * (array + xfer))                   # The bus; one way's chain.
            # A round takes the bus for every way's transfer or one way's array + transfer, whichever
            # is longer; plus one array + transfer to fill and drain the pipeline.
            upper = p * max(n * (xfer + c), array + xfer + c) * (1 + MARGIN) + array + xfer + c
            what = (f"{n} ways {op}: {elapsed} cycles (array {array}, transfer {xfer}, bounds {lower}..{upper:.0f}, "
                    f"serial {serial}); data moved {mon.moving} cycles, {mon.overlap} with a die busy {mon.per_way}")
            dut._log.info(what)
            assert lower <= elapsed <= upper, what
            if n > 1:
                assert elapsed < 0.75 * serial, f"{what}: not well below one way at a time"
                # Array time under other ways' transfers, for every die (one page's worth in all).
                assert mon.overlap >= (n - 1) * xfer // 2, what
                assert all(mon.per_way), what
            assert mon.moving >= p * n * PAGE // 2, what                    # The monitor saw the data.
            assert mon.all_busy == 0, f"{what}: data moved while every die was busy"
        for wp in where:
            got = await ch.read_mem(dst[wp], PAGE)
            assert got == data[wp], f"{n} ways: way {wp[0]} page {wp[1]} read back differs"
        no_violations(ch, f"{n} ways")
