"""Simulation target: the nandlab SoC on litex_sim (Verilator), firmware preloaded in main RAM.

Console on the simulator's stdin/stdout (serial2console); host bridge (UARTBone) on a second
simulated UART exposed as a TCP socket (serial2tcp, no root), which `litex_server --uart
--uart-port socket://localhost:PORT` turns into the usual RemoteClient port.

The CPU resets straight into main RAM, which holds the firmware image from the start: there is
no BIOS and no upload step in simulation.

The emulated dies keep their arrays outside the Verilated model, in the `nandstore` litex_sim module
(sw/sim/modules/nandstore; `nand_storage="sim"`, the default): a die's capacity costs neither build
time nor memory, only the pages that are not erased do, and the arrays outlive an SoC reset. The
SoC reset is LiteX's ctrl_reset soc_rst (bit 0 of the CSR, from the firmware or the host bridge): it
resets the whole sys domain for a cycle, as on the boards (memories keep their contents; the
firmware copies its .data again from its load image).
"""

import hashlib
import os
import subprocess
import threading
from pathlib import Path

from migen import Signal
from migen.genlib.record import DIR_S_TO_M

from litex.build.generic_platform import Pins, Subsignal
from litex.build.sim import SimPlatform
from litex.build.sim.config import SimConfig
from litex.build.io import CRG
from litex.soc.cores.uart import RS232PHYModel, UARTBone
from litex.soc.integration.builder import Builder
from litex.soc.integration.common import get_mem_data

from nandlab.nand_model.common import DieConfig
from nandlab.nand_model.die.common import bad_block_markers, die_storage_bytes
from nandlab.nand_model.die.storage import sim_storage_layout
from nandlab.nand_model.parts import DEFAULT_PART
from nandlab.soc.nandlab_soc import NandLabSoC
from nandlab.gateware.power.common import TOPOLOGIES, DEFAULT_TOPOLOGY
from nandlab.soc.targets import check_nand_part
from nandlab.soc.targets.sim_veril import LITEX_SIM_CORE as _LITEX_SIM_CORE, veril_source
from nandlab.soc.targets.sim_pgo import PGO_GENERATE, PGO_USE, PGO_TRAINING, \
    _pgo_train_and_rebuild, sim_pgo

SYS_CLK_FREQ   = int(100e6)  # Nominal: the emulated NAND timings are counted in cycles of this clock.
# Main RAM: the firmware and, for the FTL, a flat map of the default NAND (8 dies x 65536 pages x
# about 8.5 B = 4.5 MiB) with room to spare. Only the firmware image is in its .init file.
MAIN_RAM_SIZE  = 16 * 2**20
SRAM_SIZE      = 0x4000
BRIDGE_PORT    = 1235        # Default TCP port of the host bridge (litex_server takes 1234).
TELEMETRY_PORT = 1236        # Default TCP port of the telemetry stream.
CPU_VARIANT    = os.environ.get("NANDLAB_SIM_CPU") or "standard"   # LiteX's VexRiscv variant ("imac": RV32IMAC)

def _serial(index):
    return ("serial", index,
        Subsignal("source_valid", Pins(1)),
        Subsignal("source_ready", Pins(1)),
        Subsignal("source_data",  Pins(8)),
        Subsignal("sink_valid",   Pins(1)),
        Subsignal("sink_ready",   Pins(1)),
        Subsignal("sink_data",    Pins(8)),
    )

_io = [
    ("sys_clk", 0, Pins(1)),
    ("sys_rst", 0, Pins(1)),
    _serial(0),  # Console.
    _serial(1),  # Host bridge (UARTBone).
    ("telemetry", 0,  # Telemetry bytes to the host (telemetry2tcp module).
        Subsignal("valid", Pins(1)),
        Subsignal("ready", Pins(1)),
        Subsignal("data",  Pins(8)),
    ),
]


