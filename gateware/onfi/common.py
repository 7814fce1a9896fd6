"""ONFI definitions shared by the controller, the PHYs and the die emulator: commands, status
bits, features, timing modes, and the phased NAND bus on which they all meet.

The phased NAND bus
===================

Inside the FPGA the controller and the emulated dies do not toggle pins: they exchange, every
system clock cycle, the levels the ONFI pins would have, with the fast signals given for two
phases of the cycle (phase 0 = first half, phase 1 = second half), as LiteDRAM's DFI does. Async
SDR, sync SDR and NV-DDR are only different patterns on this bundle; the pin PHY for real chips
turns the same bundle into pins with DDR I/O primitives.

Controller to NAND (`nand_bus_layout`, direction M_TO_S):

=========  ========  ====================================================================
signal     width     meaning
=========  ========  ====================================================================
ce_n       targets   CE# per target, held for the whole cycle
cle        1         CLE, whole cycle
ale        1         ALE, whole cycle
we_n       2         per phase: WE# (async SDR), CLK (sync SDR, NV-DDR)
re_n       2         per phase: RE# (async SDR), W/R# (sync SDR, NV-DDR)
wp_n       1         WP#, whole cycle
dq_o       16        per phase: DQ[7:0] driven by the controller (phase 0 in bits 7:0)
dq_oe      1         the controller drives DQ this cycle
dqs_o      2         per phase: DQS driven by the controller (NV-DDR data input)
dqs_oe     1         the controller drives DQS this cycle
=========  ========  ====================================================================

NAND to controller (direction S_TO_M):

=========  ========  ====================================================================
dq_i       16        per phase: DQ[7:0] driven by the selected die (0 when it does not drive)
dqs_i      2         per phase: DQS driven by the die (NV-DDR data output)
rb_n       luns      R/B# per LUN (1 = ready), a die drives its own bits
=========  ========  ====================================================================

Edges and what is latched
-------------------------
A level "changes at phase p" when it differs from the level of the phase before (phase 1 of the
previous cycle for p = 0).

* Async SDR. A rising edge of WE# at phase p latches the byte of the phase before (dq_o[p-1]):
  a command when CLE is high, an address when ALE is high, data otherwise. A falling edge of
  RE# at phase p makes the die put the next output byte on dq_i from phase p on; the controller
  samples it at the next rising edge of RE# (tREA is met by holding RE# low long enough).
* Sync SDR (nandlab's model of the DDR paper's SYNC_ONLY interface). CLK (we_n) toggles;
  commands, addresses and data move one byte per CLK rising edge, in the direction W/R# gives
  (1 = to the die). Output bytes appear on dq_i in the phase of the rising edge.
* NV-DDR. CLK (we_n) toggles; commands and addresses are latched at CLK rising edges as in
  sync SDR. With CLE = ALE = 1 the cycle is a data cycle: W/R# = 1 is data input, latched at
  every edge of the controller's DQS (dqs_o) with the byte of the phase of the edge
  (dq_o[p]); W/R# = 0 is data output, the die toggling dqs_i and giving one byte per phase.

CE# high makes a die ignore everything but keep its array operations running. R/B# follows the
LUN: low while it is busy.
"""

from collections import namedtuple
from functools import reduce
from operator import or_

from migen import *
from migen.genlib.record import DIR_M_TO_S, DIR_S_TO_M, Record

from litex.gen import LiteXModule

NPHASES = 2

# Commands -----------------------------------------------------------------------------------------

CMD_READ                = 0x00
CMD_READ_CONFIRM        = 0x30
CMD_READ_MULTIPLANE     = 0x32
CMD_READ_CACHE_SEQ      = 0x31
CMD_READ_CACHE_END      = 0x3F
CMD_CHANGE_READ_COL     = 0x05
CMD_CHANGE_READ_COL_2   = 0xE0
CMD_CHANGE_READ_COL_ENH = 0x06
CMD_PROGRAM             = 0x80
CMD_PROGRAM_CONFIRM     = 0x10
CMD_PROGRAM_MULTIPLANE  = 0x11
CMD_PROGRAM_CACHE       = 0x15
CMD_CHANGE_WRITE_COL    = 0x85
CMD_ERASE               = 0x60
CMD_ERASE_CONFIRM       = 0xD0
CMD_ERASE_MULTIPLANE    = 0xD1
CMD_READ_STATUS         = 0x70
CMD_READ_STATUS_ENH     = 0x78
CMD_READ_ID             = 0x90
CMD_READ_PARAM_PAGE     = 0xEC
CMD_GET_FEATURES        = 0xEE
CMD_SET_FEATURES        = 0xEF
CMD_RESET               = 0xFF

