"""The nandlab SoC: VexRiscv, ROM/SRAM/main RAM, UART console, timer, identifier and the NAND subsystem.

Targets (`nandlab.soc.targets`) give the platform, clocking, main RAM and host bridge; this class
gives what every target shares. `add_nand_subsystem()` is the one place where the NAND cores
(die emulators, ONFI channel controllers, power ring, current monitor, telemetry) attach.
"""

from dataclasses import replace

from migen import If, Memory, Mux, Replicate, Signal

from litex.gen import LiteXModule
from litex.soc.integration.soc_core import SoCCore

from nandlab.env import git_revision
from nandlab.gateware.common.busperf import BusPerf
from nandlab.gateware.common.cpuidle import add_cpu_idle
from nandlab.gateware.common.idlegate import CSRBankCaseDecode, IdleGate, QuiescenceGate, resolve_gate_inputs, share_gate_latches
from nandlab.gateware.common.timebase import NandLabTimebase
from nandlab.gateware.telemetry.frame import default_decimation, frame_length, MAX_DIES as TELEMETRY_MAX_DIES
from nandlab.gateware.telemetry.telemetry import TelemetryCore
from nandlab.gateware.onfi.common import MASKED_LEVELS, NandBus, NandChannel, NandBusMux
from nandlab.gateware.onfi.bitbang import NandLabBusBitbang
from nandlab.gateware.onfi.controller import NandLabChannelController
from nandlab.gateware.onfi.controller.ecc import small_pages_fit
from nandlab.gateware.ecc.shared import NandLabSharedBchDecoder
from nandlab.gateware.power.common import STOPPED_ALPHA, DEFAULT_TOPOLOGY, MODE_NPM
from nandlab.gateware.power.hook import NandLabPowerHook
from nandlab.gateware.power.xfer import PowerTransferArbiter
from nandlab.gateware.power.rings import PowerRings, check_topology
from nandlab.gateware.power.monitor import CurrentMonitor
from nandlab.gateware.power.diepeak import DiePeaks
from nandlab.nand_model.current import I_FRAC_BITS
from nandlab.nand_model.die import NandLabDie, die_storage_bytes
from nandlab.nand_model.die.stats import stat_widths
from nandlab.nand_model.parts import get_part, DEFAULT_PART
from nandlab.nand_model.reference import DieConfig
from nandlab.soc import ram_style
from nandlab.soc.constants import add_constants, name_list


IDENT_SIZE = 64
STORAGES   = ("bram", "dram", "sim")


# BCH codes of the channel controllers (nandlab.gateware.ecc.bch).
NAND_ECC_CODES = {"none": None, "bch8": dict(data_bytes=512, t=8, m=13)}

class NandLabIdentifier(LiteXModule):
    """SoC identifier string in a fixed-size ROM (LiteX's Identifier sizes it to the string).

    A fixed size keeps the netlist unchanged when only the git revision changes, so the simulator
    is not recompiled for a new commit: the string itself sits in the memory's .init file.
    """
    def __init__(self, ident, size=IDENT_SIZE):
        data = list(ident.encode())
        if len(data) >= size:
            raise ValueError(f"identifier '{ident}' is {len(data)} bytes, the limit is {size - 1}")
        self.mem = Memory(8, size, init=data + [0] * (size - len(data)))

    def get_memories(self):
        return [(True, self.mem)]