NAND_DIES       = 4        # Emulated dies on a channel (nandlab sim --dies).
NAND_CHANNELS   = 1        # Channels, each with NAND_DIES dies and a controller (nandlab sim --channels).
NAND_TIME_SCALE = 10       # Simulation only: array times divided by this (nandlab sim --nand-time-scale).
MAX_TIME_SCALE  = 1000     # (a 2 KiB SLC part's tR 25 us is then 25 ns: shorter breaks the interface's own timing)
# Each die's current sequencer gated apart from the die (NandLabSoC `nand_seq_apart`) at time scales up to this:
# a die whose array is busy then no longer clocks its whole logic, only the sequencer's. It pays where array
# phases are long and costs a fifth at the idle shell (8 more clock domains: Verilator tests more trigger sets
# every evaluation). Same-run A/Bs at 8 dies (nandlab.sim_ab, M cycles per CPU s, NOTES.md sessions 39-41):
# time scale 1: idle x0.79, nand workload x1.49-1.52, ftl workload x1.31; time scale 10: idle x0.79, nand and
# ftl x0.97. So on at the parts' own array times (the papers' runs), off at the default time scale.
SEQ_APART_TIME_SCALE = 1
# Geometry and storage of the simulated dies (nandlab sim --nand-part/--nand-blocks/--nand-pages/
# --nand-storage): 1024 blocks x 64 pages x (2048 + 64) B, about 132 MiB a die, in the nandstore module.
NAND_PART       = DEFAULT_PART
NAND_BLOCKS     = 1024
NAND_PAGES      = 64
NAND_STORAGE    = "sim"
NAND_STORAGES   = ("sim", "bram")
NAND_ECC        = "bch8"   # The channel controllers' BCH code.
BRAM_LIMIT      = 4 * 2**20   # Bytes a die may keep inside the Verilated model (--nand-storage bram).


def pin_model_options(family=None, seed=None, lanes=None):
    """The pin-level die model's options, checked (ValueError): None without `family` (the dies on the bus
    directly); else the PHY family whose delay line is modelled ("xc7": 32 taps of 78 ps, wrapping;
    "ecp5": 128 of 25 ps, stopping) and the lane timings at reset: drawn from `seed` (default 0), or
    `lanes` given as "delay:start:end" x 9 in ps (nandlab.nand_model.pinmodel.lanes_from_text)."""
    from nandlab.gateware.onfi.pinphy import FAMILIES
    from nandlab.nand_model.pinmodel import lanes_from_text
    if family is None:
        if seed is not None or lanes is not None:
            raise ValueError("--skew-seed and --skew set the pin-level model's lanes: they need --nand-pin-model")
        return None
    if family not in FAMILIES:
        raise ValueError(f"--nand-pin-model '{family}': the delay line of a PHY family, {', '.join(FAMILIES)}")
    if seed is not None and lanes is not None:
        raise ValueError("--skew-seed and --skew both set the lanes: give one")
    if seed is not None and (not isinstance(seed, int) or seed < 0):
        raise ValueError(f"--skew-seed {seed}: a whole number, 0 or more")
    if lanes is not None:
        lanes_from_text(lanes)
    return {"family": family, "seed": seed if lanes is None else None, "lanes": lanes}


def _pin_model_soc(options, sys_clk_freq=SYS_CLK_FREQ):
    """NandLabSoC's `nand_pin_model` of checked pin_model_options()."""
    from nandlab.nand_model.pinmodel import lanes_from_text, random_lane_timings
    if options is None:
        return None
    lanes = (lanes_from_text(options["lanes"]) if options["lanes"] else
             random_lane_timings(options["seed"] or 0, sys_clk_freq=sys_clk_freq))
    return {"family": options["family"], "lanes": lanes}


# Die indices a deviation may name before the die count is known (the SoC checks them against its dies).
MAX_DEVIATION_DIES = 16 * 8
DEVIATION_NAME = str.maketrans({":": "s", "@": "at", ",": "_", "-": "m", " ": ""})