COMMAND_NAMES = {v: k[4:] for k, v in list(globals().items()) if k.startswith("CMD_")}

# Status register bits.
STATUS_FAIL  = 1 << 0   # Last operation failed.
STATUS_FAILC = 1 << 1   # The operation before it failed (cache operations).
STATUS_ARDY  = 1 << 5   # Array ready (no array operation in progress).
STATUS_RDY   = 1 << 6   # Ready for another command (page/cache register free).
STATUS_WP_N  = 1 << 7   # Not write protected.

# READ ID addresses.
READ_ID_JEDEC = 0x00
READ_ID_ONFI  = 0x20

# Features.
FEATURE_TIMING_MODE = 0x01  # P1[3:0] timing mode, P1[5:4] data interface.
TIMING_MODE_P1_MODE      = (0, 4)   # (offset, bits) in P1 of FEATURE_TIMING_MODE.
TIMING_MODE_P1_INTERFACE = (4, 2)

IF_ASYNC_SDR = 0            # ONFI "asynchronous" (SDR).
IF_NVDDR     = 1            # ONFI source synchronous (NV-DDR).
IF_SYNC_SDR  = 3            # nandlab extension (P1[5:4] = 11b, reserved in ONFI): sync SDR.
INTERFACE_NAMES = {IF_ASYNC_SDR: "async SDR", IF_NVDDR: "NV-DDR", IF_SYNC_SDR: "sync SDR"}

# Timing modes (ns; Linux nand_timings.c, ONFI tables).
SDR_TRC_NS   = [100, 50, 35, 30, 25, 20]
SDR_TWC_NS   = [100, 45, 35, 30, 25, 20]
# Async SDR data output, per mode 0-5 (ONFI's table as Linux's nand_timings.c carries it): tREA max (RE#
# low to data valid), tRHOH min (data held after RE# high; 0 in mode 0: data only while RE# is low) and
# tRLOH min (data held after RE# low: EDO modes 4-5).
SDR_TREA_NS  = [40, 30, 25, 20, 20, 16]
SDR_TRHOH_NS = [0, 15, 15, 15, 15, 15]
SDR_TRLOH_NS = [0, 0, 0, 0, 5, 5]
# What a board adds to tREA: RE# out to the chip and the byte back (the socket's wiring: 1.5 ns a way).
SDR_BOARD_NS = 3
NVDDR_TCK_NS = [50, 30, 20, 15, 12, 10]
# NV-DDR data output: the chip drives DQS (and DQ with it) tDQSCK after the clock edge, 3 .. 25 ns in every
# mode (ONFI; Linux nand_timings.c onfi_nvddr_timings: tDQSCK_min 3000, tDQSCK_max 25000 ps), up to five
# 5 ns phases at 100 MHz; the board adds its flight time (NVDDR_BOARD_NS) on top.
NVDDR_TDQSCK_MAX_NS = 25
NVDDR_BOARD_NS = 1

# ONFI times that do not depend on the timing mode (tCCS: unless the parameter page gives less).
T_ADL_NS  = 400
T_CCS_NS  = 500
T_FEAT_NS = 1000


# The interface timings of one timing mode that the controller waits and the die checks (ns): t_wb is
# the *maximum* from the WE# (CLK) rising edge of a confirm to R/B# low, the others are minima. t_whr:
# command/address to data out; t_rr: R/B# high to data out; t_cs: CE# low to the first command or
# address latch; t_adl: PROGRAM's last address to data in; t_ccs: column change to data; t_rhw: the end
# of data output (RE# high; NV-DDR: the last data output cycle) to the next command or address cycle.
InterfaceTimings = namedtuple("InterfaceTimings", "t_wb t_whr t_rr t_cs t_adl t_ccs t_rhw")


