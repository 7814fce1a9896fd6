"""nandlab channel controller: descriptors in, ONFI bus cycles on the phased NAND bus, data by DMA.

Firmware (or the host, through the bridge) submits **descriptors**: an operation, a way (CE#), a
row, a column, a length, a memory address and a parameter word. The controller checks them
against the channel's geometry (bad ones complete at once with an error result and never reach
the bus), runs them, and completes each one with a **completion**: its tag, way, result code and
the NAND status byte; an interrupt is raised while completions wait.

Microcode
=========
Each operation is a short program of micro-ops in a ROM (`TEMPLATES`); the sequencer executes the
program of the descriptor it runs:

============  ======================================================================================
micro-op      bus activity
============  ======================================================================================
CMD b         command cycle (CLE) with byte b
ADDR b        address cycle (ALE) with byte b
ADDR_COL [s]  the descriptor's column, `col_cycles` address cycles, low byte first (s = 1: the
              column of the first ECC parity slot in the spare)
ADDR_ROW      the descriptor's row, `row_cycles` address cycles
ADDR_ARG      the low byte of the descriptor's column (the READ ID and GET/SET FEATURES address)
WAIT t        no bus activity for t (tWHR, tADL, tCCS)
WAIT_RB       the way's array is busy: the bus is **given to other ways**; the program resumes when
              R/B# has been high for tRR, and no earlier than tWB after it stopped
DIN [e]       `length` data bytes to the die, read from memory at `address` (DMA); e = 1: through
              the BCH encoder, followed by the spare's reserved bytes (FFh) and the parity slots
DIN_PARAM     the four bytes of the parameter word (SET FEATURES P1-P4)
DOUT [d]      `length` data bytes from the die, written to memory at `address` (DMA); d = 1: the
              parity slots of the descriptor's codewords into the parity buffer; d = 2: the data
              both to memory and to the BCH decoder (each codeword's parity injected after it)
STATUS        one byte from the die into the completion (after 70h/78h)
CORRECT       wait for every codeword's decoding, then fix each reported bit in memory (a
              read-modify-write of the DMA word holding it)
END           the descriptor completes
============  ======================================================================================

**Way interleaving** comes from WAIT_RB: while one die reads, programs or erases its array, the
sequencer runs the programs of other ways - their commands and their data transfers - and goes back
to a waiting way as soon as its R/B# rises. At most one descriptor per way is in flight; the
submission queue is served in order, a descriptor for a way still busy waits at the head of the
queue (firmware that spreads its requests over the ways, as an FTL does, never sees that).

Interfaces and timing
=====================
The same programs run in async SDR, sync SDR and NV-DDR (`interface` and `timing_mode` are
CSRs; firmware switches them after SET FEATURES has switched the dies). Every bus cycle is a
*beat* of B system cycles in which the strobe (WE#, RE# or CLK) is low for the first `lo` phases
and high for the rest: a latch happens at the rising edge. B and `lo` come from the mode's period
(tWC / tRC in async SDR, tCK in sync SDR and NV-DDR), rounded up to whole phases and whole system
cycles, so the bus is never faster than the mode (at 100 MHz: async mode 5 is exact at 20 ns, NV-DDR
mode 5 exact at 10 ns, NV-DDR mode 4 runs at 20 ns). Data moves one byte per beat in async and sync
SDR, and two per beat in NV-DDR (one per DQS edge: NV-DDR mode 5 moves 2 bytes every cycle at
100 MHz, 200 MB/s). Reads in NV-DDR take a byte only when the die toggles DQS, so a die that
cannot keep up is simply waited for. tWHR, tADL, tCCS, tRR and tWB are waited in whole cycles.

Read latency
------------
`read_latency` (L, system cycles) is how much later than the bus cycle that asks for a byte the
byte shows on bus.dq_i / bus.dqs_i: 0 on the emulated channel (the die answers in the same cycle),
the pin PHY's `read_latency` on real chips (3 for `NandLabPinPHY`). The strobes are issued as with
L = 0; each phase in which a byte is due (the last phase of an async RE# beat, the CLK rising edge
in sync SDR, a W/R# low phase in NV-DDR) is remembered in an L-deep shift register and the byte is
taken from dq_i when it comes out, L cycles later (in NV-DDR: if DQS toggled in that phase; a byte
the die did not give is asked for again). The beat engine runs ahead of the bytes: it counts the
bytes still to ask for apart from those still to receive, asks only while the data FIFOs have room
for the bytes in flight as well (at most L + 1 pairs), and a DOUT or STATUS ends - or its FLUSH
starts - only when every byte asked for has arrived. Steady-state rates do not change (NV-DDR mode
5 keeps 2 bytes a cycle); a data output only ends L cycles later.

ECC
===
A controller built with `ecc` (a BCH code, e.g. ``dict(data_bytes=512, t=8, m=13)``; see
`nandlab.gateware.ecc.bch`) has two more operations. The page's data area is a sequence of
codewords' data; the spare holds, after `reserved` bytes left FFh (the bad-block marker), one parity
slot per codeword (`nandlab.gateware.ecc.bch.layout`, documented there).

* PROGRAM_ECC moves the whole data area through the encoder and, in the same data input, goes on
  with the reserved bytes and the parity slots (they follow the data area directly, so no column
  change is needed). The parity of each codeword waits in the parity buffer while the next
  codeword's data goes out.
* READ_ECC reads the parity slots first (READ at the first slot's column), then moves the column
  to 0 (05h-E0h) and streams the data to memory and to the decoder, which gets each codeword's
  parity from the buffer after its data. The decoder's location list is applied after the data is
  in memory (CORRECT), so memory never holds a half-corrected codeword, and the bus only waits for
  the last codeword's search (none when it has no errors).
* The completion carries each codeword's corrected bit count (parity bits included, as Linux
  counts them) in `cpl_ecc`, `bits_for(t + 1)` bits per codeword, all ones for an uncorrectable
  codeword; any uncorrectable codeword makes the result ECC_UNCORRECTABLE (its data is left as
  read; the others are corrected). Never silent.
* ECC descriptors cover whole codewords from column 0 (a program: the whole data area); others are
  refused (BAD_COLUMN / BAD_LENGTH), and a controller without `ecc` refuses them as BAD_OP.

Results
=======
`RESULT_*`: OK, the NAND status shows FAIL, R/B# timeout, the refusals (way absent or left out,
row or column out of range, length or alignment, unknown operation) and ECC_UNCORRECTABLE. A
refused descriptor is not sent to the NAND.
"""

from migen import *
from migen.genlib.fifo import SyncFIFOBuffered

from litex.gen import LiteXModule
from litex.soc.interconnect import stream, wishbone
from litex.soc.interconnect.csr import CSRStorage, CSRStatus, CSRField, CSR
from litex.soc.interconnect.csr_eventmanager import EventManager, EventSourceLevel
from litex.soc.cores.dma import WishboneDMAReader, WishboneDMAWriter

from nandlab.gateware.onfi import common as onfi
from nandlab.gateware.ecc.bch import NandLabBchEncoder, NandLabBchDecoder, layout as ecc_layout

# Micro-ops ------------------------------------------------------------------------------------------

UOPS = ["END", "CMD", "ADDR", "ADDR_COL", "ADDR_ROW", "ADDR_ARG", "WAIT", "WAIT_RB", "DIN", "DIN_PARAM",
        "DOUT", "STATUS", "CORRECT"]
U = {name: i for i, name in enumerate(UOPS)}
# WAIT arguments.
DELAYS = ["t_whr", "t_adl", "t_ccs"]
W = {name: i for i, name in enumerate(DELAYS)}
# Arguments of ADDR_COL, DIN and DOUT.
COL_DESC, COL_SPARE = 0, 1                     # The descriptor's column; the first parity slot.
DIN_MEM, DIN_ECC = 0, 1                        # From memory; from memory through the encoder + parity.
DOUT_MEM, DOUT_PARITY, DOUT_ECC = 0, 1, 2      # To memory; to the parity buffer; to memory and the decoder.


def _u(op, arg=0):
    return (U[op] << 8) | arg