def nand_options(part=NAND_PART, blocks=NAND_BLOCKS, pages=NAND_PAGES, storage=NAND_STORAGE, sdw=False,
                 time_scale=NAND_TIME_SCALE, pin_model=None, power_topology=None, deviation=None):
    """The sim SoC's NAND options, checked (ValueError says what is wrong): a part of the database
    whose pages (data and spare) fit 16-bit columns and whose spare holds the controllers' ECC parity
    (pages of more than 16 codewords get the ECC summary completion), at most its blocks and pages
    (its address cycles then reach every page), blocks a multiple of its planes, and block RAM
    storage only for dies of at most BRAM_LIMIT bytes. `sdw`: the dies get SDW-NFM's subplane page registers (4 per plane: up to
    8 pages in one operation; without them SDW-NFM runs as DW-NFM); it needs blocks of at least
    planes x 4 (a block per subplane). `time_scale`: the dies' array times (tR, tPROG, tBERS) are
    divided by it at build time (1 = the part's own times; the firmware can divide further at run
    time by powers of two, `die`'s time_scale_shift). `pin_model`: pin_model_options()' keywords (a dict), or
    None. `deviation`: dies whose current deviates from the compiled waveform, LEVEL[:STRETCH][@DIES]
    (nandlab.deviation.parse; the dies are checked against the count where it is known), or None."""
    pin_model = pin_model_options(**pin_model) if pin_model else None
    if not isinstance(time_scale, int) or not 1 <= time_scale <= MAX_TIME_SCALE:
        raise ValueError(f"--nand-time-scale {time_scale}: a whole number, 1 (the part's own array times) .. "
                         f"{MAX_TIME_SCALE}")
    if storage not in NAND_STORAGES:
        raise ValueError(f"NAND storage '{storage}' unknown; the simulator takes {', '.join(NAND_STORAGES)}")
    full = check_nand_part(part, blocks, pages, sdw=sdw, ecc=NAND_ECC)   # (the checks the boards make too)
    if storage == "bram":
        size = die_storage_bytes(DieConfig(full.scaled(blocks_per_lun=blocks, pages_per_block=pages)))
        if size > BRAM_LIMIT:
            raise ValueError(f"storage 'bram' keeps every die's array in the simulator's model: {blocks} blocks x "
                             f"{pages} pages of {full.page_size + full.spare_size} B is {size / 2**20:.1f} MiB a die, "
                             f"the limit is {BRAM_LIMIT // 2**20} MiB (use storage 'sim', or fewer blocks or pages)")
    if power_topology is not None and power_topology not in TOPOLOGIES:
        raise ValueError(f"--power-topology {power_topology}: valid: {', '.join(TOPOLOGIES)}")
    if power_topology == DEFAULT_TOPOLOGY:
        power_topology = None
    if deviation is not None:
        from nandlab.deviation import parse
        from nandlab.errors import NandLabError
        try:
            parse(deviation, MAX_DEVIATION_DIES, option="--nand-deviation")
        except NandLabError as e:
            raise ValueError(str(e)) from None
    # (pin_model and power_topology only when set: the options of a build without them are what they were,
    # for the records that keep them)
    return dict(part=full.model, blocks=blocks, pages=pages, storage=storage, sdw=bool(sdw), time_scale=time_scale,
                **({"pin_model": pin_model} if pin_model else {}),
                **({"power_topology": power_topology} if power_topology else {}),
                **({"deviation": str(deviation)} if deviation is not None else {}))


def sim_bad_blocks(blocks):
    """Factory bad blocks of the simulated dies: none under 64 blocks (small test geometries), else
    two per die in the upper half of the LUN, a different pair on each die (by its index over all
    channels), as a real part's are scattered."""
    if blocks < 64:
        return ()
    half = blocks // 2
    return lambda index: tuple(sorted({half + (97 * index + 13) % half, half + (61 * index + 41) % half}))


class _SimCRG(CRG):
    """LiteX's simulation CRG with a reset input: LiteX connects the SoC controller's soc_rst to it,
    so a SoC reset resets the whole sys domain (as the boards' CRGs do), not only the CPU."""
    def __init__(self, clk):
        self.rst = Signal()
        CRG.__init__(self, clk, rst=self.rst)