# One row per timing mode 0-5, from the ONFI timing-mode tables as Linux carries them
# (drivers/mtd/nand/raw/nand_timings.c: onfi_sdr_timings[] and onfi_nvddr_timings[], fields tWB_max,
# tWHR_min, tRR_min, tCS_min, tADL_min, tCCS_min, tRHW_min, in ps there). Cross-checked with
# /work/shared/REFERENCE.md ("tWB max 100 ns (200 in SDR mode 0), tWHR 80 ns (120 in SDR mode 0),
# tRR 20 ns (40 in SDR mode 0)") and the brief of issue 21 (tCS 70 ns in SDR mode 0).
#                  tWB   tWHR  tRR  tCS  tADL  tCCS  tRHW
SDR_TIMINGS = [
    InterfaceTimings(200, 120,  40,  70,  400,  500,  200),    # SDR mode 0 (every chip powers up in it)
    InterfaceTimings(100,  80,  20,  35,  400,  500,  100),    # SDR mode 1
    InterfaceTimings(100,  80,  20,  25,  400,  500,  100),    # SDR mode 2
    InterfaceTimings(100,  80,  20,  25,  400,  500,  100),    # SDR mode 3
    InterfaceTimings(100,  80,  20,  20,  400,  500,  100),    # SDR mode 4
    InterfaceTimings(100,  80,  20,  15,  400,  500,  100),    # SDR mode 5
]
NVDDR_TIMINGS = [
    InterfaceTimings(100,  80,  20,  35,  400,  500,  100),    # NV-DDR mode 0
    InterfaceTimings(100,  80,  20,  25,  400,  500,  100),    # NV-DDR mode 1
    InterfaceTimings(100,  80,  20,  15,  400,  500,  100),    # NV-DDR mode 2
    InterfaceTimings(100,  80,  20,  15,  400,  500,  100),    # NV-DDR mode 3
    InterfaceTimings(100,  80,  20,  15,  400,  500,  100),    # NV-DDR mode 4
    InterfaceTimings(100,  80,  20,  15,  400,  500,  100),    # NV-DDR mode 5
]
TIMING_MODES = len(SDR_TIMINGS)


def interface_timings(interface, mode):
    """The ONFI timings of `mode` in `interface` (onfi.IF_*). Sync SDR (nandlab's extension) takes the
    NV-DDR row of its mode (both are clocked, source-synchronous in ONFI's sense). A mode or interface
    outside the tables gives SDR mode 0's row, the slowest: a controller never waits less than a die
    in an unknown mode may need."""
    if interface in (IF_NVDDR, IF_SYNC_SDR) and 0 <= mode < len(NVDDR_TIMINGS):
        return NVDDR_TIMINGS[mode]
    if interface == IF_ASYNC_SDR and 0 <= mode < len(SDR_TIMINGS):
        return SDR_TIMINGS[mode]
    return SDR_TIMINGS[0]


def slowest_timings():
    """The longest of every field over all modes and interfaces (sizes counters, worst-case waits)."""
    rows = SDR_TIMINGS + NVDDR_TIMINGS
    return InterfaceTimings(*[max(column) for column in zip(*rows)])


def mode_timings(part, interface, mode):
    """The timings for a `part` (NandPart) in `mode`: the table's row, a part that declares a longer
    tWHR / tRR / tWB than the row keeps its own, and tADL / tCCS are the part's (its parameter page's:
    ONFI lets the page give a shorter tCCS than 500 ns)."""
    row = interface_timings(interface, mode)
    return InterfaceTimings(max(row.t_wb, part.t_wb), max(row.t_whr, part.t_whr), max(row.t_rr, part.t_rr),
                            row.t_cs, part.t_adl, part.t_ccs, row.t_rhw)


# The bus ------------------------------------------------------------------------------------------

def nand_bus_layout(targets=1, luns=1):
    return [
        ("ce_n",   targets,       DIR_M_TO_S),
        ("cle",    1,             DIR_M_TO_S),
        ("ale",    1,             DIR_M_TO_S),
        ("we_n",   NPHASES,       DIR_M_TO_S),
        ("re_n",   NPHASES,       DIR_M_TO_S),
        ("wp_n",   1,             DIR_M_TO_S),
        ("dq_o",   8 * NPHASES,   DIR_M_TO_S),
        ("dq_oe",  1,             DIR_M_TO_S),
        ("dqs_o",  NPHASES,       DIR_M_TO_S),
        ("dqs_oe", 1,             DIR_M_TO_S),
        ("dq_i",   8 * NPHASES,   DIR_S_TO_M),
        ("dqs_i",  NPHASES,       DIR_S_TO_M),
        ("rb_n",   targets * luns, DIR_S_TO_M),
    ]