C = onfi
TEMPLATES = {
    # name:            (program, checks)   checks: "row" (row in range), "data" (column + length in the page)
    "RESET":           ([_u("CMD", C.CMD_RESET), _u("WAIT_RB")], ()),
    "READ_ID":         ([_u("CMD", C.CMD_READ_ID), _u("ADDR_ARG"), _u("WAIT", W["t_whr"]), _u("DOUT")], ("len",)),
    "READ_PARAM_PAGE": ([_u("CMD", C.CMD_READ_PARAM_PAGE), _u("ADDR_ARG"), _u("WAIT_RB"), _u("DOUT")], ("len",)),
    "GET_FEATURES":    ([_u("CMD", C.CMD_GET_FEATURES), _u("ADDR_ARG"), _u("WAIT_RB"), _u("DOUT")], ("len",)),
    "SET_FEATURES":    ([_u("CMD", C.CMD_SET_FEATURES), _u("ADDR_ARG"), _u("WAIT", W["t_adl"]), _u("DIN_PARAM"),
                         _u("WAIT_RB")], ()),
    "READ_STATUS":     ([_u("CMD", C.CMD_READ_STATUS), _u("WAIT", W["t_whr"]), _u("STATUS")], ()),
    "READ_STATUS_ENH": ([_u("CMD", C.CMD_READ_STATUS_ENH), _u("ADDR_ROW"), _u("WAIT", W["t_whr"]), _u("STATUS")],
                        ("row",)),
    "READ":            ([_u("CMD", C.CMD_READ), _u("ADDR_COL"), _u("ADDR_ROW"), _u("CMD", C.CMD_READ_CONFIRM),
                         _u("WAIT_RB"), _u("DOUT")], ("row", "data")),
    # Multi-plane read: queue a plane (32h), then READ on the last plane; each other plane's data
    # is taken with READ_COLUMN_ENH (06h-E0h).
    "READ_MULTIPLANE": ([_u("CMD", C.CMD_READ), _u("ADDR_COL"), _u("ADDR_ROW"), _u("CMD", C.CMD_READ_MULTIPLANE),
                         _u("WAIT_RB")], ("row",)),
    "READ_COLUMN":     ([_u("CMD", C.CMD_CHANGE_READ_COL), _u("ADDR_COL"), _u("CMD", C.CMD_CHANGE_READ_COL_2),
                         _u("WAIT", W["t_ccs"]), _u("DOUT")], ("data",)),
    "READ_COLUMN_ENH": ([_u("CMD", C.CMD_CHANGE_READ_COL_ENH), _u("ADDR_COL"), _u("ADDR_ROW"),
                         _u("CMD", C.CMD_CHANGE_READ_COL_2), _u("WAIT", W["t_ccs"]), _u("DOUT")], ("row", "data")),
    # Cache reads: after a READ, 31h moves the next page to the cache register and outputs the
    # previous one; 3Fh outputs the last.
    "READ_CACHE_SEQ":  ([_u("CMD", C.CMD_READ_CACHE_SEQ), _u("WAIT_RB"), _u("DOUT")], ("data",)),
    "READ_CACHE_END":  ([_u("CMD", C.CMD_READ_CACHE_END), _u("WAIT_RB"), _u("DOUT")], ("data",)),
    "PROGRAM":         ([_u("CMD", C.CMD_PROGRAM), _u("ADDR_COL"), _u("ADDR_ROW"), _u("WAIT", W["t_adl"]), _u("DIN"),
                         _u("CMD", C.CMD_PROGRAM_CONFIRM), _u("WAIT_RB"), _u("CMD", C.CMD_READ_STATUS),
                         _u("WAIT", W["t_whr"]), _u("STATUS")], ("row", "data", "din")),
    "PROGRAM_MULTIPLANE": ([_u("CMD", C.CMD_PROGRAM), _u("ADDR_COL"), _u("ADDR_ROW"), _u("WAIT", W["t_adl"]),
                            _u("DIN"), _u("CMD", C.CMD_PROGRAM_MULTIPLANE), _u("WAIT_RB")], ("row", "data", "din")),
    "PROGRAM_CACHE":   ([_u("CMD", C.CMD_PROGRAM), _u("ADDR_COL"), _u("ADDR_ROW"), _u("WAIT", W["t_adl"]), _u("DIN"),
                         _u("CMD", C.CMD_PROGRAM_CACHE), _u("WAIT_RB"), _u("CMD", C.CMD_READ_STATUS),
                         _u("WAIT", W["t_whr"]), _u("STATUS")], ("row", "data", "din")),
    "ERASE":           ([_u("CMD", C.CMD_ERASE), _u("ADDR_ROW"), _u("CMD", C.CMD_ERASE_CONFIRM), _u("WAIT_RB"),
                         _u("CMD", C.CMD_READ_STATUS), _u("WAIT", W["t_whr"]), _u("STATUS")], ("row",)),
    "ERASE_MULTIPLANE": ([_u("CMD", C.CMD_ERASE), _u("ADDR_ROW"), _u("CMD", C.CMD_ERASE_MULTIPLANE),
                          _u("WAIT_RB")], ("row",)),
    # With ECC (controllers built with `ecc`): the page's data area from column 0, whole codewords.
    # Read: the parity slots of the spare first, then the data through the decoder (each codeword's
    # parity injected after it), then the corrections applied to memory.
    "READ_ECC":        ([_u("CMD", C.CMD_READ), _u("ADDR_COL", COL_SPARE), _u("ADDR_ROW"), _u("CMD", C.CMD_READ_CONFIRM),
                         _u("WAIT_RB"), _u("DOUT", DOUT_PARITY), _u("CMD", C.CMD_CHANGE_READ_COL), _u("ADDR_COL"),
                         _u("CMD", C.CMD_CHANGE_READ_COL_2), _u("WAIT", W["t_ccs"]), _u("DOUT", DOUT_ECC),
                         _u("CORRECT")], ("row", "data", "ecc")),
    # Program: the whole data area through the encoder, then (same data input) the spare's
    # reserved bytes as FFh and the parity slots.
    "PROGRAM_ECC":     ([_u("CMD", C.CMD_PROGRAM), _u("ADDR_COL"), _u("ADDR_ROW"), _u("WAIT", W["t_adl"]),
                         _u("DIN", DIN_ECC), _u("CMD", C.CMD_PROGRAM_CONFIRM), _u("WAIT_RB"),
                         _u("CMD", C.CMD_READ_STATUS), _u("WAIT", W["t_whr"]), _u("STATUS")],
                        ("row", "data", "din", "ecc", "ecc_page")),
}
OPS = {name: i for i, name in enumerate(TEMPLATES)}

RESULTS = ["OK", "NAND_FAIL", "TIMEOUT", "BAD_WAY", "BAD_ROW", "BAD_COLUMN", "BAD_LENGTH", "BAD_OP",
           "ECC_UNCORRECTABLE"]
R = {name: i for i, name in enumerate(RESULTS)}

INTERFACES = (onfi.IF_ASYNC_SDR, onfi.IF_NVDDR, onfi.IF_SYNC_SDR)