class NandLabSimSoC(NandLabSoC):
    def __init__(self, main_ram_init=None, with_bridge=True, sys_clk_freq=SYS_CLK_FREQ,
        nand_dies=NAND_DIES, nand_channels=NAND_CHANNELS, idle_gating=True, nand_part=NAND_PART,
        nand_blocks=NAND_BLOCKS, nand_pages=NAND_PAGES, nand_storage=NAND_STORAGE, nand_sdw=False,
        nand_time_scale=NAND_TIME_SCALE, nand_pin_model=None, nand_power_topology=None, nand_deviation=None,
        **kwargs):
        platform = SimPlatform("SIM", _io)
        self.crg = _SimCRG(platform.request("sys_clk"))
        NandLabSoC.__init__(self, platform, sys_clk_freq, "sim",
            uart_name                = "sim",
            integrated_rom_size      = 0,
            cpu_reset_address        = self.mem_map["main_ram"],
            integrated_main_ram_size = MAIN_RAM_SIZE,
            integrated_main_ram_init = main_ram_init or [],
            integrated_sram_size     = SRAM_SIZE,
            nand_dies                = nand_dies,
            nand_channels            = nand_channels,
            nand_part                = nand_part,
            nand_blocks              = nand_blocks,
            nand_pages               = nand_pages,
            nand_storage             = nand_storage,
            nand_bad_blocks          = sim_bad_blocks(nand_blocks),
            nand_ecc                 = NAND_ECC,
            nand_time_scale          = nand_time_scale,
            nand_sdw                 = nand_sdw,   # Subplane registers cost simulation speed: off unless asked.
            nand_cache               = True,
            nand_pin_model           = _pin_model_soc(nand_pin_model, sys_clk_freq),
            power_topology           = nand_power_topology,
            nand_deviation           = nand_deviation,
            idle_gating              = idle_gating,  # Idle blocks not evaluated (gateware/common/idlegate.py).
            nand_seq_apart           = nand_time_scale <= SEQ_APART_TIME_SCALE,
            **{"cpu_variant": CPU_VARIANT, **kwargs})
        if with_bridge:
            self.uartbone_phy = RS232PHYModel(platform.request("serial", 1))
            self.uartbone     = UARTBone(phy=self.uartbone_phy, clk_freq=sys_clk_freq,
                address_width=self.bus.address_width)
            self.bus.add_master(name="uartbone", master=self.uartbone.wishbone)

    def connect_nand_storage(self, index, pads):
        """A die's storage pads to the nandstore module's: the platform IO group ("nand_storage", index)."""
        layout = sim_storage_layout(self.nand_config)
        self.platform.add_extension([("nand_storage", index,
            *[Subsignal(name, Pins(width)) for name, width, _ in layout])])
        io = self.platform.request("nand_storage", index)
        for name, _, direction in layout:
            a, b = getattr(io, name), getattr(pads, name)
            self.comb += b.eq(a) if direction == DIR_S_TO_M else a.eq(b)

    def nandstore_args(self):
        """Arguments of the nandstore module for this SoC's dies (None: their arrays are not in it)."""
        if getattr(self, "nand_storage", None) != "sim" or not self.nand_die_configs:
            return None
        part = self.nand_config.part
        return {
            "dies": len(self.nand_die_configs), "blocks": part.blocks_per_lun, "pages": part.pages_per_block,
            "page_size": part.page_size, "spare_size": part.spare_size,
            "markers": [[i, word, value] for i, config in enumerate(self.nand_die_configs)
                        for word, value in sorted(bad_block_markers(config).items())],
            "port": 0,
        }

    def attach_telemetry_link(self):
        """Telemetry bytes to the telemetry2tcp module's pads."""
        pads = self.platform.request("telemetry")
        self.comb += [
            pads.valid.eq(self.telemetry.source.valid),
            pads.data.eq(self.telemetry.source.data),
            self.telemetry.source.ready.eq(pads.ready),
        ]


def sim_config(bridge_port=BRIDGE_PORT, telemetry_port=TELEMETRY_PORT, nandstore=None):
    """The simulator's modules; `nandstore`: the nandstore module's arguments (NandLabSimSoC.nandstore_args),
    its interfaces the dies' storage pads. The run directory gives it its control port (and image)."""
    config = SimConfig()
    config.add_clocker("sys_clk", freq_hz=SYS_CLK_FREQ)
    config.add_module("serial2console", "serial")
    if bridge_port:
        config.add_module("serial2tcp", ("serial", 1), args={"port": bridge_port})
    if telemetry_port:    # The SoC has telemetry only with dies.
        config.add_module("telemetry2tcp", "telemetry", args={"port": telemetry_port})
    if nandstore:
        config.add_module("nandstore", [("nand_storage", i) for i in range(nandstore["dies"])], args=nandstore)
    return config


