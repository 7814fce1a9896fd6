"""The die emulator (NandLabDie): its public interface and CSRs, built from the parts of this package."""

from migen import *
from migen.genlib.record import Record

from litex.gen import LiteXModule
from litex.soc.interconnect.csr import CSRStorage, CSRStatus, CSRField

from nandlab.gateware.onfi.common import NandBus
from nandlab.gateware.power.deviation import deviated_tables
from nandlab.nand_model.common import DieConfig, REASON_NAMES
from nandlab.nand_model.current import PhaseTables, NandLabDieSequencer, I_FRAC_BITS
from nandlab.nand_model.die.common import STORAGES, words
from nandlab.nand_model.die.decoder import NandLabDieDecoder
from nandlab.nand_model.die.edges import NandLabDieBusEdges
from nandlab.nand_model.die.engine import NandLabDieEngine
from nandlab.nand_model.die.output import NandLabDieOutput
from nandlab.nand_model.die.power import NandLabDieCurrentHook, variant_tables
from nandlab.nand_model.die.storage import sim_storage_layout
from nandlab.nand_model.die.registers import NandLabDiePageRegisters
from nandlab.nand_model.die.stats import NandLabDieStats, STATS, STAT_OPS, stat_widths
from nandlab.nand_model.die.timing import NandLabDieTimingChecker, TIMING_CHECKS

# (offset, size) of the control CSR's plane-architecture fields (exported to firmware: soc/constants.py).
CONTROL_TIME_SHIFT = (8, 5)
CONTROL_ARCH  = (16, 2)
CONTROL_MPNFM = (20, 1)