def beat(period_ns, sys_clk_freq):
    """(B, lo): a strobe period as B system cycles with the strobe low for the first `lo` phases,
    never shorter than `period_ns` nor with a half shorter than half of it."""
    cycle_ns = 1e9 / sys_clk_freq
    phase_ns = cycle_ns / onfi.NPHASES
    eps = 1e-6
    lo = max(1, int(-(-(period_ns / 2 - eps) // phase_ns)))
    b = max(1, int(-(-(period_ns - eps) // cycle_ns)), -(-(lo + 1) // 2), -(-(2 * lo) // 2))
    return b, lo


def mode_beats(interface, mode, sys_clk_freq):
    """{"w": (B, lo), "r": (B, lo)} of the write (command, address, data-in) and read beats."""
    if interface == onfi.IF_ASYNC_SDR:
        return {"w": beat(onfi.SDR_TWC_NS[mode], sys_clk_freq), "r": beat(onfi.SDR_TRC_NS[mode], sys_clk_freq)}
    b = beat(onfi.NVDDR_TCK_NS[mode], sys_clk_freq)
    return {"w": b, "r": b}


def transfer_bytes_per_s(interface, mode, sys_clk_freq):
    """Data rate of the bus in a mode (bytes per second) once the beats are rounded to the clock."""
    b, _ = mode_beats(interface, mode, sys_clk_freq)["r"]
    per_beat = 2 if interface == onfi.IF_NVDDR else 1
    return per_beat * sys_clk_freq / b


class NandLabChannelController(LiteXModule):
    """One channel: drives `bus` (a NandBus, one CE# per way) and masters `dma_bus` for data.

    `part` gives the default geometry and the tADL / tCCS it waits (firmware may change the
    geometry CSRs after reading a parameter page). `read_latency`: cycles from the bus cycle that
    asks for a byte to the cycle it is on bus.dq_i / bus.dqs_i (0: emulated dies; a pin PHY's
    `read_latency` behind one; see "Read latency")."""
    def __init__(self, bus, dma_bus, sys_clk_freq, part, queue_depth=16, timeout_us=100_000, ecc=None,
                 read_latency=0):
        ways = len(bus.ce_n)
        if not (isinstance(read_latency, int) and 0 <= read_latency <= 15):
            raise ValueError(f"read_latency {read_latency!r}: an integer number of cycles, 0..15")
        self.read_latency = read_latency
        assert 1 <= ways <= 16
        self.ways = ways
        self.bus = bus
        dw = len(dma_bus.dat_w)
        self.dma_bytes = dma_bytes = dw // 8
        # ECC: None, or the BCH code as dict(data_bytes=, t=, m=) (see nandlab.gateware.ecc.bch).
        self.ecc = ecc = dict(ecc) if ecc else None
        if ecc:
            # Raises ValueError naming the limit when the part's spare cannot hold the parity.
            self.ecc_layout = lay = ecc_layout(part.page_size, part.spare_size, **ecc)
            cw_bytes = ecc["data_bytes"]
            if cw_bytes & (cw_bytes - 1) or cw_bytes % dma_bytes:
                raise ValueError(f"ECC codeword of {cw_bytes} B: must be a power of two and a multiple of the "
                                 f"{dma_bytes}-byte DMA word")
            ecc_w = bits_for(ecc["t"] + 1)                 # Per-codeword count; all ones: uncorrectable.
            if lay.codewords * ecc_w > 64:
                raise ValueError(f"{lay.codewords} codewords per page: the completion reports at most "
                                 f"{64 // ecc_w} per-codeword counts of {ecc_w} bits")
            self.ecc_bits = lay.codewords * ecc_w
            data_beats = cw_bytes // 2
            slot_beats = lay.slot_bytes // 2
            reserved   = lay.parity_columns[0] - part.page_size
            res_beats  = reserved // 2
            pad        = lay.parity_bytes % 2            # The slot's last byte is padding (FFh).
        else:
            self.ecc_bits = 0
            res_beats = 0
        self.col_cycles, self.row_cycles = col_cyc, row_cyc = part.column_cycles, part.row_cycles
        cyc = lambda ns: max(1, int(-(-ns * sys_clk_freq // 1e9)))
        delays = [cyc(onfi.T_WHR_NS), cyc(part.t_adl), cyc(part.t_ccs)]
        t_rr, t_wb, t_cs = cyc(onfi.T_RR_NS), cyc(onfi.T_WB_NS), cyc(20)
        self.delays = dict(zip(DELAYS, delays), t_rr=t_rr, t_wb=t_wb)

        # Submission (written by add_csr or a testbench): a descriptor is taken when `submit` and
        # `submit_ready` are both high.
        self.submit       = Signal()
        self.submit_ready = Signal()
        self.d_op     = Signal(5)
        self.d_way    = Signal(4)
        self.d_tag    = Signal(8)
        self.d_row    = Signal(24)
        self.d_col    = Signal(16)
        self.d_len    = Signal(16)
        self.d_addr   = Signal(32)
        self.d_param  = Signal(32)
        # Completions: a FIFO; `cpl_pop` drops the head.
        self.cpl_valid  = Signal()
        self.cpl_pop    = Signal()
        self.cpl_tag    = Signal(8)
        self.cpl_way    = Signal(4)
        self.cpl_result = Signal(4)
        self.cpl_status = Signal(8)
        self.cpl_ecc    = Signal(max(self.ecc_bits, 1))   # Corrected bits per codeword (READ_ECC).
        # Configuration.
        self.interface   = Signal(2)
        self.timing_mode = Signal(3)
        self.ways_online = Signal(ways, reset=2**ways - 1)
        self.page_bytes  = Signal(16, reset=part.page_size + part.spare_size)   # Data + spare.
        self.page_bits   = Signal(5, reset=(part.pages_per_block - 1).bit_length())
        self.blocks      = Signal(24, reset=part.blocks_per_lun)
        self.data_bytes  = Signal(16, reset=part.page_size)                   # Data area (ECC ops).
        self.timeout     = Signal(32, reset=cyc(timeout_us * 1000))            # R/B# timeout, cycles.
        # Observation.
        self.busy_cycles = Signal(32)        # Cycles with a program running on the bus.
        self.data_cycles = Signal(32)        # Cycles moving data.
        self.bytes_in    = Signal(32)        # Bytes written to the NAND.
        self.bytes_out   = Signal(32)        # Bytes read from the NAND.
        self.completed   = Signal(32)
        self.ecc_fixed   = Signal(32)        # Memory words corrected.
        self.in_flight   = Signal(ways)

        # # #

        # Microcode ROM and entry points.
        code, entry = [], []
        for name, (prog, _) in TEMPLATES.items():
            entry.append(len(code))
            code += prog + [_u("END")]
        rom = Memory(12, len(code), init=code)
        rom_port = rom.get_port(async_read=True)
        self.specials += rom, rom_port

        # Submission queue ----------------------------------------------------------------------------
        desc_layout = [("op", 5), ("way", 4), ("tag", 8), ("row", 24), ("col", 16), ("len", 16), ("addr", 32),
                       ("param", 32)]
        dbits = sum(w for _, w in desc_layout)
        self.queue = queue = SyncFIFOBuffered(dbits, queue_depth)
        head = Record(desc_layout)
        self.comb += [
            queue.din.eq(Cat(self.d_op, self.d_way, self.d_tag, self.d_row, self.d_col, self.d_len, self.d_addr,
                             self.d_param)),
            queue.we.eq(self.submit),
            self.submit_ready.eq(queue.writable),
            head.raw_bits().eq(queue.dout),
        ]

        # Completion queue.
        cpl_bits = 24 + self.ecc_bits
        self.cplq = cplq = SyncFIFOBuffered(cpl_bits, queue_depth + ways)
        cpl_we, cpl_din = Signal(), Signal(cpl_bits)
        self.comb += [
            cplq.we.eq(cpl_we), cplq.din.eq(cpl_din),
            self.cpl_valid.eq(cplq.readable), cplq.re.eq(self.cpl_pop),
            Cat(self.cpl_tag, self.cpl_way, self.cpl_result, self.cpl_status).eq(cplq.dout),
        ]
        if self.ecc_bits:
            self.comb += self.cpl_ecc.eq(cplq.dout[24:])

        # Descriptors in flight, one per way (a small memory: written when started, read by way).
        ctx = Memory(dbits, max(ways, 2))
        ctx_w = ctx.get_port(write_capable=True)
        ctx_r = ctx.get_port(async_read=True)
        self.specials += ctx, ctx_w, ctx_r
        cur = Record(desc_layout)
        self.comb += cur.raw_bits().eq(ctx_r.dat_r)
        pcs = Array(Signal(max=len(code) + 1, name=f"pc{k}") for k in range(ways))
        waiting = Signal(ways)                                 # At a WAIT_RB.
        active  = Signal(ways)                                 # A descriptor is in flight.
        self.comb += self.in_flight.eq(active)

        # Per-way R/B# timers: tWB after the way yielded (a fine count) and the timeout (a coarse count,
        # in units of 1024 cycles), and tRR since R/B# rose.
        assert t_wb < 15 and t_rr < 15
        rb = Signal(ways)
        self.comb += rb.eq(bus.rb_n[:ways])
        tick, prescaler = Signal(), Signal(10)
        self.sync += prescaler.eq(prescaler + 1), tick.eq(prescaler == 0)
        fine      = [Signal(4, name=f"yield_fine{k}") for k in range(ways)]
        coarse    = [Signal(22, name=f"yield_coarse{k}") for k in range(ways)]
        ready_for = [Signal(4, name=f"ready_for{k}") for k in range(ways)]
        resumable = Signal(ways)
        timed_out = Signal(ways)
        for k in range(ways):
            self.sync += [
                If(~waiting[k], fine[k].eq(0), coarse[k].eq(0)).Else(
                    If(fine[k] != 15, fine[k].eq(fine[k] + 1)),
                    If(tick, coarse[k].eq(coarse[k] + 1)),
                ),
                If(~rb[k], ready_for[k].eq(0)).Elif(ready_for[k] != 15, ready_for[k].eq(ready_for[k] + 1)),
            ]
            self.comb += [
                resumable[k].eq(waiting[k] & rb[k] & (ready_for[k] >= t_rr) & (fine[k] >= t_wb)),
                timed_out[k].eq(waiting[k] & ~rb[k] & (coarse[k] > self.timeout[10:])),
            ]

        # Validation of the queue head.
        checks = {name: set(c) for name, (_, c) in TEMPLATES.items()}
        need_row, need_data, need_din, need_len = Signal(), Signal(), Signal(), Signal()
        need_ecc, need_page = Signal(), Signal()
        self.comb += Case(head.op, {OPS[n]: [need_row.eq("row" in c), need_data.eq("data" in c),
                                             need_din.eq("din" in c), need_len.eq("len" in c),
                                             need_ecc.eq("ecc" in c), need_page.eq("ecc_page" in c)]
                                    for n, c in checks.items()})
        # ECC operations: whole codewords from column 0, no more than the data area (and the parity
        # buffer) holds; a program covers the whole data area (the parity slots follow it).
        ecc_bad_col, ecc_bad_len = Signal(), Signal()
        if ecc:
            cw_shift = (cw_bytes - 1).bit_length()
            max_len = lay.codewords * cw_bytes
            self.comb += [
                ecc_bad_col.eq(head.col != 0),
                ecc_bad_len.eq((head.len[:cw_shift] != 0) | (head.len > max_len) | (head.len > self.data_bytes) |
                               (need_page & (head.len != self.data_bytes))),
            ]
        row_page  = Signal(24)
        row_block = Signal(24)
        self.comb += [
            row_page.eq(head.row & ((1 << self.page_bits) - 1)),
            row_block.eq(head.row >> self.page_bits),
        ]
        verdict = Signal(4)
        way_bit = Signal(16)
        self.comb += [
            way_bit.eq(1 << head.way),
            If((head.op >= len(TEMPLATES)) | (need_ecc & Constant(0 if ecc else 1, 1)), verdict.eq(R["BAD_OP"])
            ).Elif((head.way >= ways) | ((way_bit & self.ways_online) == 0), verdict.eq(R["BAD_WAY"])
            ).Elif(need_row & (row_block >= self.blocks), verdict.eq(R["BAD_ROW"])
            ).Elif(need_data & ((head.col >= self.page_bytes) | (head.col + head.len > self.page_bytes)),
                verdict.eq(R["BAD_COLUMN"])
            ).Elif(need_ecc & ecc_bad_col, verdict.eq(R["BAD_COLUMN"])
            ).Elif(need_ecc & ecc_bad_len, verdict.eq(R["BAD_LENGTH"])
            ).Elif((need_data | need_len) & ((head.len == 0) | head.len[0] | (head.addr & (dma_bytes - 1) != 0)),
                verdict.eq(R["BAD_LENGTH"])
            ).Elif(need_din & ((head.len & (dma_bytes - 1)) != 0), verdict.eq(R["BAD_LENGTH"])
            ).Else(verdict.eq(R["OK"])),
        ]
        entry_rom = Array(Constant(e, len(pcs[0])) for e in entry)

        # Mode -> beats ------------------------------------------------------------------------------
        bw_cyc, bw_lo, br_cyc, br_lo = Signal(5), Signal(5), Signal(5), Signal(5)
        cases = {}
        for interface in INTERFACES:
            for mode in range(6):
                mb = mode_beats(interface, mode, sys_clk_freq)
                assert mb["w"][0] < 32 and mb["r"][0] < 32, "system clock too fast for the beat counters"
                cases[(interface << 3) | mode] = [bw_cyc.eq(mb["w"][0]), bw_lo.eq(mb["w"][1]),
                                                  br_cyc.eq(mb["r"][0]), br_lo.eq(mb["r"][1])]
        slow = mode_beats(onfi.IF_ASYNC_SDR, 0, sys_clk_freq)
        cases["default"] = [bw_cyc.eq(slow["w"][0]), bw_lo.eq(slow["w"][1]), br_cyc.eq(slow["r"][0]),
                            br_lo.eq(slow["r"][1])]
        self.sync += Case(Cat(self.timing_mode, self.interface), cases)
        async_if = Signal()
        nvddr    = Signal()
        self.comb += async_if.eq(self.interface == onfi.IF_ASYNC_SDR), nvddr.eq(self.interface == onfi.IF_NVDDR)

        # Data path ------------------------------------------------------------------------------------
        # DOUT: bytes -> pairs -> FIFO -> DMA words -> memory. DIN: memory -> DMA words -> pairs -> bytes.
        self.dout_fifo = dout_fifo = stream.SyncFIFO([("data", 16)], 64, buffered=True)
        self.dout_conv = dout_conv = stream.Converter(16, dw)
        # (The converter holds its input while a full word waits: a few words of FIFO after it let the
        # pairs flow every cycle while the DMA writes a word every other cycle.)
        self.dout_words = dout_words = stream.SyncFIFO([("data", dw)], 4, buffered=True)
        # The streams carry memory bytes in address order, first byte in the LSBs: LiteX's DMA calls
        # that "big" (it swaps bytes for "little").
        self.dma_wr    = dma_wr = WishboneDMAWriter(dma_bus.__class__(data_width=dw, adr_width=len(dma_bus.adr)),
                                                    endianness="big")
        self.din_conv  = din_conv = stream.Converter(dw, 16)
        self.dma_rd    = dma_rd = WishboneDMAReader(dma_bus.__class__(data_width=dw, adr_width=len(dma_bus.adr)),
                                                    endianness="big", fifo_depth=32)
        # Corrections: read-modify-write of single memory words.
        fix_bus = dma_bus.__class__(data_width=dw, adr_width=len(dma_bus.adr))
        self.arbiter = wishbone.Arbiter([dma_wr.bus, dma_rd.bus] + ([fix_bus] if ecc else []), dma_bus)
        shift = (dma_bytes - 1).bit_length()
        wr_addr, wr_left, wr_done_words = Signal(32), Signal(16), Signal(16)
        rd_addr, rd_left = Signal(32), Signal(16)
        self.comb += [
            dout_fifo.source.connect(dout_conv.sink),
            dout_conv.source.connect(dout_words.sink, omit={"valid_token_count"}),
            dma_wr.sink.valid.eq(dout_words.source.valid),
            dma_wr.sink.data.eq(dout_words.source.data),
            dma_wr.sink.address.eq(wr_addr[shift:]),
            dout_words.source.ready.eq(dma_wr.sink.ready),
            dma_rd.sink.valid.eq(rd_left != 0),
            dma_rd.sink.address.eq(rd_addr[shift:]),
            dma_rd.source.connect(din_conv.sink),
        ]
        self.sync += [
            If(dma_wr.sink.valid & dma_wr.sink.ready, wr_addr.eq(wr_addr + dma_bytes), wr_done_words.eq(wr_done_words + 1)),
            If(dma_rd.sink.valid & dma_rd.sink.ready, rd_addr.eq(rd_addr + dma_bytes), rd_left.eq(rd_left - 1)),
        ]

        # Sequencer and bus engine ------------------------------------------------------------------
        way  = Signal(4)                      # Way whose program runs.
        pc   = Signal(len(pcs[0]))
        uop  = Signal(4)
        uarg = Signal(8)
        self.comb += [
            ctx_r.adr.eq(way),
            rom_port.adr.eq(pc),
            uop.eq(rom_port.dat_r[8:12]),
            uarg.eq(rom_port.dat_r[:8]),
        ]
        bc       = Signal(5)                  # Cycle within the beat.
        count    = Signal(16)                 # Bytes (or address cycles) left in the micro-op.
        status   = Signal(8)
        wait_cnt = Signal(16)
        sel      = Signal(ways)               # CE# low for these ways.
        dqs_lvl  = Signal()                   # Level of the controller's DQS.
        last_dqs = Signal()                   # Level of the die's DQS in the last phase.
        pend     = Signal()                   # DOUT: a byte waits for its pair.
        pend_b   = Signal(8)
        pairs    = Signal(16)                 # DOUT: pairs pushed (the last DMA word is padded).
        din_hi   = Signal()                   # DIN, a byte per beat: the pair's high byte is next.
        param_sh = Signal(32)
        beat_b0, beat_b1, beat_n = Signal(8), Signal(8), Signal(2)
        cs_wait  = Signal(3)
        n_active = Signal(5)
        L        = read_latency
        ask_left = count if L == 0 else Signal(16)   # DOUT: bytes not asked for yet (`count`: not received yet).
        ratio    = dw // 16

        # ECC state (see "ECC" in the docstring).
        ecc_din     = Signal()                # DIN through the encoder.
        dest        = Signal(2)               # DOUT: where the pairs go (DOUT_*).
        pf_sink_v   = Signal()                # Parity buffer input (from the encoder or the bus).
        pf_sink_d   = Signal(16)
        pf_pop_din  = Signal()
        pf_pop_dec  = Signal()
        din_data_left = Signal(16)            # DIN_ECC: data pairs still to send.
        din_res_left  = Signal(4)             # DIN_ECC: reserved pairs (FFh FFh) still to send.
        ecc_clear   = Signal()
        dec_mode    = Signal()                # A READ_ECC's data (and parity) go to the decoder.
        ecc_unc     = Signal()
        ecc_counts  = Signal(max(self.ecc_bits, 1))
        cw_done     = Signal(8)               # Codewords decoded (status beats received).
        n_cw        = Signal(8)               # Codewords in the descriptor.
        spare_col   = Signal(16)              # Column of the first parity slot.
        ecc_extra   = Signal(16)              # DIN_ECC: bytes after the data (reserved + slots).
        n_parity    = Signal(16)              # DOUT_PARITY: bytes of the slots.
        enc_have, enc_pair = Signal(), Signal(16)   # DIN_ECC: data, reserved bytes, then parity.
        self.comb += dest.eq(Mux(uop == U["DOUT"], uarg[:2], 0))

        # Beat shape: the strobe is low for the first `lo` phases of the beat's B cycles.
        is_read = Signal()
        b_cyc, b_lo = Signal(5), Signal(5)
        ph = [Signal(6, name=f"ph{p}") for p in range(2)]
        strobe = Signal(2)
        beat_end = Signal()
        self.comb += [
            is_read.eq((uop == U["DOUT"]) | (uop == U["STATUS"])),
            b_cyc.eq(Mux(is_read, br_cyc, bw_cyc)),
            b_lo.eq(Mux(is_read, br_lo, bw_lo)),
            ph[0].eq(2 * bc), ph[1].eq(2 * bc + 1),
            strobe.eq(Cat(ph[0] >= b_lo, ph[1] >= b_lo)),
            beat_end.eq(bc == b_cyc - 1),
        ]
        beat_step = If(beat_end, NextValue(bc, 0)).Else(NextValue(bc, bc + 1))

        # Bus defaults: idle levels, CE# low for the selected way.
        self.comb += [
            bus.ce_n.eq(~sel),
            bus.cle.eq(0), bus.ale.eq(0),
            bus.we_n.eq(0b11), bus.re_n.eq(0b11), bus.wp_n.eq(1),
            bus.dq_oe.eq(0), bus.dq_o.eq(0),
            bus.dqs_o.eq(Replicate(dqs_lvl, 2)), bus.dqs_oe.eq(0),
        ]
        self.sync += last_dqs.eq(bus.dqs_i[1])

        # Address bytes.
        col_sel   = Signal(16)
        self.comb += col_sel.eq(Mux(uarg[0], spare_col, cur.col))
        n_addr    = Signal(3)
        addr_idx  = Signal(3)
        addr_byte = Signal(8)
        self.comb += [
            n_addr.eq(Mux(uop == U["ADDR_COL"], col_cyc, Mux(uop == U["ADDR_ROW"], row_cyc, 1))),
            addr_idx.eq(n_addr - count[:3]),
            addr_byte.eq(uarg),
            If(uop == U["ADDR_COL"], addr_byte.eq(Array(col_sel[8 * i:8 * i + 8] for i in range(col_cyc))[addr_idx])),
            If(uop == U["ADDR_ROW"], addr_byte.eq(Array(cur.row[8 * i:8 * i + 8] for i in range(row_cyc))[addr_idx])),
            If(uop == U["ADDR_ARG"], addr_byte.eq(cur.col[:8])),
        ]

        # Completions.
        cpl_room = Signal()
        self.comb += cpl_room.eq(cplq.level + n_active < cplq.depth)

        def complete(res, st, w, tag, counts=None):
            res = Constant(res, 4) if isinstance(res, int) else res
            st = Constant(st, 8) if isinstance(st, int) else st
            fields = [tag[:8], w[:4], res[:4], st[:8]] + ([counts] if counts is not None and self.ecc_bits else [])
            return [cpl_we.eq(1), cpl_din.eq(Cat(*fields)), NextValue(self.completed, self.completed + 1)]

        def finish(w):
            return [NextValue(active, active & ~(1 << w)), NextValue(n_active, n_active - 1)]

        next_uop = [NextValue(pc, pc + 1), NextValue(bc, 0), NextState("DISPATCH")]

        self.fsm = fsm = FSM(reset_state="IDLE")
        # IDLE: a timed-out way completes; else the queue's head starts (or is refused) when its way is
        # free - a command is short and starts an array operation that then overlaps the others' data;
        # else a way ready again resumes: the first after the way resumed last, in rotation (the ways
        # resume in the order they were started, as the submission queue serves them; lowest-first
        # let low ways overtake, and the queue's head then waited for a way still busy).
        resume_way  = Signal(4)
        timeout_way = Signal(4)
        last_resumed = Signal(4)
        after = Signal(ways)
        pick_after, pick_any = Signal(4), Signal(4)
        self.comb += [
            [after[k].eq(resumable[k] & (last_resumed < k)) for k in range(ways)],
            [If(after[k], pick_after.eq(k)) for k in reversed(range(ways))],
            [If(resumable[k], pick_any.eq(k)) for k in reversed(range(ways))],
            resume_way.eq(Mux(after != 0, pick_after, pick_any)),
            [If(timed_out[k], timeout_way.eq(k)) for k in reversed(range(ways))],
        ]
        self.comb += [ctx_w.adr.eq(head.way), ctx_w.dat_w.eq(queue.dout)]
        fsm.act("IDLE",
            NextValue(sel, 0),
            NextValue(cs_wait, t_cs),
            If(timed_out != 0,
                NextValue(way, timeout_way),
                NextState("TIMEOUT"),
            ).Elif(queue.readable & cpl_room & ((verdict != R["OK"]) | ~(active >> head.way)[0]),
                # A new descriptor first: its command starts an array operation while others move data.
                If(verdict != R["OK"],
                    queue.re.eq(1),
                    *complete(verdict, 0, head.way, head.tag),
                ).Else(
                    queue.re.eq(1),
                    ctx_w.we.eq(1),
                    NextValue(way, head.way),
                    NextValue(pc, entry_rom[head.op]),
                    NextValue(active, active | way_bit),
                    NextValue(n_active, n_active + 1),
                    NextValue(status, 0),
                    NextState("SELECT"),
                ),
            ).Elif(resumable != 0,
                NextValue(way, resume_way),
                NextValue(last_resumed, resume_way),
                NextValue(pc, pcs[resume_way] + 1),
                NextValue(waiting, waiting & ~(1 << resume_way)),
                NextValue(status, 0),           # (Another way may have read a status meanwhile.)
                NextState("SELECT"),
            ),
        )
        fsm.act("TIMEOUT",
            *complete(R["TIMEOUT"], 0, way, cur.tag),
            *finish(way),
            NextValue(waiting, waiting & ~(1 << way)),
            NextState("IDLE"),
        )
        # SELECT: CE# low for tCS before the first beat.
        fsm.act("SELECT",
            NextValue(sel, 1 << way),
            NextValue(cs_wait, cs_wait - 1),
            If(cs_wait == 0, NextValue(bc, 0), NextState("DISPATCH")),
        )
        fsm.act("DISPATCH",
            NextValue(bc, 0),
            Case(uop, {
                U["END"]: [*complete(Mux(ecc_unc, Constant(R["ECC_UNCORRECTABLE"], 4),
                                         Mux(status[0], Constant(R["NAND_FAIL"], 4), Constant(R["OK"], 4))),
                                     status, way, cur.tag, ecc_counts[:self.ecc_bits] if self.ecc_bits else None),
                           *finish(way), ecc_clear.eq(1),
                           NextState("IDLE")],
                U["CMD"]:        [NextValue(count, 1), NextState("CMDADDR")],
                U["ADDR"]:       [NextValue(count, 1), NextState("CMDADDR")],
                U["ADDR_ARG"]: [NextValue(count, 1), NextState("CMDADDR")],
                U["ADDR_COL"]:   [NextValue(count, col_cyc), NextState("CMDADDR")],
                U["ADDR_ROW"]:   [NextValue(count, row_cyc), NextState("CMDADDR")],
                U["WAIT"]:       [NextValue(wait_cnt, Array(Constant(d, 16) for d in delays)[uarg[:2]]),
                                  NextState("WAIT")],
                U["WAIT_RB"]:    [NextValue(pcs[way], pc), NextValue(waiting, waiting | (1 << way)),
                                  NextState("IDLE")],
                U["DIN"]:        [NextValue(count, cur.len + Mux(uarg[0], ecc_extra, 0)), NextValue(din_hi, 0),
                                  NextValue(rd_addr, cur.addr), NextValue(rd_left, cur.len >> shift),
                                  NextValue(din_data_left, cur.len[1:]), NextValue(din_res_left, res_beats),
                                  NextState("DIN")],
                U["DIN_PARAM"]:  [NextValue(count, 4), NextValue(din_hi, 0), NextValue(param_sh, cur.param),
                                  NextState("DIN")],
                U["DOUT"]:       [NextValue(count, Mux(uarg[:2] == DOUT_PARITY, n_parity, cur.len)), NextValue(pend, 0),
                                  *([NextValue(ask_left, Mux(uarg[:2] == DOUT_PARITY, n_parity, cur.len))] if L else []),
                                  NextValue(pairs, 0), NextValue(wr_addr, cur.addr), NextValue(wr_done_words, 0),
                                  If(uarg[:2] == DOUT_PARITY, ecc_clear.eq(1)),
                                  If(uarg[:2] == DOUT_ECC, NextValue(dec_mode, 1)),
                                  NextState("DOUT")],
                U["STATUS"]:     [NextValue(count, 1), *([NextValue(ask_left, 1)] if L else []), NextState("DOUT")],
                **({U["CORRECT"]: NextState("CORRECT")} if ecc else {}),
                "default":       next_uop,
            }),
        )
        # Command and address cycles: CLE or ALE for the whole beat, the strobe's rising edge latches.
        fsm.act("CMDADDR",
            bus.cle.eq(uop == U["CMD"]), bus.ale.eq(uop != U["CMD"]),
            bus.dq_oe.eq(1), bus.dq_o.eq(Replicate(addr_byte, 2)),
            bus.we_n.eq(strobe),
            beat_step,
            If(beat_end,
                NextValue(count, count - 1),
                If(count == 1, *next_uop),
            ),
        )
        fsm.act("WAIT",
            NextValue(wait_cnt, wait_cnt - 1),
            If(wait_cnt <= 1, *next_uop),
        )

        # ECC engines and buffers -------------------------------------------------------------------
        if ecc:
            self.encoder = enc = NandLabBchEncoder(**ecc)
            self.decoder = dec = NandLabBchDecoder(**ecc)
            code = dec.code
            assert code.beats == data_beats + slot_beats and reserved % 2 == 0
            # Parity of a page (written by the encoder or read from the spare), data pairs on their way
            # to the decoder, corrections waiting to be applied.
            self.parity_buf = pfifo = stream.SyncFIFO([("data", 16)], lay.codewords * slot_beats)
            self.dec_fifo = dfifo = stream.SyncFIFO([("data", 16)], 32)
            self.fix_fifo = cfifo = stream.SyncFIFO([("cw", 8), ("word", len(dec.source.word)), ("mask", 16)],
                                                    max(ecc["t"] * lay.codewords, 2))
            self.comb += [
                n_cw.eq(cur.len[cw_shift:]),
                spare_col.eq(self.data_bytes + reserved),
                ecc_extra.eq(reserved + n_cw * lay.slot_bytes),
                n_parity.eq(n_cw * lay.slot_bytes),
                pfifo.sink.valid.eq(pf_sink_v), pfifo.sink.data.eq(pf_sink_d),
                pfifo.source.ready.eq(pf_pop_din | pf_pop_dec),
            ]
            # Encoder: fed from the DMA during a DIN_ECC; its parity beats go to the parity buffer (the
            # FSM routes them), its data beats to the bus.
            enc_beat = Signal(max=data_beats + slot_beats)
            enc_par  = Signal()
            slot_i   = Signal(max=max(slot_beats, 2))
            phase_data, phase_res = Signal(), Signal()
            self.comb += [
                enc.sink.valid.eq(ecc_din & din_conv.source.valid),
                enc.sink.data.eq(din_conv.source.data), enc.sink.be.eq(0b11),
                enc_par.eq(enc_beat >= data_beats),
                phase_data.eq(din_data_left != 0),
                phase_res.eq(~phase_data & (din_res_left != 0)),
                If(phase_data,
                    enc_have.eq(enc.source.valid & ~enc_par), enc_pair.eq(enc.source.data),
                ).Elif(phase_res,
                    enc_have.eq(1), enc_pair.eq(0xFFFF),
                ).Else(
                    enc_have.eq(pfifo.source.valid),
                    enc_pair.eq(Cat(pfifo.source.data[:8],
                                    Mux((slot_i == slot_beats - 1) & pad, 0xFF, pfifo.source.data[8:]))),
                ),
            ]
            self.sync += If(enc.source.valid & enc.source.ready,
                If(enc_beat == data_beats + slot_beats - 1, enc_beat.eq(0)).Else(enc_beat.eq(enc_beat + 1)),
            )
            # Decoder: each codeword's data pairs (from the bus, through a small FIFO), then its parity
            # slot from the parity buffer.
            dec_cnt = Signal(max=code.beats)
            self.comb += If(dec_cnt < data_beats,
                dec.sink.valid.eq(dfifo.source.valid), dec.sink.data.eq(dfifo.source.data), dec.sink.be.eq(0b11),
                dfifo.source.ready.eq(dec.sink.ready),
            ).Else(
                dec.sink.valid.eq(pfifo.source.valid & dec_mode), dec.sink.data.eq(pfifo.source.data),
                dec.sink.be.eq(Mux(dec_cnt == code.beats - 1, 0b01 if pad else 0b11, 0b11)),
                pf_pop_dec.eq(dec.sink.ready & dec_mode),
            )
            self.sync += If(ecc_clear, dec_cnt.eq(0)).Elif(dec.sink.valid & dec.sink.ready,
                If(dec_cnt == code.beats - 1, dec_cnt.eq(0)).Else(dec_cnt.eq(dec_cnt + 1)),
            )
            # Decoder results: corrections of data beats queue for the CORRECT micro-op (those of parity
            # beats only count); the status beats fill the per-codeword counts.
            self.comb += [
                dec.source.ready.eq(dec.source.last | cfifo.sink.ready),
                cfifo.sink.valid.eq(dec.source.valid & ~dec.source.last & (dec.source.word < data_beats)),
                cfifo.sink.cw.eq(cw_done), cfifo.sink.word.eq(dec.source.word), cfifo.sink.mask.eq(dec.source.mask),
            ]
            self.sync += If(ecc_clear,
                cw_done.eq(0), ecc_counts.eq(0), ecc_unc.eq(0),
            ).Elif(dec.source.valid & dec.source.last,
                cw_done.eq(cw_done + 1),
                If(dec.source.uncorrectable, ecc_unc.eq(1)),
                Case(cw_done, {i: ecc_counts[i * ecc_w:(i + 1) * ecc_w].eq(
                    Mux(dec.source.uncorrectable, 2**ecc_w - 1, dec.source.count)) for i in range(lay.codewords)}),
            )

        # Data in ------------------------------------------------------------------------------------
        from_param = Signal()
        have = Signal()
        pair = Signal(16)
        pop  = Signal()
        self.comb += [
            from_param.eq(uop == U["DIN_PARAM"]),
            ecc_din.eq(fsm.ongoing("DIN") & (uop == U["DIN"]) & uarg[0]),
            have.eq(from_param | Mux(ecc_din, enc_have, din_conv.source.valid)),
            pair.eq(Mux(from_param, param_sh[:16], Mux(ecc_din, enc_pair, din_conv.source.data))),
            din_conv.source.ready.eq(Mux(ecc_din, enc.sink.ready if ecc else 0, pop & ~from_param) & fsm.ongoing("DIN")),
        ]
        nb_now = Signal(2)
        nv_b0, nv_b1, nv_n = Signal(8), Signal(8), Signal(2)
        toggle = Signal(2)
        lvl = Signal(2)
        self.comb += [
            nb_now.eq(Mux(count >= 2, 2, 1)),
            nv_b0.eq(Mux(bc == 0, pair[:8], beat_b0)),
            nv_b1.eq(Mux(bc == 0, pair[8:], beat_b1)),
            nv_n.eq(Mux(bc == 0, nb_now, beat_n)),
            [toggle[p].eq(((ph[p] == 0) & (nv_n >= 1)) | ((ph[p] == b_lo) & (nv_n == 2))) for p in range(2)],
            lvl[0].eq(dqs_lvl ^ toggle[0]),
            lvl[1].eq(dqs_lvl ^ toggle[0] ^ toggle[1]),
        ]
        fsm.act("DIN",
            If(count == 0,
                *next_uop,
            ).Elif((bc != 0) | have,
                bus.dq_oe.eq(1),
                bus.we_n.eq(strobe),
                If(nvddr,
                    # Two bytes per beat, one per DQS edge (phases 0 and lo).
                    bus.cle.eq(1), bus.ale.eq(1),
                    bus.dqs_oe.eq(1), bus.dqs_o.eq(lvl),
                    bus.dq_o.eq(Cat(Mux(ph[0] >= b_lo, nv_b1, nv_b0), Mux(ph[1] >= b_lo, nv_b1, nv_b0))),
                    NextValue(dqs_lvl, lvl[1]),
                    If(bc == 0,
                        pop.eq(1),
                        NextValue(beat_b0, pair[:8]), NextValue(beat_b1, pair[8:]), NextValue(beat_n, nb_now),
                        If(from_param, NextValue(param_sh, param_sh[16:])),
                    ),
                    If(beat_end, NextValue(count, count - nv_n)),
                    If(beat_end, NextValue(self.bytes_in, self.bytes_in + nv_n)),
                ).Else(
                    # One byte per beat: async SDR (WE#), sync SDR (CLK, W/R# high, CLE = ALE = 1).
                    bus.cle.eq(~async_if), bus.ale.eq(~async_if),
                    bus.dq_o.eq(Replicate(Mux(din_hi, pair[8:], pair[:8]), 2)),
                    If(beat_end,
                        NextValue(count, count - 1),
                        NextValue(self.bytes_in, self.bytes_in + 1),
                        NextValue(din_hi, ~din_hi),
                        If(din_hi,
                            pop.eq(1),
                            If(from_param, NextValue(param_sh, param_sh[16:])),
                        ),
                    ),
                ),
                beat_step,
            ),
        )

        # Data out -----------------------------------------------------------------------------------
        # `ask`: the phases of this cycle in which a byte is due (the die's answer to this cycle's strobes);
        # `due`: the same L cycles later, when that answer is on dq_i / dqs_i (see "Read latency").
        to_status = Signal()
        room = Signal()
        ask  = Signal(2)
        due  = Signal(2)
        got  = Signal(2)
        n_got = Signal(2)
        n_ask, n_missed = Signal(2), Signal(2)
        byte = [bus.dq_i[0:8], bus.dq_i[8:16]]
        rx0, rx1 = Signal(8), Signal(8)
        if L == 0:
            # The byte comes in the cycle it is asked for: the FIFO must take it now.
            fits = lambda f: f.sink.ready
        else:
            # A byte asked for now is pushed L cycles later; until then at most one pair a cycle comes
            # in from the bytes already in flight: leave room for L + 1 pairs.
            fits = lambda f: f.level + (L + 1) <= f.depth
        self.comb += [
            to_status.eq(uop == U["STATUS"]),
            # (The parity buffer holds a page's slots: it has room for every byte of a DOUT_PARITY.)
            room.eq(to_status | Mux(dest == DOUT_PARITY, pfifo.sink.ready if ecc else 0,
                                    fits(dout_fifo) & ((dest != DOUT_ECC) | (fits(dfifo) if ecc else 0)))),
            n_got.eq(got[0] + got[1]),
            n_ask.eq(ask[0] + ask[1]),
            n_missed.eq((due[0] & ~got[0]) + (due[1] & ~got[1])),
            rx0.eq(Mux(got[0], byte[0], byte[1])),
            rx1.eq(byte[1]),
        ]
        if L == 0:
            self.comb += due.eq(ask)
        else:
            due_sr = [Signal(2, name=f"due_sr{k}") for k in range(L)]
            self.sync += [due_sr[0].eq(ask)] + [due_sr[k].eq(due_sr[k - 1]) for k in range(1, L)]
            self.comb += due.eq(due_sr[-1])
        pv, pd = Signal(), Signal(16)   # A pair of bytes is complete.
        hold = Signal()        # Async / sync SDR: no room for a byte (or none left to ask for), the next beat waits.
        self.comb += hold.eq((~room | (ask_left == 0)) & (bc == 0))
        req_ph0 = Signal()     # NV-DDR: phase 0 of this cycle is a W/R# low phase of the beat.
        self.comb += req_ph0.eq((ph[0] == 0) | (ph[0] == b_lo))
        fsm.act("DOUT",
            If(count == 0,
                If(to_status | (dest == DOUT_PARITY), *next_uop).Else(NextState("FLUSH")),
            ).Else(
                If(nvddr,
                    # W/R# low in the phases that ask for a byte (0 and lo of the beat); a byte counts
                    # when the die toggles DQS in that phase.
                    bus.cle.eq(1), bus.ale.eq(1),
                    bus.we_n.eq(strobe),
                    ask[0].eq(room & (ask_left != 0) & req_ph0),
                    # (The second byte of a cycle is asked for only when two are left: asking for it
                    # whenever the first did not come would make a combinational loop through the die.)
                    ask[1].eq(room & (ph[1] == b_lo) & ((ask_left >= 2) | (ask_left != 0) & ~req_ph0)),
                    bus.re_n.eq(~ask),
                    got[0].eq(due[0] & (bus.dqs_i[0] != last_dqs)),
                    got[1].eq(due[1] & (bus.dqs_i[1] != bus.dqs_i[0])),
                    beat_step,
                ).Elif(async_if,
                    # RE# low for lo phases; the byte is taken in the beat's last phase.
                    bus.re_n.eq(strobe | Replicate(hold, 2)),
                    ask[1].eq(beat_end & ~hold),
                    got.eq(due),
                    If(~hold, beat_step),
                ).Else(
                    # Sync SDR: W/R# low, the die gives a byte at the CLK rising edge (phase lo).
                    bus.cle.eq(1), bus.ale.eq(1),
                    bus.re_n.eq(0),
                    bus.we_n.eq(strobe | Replicate(hold, 2)),
                    ask[0].eq(~hold & (ph[0] == b_lo)),
                    ask[1].eq(~hold & (ph[1] == b_lo)),
                    got.eq(due),
                    If(~hold, beat_step),
                ),
                NextValue(count, count - n_got),
                # (A byte NV-DDR asked for and the die did not give is asked for again.)
                *([NextValue(ask_left, ask_left - n_ask + n_missed)] if L else []),
                If(to_status & (n_got != 0), NextValue(status, rx0)),
                # Bytes pair up for the FIFO (a room check came first: it takes them).
                # (Inside the state's statements: Migen puts comb logic that tests fsm.ongoing() in the
                # FSM's own block before the state decode, where it would read the default.)
                If(~to_status,
                    If(pend & (n_got != 0), pv.eq(1), pd.eq(Cat(pend_b, rx0))
                    ).Elif(~pend & (n_got == 2), pv.eq(1), pd.eq(Cat(rx0, rx1))),
                    If(dest == DOUT_PARITY, pf_sink_v.eq(pv), pf_sink_d.eq(pd)
                    ).Else(dout_fifo.sink.valid.eq(pv), dout_fifo.sink.data.eq(pd)),
                    *([If(dest == DOUT_ECC, dfifo.sink.valid.eq(pv), dfifo.sink.data.eq(pd))] if ecc else []),
                ),
            ),
        )
        push = Signal()
        self.comb += push.eq(dout_fifo.sink.valid & dout_fifo.sink.ready)
        self.sync += [
            If(push, pairs.eq(pairs + 1)),
            If(fsm.ongoing("DOUT") & ~to_status & (n_got != 0),
                If(pend,
                    If(n_got == 2, pend_b.eq(rx1)).Else(pend.eq(0)),
                ).Elif(n_got == 1, pend.eq(1), pend_b.eq(rx0)),
                self.bytes_out.eq(self.bytes_out + n_got),
            ),
        ]
        # FLUSH: an odd byte, padding to a whole DMA word, then wait until memory has every word.
        fsm.act("FLUSH",
            If(pend,
                dout_fifo.sink.valid.eq(1), dout_fifo.sink.data.eq(Cat(pend_b, Constant(0xFF, 8))),
                If(dout_fifo.sink.ready, NextValue(pend, 0)),
            ).Elif((pairs & (ratio - 1)) != 0,
                dout_fifo.sink.valid.eq(1), dout_fifo.sink.data.eq(0xFFFF),
            ).Elif((wr_done_words << shift) >= cur.len,
                *next_uop,
            ),
        )
        if ecc:
            # DIN_ECC (after the DIN statements: they read `pop`): parity beats from the encoder into the
            # parity buffer; the bus takes the data pairs, the reserved pairs, then the parity.
            fsm.act("DIN",
                If(ecc_din,
                    If(enc_par,
                        pf_sink_v.eq(enc.source.valid), pf_sink_d.eq(enc.source.data),
                        enc.source.ready.eq(pfifo.sink.ready),
                    ).Elif(phase_data, enc.source.ready.eq(pop)),
                    If(pop,
                        If(phase_data, NextValue(din_data_left, din_data_left - 1)
                        ).Elif(phase_res, NextValue(din_res_left, din_res_left - 1)
                        ).Else(
                            pf_pop_din.eq(1),
                            NextValue(slot_i, Mux(slot_i == slot_beats - 1, 0, slot_i + 1)),
                        ),
                    ),
                ),
            )
            # CORRECT: once memory holds the data (FLUSH came first), flip the bits of each correction by
            # a read-modify-write of its memory word; done when every codeword has its status.
            fix_adr, fix_mask, fix_dat = Signal(len(dma_bus.adr)), Signal(dw), Signal(dw)
            lane = cfifo.source.word[:(ratio - 1).bit_length()] if ratio > 1 else 0
            fsm.act("CORRECT",
                If(cfifo.source.valid,
                    cfifo.source.ready.eq(1),
                    NextValue(fix_adr, (cur.addr + (cfifo.source.cw << cw_shift) + (cfifo.source.word << 1))[shift:]),
                    NextValue(fix_mask, Array(cfifo.source.mask << (16 * i) for i in range(ratio))[lane]),
                    NextState("FIX_RD"),
                ).Elif(cw_done == n_cw,
                    NextValue(dec_mode, 0),
                    *next_uop,
                ),
            )
            fsm.act("FIX_RD",
                fix_bus.cyc.eq(1), fix_bus.stb.eq(1), fix_bus.we.eq(0), fix_bus.adr.eq(fix_adr),
                fix_bus.sel.eq(2**(dw // 8) - 1),
                If(fix_bus.ack, NextValue(fix_dat, fix_bus.dat_r ^ fix_mask), NextState("FIX_WR")),
            )
            fsm.act("FIX_WR",
                fix_bus.cyc.eq(1), fix_bus.stb.eq(1), fix_bus.we.eq(1), fix_bus.adr.eq(fix_adr),
                fix_bus.sel.eq(2**(dw // 8) - 1), fix_bus.dat_w.eq(fix_dat),
                If(fix_bus.ack, NextState("CORRECT")),
            )
            self.sync += If(fsm.ongoing("FIX_WR") & fix_bus.ack, self.ecc_fixed.eq(self.ecc_fixed + 1))
        self.sync += [
            If(~fsm.ongoing("IDLE"), self.busy_cycles.eq(self.busy_cycles + 1)),
            If(fsm.ongoing("DIN") | fsm.ongoing("DOUT"), self.data_cycles.eq(self.data_cycles + 1)),
        ]

    def add_csr(self):
        """CSRs: descriptor words and submit, completion and pop, configuration, counters, IRQ."""
        ways = self.ways
        self._desc0 = CSRStorage(fields=[
            CSRField("op",  size=5, description="Operation (see `OPS`)."),
            CSRField("way", size=4, offset=8, description="Way (CE#)."),
            CSRField("tag", size=8, offset=16, description="Tag returned in the completion."),
        ], description="Descriptor word 0.")
        self._desc_row   = CSRStorage(24, description="Descriptor: row address (page | block << page bits).")
        self._desc_col   = CSRStorage(fields=[
            CSRField("col", size=16, description="Column (byte in the page; READ ID / features: the address byte)."),
            CSRField("len", size=16, offset=16, description="Bytes to move (even; DMA-word multiple for data in)."),
        ], description="Descriptor: column and length.")
        self._desc_addr  = CSRStorage(32, description="Descriptor: memory address of the data (DMA-word aligned).")
        self._desc_param = CSRStorage(32, description="Descriptor: SET FEATURES P1-P4 (P1 in bits 7:0).")
        self._submit     = CSR()       # Write: queue the descriptor held in the desc_* registers.
        self._queue = CSRStatus(fields=[
            CSRField("ready",     size=1, description="The queue has room."),
            CSRField("in_flight", size=16, offset=8, description="Ways with a descriptor in flight."),
        ], description="Submission queue state.")
        self._cpl = CSRStatus(fields=[
            CSRField("valid",  size=1, description="A completion is waiting."),
            CSRField("result", size=4, offset=4, description="Result.",
                     values=[(str(i), n) for i, n in enumerate(RESULTS)]),
            CSRField("tag",    size=8, offset=8, description="Tag of the descriptor."),
            CSRField("way",    size=4, offset=16, description="Way of the descriptor."),
            CSRField("status", size=8, offset=24, description="NAND status byte (operations ending with 70h)."),
        ], description="The oldest completion.")
        if self.ecc_bits:
            self._cpl_ecc = CSRStatus(self.ecc_bits, description="The oldest completion's corrected bits per "
                                      f"codeword ({bits_for(self.ecc['t'] + 1)} bits each, codeword 0 in the LSBs; "
                                      "all ones: uncorrectable).")
            self._ecc_fixed = CSRStatus(32, description="Counter: memory words corrected.")
            self.comb += self._cpl_ecc.status.eq(self.cpl_ecc), self._ecc_fixed.status.eq(self.ecc_fixed)
        self._cpl_pop = CSR()           # Write: drop the oldest completion.
        self._config = CSRStorage(fields=[
            CSRField("interface",   size=2, description="Bus interface.",
                     values=[("0", "async SDR"), ("1", "NV-DDR"), ("3", "sync SDR")]),
            CSRField("timing_mode", size=3, offset=4, description="Timing mode 0-5."),
            CSRField("ways_online", size=16, offset=16, reset=2**ways - 1,
                     description="Ways that take descriptors (a die left out at bring-up is cleared)."),
        ], description="Interface, timing mode, ways in use.")
        self._geometry = CSRStorage(fields=[
            CSRField("page_bytes", size=16, reset=self.page_bytes.reset.value, description="Bytes per page, spare included."),
            CSRField("page_bits",  size=5, offset=16, reset=self.page_bits.reset.value, description="Row bits of the page in the block."),
        ], description="Page geometry (rows and columns beyond it are refused).")
        self._blocks  = CSRStorage(24, reset=self.blocks.reset.value, description="Blocks per LUN.")
        self._data_bytes = CSRStorage(16, reset=self.data_bytes.reset.value,
                                      description="Bytes of the page's data area (ECC operations).")
        self._timeout = CSRStorage(32, reset=self.timeout.reset.value, description="R/B# timeout (cycles, 1024-cycle resolution).")
        for name in ("busy_cycles", "data_cycles", "bytes_in", "bytes_out", "completed"):
            csr = CSRStatus(32, name=name, description=f"Counter: {name.replace('_', ' ')}.")
            setattr(self, f"_{name}", csr)
            self.comb += csr.status.eq(getattr(self, name))
        self.ev = EventManager()
        self.ev.done = EventSourceLevel(description="Completions are waiting.")
        self.ev.finalize()
        self.comb += [
            self.d_op.eq(self._desc0.fields.op), self.d_way.eq(self._desc0.fields.way),
            self.d_tag.eq(self._desc0.fields.tag), self.d_row.eq(self._desc_row.storage),
            self.d_col.eq(self._desc_col.fields.col), self.d_len.eq(self._desc_col.fields.len),
            self.d_addr.eq(self._desc_addr.storage), self.d_param.eq(self._desc_param.storage),
            self.submit.eq(self._submit.re),
            self._queue.fields.ready.eq(self.submit_ready), self._queue.fields.in_flight.eq(self.in_flight),
            self._cpl.fields.valid.eq(self.cpl_valid), self._cpl.fields.result.eq(self.cpl_result),
            self._cpl.fields.tag.eq(self.cpl_tag), self._cpl.fields.way.eq(self.cpl_way),
            self._cpl.fields.status.eq(self.cpl_status),
            self.cpl_pop.eq(self._cpl_pop.re),
            self.interface.eq(self._config.fields.interface), self.timing_mode.eq(self._config.fields.timing_mode),
            self.ways_online.eq(self._config.fields.ways_online),
            self.page_bytes.eq(self._geometry.fields.page_bytes), self.page_bits.eq(self._geometry.fields.page_bits),
            self.blocks.eq(self._blocks.storage), self.timeout.eq(self._timeout.storage),
            self.data_bytes.eq(self._data_bytes.storage),
            self.ev.done.trigger.eq(self.cpl_valid),
        ]