def _extra_modules(build_dir):
    """Our litex_sim modules (sw/sim/modules), copied into the build: LiteX writes its variables.mak
    next to them."""
    src = Path(__file__).resolve().parents[2] / "sw" / "sim" / "modules"
    dst = Path(build_dir) / "sim_modules"
    names = []
    for mod in sorted(p for p in src.iterdir() if p.is_dir()):
        (dst / mod.name).mkdir(parents=True, exist_ok=True)
        for f in mod.iterdir():
            (dst / mod.name / f.name).write_bytes(f.read_bytes())
        names.append(mod.name)
    return names, str(dst.resolve())


def _builder(soc, build_dir, compile_software):
    return Builder(soc,
        output_dir       = str(build_dir),
        compile_software = compile_software,
        compile_gateware = False,
        csr_csv          = str(Path(build_dir) / "csr.csv"),
        csr_json         = str(Path(build_dir) / "csr.json"),
    )


def generate_headers(build_dir, dies=NAND_DIES, channels=NAND_CHANNELS, **nand):
    """The SoC's csr.csv, csr.json and C headers only (no software libraries, no gateware: seconds).
    `nand`: the options of `nand_options()` (part, blocks, pages, storage)."""
    soc = NandLabSimSoC(nand_dies=dies, nand_channels=channels, **_soc_nand(nand))
    _builder(soc, build_dir, compile_software=False).build(build=False, run=False)
    return soc


def generate_software(build_dir, dies=NAND_DIES, channels=NAND_CHANNELS, idle_gating=True, **nand):
    """Generate the headers and libraries the firmware builds against (no gateware)."""
    soc = NandLabSimSoC(nand_dies=dies, nand_channels=channels, idle_gating=idle_gating, **_soc_nand(nand))
    builder = _builder(soc, build_dir, compile_software=True)
    builder.build(build=False, run=False)
    # LiteX compiles its software libraries only for CPUs that boot from a ROM; this SoC boots
    # from main RAM, so build them here (without the BIOS, which it does not use).
    builder._prepare_rom_software()
    builder._generate_rom_software(compile_bios=False)
    return soc


def _soc_nand(nand):
    """NandLabSimSoC's keyword arguments of the NAND options (checked)."""
    return {f"nand_{k}": v for k, v in nand_options(**nand).items()}


def _digest(paths):
    """Hash of the generated simulator sources, ignoring LiteX's generation-date lines."""
    h = hashlib.sha256()
    for p in paths:
        h.update(p.name.encode())
        for line in p.read_bytes().splitlines(keepends=True):
            if not (line.startswith(b"// Date") or line.startswith(b"// LiteX sha1")
                    or b"Auto-Generated by LiteX on" in line):
                h.update(line)
    return h.hexdigest()