class NandBus(Record):
    """One channel's phased NAND bus (see the module documentation)."""
    def __init__(self, targets=1, luns=1, name=None):
        self.targets = targets
        self.luns    = luns
        Record.__init__(self, nand_bus_layout(targets, luns), name=name)

    def idle(self):
        """Statements driving the controller side to the bus idle state."""
        return [
            self.ce_n.eq(2**len(self.ce_n) - 1),
            self.cle.eq(0),
            self.ale.eq(0),
            self.we_n.eq(2**NPHASES - 1),
            self.re_n.eq(2**NPHASES - 1),
            self.wp_n.eq(1),
            self.dq_oe.eq(0),
            self.dqs_oe.eq(0),
        ]


# The levels an unselected die is not shown (NandChannel's `seen`), and their idle values (0 if not named).
MASKED_LEVELS = ["cle", "ale", "we_n", "re_n", "dq_o", "dq_oe", "dqs_o", "dqs_oe"]
MASKED_IDLE = {"we_n": 2**NPHASES - 1, "re_n": 2**NPHASES - 1}


class NandChannel(LiteXModule):
    """Connects one controller-side bus to `targets` dies, each with its own single-target bus.

    Control and controller data fan out; CE# bit i goes to die i; the dies' data and DQS are ORed
    (a die drives zeros when it does not output) and their R/B# bits are gathered.

    `seen` (simulation, idle gating): for each die, the levels it is given instead of the bus's (CE# and
    WP# aside): a dict of MASKED_LEVELS' names and `prev` (the previous cycle's last-phase WE#, RE#, DQ,
    DQS its front end finds edges against), `NandBusMux.die_levels()`; `die_prev` each die's inputs for
    `prev` (a die built with `bus_prev`: its `bus_prev_*`). There a die sees the bus only while it is
    selected, idle levels otherwise, so that traffic for other dies does not change its inputs (an
    idle-gated die sleeps through it). The same behaviour: a die with CE# high ignores the bus (ONFI;
    the emulated die's bus events are all qualified by CE# low), and in the cycle its CE# falls it
    gets the real bus's previous levels.
    """
    def __init__(self, bus, dies, seen=None, die_prev=None):
        assert len(dies) == bus.targets
        # # #
        for i, die in enumerate(dies):
            if seen is None:
                levels = {n: getattr(bus, n) for n in MASKED_LEVELS}
            else:
                levels = seen[i]
                self.comb += [d.eq(p) for d, p in zip(die_prev[i], levels["prev"])]
            self.comb += [
                die.ce_n.eq(bus.ce_n[i]),
                die.cle.eq(levels["cle"]),
                die.ale.eq(levels["ale"]),
                die.we_n.eq(levels["we_n"]),
                die.re_n.eq(levels["re_n"]),
                die.wp_n.eq(bus.wp_n),
                die.dq_o.eq(levels["dq_o"]),
                die.dq_oe.eq(levels["dq_oe"]),
                die.dqs_o.eq(levels["dqs_o"]),
                die.dqs_oe.eq(levels["dqs_oe"]),
                bus.rb_n[i * bus.luns:(i + 1) * bus.luns].eq(die.rb_n),
            ]
        self.comb += [
            bus.dq_i.eq(reduce(or_, [die.dq_i for die in dies])),
            bus.dqs_i.eq(reduce(or_, [die.dqs_i for die in dies])),
        ]


def phase_edges(levels, previous):
    """(rising, falling) lists per phase for a per-phase level vector, given the last phase's
    level of the previous cycle."""
    rising, falling = [], []
    prev = previous
    for p in range(len(levels)):
        rising.append(~prev & levels[p])
        falling.append(prev & ~levels[p])
        prev = levels[p]
    return rising, falling