class NandLabSoC(SoCCore):
    # Memory map shared by all targets (LiteX defaults are kept for the rest).
    mem_map = {**SoCCore.mem_map, **{
        "main_ram" : 0x40000000,
    }}

    def __init__(self, platform, sys_clk_freq, target,
        cpu_type      = "vexriscv",
        cpu_variant   = "standard",
        window_ns     = 40,
        nand_dies     = 0,
        nand_part     = DEFAULT_PART,
        nand_blocks   = 8,
        nand_pages    = 4,
        nand_time_scale = 1,
        nand_sdw      = False,
        nand_cache    = True,
        nand_storage  = "bram",
        nand_channels = 1,
        nand_ecc      = "bch8",
        nand_bad_blocks = (),
        nand_pin_model = None,
        power_topology = None,
        nand_deviation = None,
        idle_gating   = False,
        nand_seq_apart = False,
        nand_ecc_shared = False,
        nand_ecc_decoder_args = None,
        nand_die_stats = "counters",
        nand_die_seg_rom = "logic",
        power_table_ram = "distributed",
        sync_read_ram = "auto",
        nand_return_registered = False,
        **kwargs):
        self.target = target
        # One BCH decoder shared by every channel's controller (boards short of LUTs: ECPIX-5).
        self.nand_ecc_shared = nand_ecc_shared
        # The shared decoder's size options (NandLabBchDecoder's `chien`, `serial_bm`; default: the full one).
        self.nand_ecc_decoder_args = nand_ecc_decoder_args or {}
        # The dies' statistics: "counters" (a CSR each) or "memory" (one block RAM word each, read by
        # number through stats_index / stats_value: boards short of LUTs, ECPIX-5; nand_model/die/stats.py).
        self.nand_die_stats = nand_die_stats
        # The dies' current-sequencer segment tables: "logic" or "memory" (a block RAM each, read a cycle ahead).
        self.nand_die_seg_rom = nand_die_seg_rom
        # Where synthesis puts the ring nodes' token tables (yosys ram_style; the RTL is the same):
        # "distributed" (LUT RAM, the faster read) or "block" (a DP16KD each: boards short of LUTs, ECPIX-5).
        if power_table_ram not in ("distributed", "block"):
            raise ValueError(f"power_table_ram '{power_table_ram}' unknown; valid: distributed, block")
        self.power_table_ram = power_table_ram
        # The small written, synchronous-read memories (FIFOs): "auto" (yosys picks, LUT RAM) or "block"
        # (yosys ram_style by size, named once the Verilog exists: soc/ram_style.py; the RTL is the same).
        if sync_read_ram not in ram_style.SYNC_READ_RAM:
            raise ValueError(f"sync_read_ram '{sync_read_ram}' unknown; valid: {', '.join(ram_style.SYNC_READ_RAM)}")
        self._sync_fifos = set() if sync_read_ram == "block" and hasattr(platform.toolchain, "_yosys_cmds") else None
        if self._sync_fifos is not None:
            ram_style.attach(platform.toolchain, self._sync_fifos)
        # What the dies drive (R/B#, DQ, DQS) reaches the channel controllers through a register of the
        # bus mux, their read_latency / rb_latency one higher (boards whose die -> controller path is the
        # longest: ECPIX-5). The bit-bang master sees the bus as it is (its CSRs register it anyway).
        self.nand_return_registered = bool(nand_return_registered)
        # Simulation only: idle NAND blocks get no clock edges (nandlab.gateware.common.idlegate); with
        # `nand_seq_apart` each die's current sequencer gets a gate of its own (soc/targets/sim.py: SEQ_APART).
        self.idle_gating = idle_gating
        self.nand_seq_apart = bool(idle_gating and nand_seq_apart)
        ident = f"nandlab {git_revision()} on {target}"
        SoCCore.__init__(self, platform, sys_clk_freq,
            cpu_type      = cpu_type,
            cpu_variant   = cpu_variant,
            ident         = "",  # Added below, with a fixed size.
            **kwargs)
        # Same CSR name as LiteX's identifier, so csr.h and LiteX host tools find it as usual.
        self.add_module(name="identifier", module=NandLabIdentifier(ident))
        self.add_config("BIOS_NO_BUILD_TIME")
        self.add_config("identifier", ident)
        self.add_constant("NANDLAB_TARGET", target)
        add_constants(self)
        self.add_nand_subsystem(window_ns=window_ns, dies=nand_dies, part=nand_part,
            blocks=nand_blocks, pages=nand_pages, time_scale=nand_time_scale, sdw=nand_sdw, cache=nand_cache,
            storage=nand_storage, channels=nand_channels, ecc=nand_ecc, bad_blocks=nand_bad_blocks,
            pin_model=nand_pin_model, power_topology=power_topology, deviation=nand_deviation)
        # Where the CPU's cycles go: its instruction and data buses' wait and word counters.
        if hasattr(self.cpu, "ibus") and hasattr(self.cpu, "dbus"):
            self.cpu_perf = BusPerf([("ibus", self.cpu.ibus), ("dbus", self.cpu.dbus)])

    def add_nand_subsystem(self, window_ns=40, dies=0, part=DEFAULT_PART, blocks=8, pages=4, time_scale=1,
        sdw=False, cache=True, storage="bram", channels=1, ecc="bch8", bad_blocks=(), pin_model=None,
        power_topology=None, deviation=None):
        """Attach the NAND cores.

        Every NAND core hangs off here with its CSRs, so the firmware HAL (csr.h) and the host
        (csr.csv) see the same names on every target: the shared time base, `dies` emulated dies
        (one LUN each, `blocks` x `pages` of `part`'s page, array times divided by `time_scale`;
        `sdw` builds the SDW-NFM subplane registers, `cache` the READ/PROGRAM CACHE register pairs)
        on one channel with a bit-bang bus master for bring-up, a channel controller beside it, the
        token ring, the current monitor and the telemetry.

        `ecc` is the channel controllers' BCH code: "bch8" (t = 8 per 512 B, the spare layout of
        nandlab.gateware.ecc.bch) or "none".

        `channels` > 1 adds channels 1.. with `dies` dies each (`nand_ch<k>_die<i>`), driven by a
        channel controller of their own (`nand_ctrl<k>`; its DMA a bus master, its interrupt); the
        bit-bang master stays on channel 0. Every channel's dies are under the token rings, laid out by
        `power_topology` (gateware/power/rings.py; None: DEFAULT_TOPOLOGY): "single" (one ring through
        every die), "per_channel" (a ring per channel, each running the configuration's alpha) or
        "exchange" (a ring per channel sharing the configuration's alpha as one global budget, which
        needs 2 channels or more); the current monitor counts every die, the telemetry carries the
        first 16 (its frames' limit).

        `deviation` makes dies' current differ from the waveform the token tables are compiled from
        ({die over all channels: (level %, stretch %)}, or the text LEVEL[:STRETCH][@DIES] of
        `nandlab experiment power --deviation`): what the per-die peak registers detect and the
        firmware's `power adapt` corrects (issue 18 b, docs/power_deviation.md).

        `storage` is where the dies keep their arrays: "bram" (block RAM in each die), "dram"
        (regions at the top of main RAM, each die a bus master; the dies are built when the SoC is
        finalized, once the target has added its main RAM; main RAM must leave at least half to
        the firmware) or "sim" (outside the simulated model, in a litex_sim module: the target
        connects each die's storage pads in `connect_nand_storage()`; an erase there frees the block
        in one step, so the die is busy for tBERS, not for a word a cycle over the block).

        `bad_blocks`: the dies' factory bad blocks, one tuple for every die or a function of the
        die's index over all channels (channel x `dies` + die) giving its tuple.

        `pin_model` (simulation): channel 0's dies sit behind the pin PHY (`nand_phy`, its simulated DDR
        registers and delay controls, as `--nand-socket` puts a chip) and the pin-level die model
        (`nand_pin_model`: per-lane skew and output timings, nandlab.nand_model.pinmodel), instead of
        on the bus directly: dict(family="xc7"|"ecp5", lanes=[LaneTiming x 9] at reset). The channel's
        controller is then built with the PHY's latencies on top of the mux's.
        """
        self.timebase = NandLabTimebase(self.sys_clk_freq, window_ns=window_ns)
        self.timebase.add_csr()
        if ecc not in NAND_ECC_CODES:
            raise ValueError(f"NAND ECC '{ecc}' unknown; valid: {', '.join(NAND_ECC_CODES)}")
        self.nand_ecc = NAND_ECC_CODES[ecc]
        if not dies:
            return
        if storage not in STORAGES:
            raise ValueError(f"NAND storage '{storage}' unknown; valid: {', '.join(STORAGES)}")
        if not 1 <= channels <= 8:
            raise ValueError(f"{channels} NAND channels: the SoC takes 1..8")
        power_topology = power_topology or DEFAULT_TOPOLOGY
        check_topology(power_topology, channels)
        self.nand_config = DieConfig(get_part(part).scaled(blocks_per_lun=blocks, pages_per_block=pages),
            sys_clk_freq=self.sys_clk_freq, time_scale=time_scale, with_sdw=sdw, with_cache=cache,
            sim_fast_erase=storage == "sim")
        self._nand_bad_blocks = bad_blocks if callable(bad_blocks) else (lambda index: tuple(bad_blocks))
        # Dies whose current deviates from the compiled waveform (issue 18 b): {die over all channels:
        # (level %, stretch %)}, or nandlab.deviation's text LEVEL[:STRETCH][@DIES].
        if isinstance(deviation, str):
            from nandlab.deviation import parse
            deviation = parse(deviation, dies * channels)
        self._nand_deviation = dict(deviation or {})
        if any(not 0 <= d < dies * channels for d in self._nand_deviation):
            raise ValueError(f"deviation names die(s) {sorted(self._nand_deviation)}: the SoC has {dies * channels}")
        self.nand_die_configs = []        # Every die's DieConfig, by index over all channels.
        self.nand_storage = storage
        self._nand_pending = (dies, channels, time_scale)
        self._nand_pin_model = pin_model
        self.power_topology = power_topology
        if storage != "dram":
            self._add_nand_dies()

    def finalize(self):
        # Before LiteX builds the bus: DRAM-backed dies are bus masters.
        if not self.finalized and getattr(self, "_nand_pending", None):
            self._add_nand_dies()
        if not self.finalized and self._sync_fifos is not None:
            self._sync_fifos |= ram_style.sync_fifo_memories(self)   # While the module tree is known.
        if not self.finalized:
            add_cpu_idle(self)
        if self.idle_gating:
            # Simulation: the CSR banks' strobes decoded per bank, not per register (the same logic), their
            # registers clocked only around CSR writes (one CSR master: the gate watches its `we`).
            with CSRBankCaseDecode(storage_gate=True):
                SoCCore.finalize(self)
            if len(self.csr.masters) != 1:
                raise ValueError(f"idle gating: the CSR storage gate takes one CSR master, not {len(self.csr.masters)}")
            # The gates' inputs, now that the whole design is known: those that only other gated blocks
            # drive are watched through those blocks' gates instead of compared value by value.
            resolve_gate_inputs(self, self._fragment, self.platform.constraint_manager.get_io_signals())
            # Every gate's latch in one falling-edge domain (one trigger for Verilator, not one a gate).
            share_gate_latches(self, self._fragment)
        else:
            SoCCore.finalize(self)

    def _nand_regions(self, dies):
        """Main RAM regions of the dies' arrays (DRAM storage): (base of the first, bytes per die)."""
        region = self.bus.regions.get("main_ram")
        if region is None:
            raise ValueError("NAND storage 'dram' needs main RAM; this target has none (use 'bram')")
        per_die = die_storage_bytes(self.nand_config)
        per_die = (per_die + 0xFFF) & ~0xFFF
        if dies * per_die > region.size // 2:
            raise ValueError(f"{dies} dies x {per_die / 2**20:.1f} MiB of DRAM storage exceed half of main RAM "
                             f"({region.size // 2 / 2**20:.0f} MiB): use fewer dies, blocks or pages")
        return region.origin + region.size - dies * per_die, per_die

    def _add_nand_dies(self):
        (dies, channels, time_scale), self._nand_pending = self._nand_pending, None
        config = self.nand_config
        base = per_die = None
        if self.nand_storage == "dram":
            base, per_die = self._nand_regions(dies * channels)
            self.add_constant("NANDLAB_DIE_STORAGE_BASE", base)
            self.add_constant("NANDLAB_DIE_STORAGE_BYTES", per_die)
        self.nand_bus = self._add_nand_channel("nand", dies, 0, base, per_die)
        read_latency = rb_latency = 1
        if self._nand_pin_model:
            read_latency, rb_latency = self._add_nand_pin_model(dies)
        ret = int(self.nand_return_registered)      # The return register's cycle (see __init__).
        if channels > 1 and self.nand_ecc and self.nand_ecc_shared:
            # One BCH decoder for every channel's controller, taken a codeword at a time (gateware/ecc/shared.py).
            shared = NandLabSharedBchDecoder(self.nand_ecc, self.idle_gating, **self.nand_ecc_decoder_args)
            self.add_module(name="nand_ecc_decoder", module=shared)
        # Two masters share channel 0: the bit-bang master (bring-up, the default) and the channel
        # controller (descriptors, DMA); `nand_bus_mux_select` chooses. The mux registers the levels
        # (the path from the controller's microcode ROM through a die's command decoding was the
        # ECP5 build's longest), so the controller takes the dies' answers a cycle late.
        bitbang_bus, ctrl_bus = NandBus(targets=dies, luns=1), NandBus(targets=dies, luns=1)
        self.nand_bitbang = NandLabBusBitbang(bitbang_bus)
        self.add_nand_controller(ctrl_bus, config.part, name="nand_ctrl", read_latency=read_latency + ret,
            rb_latency=rb_latency + ret)
        mux = NandBusMux([bitbang_bus, ctrl_bus], self.nand_bus, registered=True, registered_return=(1,) if ret else ())
        self._connect_seen(self.nand_bus, mux)
        mux.add_csr(["bit-bang", "controller"])
        self.add_module(name="nand_bus_mux", module=mux)
        self._gate("nand_bitbang")
        self._gate("nand_bus_mux")
        # Channels 1..: a controller alone on each bus (registered the same way).
        for k in range(1, channels):
            first = k * dies
            bus = self._add_nand_channel(f"nand_ch{k}", dies, first,
                base + first * per_die if base is not None else None, per_die)
            ctrl_bus_k = NandBus(targets=dies, luns=1)
            self.add_nand_controller(ctrl_bus_k, config.part, name=f"nand_ctrl{k}", read_latency=1 + ret,
                rb_latency=1 + ret)
            reg = NandBusMux([ctrl_bus_k], bus, registered=True, registered_return=(0,)[:ret])
            self._connect_seen(bus, reg)
            self.add_module(name=f"nand_ch{k}_reg", module=reg)
            self._gate(f"nand_ch{k}_reg")
        self.add_constant("NANDLAB_DIES", dies)
        self.add_constant("NANDLAB_CHANNELS", channels)
        self.add_constant("NANDLAB_DIE_TIME_SCALE", time_scale)
        self.add_constant("NANDLAB_DIE_PART", config.part.model)
        if self.nand_die_stats == "memory":
            self.add_constant("NANDLAB_DIE_STATS", name_list(stat_widths(config)))
        yosys_cmds = getattr(self.platform.toolchain, "_yosys_cmds", None)
        for option, memory in ((self.nand_die_stats, "die_statsmem"), (self.nand_die_seg_rom, "seg_rom")):
            if option == "memory" and yosys_cmds is not None:
                # A block RAM each (yosys would take LUT RAM or logic for so few words; block RAM is spare).
                yosys_cmds += ["hierarchy -top {build_name}", f'setattr -set ram_style "block" m:*{memory}*']
        self._add_power(dies, channels, self.power_topology)

    def _add_nand_pin_model(self, dies):
        """Channel 0's dies behind the simulated pin PHY and the pin-level model (see add_nand_subsystem):
        `self.nand_bus` becomes the PHY's bus. Returns the controller's (read_latency, rb_latency)."""
        from functools import reduce
        from operator import or_
        from nandlab.gateware.onfi.pinphy import NandLabPinPHY, sim_pads
        from nandlab.nand_model.pinmodel import NandLabPinModel
        family = self._nand_pin_model.get("family", "xc7")
        die_bus, phy_bus = self.nand_bus, NandBus(targets=dies, luns=1)
        pads = sim_pads(dies, phased=True)
        phy = NandLabPinPHY(pads, phy_bus, family=family, sim=True)
        phy.add_csr()
        self.add_module(name="nand_phy", module=phy)
        die_list = [getattr(self, f"nand_die{i}") for i in range(dies)]
        # Where a die gives NV-DDR data output (a new byte each phase): samples off a lane's window are unknown.
        drive = Signal(2)
        self.comb += drive.eq(reduce(or_, [Replicate(d.edges.selected & d.edges.nvddr & d.bus.cle & d.bus.ale, 2)
                                           & ~d.bus.re_n for d in die_list]))
        sdr = Signal()      # The selected die talks async SDR (the model's tREA / tRHOH / tRLOH apply).
        self.comb += sdr.eq(reduce(or_, [d.edges.selected & ~d.edges.nvddr & ~d.edges.sync_sdr for d in die_list]))
        model = NandLabPinModel(pads, die_bus, phy.dly_taps, family, self.sys_clk_freq,
                                lanes=self._nand_pin_model.get("lanes"), drive=drive, sdr=sdr,
                                dqs_shift_ps=int(round(phy.dqs_out_shift_cycles * 1e12 / self.sys_clk_freq)),
                                dq_next=phy_bus.dq_o)     # (the PHY registers it onto the pins: next cycle's)
        model.add_csr()
        self.add_module(name="nand_pin_model", module=model)
        self.nand_bus = phy_bus
        self.add_constant("NANDLAB_NAND_PHY_DELAY_TAPS", phy.delay_taps)
        self.add_constant("NANDLAB_NAND_PHY_DELAY_TAP_PS", phy.delay_tap_ps)
        self.add_constant("NANDLAB_NAND_PHY_READ_LATENCY", phy.read_latency)
        self.add_constant("NANDLAB_NAND_PHY_FAMILY_" + family.upper())
        # The registered mux's cycle, then the PHY's output register and its input registers (DQ) or
        # R/B# synchroniser.
        return 1 + phy.read_latency, 1 + phy.output_latency + phy.rb_latency

    def connect_nand_storage(self, index, pads):
        """Connect the storage pads (nand_model.die.storage.sim_storage_layout) of the die of `index`
        (over all channels) to the target's array outside the model (the simulation target does)."""
        raise ValueError(f"NAND storage 'sim' is for the simulation target; the {self.target} target takes "
                         f"{', '.join(s for s in STORAGES if s != 'sim')}")

    def _gate(self, name):
        """Simulation (`idle_gating`): the block `name` is evaluated only in the cycles where its state
        or inputs changed (nandlab.gateware.common.idlegate; exact, cycle for cycle)."""
        if self.idle_gating:
            self.add_module(name=f"{name}_gate", module=QuiescenceGate(getattr(self, name), f"{name}_clk", late_inputs=True))

    def _add_nand_channel(self, prefix, dies, first, base=None, per_die=None):
        """`dies` emulated dies `<prefix>_die<i>`, `first` the index of the first over all channels
        (DRAM storage from `base` on, `per_die` bytes each), on a new channel; returns the channel's
        controller-side bus."""
        bus = NandBus(targets=dies, luns=1)
        buses, dies_built = [], []
        # (Simulation: the bus's previous levels given to the dies, see below; each die's current sequencer
        # beside it, gated on its own with `nand_seq_apart`, see NandLabDie.)
        args = dict(stats=self.nand_die_stats, seg_rom=self.nand_die_seg_rom, seq_apart=self.nand_seq_apart,
                    bus_prev=self.idle_gating and not self._nand_pin_model)
        for i in range(dies):
            config = replace(self.nand_config, bad_blocks=tuple(self._nand_bad_blocks(first + i)),
                             current_deviation=tuple(self._nand_deviation.get(first + i, (0, 0))))
            self.nand_die_configs.append(config)
            if base is not None:
                die = NandLabDie(config, storage="wishbone", storage_base=base + i * per_die, **args)
                self.bus.add_master(name=f"{prefix}_die{i}_storage", master=die.storage_bus)
            elif self.nand_storage == "sim":
                die = NandLabDie(config, storage="sim", **args)
                self.connect_nand_storage(first + i, die.storage_pads)
            else:
                die = NandLabDie(config, **args)
            die.add_csr()
            self.add_module(name=f"{prefix}_die{i}", module=die)
            self._gate(f"{prefix}_die{i}")
            if self.nand_seq_apart:
                self.add_module(name=f"{prefix}_die{i}_seq", module=die.seq)
                self.add_module(name=f"{prefix}_die{i}_seq_gate", module=IdleGate(die.seq, die.seq.quiet, f"{prefix}_die{i}_seq_clk"))
            buses.append(die.bus)
            dies_built.append(die)
        # Simulation: each die sees the bus only while its CE# is low (NandChannel's `seen`: registers of
        # the channel's registered mux, connected by `_connect_seen`; not behind the pin model's PHY).
        seen = die_prev = None
        if args["bus_prev"]:
            seen = bus.seen = [{n: Signal(len(getattr(bus, n))) for n in MASKED_LEVELS} for _ in range(dies)]
            for s in seen:
                s["prev"] = (Signal(), Signal(), Signal(8), Signal())
            die_prev = [(d.bus_prev_we, d.bus_prev_re, d.bus_prev_dq, d.bus_prev_dqs) for d in dies_built]
        self.add_module(name=f"{prefix}_channel", module=NandChannel(bus, buses, seen, die_prev))
        return bus

    def _connect_seen(self, bus, mux):
        """What the dies of channel bus `bus` are shown (see _add_nand_channel), from its registered `mux`."""
        for i, seen in enumerate(getattr(bus, "seen", None) or []):
            regs = mux.die_levels(i)
            self.comb += [seen[n].eq(regs[n]) for n in MASKED_LEVELS]
            self.comb += [p.eq(q) for p, q in zip(seen["prev"], regs["prev"])]

    def add_nand_controller(self, bus, part, name=None, read_latency=0, rb_latency=0):
        """A channel controller on `bus`, its DMA a master of the SoC bus (`<name>_dma`), its CSRs
        under `name`, its completion event an interrupt of the CPU (`<NAME>_INTERRUPT` in soc.h)
        and its DMA width and ECC code as constants (operation / result codes: nandlab.soc.constants).
        `read_latency`: cycles a pin PHY adds to reads (0 on emulated dies); `rb_latency`: cycles from
        the controller's bus cycle to the R/B# that answers it (a registered mux: 1, 2 with
        `nand_return_registered`; a pin PHY: its output register and R/B# synchroniser).

        Called once per channel; `name` defaults to the first free of nand_ctrl, nand_ctrl1, ..."""
        from litex.soc.interconnect import wishbone
        if name is None:
            name, k = "nand_ctrl", 0
            while hasattr(self, name):
                k += 1
                name = f"nand_ctrl{k}"
        dma = wishbone.Interface(data_width=self.bus.data_width, address_width=self.bus.address_width, addressing="word")
        ecc = getattr(self, "nand_ecc", None)
        ctrl_dma = dma
        if self.idle_gating:
            # The shared bus shows every transfer's read data to every master: the controller sees
            # it only with its own acknowledge, so that other masters' reads do not wake it.
            ctrl_dma = wishbone.Interface(data_width=self.bus.data_width, address_width=self.bus.address_width,
                                          addressing="word")
            self.comb += [
                ctrl_dma.connect(dma, omit={"dat_r"}),
                ctrl_dma.dat_r.eq(Mux(dma.ack, dma.dat_r, 0)),
            ]
        ctrl = NandLabChannelController(bus, ctrl_dma, self.sys_clk_freq, part, ecc=ecc, read_latency=read_latency,
            rb_latency=rb_latency,
            with_small_pages=bool(ecc) and small_pages_fit(ecc, part), idle_gating=self.idle_gating,
            ecc_decoder=self.nand_ecc_decoder.port() if ecc and hasattr(self, "nand_ecc_decoder") else None)
        ctrl.add_csr()
        self.add_module(name=name, module=ctrl)
        self._gate(name)
        self.bus.add_master(name=f"{name}_dma", master=dma)
        if self.irq.enabled:
            self.irq.add(name, use_loc_if_exists=True)
        if not getattr(self, "_nand_ctrl_constants", False):
            self._nand_ctrl_constants = True
            self.add_constant("NANDLAB_CTRL_DMA_BYTES", ctrl.dma_bytes)
            # The largest page (data and spare) of the part the controllers are built for: page buffers.
            self.add_constant("NANDLAB_CTRL_PAGE_MAX", part.page_size + part.spare_size)
            if ecc:
                g = ctrl.ecc_geometry
                self.add_constant("NANDLAB_CTRL_ECC_T", ecc["t"])
                self.add_constant("NANDLAB_CTRL_ECC_DATA_BYTES", ecc["data_bytes"])
                self.add_constant("NANDLAB_CTRL_ECC_COUNT_BITS", g.count_bits)
                # 1: a completion's ECC result is the summary (NANDLAB_CTRL_ECC_SUMMARY_*), not per codeword.
                self.add_constant("NANDLAB_CTRL_ECC_SUMMARY", int(g.summary))
                # The spare's bytes outside the ECC that PROGRAM_ECC / READ_ECC_FREE move (an FTL's page tag).
                self.add_constant("NANDLAB_CTRL_ECC_FREE_BYTES", g.free_max)
                if g.small:
                    # Descriptors take SMALL (an MPNFM die's small pages), and their free bytes.
                    self.add_constant("NANDLAB_CTRL_ECC_SMALL", 1)
                    self.add_constant("NANDLAB_CTRL_ECC_SMALL_FREE_BYTES", g.small.free_max)
        return ctrl

    def _add_power(self, dies, channels=1, topology=DEFAULT_TOPOLOGY):
        """The token rings between every channel's dies' OI/OE hooks (laid out by `topology`:
        gateware/power/rings.py), the current monitor over every die's current and the per-die peaks
        (docs/power_deviation.md), with CSRs (`power_ring_*`, `power_monitor_*`, `power_monitor_die_*`).
        The rings start in NPM (dies run free) until a configuration is applied; the monitor's budget is
        the applied configuration's (alpha x I_max; rings x alpha with a ring per channel). The rings
        are built with packet protection and a fault injector per hop (`power_ring_fault_ctl`; both off
        until written: the paper's packets and timing), except with exchange nodes."""
        rings = PowerRings(channels, dies, topology, oi_ahead=True,  # Read a cycle early (timing): the token
                           tx_ahead=True, with_faults=True)        # table, each packet bit sent.
        yosys_cmds = getattr(self.platform.toolchain, "_yosys_cmds", None)
        if yosys_cmds is not None:
            # "distributed": the look-ahead's register stays in the fabric: yosys would fold it into a
            # block RAM's read port, whose clock-to-out (5.8 ns on the ECP5) costs more than the read it
            # saves. "block": 8 x 256 bits a node in LUT RAM (32 DPR16X4 and their read mux) freed.
            yosys_cmds += ["hierarchy -top {build_name}",
                           f'setattr -set ram_style "{self.power_table_ram}" m:*token_table*']
        rings.add_csr()
        self.add_module(name="power_ring", module=rings)
        self._gate("power_ring")
        self.add_constant("NANDLAB_POWER_TOPOLOGY", topology)
        self.add_constant("NANDLAB_POWER_RINGS", len(rings.rings))
        die_list = [getattr(self, f"nand_die{i}" if k == 0 else f"nand_ch{k}_die{i}")
                    for k in range(channels) for i in range(dies)]
        # Each die's node serves its array phases and the data its channel controller moves to and from
        # it (gateware/power/xfer.py; the bit-bang master's bring-up bytes are not under the ring).
        ctrls = [getattr(self, "nand_ctrl" if k == 0 else f"nand_ctrl{k}") for k in range(channels)]
        arbiters = [PowerTransferArbiter(d) for d in die_list]
        hooks = [NandLabPowerHook(len(d.current), name=f"power_hook{i}") for i, d in enumerate(die_list)]
        # The arbiters in one block, gated as one in simulation: in `sys` their registers made the ring's logic,
        # which reads them through the hooks, run in every cycle; gated, it runs in the cycles where a die, the
        # ring, a controller or an arbiter changes. (One gate for all: each gate is a clock Verilator checks
        # at every evaluation.)
        self.power_xfer = LiteXModule()
        for j, (hook, arb, node) in enumerate(zip(hooks, arbiters, rings.nodes)):
            setattr(self.power_xfer, f"xfer{j}", arb)
            ctrl, way = ctrls[j // dies], j % dies
            self.comb += hook.connect(arb, node) + [
                arb.free.eq((node.mode == MODE_NPM) & ~node.hold_off),
                arb.x_request.eq(ctrl.power_request[way]), arb.x_out.eq(ctrl.power_out),
                arb.x_end.eq(ctrl.power_end[way]),
                ctrl.power_grant[way].eq(arb.x_grant), ctrl.power_free[way].eq(arb.free),
            ]
        # The dies' currents are registered once for the monitor and the telemetry: a die's current
        # follows the bus combinationally, and the summing adders after it made the SoC's longest path.
        # (The registers are a block of their own, gated in simulation: they and what reads only them, the
        # die peaks, are evaluated when a die or the ring changes instead of in every cycle. Not the arbiters'
        # block: the ring, which watches that block, would then wake at every change of a die's current.)
        self._gate("power_xfer")
        self.power_sense = sense = LiteXModule()
        currents = [Signal(len(h.current), name=f"die_current{i}") for i, h in enumerate(hooks)]
        ois = [Signal(len(h.oi), name=f"die_oi{i}") for i, h in enumerate(hooks)]
        sense.sync += [c.eq(h.current) for c, h in zip(currents, hooks)] + [o.eq(h.oi) for o, h in zip(ois, hooks)]
        monitor = CurrentMonitor(currents, self.timebase.strobe, budget_max=rings.budget_max)
        monitor.add_csr()
        # Each node's RT for its die's phase, registered as the currents are: the dies' excess over it.
        rts = [Signal(len(nd.rt_now), name=f"die_rt{i}") for i, nd in enumerate(rings.nodes)]
        sense.sync += [r.eq(nd.rt_now) for r, nd in zip(rts, rings.nodes)]
        self._gate("power_sense")
        monitor.die = DiePeaks(currents, ois, rts=rts, tg=rings.tg)
        monitor.die.add_csr()
        self.add_module(name="power_monitor", module=monitor)
        if self.idle_gating:
            self.add_module(name="power_monitor_die_gate", module=QuiescenceGate(monitor.die, "power_peaks_clk",
                                                                                  late_inputs=True))
        self.comb += [
            monitor.pb.eq(Mux(rings.running, rings.budget, STOPPED_ALPHA) << I_FRAC_BITS),
            monitor.source.ready.eq(1),      # Window samples for a consumer; nothing waits on them.
        ]
        # Telemetry frames carry up to MAX_DIES dies: the first ones (the monitor counts every die).
        shown = min(len(die_list), TELEMETRY_MAX_DIES)
        telemetry = TelemetryCore(currents[:shown], self.timebase.strobe, self.timebase.timestamp,
            monitor.pb, ois=[d.oi for d in die_list[:shown]], waiting=[d.waiting for d in die_list[:shown]],
            ring=rings, decimation=self.telemetry_decimation(shown))
        telemetry.add_csr()
        self.add_module(name="telemetry", module=telemetry)
        # The monitor's sum lags the currents by a cycle: it follows the telemetry's captures a cycle later.
        restart_q, counting_q = Signal(), Signal(reset=1)
        self.sync += [restart_q.eq(telemetry.restart), counting_q.eq(telemetry.counting)]
        self.comb += [monitor.run.eq(counting_q), monitor.restart.eq(restart_q)]
        self.add_constant("NANDLAB_TELEMETRY_FRAME_BYTES", telemetry.frame_bytes)
        self.add_constant("NANDLAB_TELEMETRY_DECIMATION", telemetry.decimation.reset.value)
        self.attach_telemetry_link()

    def telemetry_link_bytes_per_s(self, frame_bytes):
        """Payload bytes per second the target's telemetry link carries for frames of `frame_bytes`
        (default: a byte per cycle, the simulator's TCP module; boards override it)."""
        return self.sys_clk_freq

    def attach_telemetry_link(self):
        """Connect `self.telemetry.source` to the target's link (boards override it; the simulator
        connects its pads). Called once the telemetry block exists."""

    def add_telemetry_uart(self, pads, baudrate):
        """Telemetry frames on a transmit-only UART (8N1 at `baudrate`): the fallback link of boards
        without Ethernet. The host reads it with `nandlab monitor --serial PORT --baud N`."""
        from litex.soc.cores.uart import RS232PHYTX
        self.telemetry_uart = phy = RS232PHYTX(pads, tuning_word=int(baudrate / self.sys_clk_freq * 2**32))
        self.comb += [
            phy.sink.valid.eq(self.telemetry.source.valid),
            phy.sink.data.eq(self.telemetry.source.data),
            self.telemetry.source.ready.eq(phy.sink.ready),
        ]
        self.add_constant("NANDLAB_TELEMETRY_UART_BAUD", int(baudrate))

    def add_telemetry_udp(self, ip_address, udp_port, frames_per_packet):
        """Telemetry frames to `udp_port` of `ip_address` (CSRs telemetry_udp_*, settable at run time),
        `frames_per_packet` frames a packet, through the Etherbone core's UDP crossbar: boards with
        Ethernet call it once both the telemetry block and `ethcore_etherbone` exist."""
        from liteeth.frontend.stream import LiteEthStream2UDPTX
        tel = self.telemetry
        self.telemetry_udp = udp = LiteEthStream2UDPTX(ip_address=ip_address, udp_port=udp_port, data_width=8,
            fifo_depth=frames_per_packet * tel.frame_bytes + 64, with_csr=True)
        port = self.ethcore_etherbone.udp.crossbar.get_port(udp_port, dw=8)
        frames = Signal(max=max(frames_per_packet, 2))
        end = Signal()
        self.comb += [
            end.eq(tel.source.last & (frames == frames_per_packet - 1)),
            udp.sink.valid.eq(tel.source.valid), udp.sink.data.eq(tel.source.data), udp.sink.last.eq(end),
            tel.source.ready.eq(udp.sink.ready),
            udp.source.connect(port.sink),
        ]
        self.sync += If(tel.source.valid & tel.source.ready & tel.source.last,
            frames.eq(Mux(end, 0, frames + 1)))
        self.add_constant("NANDLAB_TELEMETRY_UDP_PORT", udp_port)

    def telemetry_decimation(self, dies):
        """Default windows per frame: the smallest power of two at which the link carries every frame
        with a quarter to spare."""
        rate = self.telemetry_link_bytes_per_s(frame_length(dies))
        return default_decimation(dies, self.timebase.default_cycles, rate / self.sys_clk_freq)