def build_simulator(build_dir, firmware, bridge_port=BRIDGE_PORT, threads=1, trace=False, log=print, dies=NAND_DIES,
    channels=NAND_CHANNELS, idle_gating=True, pgo=None, **nand):
    """Generate the simulator with `firmware` in main RAM and compile it (skipped when unchanged).
    `pgo`: compile it profile-guided (default `sim_pgo()`: off unless NANDLAB_SIM_PGO=1; see PGO_TRAINING).

    Returns the gateware directory, from which `obj_dir/Vsim` must be run.
    """
    pgo = sim_pgo() if pgo is None else bool(pgo)
    build_dir = Path(build_dir)
    soc  = NandLabSimSoC(main_ram_init=get_mem_data(str(firmware), endianness="little"), nand_dies=dies,
        nand_channels=channels, idle_gating=idle_gating, **_soc_nand(nand))
    gateware_dir = build_dir / "gateware"
    extra_mods, extra_mods_path = _extra_modules(build_dir)
    _builder(soc, build_dir, compile_software=False).build(
        build      = True,
        run        = False,
        sim_config = sim_config(bridge_port, telemetry_port=TELEMETRY_PORT if dies else None,
                                nandstore=soc.nandstore_args()),
        threads    = threads,
        trace      = trace,
        opt_level  = "O3",
        # The C++ compile's parallelism (LiteX's Makefile runs an unbounded `make -j` without it: dozens
        # of compilers at 200 MB each on a 2-core machine).
        jobs       = os.cpu_count() or 1,
        interactive= False,
        extra_mods = extra_mods,
        extra_mods_path = extra_mods_path,
    )
    # Verilator is only re-run when the design changes; memory contents are read at start-up
    # from the .init files, so a new firmware image needs no recompile.
    sources = sorted(p for p in gateware_dir.iterdir()
        if p.suffix in (".v", ".h", ".cpp") and p.is_file())
    sources += sorted(Path(extra_mods_path).glob("*/*.c"))
    # The simulator runs where it is built: let the C++ compiler use this machine's instruction set
    # (about 14 % more cycles/s at 8 dies than generic x86-64). LiteX writes OPT_LEVEL unquoted.
    # With `pgo` the first compile is instrumented (PGO_GENERATE), trained (_pgo_train) and compiled
    # again with its profile (PGO_USE).
    opt = "O3 -march=native" + (f" {PGO_GENERATE}" if pgo else "")
    script = gateware_dir / "build_sim.sh"
    text = script.read_text().replace("OPT_LEVEL=O3", f'OPT_LEVEL="{opt}"')
    core = _sim_core(gateware_dir, trace)
    text = text.replace(f"-f {_LITEX_SIM_CORE}/Makefile", f"-f {core}/Makefile")
    if pgo:
        text = text.replace(f'OPT_LEVEL="{opt}"', f'OPT_LEVEL="{opt}" PGO_LDFLAGS="{PGO_GENERATE}"')
    text, cpu = _cpu_without_public(gateware_dir, text)
    script.write_text(text)
    sources += sorted(core.glob("*.cpp")) + [core / "Makefile", core / "nandlab.vlt"] + ([cpu] if cpu else [])
    digest = _digest(sources) + f"threads={threads},trace={trace},march=native"
    if pgo:
        digest += f",pgo={PGO_GENERATE}|{PGO_USE}|{PGO_TRAINING!r}"
    stamp  = gateware_dir / "obj_dir" / ".nandlab-digest"
    vsim   = gateware_dir / "obj_dir" / "Vsim"
    if vsim.exists() and stamp.exists() and stamp.read_text() == digest:
        log("[nandlab] simulator up to date")
        return gateware_dir
    stamp.unlink(missing_ok=True)
    log("[nandlab] compiling the simulator with Verilator (a minute or two)...")
    out = subprocess.run(["bash", "build_sim.sh"], cwd=gateware_dir, capture_output=True, text=True)
    if out.returncode != 0 or not vsim.exists():
        tail = "\n".join((out.stdout + out.stderr).splitlines()[-40:])
        raise RuntimeError(f"Verilator build failed in {gateware_dir}:\n{tail}")
    if pgo:
        _pgo_train_and_rebuild(gateware_dir, core, opt, dies, log)
    stamp.write_text(digest)
    return gateware_dir


def _cpu_without_public(gateware_dir, text):
    """The CPU's Verilog (VexRiscv) copied into the build without its `/* verilator public */` marks, and
    `text` (build_sim.sh) naming the copy; returns (text, the copy or None). A public variable can be
    written from C++ between two evaluations, so Verilator evaluated every piece of logic reading one (the
    CPU's interrupt and fetch logic) at the start of every evaluation, twice a cycle, as if it read an
    input. Nothing here reads or writes them."""
    import re
    m = re.search(r"--cc (\S*/VexRiscv[^/\s]*\.v)", text)
    if m is None:
        return text, None
    src, dst = Path(m.group(1)), Path(gateware_dir).resolve() / "cpu" / Path(m.group(1)).name
    dst.parent.mkdir(exist_ok=True)
    dst.write_text(src.read_text().replace("/* verilator public */", ""))
    return text.replace(m.group(1), str(dst)), dst


