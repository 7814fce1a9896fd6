"""Random descriptor streams, invalid ones included, into the channel controller (cocotb, emulated dies).

The judge is a shadow written here from the controller's contract (its package docstring), not from
its gateware: per way, the die reference model (`nandlab.nand_model.reference.ReferenceDie`, which
the die tests hold the emulated die to) driven with the ONFI bus events each operation stands for;
the refusal rules in the order the contract gives them; bchlib for the ECC operations; and a copy of
the buffer memory. Every descriptor must complete within a bound of simulated cycles (no hang), a
refused one with the result the rules give and without touching the bus or memory, an executed one
with the status, data and ECC counts the shadow gives; nothing may write memory or a die the shadow
does not expect (the buffer is compared whole after every batch, every die's array at the end).

Plan (NANDLAB_FUZZ_PLAN, JSON): seed, batches, descriptors per batch (min, max), the share of invalid
ones, of submissions into a full queue, the weight of cache programs; the counts go to NANDLAB_FUZZ_OUT
(JSON) when set.
"""

import json
import os
import random
from collections import Counter

import bchlib
import cocotb
from cocotb.triggers import RisingEdge, ReadOnly, First, Timer
from cocotb.utils import get_sim_time

from nandlab.gateware.ecc.bch import layout
from nandlab.gateware.onfi import common as onfi
from nandlab.gateware.onfi.controller import OPS, RESULTS
from nandlab.nand_model.reference import ReferenceDie

from controller_tb import Channel, CFG, PART, WAYS, WB, row, switch

PLAN = dict(seed=1, batches=10, per_batch=(8, 40), invalid=0.35, overflow=0.05, cache_program=3)
PLAN.update(json.loads(os.environ.get("NANDLAB_FUZZ_PLAN", "{}")))

T, M, CW = 8, 13, 512
LAY = layout(PART.page_size, PART.spare_size, data_bytes=CW, t=T, m=M)
DATA = PART.page_size
PAGE = PART.page_size + PART.spare_size
FREE0, FREE_END = LAY.free_columns
W_BITS = (T + 1).bit_length()
UNCORRECTABLE = 2**W_BITS - 1
BLOCKS, PAGE_BITS = PART.blocks_per_lun, CFG.page_bits
MEM = 64 * 1024
OFFLINE = 2                                   # A way left out (ways_online) for the whole run.
ONLINE = [w for w in range(WAYS) if w != OFFLINE]
WINDOW = (0x0000, 0xDFFF)                     # DMA window: the rest of the buffer is a guard area.
REGION = (WINDOW[1] + 1) // WAYS // WB * WB   # Each way's data in its own region of the window.
MODE = (onfi.IF_NVDDR, 5)
TIMEOUT = 50_000                              # The controller's timeout (cycles).
HANG = 400_000                                # Cycles without a completion while some are due: a hang.

# The operations, as the contract describes them: (needs a row in range, moves page data at a column,
# data in from memory, has a length (ID/param/features), ECC, ...). Written out here, not taken from
# the controller's tables.
DATA_OUT = {"READ", "READ_COLUMN", "READ_COLUMN_ENH", "READ_CACHE_SEQ", "READ_CACHE_END"}
DATA_IN = {"PROGRAM", "PROGRAM_MULTIPLANE", "PROGRAM_CACHE"}
LEN_OPS = {"READ_ID", "READ_PARAM_PAGE", "GET_FEATURES"}
ROW_OPS = {"READ_STATUS_ENH", "READ", "READ_MULTIPLANE", "READ_COLUMN_ENH", "PROGRAM", "PROGRAM_MULTIPLANE",
           "PROGRAM_CACHE", "ERASE", "ERASE_MULTIPLANE", "READ_ECC", "PROGRAM_ECC", "READ_ECC_FREE"}
ECC_OPS = {"READ_ECC", "PROGRAM_ECC", "READ_ECC_FREE"}
STATUS_OPS = {"READ_STATUS", "READ_STATUS_ENH", "PROGRAM", "PROGRAM_CACHE", "ERASE", "PROGRAM_ECC"}
N_OPS = len(OPS)
# The contract's ARDY rule: after a cache program (15h) or cache read (31h) the array may still work while
# the die is ready; until an operation that ends the sequence (or a status poll that sees ARDY), any
# operation but these first polls the status (70h) until ARDY.
ARDY_FREE = {"PROGRAM_CACHE": {"RESET", "READ_STATUS", "READ_STATUS_ENH", "PROGRAM", "PROGRAM_CACHE", "PROGRAM_ECC"},
             "READ_CACHE_SEQ": {"RESET", "READ_STATUS", "READ_STATUS_ENH", "READ_CACHE_SEQ", "READ_CACHE_END",
                                "READ_COLUMN"}}
ARDY_ENDS = {"PROGRAM_CACHE": {"PROGRAM", "PROGRAM_ECC"}, "READ_CACHE_SEQ": {"READ_CACHE_END"}}