class NandBusMux(LiteXModule):
    """Gives one channel bus (`bus`) to one of several masters (`masters`, controller side each):
    `select` picks the master that drives the pins' levels; every master sees what the dies drive.

    `registered`: the selected master's levels reach the bus a cycle later, from registers (idle
    levels at reset: CE#, WE#, RE# high). That cuts the combinational path from a master's state
    through the dies' input logic; what the dies drive back then answers a cycle late, which a
    channel controller takes with `read_latency` = 1.

    `registered_return`: the masters (indices into `masters`) that see what the dies drive (DQ, DQS,
    R/B#) through one register stage, a cycle later (R/B# ready at reset); the others see the bus's
    levels as they are. That cuts the path from a die's state through the channel bus into a
    controller's sequencer; such a controller is built with `read_latency` and `rb_latency` one higher."""
    def __init__(self, masters, bus, registered=False, registered_return=()):
        self.select = Signal(max=max(len(masters), 2))
        if not set(registered_return) <= set(range(len(masters))):
            raise ValueError(f"registered_return {tuple(registered_return)}: masters are 0..{len(masters) - 1}")
        # # #
        out = [name for name, _, direction in nand_bus_layout() if direction == DIR_M_TO_S]
        inp = [name for name, _, direction in nand_bus_layout() if direction == DIR_S_TO_M]
        if registered:
            idle = {"ce_n": 2**len(bus.ce_n) - 1, "we_n": 2**NPHASES - 1, "re_n": 2**NPHASES - 1}
            levels = {n: Signal(len(getattr(bus, n)), reset=idle.get(n, 0), name=f"{n}_q") for n in out}
            self.comb += [getattr(bus, n).eq(levels[n]) for n in out]
            self.sync += Case(self.select, {i: [levels[n].eq(getattr(m, n)) for n in out]
                                            for i, m in enumerate(masters)})
            self._levels, self._masters = levels, masters
        else:
            self.comb += Case(self.select, {i: [getattr(bus, n).eq(getattr(m, n)) for n in out]
                                            for i, m in enumerate(masters)})
        raw = {n: getattr(bus, n) for n in inp}
        late = raw
        if registered_return:
            late = {n: Signal(len(v), reset=2**len(v) - 1 if n == "rb_n" else 0, name=f"{n}_r") for n, v in raw.items()}
            self.sync += [late[n].eq(raw[n]) for n in inp]
        for i, m in enumerate(masters):
            seen = late if i in registered_return else raw
            self.comb += [getattr(m, n).eq(seen[n]) for n in inp]

    def die_levels(self, die):
        """(registered mux) What die `die` of the bus is shown (NandChannel's `seen`): registers of this
        block holding the bus's levels (MASKED_LEVELS) in the cycles where its CE# is low and idle levels
        otherwise, and `prev`, the bus's last-phase WE#, RE#, DQ, DQS of the previous cycle (idle levels
        where CE# is high)."""
        lv, masters = self._levels, self._masters
        idle = lambda n: MASKED_IDLE.get(n, 0)
        seen = {n: Signal(len(lv[n]), reset=idle(n), name=f"die{die}_{n}") for n in MASKED_LEVELS}
        now = (lv["we_n"][-1], lv["re_n"][-1], lv["dq_o"][8:16], lv["dqs_o"][-1])
        prev = (Signal(reset=1, name=f"die{die}_prev_we"), Signal(reset=1, name=f"die{die}_prev_re"),
                Signal(8, name=f"die{die}_prev_dq"), Signal(name=f"die{die}_prev_dqs"))
        seen["prev"] = prev
        # The master's CE# now is the bus's next cycle.
        self.sync += Case(self.select, {k: [seen[n].eq(Mux(m.ce_n[die], idle(n), getattr(m, n))) for n in MASKED_LEVELS]
                                        + [p.eq(Mux(m.ce_n[die], p.reset, v)) for p, v in zip(prev, now)]
                                        for k, m in enumerate(masters)})
        return seen

    def add_csr(self, names):
        from litex.soc.interconnect.csr import CSRStorage, CSRField
        self._select = CSRStorage(fields=[CSRField("master", size=len(self.select), description="Bus master.",
            values=[(str(i), n) for i, n in enumerate(names)])], description="Who drives the NAND bus.")
        self.comb += self.select.eq(self._select.storage)