def _sim_core(gateware_dir, trace):
    """LiteX's simulator main (litex/build/sim/core) copied into the build, changed where it cost time
    without tracing: no trace file opened and flushed (LiteX flushed it, taking and releasing a lock,
    at every clock edge: 3 % of the time). With `trace` the copy is LiteX's own. Returns the copy's
    directory.

    Without `trace` Verilator runs without `--trace` (it kept every named signal alive and computed for a
    tracer that is never opened: unread CSR strobes and the like; 1.13x at 8 dies in a same-run A/B).
    The idle gates' state comparisons (nandlab.gateware.common.idlegate, `*_state_same`, `*_inputs_same`) are then made
    public in a Verilator control file (_VLT), else Verilator inlines them into the latches, clocked at
    every falling edge, instead of evaluating them only when their block is clocked."""
    import shutil
    dst = Path(gateware_dir) / "simcore"
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(_LITEX_SIM_CORE, dst, ignore=shutil.ignore_patterns("__pycache__", "*.o", "*.so"))
    (dst / "veril.cpp").write_text(veril_source(trace))
    # The Makefile: the PGO instrumented build links with -fprofile-generate (PGO_LDFLAGS, empty
    # otherwise); no debug information (-ggdb: about a fifth of the C++ compiler's time on the model's
    # files; the functions keep their symbols for a profiler).
    mk = dst / "Makefile"
    text = mk.read_text()
    untraced = [("\t\t--trace \\\n", f"\t\t{dst.resolve() / 'nandlab.vlt'} \\\n")] if not trace else []
    for old, new in [('-LDFLAGS "$(LDFLAGS)"', '-LDFLAGS "$(LDFLAGS) $(PGO_LDFLAGS)"'), ("\tCFLAGS += -ggdb\n", "")] + untraced:
        assert text.count(old) == 1, "LiteX's sim Makefile changed: review _sim_core()"
        text = text.replace(old, new)
    mk.write_text(text)
    (dst / "nandlab.vlt").write_text(_VLT)
    # Our variables.mak names the copy (the modules' Makefile is found through SRC_DIR).
    mak = Path(gateware_dir) / "variables.mak"
    mak.write_text(mak.read_text().replace(f"SRC_DIR = {_LITEX_SIM_CORE}", f"SRC_DIR = {dst.resolve()}"))
    return dst.resolve()


# Verilator control file of an untraced build (see _sim_core).
_VLT = ('`verilator_config\npublic_flat_rd -module "sim" -var "*_state_same"\n'
        'public_flat_rd -module "sim" -var "*_inputs_same"\n')


def build_dir_name(dies=NAND_DIES, channels=NAND_CHANNELS, idle_gating=True, **nand):
    """Build directory (under build/) of a sim SoC: `sim` for the default, `sim<dies>[x<channels>]` else;
    NAND options other than the defaults add `-<part>`, `-<blocks>x<pages>`, `-<storage>`, `-sdw`,
    `-ts<time scale>`, the pin-level model `-pin<family>`, a power topology other than the default
    `-<topology>`, a current deviation `-dev<level>[s<stretch>][at<dies>]`, and no idle gating `-ungated`."""
    nand = nand_options(**nand)
    suffix = "".join([
        f"-{nand['part'].lower()}" if nand["part"] != NAND_PART else "",
        f"-{nand['blocks']}x{nand['pages']}" if (nand["blocks"], nand["pages"]) != (NAND_BLOCKS, NAND_PAGES) else "",
        f"-{nand['storage']}" if nand["storage"] != NAND_STORAGE else "",
        "-sdw" if nand["sdw"] else "",
        f"-ts{nand['time_scale']}" if nand["time_scale"] != NAND_TIME_SCALE else "",
        f"-pin{nand['pin_model']['family']}" if nand.get("pin_model") else "",
        f"-{nand['power_topology']}" if nand.get("power_topology") else "",
        "-dev" + nand["deviation"].translate(DEVIATION_NAME) if nand.get("deviation") else "",
        "" if idle_gating else "-ungated",
    ])
    if dies == NAND_DIES and channels == NAND_CHANNELS:
        return "sim" + suffix
    return f"sim{dies}" + (f"x{channels}" if channels != 1 else "") + suffix