def ceil_wb(n):
    return -(-n // WB) * WB


def verdict(d, ways_online, port):
    """The result the contract gives a descriptor before it runs: a refusal, or None (it runs).
    `port` says what the submission port can carry (field widths, reserved bits, DMA window)."""
    op = OPS_BY_CODE.get(d["op"])
    if op is None or d.get("rsvd", 0):
        return "BAD_OP"
    if d["way"] >= WAYS or not ways_online >> d["way"] & 1:
        return "BAD_WAY"
    if op in ROW_OPS and d["row"] >> PAGE_BITS >= BLOCKS:
        return "BAD_ROW"
    data = op in DATA_OUT | DATA_IN | ECC_OPS
    col, n, addr = d["col"], d["len"], d["addr"]
    if data and (col >= PAGE or col + n > PAGE):
        return "BAD_COLUMN"
    if op in ECC_OPS:
        cw, free = n // CW * CW, n % CW
        if col != 0:
            return "BAD_COLUMN"
        if cw == 0 or cw > DATA or (op == "PROGRAM_ECC" and cw != DATA) or free > FREE_END - FREE0 or \
                (op == "READ_ECC" and free) or (op == "READ_ECC_FREE" and not free) or (free and d["param"] % WB):
            return "BAD_LENGTH"
    if (data or op in LEN_OPS) and (n == 0 or n % 2 or addr % WB):
        return "BAD_LENGTH"
    if op in DATA_IN and n % WB:
        return "BAD_LENGTH"
    if port["window"]:
        for start, size in extents(op, d):
            if start < WINDOW[0] or start + size - 1 > WINDOW[1]:
                return "BAD_ADDRESS"
    return None


def extents(op, d):
    """(address, bytes) of the memory a descriptor reads or writes."""
    n = d["len"]
    if op in ECC_OPS:
        cw, free = n // CW * CW, n % CW
        return [(d["addr"], cw)] + ([(d["param"], ceil_wb(free))] if free else [])
    if op in DATA_OUT | DATA_IN | LEN_OPS:
        return [(d["addr"], ceil_wb(n))]
    return []


OPS_BY_CODE = {code: name for name, code in OPS.items()}


class Shadow:
    """Every way's die (the reference model) and the buffer memory, as the operations leave them."""
    def __init__(self):
        self.dies = [ReferenceDie(CFG) for _ in range(WAYS)]
        self.mem = bytearray(MEM)
        self.known = bytearray(b"\x01" * MEM)       # 0: bytes the contract leaves open (see `run`).
        self.reg_known = [True] * WAYS
        self.open = [set() for _ in range(WAYS)]     # Cache sequences open on the way (ARDY rule).
        self.polls = 0
        self.bch = bchlib.BCH(T, m=M)
        self.mode_p1 = 0

    # Bus events of the operations (ONFI command sequences).
    @staticmethod
    def _addr(die, value, cycles):
        for i in range(cycles):
            die.address(value >> 8 * i & 0xFF)

    def _col(self, die, col):
        self._addr(die, col, PART.column_cycles)

    def _row(self, die, r):
        self._addr(die, r, PART.row_cycles)

    @staticmethod
    def _settle(die):
        die.advance(1 << 40)

    @staticmethod
    def _out(die, n):
        return bytes(die.data_out() for _ in range(n))

    def source_known(self, op, d):
        """Whether every byte a program reads from memory is known (see `known`)."""
        return all(all(self.known[a:a + n]) for a, n in extents(op, d))

    def _to_mem(self, addr, data, known=True):
        data = data + b"\xff" * (-len(data) % WB)      # The last DMA word padded with FFh.
        self.mem[addr:addr + len(data)] = data
        self.known[addr:addr + len(data)] = (b"\x01" if known else b"\x00") * len(data)

    def _status(self, die):
        die.command(onfi.CMD_READ_STATUS)
        return die.data_out()

    def run(self, d):
        """Runs an accepted descriptor: (result, status byte, per-codeword counts or None)."""
        op, die, c = OPS_BY_CODE[d["op"]], self.dies[d["way"]], onfi
        col, n, r, addr = d["col"], d["len"], d["row"], d["addr"]
        status, counts = 0, None
        # The page register's contents after a program, an erase or a reset are the die's own business
        # (the emulated die swaps its cache pair, the reference model does not): a column change or cache
        # read from it before the next READ moves bytes the shadow does not judge (their extent it does).
        known = self.reg_known[d["way"]]
        if op in ("READ", "READ_ECC", "READ_ECC_FREE"):
            self.reg_known[d["way"]] = True
        elif op in DATA_IN or op in ("PROGRAM_ECC", "ERASE", "ERASE_MULTIPLANE", "RESET", "READ_MULTIPLANE"):
            self.reg_known[d["way"]] = False
        # The ARDY rule: a status poll first (the model's array is idle at once: one poll).
        opened = self.open[d["way"]]
        if any(op not in ARDY_FREE[k] for k in opened):
            die.command(c.CMD_READ_STATUS)
            opened.clear()
            self.polls += 1
        if op in ARDY_FREE:
            opened.add(op)
        for k in list(opened):
            if op in ARDY_ENDS[k]:
                opened.discard(k)
        # A cache read continues a READ: the emulated die ends that sequence with any command but the
        # status and column-change ones (the reference model only with a confirm or reset); here the
        # shadow follows the die.
        if op in LEN_OPS or op in DATA_IN or op in ("SET_FEATURES", "PROGRAM_ECC"):
            die.cache_ok = False
        if op in ("READ_CACHE_SEQ", "READ_CACHE_END") and not die.cache_ok:
            # The die refuses 31h/3Fh. It keeps giving what it gave before (its business: the bytes are
            # open); if it gave nothing, it never toggles DQS and the controller's wait for the bytes
            # ends with TIMEOUT (the rest FFh).
            if die.out is None:
                self._to_mem(addr, b"\xff" * n)
                return "TIMEOUT", 0, None
            self._to_mem(addr, self._out(die, n), False)
            return "OK", 0, None
        if op == "RESET":
            die.command(c.CMD_RESET)
            self._settle(die)
        elif op in LEN_OPS:
            die.command({"READ_ID": c.CMD_READ_ID, "READ_PARAM_PAGE": c.CMD_READ_PARAM_PAGE,
                         "GET_FEATURES": c.CMD_GET_FEATURES}[op])
            die.address(col & 0xFF)
            self._settle(die)
            self._to_mem(addr, self._out(die, n))
            # What ONFI defines: the ONFI signature (4 bytes at 20h), the JEDEC manufacturer and device
            # (2 at 00h), three parameter page copies, P1-P4; beyond that the die's own bytes.
            defined = {"READ_ID": {onfi.READ_ID_ONFI: 4, onfi.READ_ID_JEDEC: 2}.get(col & 0xFF, 0),
                       "READ_PARAM_PAGE": 768, "GET_FEATURES": 4}[op]
            if n > defined:
                self.known[addr + defined:addr + ceil_wb(n)] = b"\x00" * (ceil_wb(n) - defined)
        elif op == "SET_FEATURES":
            die.command(c.CMD_SET_FEATURES)
            die.address(col & 0xFF)
            for i in range(4):
                die.data_in(d["param"] >> 8 * i & 0xFF)
            self._settle(die)
            # The emulated die keeps the timing mode's P1 only (GET FEATURES gives 0 for the rest).
            if (col & 0xFF) == c.FEATURE_TIMING_MODE:
                die.features[col & 0xFF] = [d["param"] & 0xFF, 0, 0, 0]
            else:
                die.features.pop(col & 0xFF, None)
        elif op == "READ_STATUS":
            status = self._status(die)
        elif op == "READ_STATUS_ENH":
            die.command(c.CMD_READ_STATUS_ENH)
            self._row(die, r)
            status = die.data_out()
        elif op in ("READ", "READ_MULTIPLANE"):
            die.command(c.CMD_READ)
            self._col(die, col)
            self._row(die, r)
            die.command(c.CMD_READ_CONFIRM if op == "READ" else c.CMD_READ_MULTIPLANE)
            self._settle(die)
            if op == "READ":
                self._to_mem(addr, self._out(die, n))
        elif op in ("READ_COLUMN", "READ_COLUMN_ENH"):
            die.command(c.CMD_CHANGE_READ_COL if op == "READ_COLUMN" else c.CMD_CHANGE_READ_COL_ENH)
            self._col(die, col)
            if op == "READ_COLUMN_ENH":
                self._row(die, r)
            die.command(c.CMD_CHANGE_READ_COL_2)
            self._to_mem(addr, self._out(die, n), known)
        elif op in ("READ_CACHE_SEQ", "READ_CACHE_END"):
            die.command(c.CMD_READ_CACHE_SEQ if op == "READ_CACHE_SEQ" else c.CMD_READ_CACHE_END)
            self._settle(die)
            self._to_mem(addr, self._out(die, n), known)
        elif op in DATA_IN or op == "PROGRAM_ECC":
            assert self.source_known(op, d), f"the bench sent a program from bytes the shadow does not know: {d}"
            die.command(c.CMD_PROGRAM)
            self._col(die, col)
            self._row(die, r)
            if op == "PROGRAM_ECC":
                data = bytes(self.mem[addr:addr + DATA])
                spare = bytearray(b"\xff" * (FREE0 - DATA))
                for k in range(LAY.codewords):
                    p = LAY.parity_columns[k] - DATA
                    spare[p:p + LAY.parity_bytes] = self.bch.encode(data[k * CW:(k + 1) * CW])
                free = n - DATA
                stream = data + bytes(spare) + bytes(self.mem[d["param"]:d["param"] + free])
            else:
                stream = bytes(self.mem[addr:addr + n])
            for b in stream:
                die.data_in(b)
            die.command({"PROGRAM": c.CMD_PROGRAM_CONFIRM, "PROGRAM_ECC": c.CMD_PROGRAM_CONFIRM,
                         "PROGRAM_MULTIPLANE": c.CMD_PROGRAM_MULTIPLANE, "PROGRAM_CACHE": c.CMD_PROGRAM_CACHE}[op])
            self._settle(die)
            if op != "PROGRAM_MULTIPLANE":
                status = self._status(die)
        elif op in ("ERASE", "ERASE_MULTIPLANE"):
            die.command(c.CMD_ERASE)
            self._row(die, r)
            die.command(c.CMD_ERASE_CONFIRM if op == "ERASE" else c.CMD_ERASE_MULTIPLANE)
            self._settle(die)
            if op == "ERASE":
                status = self._status(die)
        elif op in ("READ_ECC", "READ_ECC_FREE"):
            cws, free = n // CW, n % CW
            die.command(c.CMD_READ)
            self._col(die, LAY.parity_columns[0])
            self._row(die, r)
            die.command(c.CMD_READ_CONFIRM)
            self._settle(die)
            parity = self._out(die, cws * LAY.slot_bytes)
            die.command(c.CMD_CHANGE_READ_COL)
            self._col(die, 0)
            die.command(c.CMD_CHANGE_READ_COL_2)
            data = bytearray(self._out(die, cws * CW))
            if free:
                die.command(c.CMD_CHANGE_READ_COL)
                self._col(die, FREE0)
                die.command(c.CMD_CHANGE_READ_COL_2)
                self._to_mem(d["param"], self._out(die, free))
            counts = []
            for k in range(cws):
                cw = bytearray(data[k * CW:(k + 1) * CW])
                ecc = bytearray(parity[k * LAY.slot_bytes:k * LAY.slot_bytes + LAY.parity_bytes])
                nerr = self.bch.decode(cw, ecc)
                if nerr < 0:
                    counts.append(None)
                else:
                    self.bch.correct(cw, ecc)
                    data[k * CW:(k + 1) * CW] = cw
                    counts.append(nerr)
            self._to_mem(addr, bytes(data))
        result = "OK"
        if counts is not None and None in counts:
            result = "ECC_UNCORRECTABLE"
        elif status & onfi.STATUS_FAIL:
            result = "NAND_FAIL"
        return result, status, counts


class FuzzChannel(Channel):
    """The channel driver with completion times, raw submissions (into a full queue too) and a fast
    buffer read-back."""
    def __init__(self, dut):
        super().__init__(dut)
        self.cpl = {}
        self.last_cpl = 0

    async def start(self):
        await super().start()
        dut = self.dut
        dut.data_bytes.value = DATA
        dut.ways_online.value = sum(1 << w for w in ONLINE)
        if hasattr(dut, "dma_base"):
            dut.dma_base.value, dut.dma_limit.value = WINDOW
        # R/B# and data output timeout: well above any array time of the scaled dies, well below HANG.
        dut.timeout.value = TIMEOUT

    def record(self, tag, result, way, status, raw_ecc):
        """Keeps every completion of a tag with its cycle (a tag can complete twice), an unknown result code
        as its number."""
        c = (RESULTS[result] if result < len(RESULTS) else result, way, status, raw_ecc)
        self.last_cpl = cycle()
        self.cpl.setdefault(tag, []).append((c, self.last_cpl))
        self.done[tag] = c[:3]

    async def wait(self, *tags, limit=HANG):
        done = await super().wait(*tags, limit=limit)
        for t in tags:
            self.cpl.pop(t, None)
        return done

    async def put(self, d, force=False):
        """Submit `d` when the queue has room, or at once with `force`; returns whether it was ready."""
        dut = self.dut
        await RisingEdge(dut.sys_clk)
        await ReadOnly()
        ready = bool(int(dut.submit_ready.value))
        while not (ready or force):
            await First(RisingEdge(dut.submit_ready), Timer(HANG * 10, unit="ns"))
            await ReadOnly()
            if not int(dut.submit_ready.value):
                _dump(dut)
                raise AssertionError(f"hang: the queue took nothing for {HANG} cycles (ways in flight "
                                     f"{int(dut.in_flight.value):04b}, {len(self.cpl)} completions waiting)")
            ready = bool(int(dut.submit_ready.value))
        await RisingEdge(dut.sys_clk)
        dut.d_op.value, dut.d_way.value, dut.d_tag.value, dut.d_row.value = d["op"], d["way"], d["tag"], d["row"]
        dut.d_col.value, dut.d_len.value, dut.d_addr.value, dut.d_param.value = d["col"], d["len"], d["addr"], d["param"]
        if hasattr(dut, "d_rsvd"):
            dut.d_rsvd.value = d.get("rsvd", 0)
        dut.submit.value = 1
        await ReadOnly()
        ready = bool(int(dut.submit_ready.value))     # (in the cycle the queue takes it, or not)
        await RisingEdge(dut.sys_clk)
        dut.submit.value = 0
        return ready

    async def read_all(self, addr, n):
        """The buffer from `addr`, one word a cycle (the port's read is registered)."""
        dut = self.dut
        out = bytearray()
        words = n // WB
        await RisingEdge(dut.sys_clk)
        dut.mem_adr.value = addr // WB
        await RisingEdge(dut.sys_clk)
        for i in range(words):
            if i + 1 < words:
                dut.mem_adr.value = addr // WB + i + 1
            await ReadOnly()
            out += int(dut.mem_dat_r.value).to_bytes(WB, "little")
            await RisingEdge(dut.sys_clk)
        return bytes(out)


def _dump(dut):
    """(Debugging) the signals whose names match NANDLAB_FUZZ_DUMP (a regular expression)."""
    import re
    pat = os.environ.get("NANDLAB_FUZZ_DUMP")
    if not pat:
        return
    for h in dut:
        if re.search(pat, h._name):
            try:
                dut._log.info(f"{h._name} = {int(h.value):#x}")
            except Exception:
                pass


def cycle():
    return int(get_sim_time("ns")) // 10


class Fuzzer:
    def __init__(self, dut, rng, port):
        self.dut, self.rng, self.port = dut, rng, port
        self.shadow = Shadow()
        self.tag = 0
        self.stats = Counter()              # (op name or code, result) -> descriptors
        self.intent = Counter()             # What the generator meant an invalid descriptor to be.
        self.ran = []                       # (tag, way, op, expected result) of the descriptors run, recent.
        self.hist = [[] for _ in range(WAYS)]   # Per way: (tag, op, block, page, expected) of those run.
        self.total = 0
        self.max_latency = 0
        self.overflow_sent = 0
        self.open_bytes = 0                 # Bytes moved from a page register the contract leaves open.
        self.overflow_cpl = 0
        self.overflow_lost = 0

    # Generation ---------------------------------------------------------------------------------
    def _region(self, way):
        return (way % WAYS) * REGION

    def _addr(self, way, size):
        base = self._region(way)
        return base + self.rng.randrange(0, max(1, (REGION - size) // WB + 1)) * WB

    def _valid(self):
        """A valid descriptor. A program never reads memory whose bytes the contract leaves open (a
        READ_ID beyond what ONFI defines, a column read of an unknown register: the shadow learns them
        only at the batch's memory check): the array would get bytes the shadow cannot know (the seed-2
        long run's difference at batch ~105). Another address, else another operation."""
        for tries in range(64):
            d = self._draw()
            op = OPS_BY_CODE[d["op"]]
            if not (op in DATA_IN or op == "PROGRAM_ECC") or (tries < 16 and self.shadow.source_known(op, d)):
                return d
        raise AssertionError("no valid descriptor in 64 draws")

    def _draw(self):
        rng = self.rng
        op = rng.choices(["ERASE", "PROGRAM", "PROGRAM_ECC", "READ", "READ_ECC", "READ_ECC_FREE", "READ_COLUMN",
                          "READ_COLUMN_ENH", "READ_CACHE_SEQ", "READ_CACHE_END", "PROGRAM_CACHE", "READ_MULTIPLANE",
                          "PROGRAM_MULTIPLANE", "ERASE_MULTIPLANE", "READ_ID", "READ_PARAM_PAGE", "GET_FEATURES",
                          "SET_FEATURES", "READ_STATUS", "READ_STATUS_ENH", "RESET"],
                         # (No multi-plane operations: one left open - 32h/11h/D1h without the final
                         # operation - makes what the next one does the die's business, and the emulated
                         # die and its reference model part ways there; tests/tb/controller_planes_tb.py.)
                         [8, 14, 7, 14, 8, 3, 4, 2, 2, 2, PLAN["cache_program"], 0, 0, 0, 3, 2, 2, 1, 3, 2, 2])[0]
        way = rng.choice(ONLINE)
        d = dict(op=OPS[op], way=way, row=row(rng.randrange(BLOCKS), rng.randrange(1 << PAGE_BITS)), col=0, len=0,
                 addr=0, param=0)
        if op in DATA_OUT or op in DATA_IN:
            if rng.random() < 0.4:
                d["col"], n = 0, PAGE
            else:
                d["col"] = rng.randrange(PAGE - 2)
                n = rng.randrange(2, PAGE - d["col"] + 1)
            n -= n % (WB if op in DATA_IN else 2)
            if n == 0:
                d["col"], n = 0, PAGE
            d["len"] = n
            d["addr"] = self._addr(way, ceil_wb(n))
        elif op in LEN_OPS:
            d["col"] = rng.choice([onfi.READ_ID_ONFI, onfi.READ_ID_JEDEC, onfi.FEATURE_TIMING_MODE, 0, 0x20,
                                   rng.randrange(256)])
            d["len"] = 2 * rng.randrange(1, {"READ_ID": 8, "READ_PARAM_PAGE": 400, "GET_FEATURES": 8}[op] + 1)
            d["addr"] = self._addr(way, ceil_wb(d["len"]))
        elif op == "SET_FEATURES":
            # Only the mode in use (a change of interface is firmware's business, with the controller's).
            d["col"] = rng.choice([onfi.FEATURE_TIMING_MODE, 0x10, 0x80, rng.randrange(256)])
            d["param"] = rng.randrange(1 << 32)
            if d["col"] == onfi.FEATURE_TIMING_MODE:
                d["param"] = d["param"] & ~0xFF | MODE[0] << 4 | MODE[1]
        elif op in ECC_OPS:
            free_max = FREE_END - FREE0
            if op == "PROGRAM_ECC":
                cw, free = DATA, rng.choice([0, 0, 2, 4, free_max])
            elif op == "READ_ECC":
                cw, free = CW * rng.randrange(1, LAY.codewords + 1), 0
            else:
                cw, free = CW * rng.randrange(1, LAY.codewords + 1), rng.choice([2, 4, free_max])
            d["len"] = cw + free
            d["addr"] = self._addr(way, cw + WB)
            if free:
                d["param"] = self._addr(way, WB)
                # Data and free bytes must not overlap (the shadow writes them in one order).
                while not (d["param"] + WB <= d["addr"] or d["param"] >= d["addr"] + cw):
                    d["param"] = self._addr(way, WB)
        return d

    def _invalid(self):
        """A descriptor with one thing wrong (the verdict is the shadow's, whatever was meant)."""
        rng = self.rng
        d = self._valid()
        kinds = ["op", "way", "offline", "row", "col", "len0", "odd", "unaligned", "din_len", "ecc_col", "ecc_len",
                 "free_addr"]
        if self.port["window"]:
            kinds += ["addr_guard", "addr_alias", "addr_wrap", "free_window"]
        if self.port["rsvd"]:
            kinds += ["rsvd"]
        kind = rng.choice(kinds)
        op = OPS_BY_CODE[d["op"]]
        if kind == "op":
            d["op"] = rng.randrange(N_OPS, 1 << self.port["op_bits"])
        elif kind == "way":
            d["way"] = rng.randrange(WAYS, 1 << self.port["way_bits"])
        elif kind == "offline":
            d["way"] = OFFLINE
        elif kind == "row":
            d["row"] = rng.randrange(BLOCKS << PAGE_BITS, 1 << self.port["row_bits"])
        elif kind == "col":
            d["col"] = rng.randrange(max(1, PAGE - d["len"] + 1), 1 << 16)
        elif kind == "len0":
            d["len"] = 0
        elif kind == "odd":
            d["len"] |= 1
        elif kind == "unaligned":
            d["addr"] += rng.randrange(1, WB)
        elif kind == "din_len":
            # (Not PROGRAM_MULTIPLANE: the length may still come out valid, and a multi-plane program left
            # open is where the die and the reference model part ways - the seed-2 long run's difference.)
            d["op"] = OPS[rng.choice(sorted(DATA_IN - {"PROGRAM_MULTIPLANE"}))]
            d["len"] = max(2, d["len"] - rng.randrange(1, WB // 2) * 2)
        elif kind == "ecc_col":
            d["op"] = OPS[rng.choice(sorted(ECC_OPS))]
            d["col"] = 2 * rng.randrange(1, 1024)
            d["len"] = CW
        elif kind == "ecc_len":
            d["op"] = OPS[rng.choice(sorted(ECC_OPS))]
            d["col"] = 0
            d["len"] = rng.choice([CW - 2, DATA + FREE_END - FREE0 + 2, CW + 8, DATA - CW, 2 * CW + 2, 0])
            d["addr"], d["param"] = self._addr(d["way"], DATA + WB), self._addr(d["way"], WB)
        elif kind == "free_addr":
            d["op"] = OPS["READ_ECC_FREE"]
            d["col"], d["len"] = 0, CW + 2
            d["addr"], d["param"] = self._addr(d["way"], CW), self._addr(d["way"], WB) + rng.randrange(1, WB)
        elif kind == "addr_guard":
            d["addr"] = rng.randrange(WINDOW[1] + 1, MEM) // WB * WB
        elif kind == "addr_alias":
            d["addr"] = rng.randrange(1, 1 << 16) * MEM + d["addr"]
        elif kind == "addr_wrap":
            d["addr"] = (1 << 32) - rng.randrange(1, 64) * WB
        elif kind == "free_window":
            d["op"], d["col"], d["len"] = OPS["READ_ECC_FREE"], 0, CW + 2
            d["addr"] = self._addr(d["way"], CW)
            d["param"] = rng.choice([WINDOW[1] + 1 - WB + WB * rng.randrange(1, 64), (1 << 32) - WB])
        elif kind == "rsvd":
            d["rsvd"] = rng.randrange(1, 1 << self.port["rsvd"])
        d["row"] &= (1 << self.port["row_bits"]) - 1
        d["addr"] &= (1 << 32) - 1
        d["col"] &= 0xFFFF
        if d["op"] == OPS["SET_FEATURES"] and (d["col"] & 0xFF) == onfi.FEATURE_TIMING_MODE:
            d["param"] = d["param"] & ~0xFF | MODE[0] << 4 | MODE[1]     # (never a change of interface)
        self.intent[kind] += 1
        return d

    # Running ------------------------------------------------------------------------------------
    async def batch(self, ch):
        rng, shadow = self.rng, self.shadow
        # New source data in every region (nothing in flight now).
        for w in range(WAYS):
            start = self._region(w) + rng.randrange(0, REGION // 2) // WB * WB
            data = bytes(rng.randrange(256) for _ in range(1024))
            await ch.write_mem(start, data)
            shadow.mem[start:start + len(data)] = data
        lo, hi = PLAN["per_batch"]
        due = {}
        lost0 = int(self.dut.overflow_lost.value) if hasattr(self.dut, "overflow_lost") else 0
        online = sum(1 << w for w in ONLINE)
        for _ in range(rng.randint(lo, hi)):
            d = self._invalid() if rng.random() < PLAN["invalid"] else self._valid()
            self.tag = (self.tag + 1) & 0xFF
            d["tag"] = self.tag
            force = rng.random() < PLAN["overflow"]
            sent_at = cycle()
            try:
                ready = await ch.put(d, force=force)
            except AssertionError as e:
                missing = [(t, OPS_BY_CODE.get(x[0]["op"], x[0]["op"]), x[0]["way"], x[1]) for t, x in due.items()
                           if t not in ch.cpl]
                raise AssertionError(f"{e}; not completed (tag, op, way, expected): {missing}") from None
            if not ready:
                # Into a full queue: the contract's OVERFLOW (or counted lost), never run.
                self.overflow_sent += 1
                due[d["tag"]] = (d, "OVERFLOW", 0, None, sent_at)
                continue
            v = verdict(d, online, self.port)
            if v is None:
                res, status, counts = shadow.run(d)
                self.ran = self.ran[-200:] + [(d["tag"], d["way"], OPS_BY_CODE[d["op"]], res, d["row"])]
                h = self.hist[d["way"]]
                h.append((d["tag"], OPS_BY_CODE[d["op"]], d["row"] >> PAGE_BITS, d["row"] & ((1 << PAGE_BITS) - 1), res))
                del h[:-3000]
            else:
                res, status, counts = v, 0, None
            due[d["tag"]] = (d, res, status, counts, sent_at)
        await self._collect(ch, due, lost0)
        await self._check_memory(ch, due)

    async def _collect(self, ch, due, lost0=0):
        while any(t not in ch.cpl for t in due):
            if not await ch.next_completion(HANG):
                lost = int(self.dut.overflow_lost.value) - lost0 if hasattr(self.dut, "overflow_lost") else 0
                missing = [(t, OPS_BY_CODE.get(due[t][0]["op"], due[t][0]["op"]), due[t][1]) for t in due
                           if t not in ch.cpl]
                overflow_missing = [m for m in missing if m[2] == "OVERFLOW"]
                if missing and len(missing) == len(overflow_missing) and len(missing) <= lost:
                    for t, *_ in missing:
                        self.stats[("(submitted to a full queue)", "LOST_COUNTED")] += 1
                        self.overflow_lost += 1
                        due.pop(t)
                    break
                raise AssertionError(f"hang: no completion in {HANG} cycles; missing (tag, op, expected): {missing}; "
                                     f"overflow_lost {lost}, completions waiting {ch.cpl}")
        for tag, (d, res, status, counts, sent_at) in due.items():
            (got, way, st, ecc), at = ch.cpl[tag].pop(0)
            if not ch.cpl[tag]:
                del ch.cpl[tag]
            name = OPS_BY_CODE.get(d["op"], d["op"])
            desc = f"tag {tag} {name} {({k: v for k, v in d.items() if k not in ('op', 'tag')})}"
            self.max_latency = max(self.max_latency, at - sent_at)
            if got != res:
                i = max((i for i, r in enumerate(self.ran) if r[0] == tag), default=len(self.ran))   # (tags wrap)
                before = [r for r in self.ran[:i] if r[1] == d["way"]][-6:]
                raise AssertionError(f"{desc}: result {got}, expected {res} (before it on the way: {before})")
            assert way == d["way"] % 16, f"{desc}: completion names way {way}"
            if res != "OVERFLOW":
                # (ARDY left out: after a cache program the array works on while the die is ready, and the
                # reference model finishes array work at once.)
                mask = 0xFF & ~onfi.STATUS_ARDY
                assert st & mask == status & mask, f"{desc}: status 0x{st:02x}, expected 0x{status:02x}"
            if counts is not None:
                got_counts = [ecc >> (W_BITS * k) & UNCORRECTABLE for k in range(len(counts))]
                want = [UNCORRECTABLE if c is None else c for c in counts]
                assert got_counts == want, f"{desc}: ECC counts {got_counts}, expected {want}"
            self.stats[(name if isinstance(name, str) else "(op %d)" % name, got)] += 1
            if res == "OVERFLOW":
                self.overflow_cpl += 1
            self.total += 1
        assert not ch.cpl, f"completions nobody submitted: {ch.cpl}"

    async def _check_memory(self, ch, due=None):
        got = await ch.read_all(0, MEM)
        mem, known = self.shadow.mem, self.shadow.known
        for i in range(MEM):
            if not known[i]:
                mem[i], known[i] = got[i], 1
                self.open_bytes += 1
        if got != bytes(self.shadow.mem):
            bad = [i for i in range(MEM) if got[i] != self.shadow.mem[i]]
            for tag, (d, res, *_) in (due or {}).items():
                op = OPS_BY_CODE.get(d["op"])
                if op and any(a <= bad[0] < a + n for a, n in extents(op, d)):
                    i = max((i for i, r in enumerate(self.ran) if r[0] == tag), default=len(self.ran))   # (tags wrap)
                    before = [r for r in self.ran[:i] if r[1] == d["way"]][-8:]
                    self.dut._log.error(f"the first difference lies in tag {tag} {op} ({res}): {d}; before it on "
                                        f"the way: {before}")
                    # The way's history since the block was last erased (what made the page what it is).
                    h, blk = self.hist[d["way"]], d["row"] >> PAGE_BITS
                    erased = max([i for i, e in enumerate(h) if e[1] == "ERASE" and e[2] == blk], default=0)
                    for e in h[erased:][-60:]:
                        self.dut._log.error(f"  way {d['way']} history: {e}")
            raise AssertionError(f"buffer differs from the shadow at {len(bad)} bytes, first 0x{bad[0]:04x} "
                                 f"(region of way {bad[0] // REGION}): got {got[bad[0]:bad[0] + 16].hex()}, "
                                 f"expected {bytes(self.shadow.mem[bad[0]:bad[0] + 16]).hex()}")

    async def check_arrays(self, ch):
        """Every page of every online die read whole and compared with the shadow's die (the offline
        way: through its own descriptors only once it is put back online)."""
        dut = self.dut
        dut.ways_online.value = 2**WAYS - 1
        shadow = self.shadow
        for w in range(WAYS):
            for b in range(BLOCKS):
                for p in range(1 << PAGE_BITS):
                    self.tag = (self.tag + 1) & 0xFF
                    d = dict(op=OPS["READ"], way=w, tag=self.tag, row=row(b, p), col=0, len=PAGE,
                             addr=self._region(0), param=0)
                    await ch.put(d)
                    res, status, _ = shadow.run(d)
                    await self._collect(ch, {d["tag"]: (d, res, status, None, cycle())})
                    got = await ch.read_all(d["addr"], ceil_wb(PAGE))
                    want = bytes(shadow.mem[d["addr"]:d["addr"] + ceil_wb(PAGE)])
                    assert got == want, f"way {w} block {b} page {p}: the array differs from the shadow's"
        dut.ways_online.value = sum(1 << w for w in ONLINE)


@cocotb.test()
async def random_descriptor_streams(dut):
    """Seeded random streams of valid and invalid descriptors on 3 online ways (and one left out):
    every one completes, as the shadow says, and nothing else changes."""
    ch = FuzzChannel(dut)
    await ch.start()
    dut.time_scale_shift.value = 6
    port = dict(op_bits=len(dut.d_op), way_bits=len(dut.d_way), row_bits=len(dut.d_row),
                rsvd=len(dut.d_rsvd) if hasattr(dut, "d_rsvd") else 0, window=hasattr(dut, "dma_base"))
    rng = random.Random(PLAN["seed"])
    fz = Fuzzer(dut, rng, port)
    # Every way reset and switched to the fast mode (the shadow follows).
    dut.ways_online.value = 2**WAYS - 1
    tags = [await ch.submit("RESET", w) for w in range(WAYS)]
    await ch.wait(*tags)
    await switch(ch, *MODE)
    for die in fz.shadow.dies:
        die.command(onfi.CMD_RESET)
        die.advance(1 << 40)
        die.features[onfi.FEATURE_TIMING_MODE] = [MODE[0] << 4 | MODE[1], 0, 0, 0]
    dut.ways_online.value = sum(1 << w for w in ONLINE)
    ch.cpl.clear()
    ch.tag = 0
    for b in range(PLAN["batches"]):
        await fz.batch(ch)
        if b % 50 == 49:
            dut._log.info(f"{b + 1} batches, {fz.total} descriptors")
    await fz.check_arrays(ch)
    viol = {k: v for k, v in ch.violations().items() if v}
    assert not viol, f"timing violations {viol}"
    results = Counter()
    for (op, res), n in fz.stats.items():
        results[res] += n
    dut._log.info(f"{fz.total} descriptors, results {dict(results)}, max latency {fz.max_latency} cycles, "
                  f"overflow: {fz.overflow_sent} sent, {fz.overflow_cpl} completed, {fz.shadow.polls} ARDY polls")
    out = os.environ.get("NANDLAB_FUZZ_OUT")
    if out:
        with open(out, "w") as f:
            json.dump(dict(plan=PLAN, descriptors=fz.total, results=dict(results),
                           by_op={f"{op} {res}": n for (op, res), n in sorted(fz.stats.items(), key=str)},
                           intents=dict(fz.intent), max_latency_cycles=fz.max_latency,
                           overflow_sent=fz.overflow_sent, overflow_completed=fz.overflow_cpl,
                           overflow_lost_counted=fz.overflow_lost,
                           open_register_bytes=fz.open_bytes, ardy_polls=fz.shadow.polls, port=port), f, indent=1)
    assert fz.total > 0


@cocotb.test()
async def silent_die_times_out(dut):
    """NV-DDR: a data output the die does not answer (31h refused: no READ before it, so the die never
    enters data output and never toggles DQS) completes TIMEOUT within the controller's `timeout`, with
    FFh in memory; the channel goes on (the same way reads a page, another way is untouched)."""
    ch = FuzzChannel(dut)
    await ch.start()
    dut.time_scale_shift.value = 6
    limit = 20_000
    dut.timeout.value = limit       # (start() set the fuzz's)
    dut.ways_online.value = 2**WAYS - 1
    await ch.wait(*[await ch.submit("RESET", w) for w in range(WAYS)])
    await switch(ch, *MODE)
    page = bytes(random.Random(3).randrange(256) for _ in range(DATA))
    await ch.write_mem(0x1000, page)
    assert (await ch.wait(await ch.submit("ERASE", 0, row=row(1, 0))))[0][0] == "OK"
    assert (await ch.wait(await ch.submit("PROGRAM", 0, row=row(1, 0), length=DATA, addr=0x1000)))[0][0] == "OK"
    await ch.write_mem(0x3000, b"\x55" * 512)
    tag = await ch.submit("RESET", 0)
    await ch.wait(tag)
    start = cycle()
    tag = await ch.submit("READ_CACHE_SEQ", 0, length=300, addr=0x3000)
    (res, way, _), = await ch.wait(tag, limit=4 * limit)
    took = cycle() - start
    assert (res, way) == ("TIMEOUT", 0), f"READ_CACHE_SEQ without a READ: {res} on way {way}"
    assert limit <= took < limit + 2_000, f"completed after {took} cycles (timeout {limit})"
    assert await ch.read_all(0x3000, 304) == b"\xff" * 304 and await ch.read_all(0x3000 + 304, 8) == b"\x55" * 8
    # The channel goes on: the same way reads its page (no TIMEOUT left over), another way runs.
    tags = [await ch.submit("READ", 0, row=row(1, 0), length=DATA, addr=0x4000),
            await ch.submit("READ_ID", 1, col=onfi.READ_ID_ONFI, length=4, addr=0x6000)]
    assert [r[0] for r in await ch.wait(*tags)] == ["OK", "OK"]
    assert await ch.read_all(0x4000, DATA) == page and (await ch.read_all(0x6000, 8))[:4] == b"ONFI"
    dut._log.info(f"TIMEOUT after {took} cycles (timeout {limit})")


def sequence_errors(dut, way):
    """Commands the emulated die refused as out of sequence (its "command sequence" reason counter)."""
    return int(dut._id(f"nandlabchannelsimtop_nandlabdie{way}_reason7", extended=False).value)


@cocotb.test()
async def cache_program_then_any(dut):
    """A PROGRAM_CACHE (15h) or READ_CACHE_SEQ (31h) leaves the die ready while its array programs or
    reads (ARDY low), when ONFI allows no ERASE or READ: queued straight after it on the same way, they
    run once ARDY is high and do what they say (before, the die refused them unseen: the erase completed
    OK and erased nothing, the read never got its data)."""
    ch = FuzzChannel(dut)
    await ch.start()
    dut.time_scale_shift.value = 6
    dut.ways_online.value = 2**WAYS - 1
    await ch.wait(*[await ch.submit("RESET", w) for w in range(WAYS)])
    await switch(ch, *MODE)
    rng = random.Random(4)
    a, b = (bytes(rng.randrange(256) for _ in range(PAGE)) for _ in range(2))
    await ch.write_mem(0x0000, a)
    await ch.write_mem(0x1000, b)
    for blk in (2, 3):
        assert (await ch.wait(await ch.submit("ERASE", 0, row=row(blk, 0))))[0][0] == "OK"
    assert (await ch.wait(await ch.submit("PROGRAM", 0, row=row(3, 0), length=PAGE, addr=0x1000)))[0][0] == "OK"
    errors = sequence_errors(dut, 0)
    tags = [await ch.submit("PROGRAM", 0, row=row(2, 0), length=PAGE, addr=0x0000)]
    assert (await ch.wait(*tags))[0][0] == "OK"
    # A READ queued straight after a READ_CACHE_SEQ (31h: the array reads the next page; the dies at full
    # tR here, so that the array still reads when the READ comes).
    dut.time_scale_shift.value = 0
    tags = [await ch.submit("READ", 0, row=row(2, 0), length=64, addr=0x8000),
            await ch.submit("READ_CACHE_SEQ", 0, length=64, addr=0x9000),
            await ch.submit("READ", 0, row=row(2, 0), length=PAGE, addr=0xA000)]
    res = await ch.wait(*tags, limit=200_000)
    assert [r[0] for r in res] == ["OK"] * 3, f"READ, READ_CACHE_SEQ, READ: {res}"
    assert sequence_errors(dut, 0) == errors, "the die refused a command as out of sequence"
    assert await ch.read_all(0x9000, 64) == a[:64] and await ch.read_all(0xA000, PAGE) == a
    dut.time_scale_shift.value = 6
    assert (await ch.wait(await ch.submit("ERASE", 0, row=row(2, 0))))[0][0] == "OK"
    tags = [await ch.submit("PROGRAM_CACHE", 0, row=row(2, 0), length=PAGE, addr=0x0000),
            await ch.submit("ERASE", 0, row=row(3, 0)),
            await ch.submit("READ", 0, row=row(2, 0), length=PAGE, addr=0x4000),
            await ch.submit("READ", 0, row=row(3, 0), length=PAGE, addr=0x6000)]
    res = await ch.wait(*tags, limit=200_000)
    assert [r[0] for r in res] == ["OK"] * 4, f"PROGRAM_CACHE, ERASE, READ, READ: {res}"
    assert sequence_errors(dut, 0) == errors, "the die refused a command as out of sequence"
    assert await ch.read_all(0x4000, PAGE) == a, "the cache-programmed page reads back wrong"
    assert await ch.read_all(0x6000, PAGE) == b"\xff" * PAGE, "the block erased after the cache program is not erased"