class NandLabDie(LiteXModule):
    """One ONFI LUN on the phased NAND bus (`bus`, a NandBus of one target by default) built from
    `config` (a DieConfig); its array in block RAM (`storage="bram"`), in a region of main RAM
    from `storage_base` behind the Wishbone master `storage_bus` (`storage="wishbone"`), or, in
    simulation, in the litex_sim module `nandstore` through the pads `storage_pads`
    (`storage="sim"`, `storage.sim_storage_layout`; the simulation target connects them).

    Controls and observations are signals (a testbench drives them) or CSRs after `add_csr()`.
    Boards short of LUTs keep the statistics (`stats="memory"`, die/stats.py) and the current
    sequencer's segment table (`seg_rom="memory"`, nand_model/current.py) in block RAM.

    `bus_prev` (simulation): the bus's levels of the previous cycle that the front end finds edges
    against (last phase's WE#, RE#, DQ, DQS) come from the owner (signals `bus_prev_we`, `bus_prev_re`,
    `bus_prev_dq`, `bus_prev_dqs`) instead of the die's registers: the owner can then hide the bus from
    an unselected die (NandChannel) without the die losing the levels before its CE# falls.

    `seq_apart` (simulation): the current sequencer (`seq`) is not a submodule of the die; the owner
    adds it beside the die. An idle gate around the die (gateware/common/idlegate.py) then leaves the
    sequencer out: the die's own logic reads only the sequencer's `busy`, so it is not clocked while the
    sequencer counts through an array operation's phases."""
    def __init__(self, config, bus=None, max_flips=15, storage="bram", storage_base=0, stats="counters",
                 seg_rom="logic", bus_prev=False, seq_apart=False):
        assert isinstance(config, DieConfig)
        if stats not in STATS:
            raise ValueError(f"stats '{stats}' unknown; valid: {', '.join(STATS)}")
        self.stats_mode = stats
        if storage not in STORAGES:
            raise ValueError(f"storage '{storage}' unknown; valid: {', '.join(STORAGES)}")
        if storage_base % 4:
            raise ValueError(f"storage_base 0x{storage_base:x} is not a multiple of 4 bytes")
        self.config = config
        self.storage = storage
        self.storage_base = storage_base
        self.bus = bus = bus if bus is not None else NandBus(targets=1, luns=1)
        self.page_words = words(config.page_bytes)
        if storage == "wishbone":
            from litex.soc.interconnect import wishbone
            self.storage_bus = wishbone.Interface(data_width=32, address_width=32, addressing="word")
        if storage == "sim":
            self.storage_pads = Record(sim_storage_layout(config), name="storage_pads")

        # Run-time controls (CSRs in add_csr(), or driven by a testbench).
        self.inject_program_fail = Signal()    # Pulse: the next program fails.
        self.inject_erase_fail   = Signal()    # Pulse: the next erase fails.
        self.flip_row            = Signal(24)  # Reads of this row get `flip_count` bit flips.
        self.flip_count          = Signal(max=max_flips + 1)
        self.flip_rate           = Signal(16)  # Random flips: a word read from the array gets one
                                               # flipped bit with probability flip_rate / 65536.
        self.time_scale_shift    = Signal(5)   # Run-time division of array times by 2**n.
        self.arch                = Signal(2)   # ARCH_CNFM / ARCH_DW / ARCH_SDW (DW when not built).
        self.mpnfm               = Signal()    # MPNFM: plane 1 has the part's small pages.
        self.param_corrupt       = Signal(3)   # Copies of the parameter page read with a bad CRC (a
                                               # data byte flipped), for bring-up tests.
        # Observation.
        self.busy        = Signal()
        self.data_interface   = Signal(2)           # onfi.IF_*
        self.timing_mode = Signal(4)
        self.status      = Signal(8)
        # Statistics (stats="counters": a register each; "memory": NandLabDieStats, read through
        # `self.stats` or its CSRs): violations by timing check, failed operations by reason,
        # operations started, and multi-plane operations by operation and page count (2 .. page
        # registers): the plane papers' exploitation measured in the die (single-plane = ops - their sum).
        self.stat_widths = stat_widths(config)
        self.stat_events = {}                # Name -> pulse, filled by the parts below.
        if stats == "counters":
            self.reasons     = [Signal(16, name=f"reason{i}") for i in range(len(REASON_NAMES))]
            self.violations  = {n: Signal(16, name=f"viol_{n}") for n in TIMING_CHECKS}
            self.ops         = {n: Signal(32, name=f"ops_{n}") for n in STAT_OPS}
            self.mp_ops      = {op: {n: Signal(32, name=f"mp_{op}{n}") for n in range(2, config.registers + 1)}
                                for op in STAT_OPS}
        self.reg_overruns = Signal(16)       # Times a register was cleared 16 times within two
                                             # scrubber sweeps (a stale word may then read as data).
        # Power-manager hook and current (nand_model/current.py): OI/OE before every phase of an
        # array operation; the die's current every cycle in I_max / 4096, bus transfers included.
        self.tables      = PhaseTables(config.part, config.sys_clk_freq, config.time_scale)
        # The sequencer plays the die's real waveform: the nominal one unless it deviates.
        deviate          = lambda t: deviated_tables(t, *config.current_deviation)
        seq = NandLabDieSequencer(deviate(self.tables), variants=[deviate(t) for t in variant_tables(config)],
                                  seg_rom=seg_rom)
        if seq_apart:
            object.__setattr__(self, "seq", seq)      # (An attribute only: LiteXModule would add a submodule.)
        else:
            self.seq = seq
        self.oi          = seq.oi
        self.oi_next     = seq.oi_next
        self.oi_first    = seq.oi_first
        self.oe          = seq.oe
        self.phase_end   = seq.phase_end
        self.atomic_end  = seq.atomic_end
        self.waiting     = seq.waiting
        self.request     = seq.request
        self.current     = Signal(I_FRAC_BITS + 2)

        # # #

        # The parts, each taking what it needs of those before it; the few signals going the
        # other way (array busy, the register words the engine and the output path asked for)
        # are connected below.
        prev = None
        if bus_prev:
            self.bus_prev_we, self.bus_prev_re = Signal(reset=1), Signal(reset=1)
            self.bus_prev_dq, self.bus_prev_dqs = Signal(8), Signal()
            prev = (self.bus_prev_we, self.bus_prev_re, self.bus_prev_dq, self.bus_prev_dqs)
        self.edges     = edges = NandLabDieBusEdges(bus, self.data_interface, prev)
        self.decoder   = dec = NandLabDieDecoder(config, self, edges)
        self.engine    = eng = NandLabDieEngine(config, self, dec, storage,
                                                {"wishbone": getattr(self, "storage_bus", None),
                                                 "sim": getattr(self, "storage_pads", None)}.get(storage),
                                                storage_base, max_flips)
        self.output    = out = NandLabDieOutput(config, self, edges, dec)
        self.registers = regs = NandLabDiePageRegisters(config, self, edges, dec, eng, out)
        self.hook      = NandLabDieCurrentHook(config, self, seq, dec, edges, out)
        self.checker   = NandLabDieTimingChecker(config, self, edges, dec)
        self.comb += [
            dec.array_busy.eq(dec.start | eng.active | eng.tail | eng.flipping | seq.busy),
            eng.reg_data.eq(regs.eng_rd_data),
            eng.hold.eq(regs.fw_en),
            out.page_data.eq(regs.pref_rd_data),
            out.port_busy.eq(regs.port_busy),
        ]
        self.array_busy    = dec.array_busy
        assert set(self.stat_events) == set(self.stat_widths)
        if stats == "counters":
            counters = {f"viol_{n}": c for n, c in self.violations.items()}
            counters.update({f"fail_reason{i}": c for i, c in enumerate(self.reasons)})
            counters.update({f"ops_{n}": c for n, c in self.ops.items()})
            counters.update({f"mp_{op}{n}": c for op, by in self.mp_ops.items() for n, c in by.items()})
            for name, event in self.stat_events.items():
                self.sync += If(event, counters[name].eq(counters[name] + 1))
        else:
            self.stats = NandLabDieStats([self.stat_events[n] for n in self.stat_widths],
                                         list(self.stat_widths.values()))
        self.timing_limits = self.checker.limits

    def add_csr(self):
        self._control = CSRStorage(fields=[
            CSRField("inject_program_fail", size=1, pulse=True, description="Fail the next program."),
            CSRField("inject_erase_fail",   size=1, pulse=True, description="Fail the next erase."),
            CSRField("time_scale_shift",    size=CONTROL_TIME_SHIFT[1], offset=CONTROL_TIME_SHIFT[0],
                     description="Divide array times by 2**n more (simulation only)."),
            CSRField("arch",                size=CONTROL_ARCH[1], offset=CONTROL_ARCH[0], description="Plane architecture.",
                     values=[("0", "CNFM"), ("1", "DW-NFM"), ("2", "SDW-NFM (DW-NFM unless built with subplane registers)")]),
            CSRField("mpnfm",               size=CONTROL_MPNFM[1], offset=CONTROL_MPNFM[0],
                     description="MPNFM: plane 1 uses the part's small pages (MPNFM-capable parts)."),
            CSRField("param_corrupt",       size=3, offset=24,
                     description="Parameter page copies read with a flipped byte (bad CRC), one bit per copy."),
        ], description="Die control: fault injection, time scale, plane architecture.")
        self._flip_rate = CSRStorage(16, description="Random bit flips on array reads: probability per "
            "32-bit word, in 1/65536 (0: none).")
        self.comb += self.flip_rate.eq(self._flip_rate.storage)
        self._flip = CSRStorage(fields=[
            CSRField("row",   size=24, description="Row whose reads get bit flips."),
            CSRField("count", size=len(self.flip_count), offset=24, description="Bit flips per read (0: none)."),
        ], description="Bit flips injected on reads of one row.")
        self._state = CSRStatus(fields=[
            CSRField("busy",        size=1, description="An array operation is running."),
            CSRField("interface",   size=2, offset=4, description="Data interface.",
                     values=[("0", "async SDR"), ("1", "NV-DDR"), ("3", "sync SDR")]),
            CSRField("timing_mode", size=4, offset=8, description="Timing mode set by SET FEATURES."),
            CSRField("status",      size=8, offset=16, description="ONFI status register."),
        ], description="Die state.")
        self.comb += [
            self.inject_program_fail.eq(self._control.fields.inject_program_fail),
            self.inject_erase_fail.eq(self._control.fields.inject_erase_fail),
            self.time_scale_shift.eq(self._control.fields.time_scale_shift),
            self.arch.eq(self._control.fields.arch),
            self.mpnfm.eq(self._control.fields.mpnfm),
            self.param_corrupt.eq(self._control.fields.param_corrupt),
            self.flip_row.eq(self._flip.fields.row),
            self.flip_count.eq(self._flip.fields.count),
            self._state.fields.busy.eq(self.busy),
            self._state.fields.interface.eq(self.data_interface),
            self._state.fields.timing_mode.eq(self.timing_mode),
            self._state.fields.status.eq(self.status),
        ]
        if self.stats_mode == "memory":
            self._add_stats_csr()
            return
        for name, sig in self.violations.items():
            csr = CSRStatus(16, name=f"viol_{name}", description=f"Host violations of {name}.")
            setattr(self, f"_viol_{name}", csr)
            self.comb += csr.status.eq(sig)
        for i, sig in enumerate(self.reasons):
            csr = CSRStatus(16, name=f"fail_reason{i}", description=f"Failed operations: {REASON_NAMES[i]}.")
            setattr(self, f"_fail_reason{i}", csr)
            self.comb += csr.status.eq(sig)
        self._add_overruns_csr()
        for name, sig in self.ops.items():
            csr = CSRStatus(32, name=f"ops_{name}", description=f"{name} operations started.")
            setattr(self, f"_ops_{name}", csr)
            self.comb += csr.status.eq(sig)
        for name, counts in self.mp_ops.items():
            for n, sig in counts.items():
                csr = CSRStatus(32, name=f"mp_{name}{n}", description=f"{n}-plane {name} operations started.")
                setattr(self, f"_mp_{name}{n}", csr)
                self.comb += csr.status.eq(sig)

    def _add_overruns_csr(self):
        self._reg_overruns = CSRStatus(16, description="Times a page register was cleared (80h) 16 times "
            "within two scrubber sweeps, faster than its generation tags are re-stamped (0 in normal use).")
        self.comb += self._reg_overruns.status.eq(self.reg_overruns)

    def _add_stats_csr(self):
        """stats="memory": one counter read at a time (its number: its name's place in stat_widths,
        the SoC constant NANDLAB_DIE_STATS lists them)."""
        self._add_overruns_csr()
        self._stats_index = CSRStorage(len(self.stats.index), description="Statistics counter to read "
            "(its place in NANDLAB_DIE_STATS); writing it starts the read.")
        self._stats_ready = CSRStatus(description="1: stats_value holds the counter last written to stats_index.")
        self._stats_value = CSRStatus(32, description="The counter read (viol_* and fail_reason*: 16 bits).")
        self.comb += [
            self.stats.index.eq(self._stats_index.storage),
            self.stats.request.eq(self._stats_index.re),
            # (stats_index's `re` comes a cycle after the write: not ready in that cycle either.)
            self._stats_ready.status.eq(self.stats.ready & ~self._stats_index.re),
            self._stats_value.status.eq(self.stats.value),
        ]