_THREAD_BUILD_LOCK = threading.RLock()


def build_all(build_dir, bridge_port=BRIDGE_PORT, threads=1, trace=False, verbose=False, dies=NAND_DIES,
    channels=NAND_CHANNELS, idle_gating=True, pgo=None, **nand):
    """Everything `nandlab sim` needs: headers and libraries, firmware, compiled simulator. `nand`:
    the options of `nand_options()` (part, blocks, pages, storage); `pgo`: profile-guided compile
    (default `sim_pgo()`).

    Returns the gateware directory holding obj_dir/Vsim.
    """
    from nandlab.env import build_lock
    from nandlab.steps import say
    build_dir = Path(build_dir)
    nand = nand_options(**nand)
    pgo = sim_pgo() if pgo is None else bool(pgo)
    # One build at a time in this process (threads: Dask's embedded workers), whatever the directory: LiteX
    # changes the working directory while it writes a build, so two at once write into each other's.
    with _THREAD_BUILD_LOCK, build_lock(build_dir.name):
        # Nothing that goes into the simulator changed since the last build: start at once.
        key = _inputs_key(bridge_port=bridge_port, threads=threads, trace=trace, dies=dies, channels=channels,
                          idle_gating=idle_gating, pgo=pgo, cpu=CPU_VARIANT, **nand)
        stamp = build_dir / ".nandlab-inputs"
        gateware_dir = build_dir / "gateware"
        if stamp.exists() and stamp.read_text() == key and (gateware_dir / "obj_dir" / "Vsim").exists():
            say(f"simulator up to date in {gateware_dir} (sources and options unchanged)")
            return gateware_dir
        stamp.unlink(missing_ok=True)
        gateware_dir = _build_all(build_dir, bridge_port, threads, trace, verbose, dies, channels, idle_gating, pgo, nand)
        stamp.write_text(key)
        return gateware_dir


# What a simulator build reads: the gateware, the die model, the SoC, the firmware and the sim
# modules, the host package that drives the build, the versions of the tools, the git revision.
_INPUT_DIRS = ("gateware", "nand_model", "soc", "sw/firmware", "sw/sim", "sw/host/nandlab")


def _inputs_key(**options):
    """A digest of every input of a simulator build (file contents, options, tool versions)."""
    from importlib.metadata import version
    from nandlab.env import git_revision
    root = Path(__file__).resolve().parents[2]
    h = hashlib.sha256(repr(sorted(options.items())).encode())
    # The SoC's identifier names the revision (a rebuild after a commit regenerates the memory
    # files; Verilator is not re-run when the design is the same).
    h.update(git_revision().encode())
    for pkg in ("litex", "migen", "verilator", "pythondata-cpu-vexriscv"):
        try:
            h.update(f"{pkg}={version(pkg)}".encode())
        except Exception:
            h.update(f"{pkg}=?".encode())
    for d in _INPUT_DIRS:
        for p in sorted((root / d).rglob("*")):
            if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc",):
                h.update(str(p.relative_to(root)).encode())
                h.update(p.read_bytes())
    return h.hexdigest()


def _build_all(build_dir, bridge_port, threads, trace, verbose, dies, channels, idle_gating, pgo, nand):
    from nandlab.firmware import build_firmware
    from nandlab.steps import step, say

    log = build_dir / "build.log"
    with step("generating the SoC and its software libraries", log, verbose):
        generate_software(build_dir, dies, channels, idle_gating, **nand)
    with step("building the firmware", log, verbose):
        firmware = build_firmware(build_dir)
    with step("generating and compiling the simulator", log, verbose):
        gateware_dir = build_simulator(build_dir, firmware, bridge_port=bridge_port,
            threads=threads, trace=trace, dies=dies, channels=channels, idle_gating=idle_gating, pgo=pgo, **nand)
    say(f"simulator ready in {gateware_dir} (log: {log})")
    return gateware_dir
