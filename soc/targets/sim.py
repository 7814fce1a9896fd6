"""Simulation target: the nandlab SoC on litex_sim (Verilator), firmware preloaded in main RAM.

Console on the simulator's stdin/stdout (serial2console); host bridge (UARTBone) on a second
simulated UART exposed as a TCP socket (serial2tcp, no root), which `litex_server --uart
--uart-port socket://localhost:PORT` turns into the usual RemoteClient port.

The CPU resets straight into main RAM, which holds the firmware image from the start: there is
no BIOS and no upload step in simulation.
"""

import hashlib
import subprocess
from pathlib import Path

from litex.build.generic_platform import Pins, Subsignal
from litex.build.sim import SimPlatform
from litex.build.sim.config import SimConfig
from litex.soc.cores.uart import RS232PHYModel, UARTBone
from litex.soc.integration.builder import Builder
from litex.soc.integration.common import get_mem_data
from litex.build.io import CRG

from nandlab.soc.nandlab_soc import NandLabSoC

SYS_CLK_FREQ   = int(100e6)  # Nominal: the emulated NAND timings are counted in cycles of this clock.
MAIN_RAM_SIZE  = 0x20000
SRAM_SIZE      = 0x4000
BRIDGE_PORT    = 1235        # Default TCP port of the host bridge (litex_server takes 1234).
TELEMETRY_PORT = 1236        # Default TCP port of the telemetry stream.

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
NAND_TIME_SCALE = 10       # Simulation only: array times divided by this.


class NandLabSimSoC(NandLabSoC):
    def __init__(self, main_ram_init=None, with_bridge=True, sys_clk_freq=SYS_CLK_FREQ,
        nand_dies=NAND_DIES, nand_channels=NAND_CHANNELS, idle_gating=True, **kwargs):
        platform = SimPlatform("SIM", _io)
        self.crg = CRG(platform.request("sys_clk"))
        NandLabSoC.__init__(self, platform, sys_clk_freq, "sim",
            uart_name                = "sim",
            integrated_rom_size      = 0,
            cpu_reset_address        = self.mem_map["main_ram"],
            integrated_sram_size     = SRAM_SIZE,
            integrated_main_ram_size = MAIN_RAM_SIZE,
            integrated_main_ram_init = main_ram_init or [],
            nand_dies                = nand_dies,
            nand_channels            = nand_channels,
            nand_time_scale          = NAND_TIME_SCALE,
            nand_sdw                 = False,   # SDW subplane registers cost simulation speed; the die tests cover SDW-NFM.
            nand_cache               = True,
            idle_gating              = idle_gating,  # Idle blocks not evaluated (gateware/common/idlegate.py).
            **kwargs)
        if with_bridge:
            self.uartbone_phy = RS232PHYModel(platform.request("serial", 1))
            self.uartbone     = UARTBone(phy=self.uartbone_phy, clk_freq=sys_clk_freq,
                address_width=self.bus.address_width)
            self.bus.add_master(name="uartbone", master=self.uartbone.wishbone)

    def attach_telemetry_link(self):
        """Telemetry bytes to the telemetry2tcp module's pads."""
        pads = self.platform.request("telemetry")
        self.comb += [
            pads.valid.eq(self.telemetry.source.valid),
            pads.data.eq(self.telemetry.source.data),
            self.telemetry.source.ready.eq(pads.ready),
        ]


def sim_config(bridge_port=BRIDGE_PORT, telemetry_port=TELEMETRY_PORT):
    config = SimConfig()
    config.add_clocker("sys_clk", freq_hz=SYS_CLK_FREQ)
    config.add_module("serial2console", "serial")
    if bridge_port:
        config.add_module("serial2tcp", ("serial", 1), args={"port": bridge_port})
    if telemetry_port:    # The SoC has telemetry only with dies.
        config.add_module("telemetry2tcp", "telemetry", args={"port": telemetry_port})
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


def generate_headers(build_dir, dies=NAND_DIES, channels=NAND_CHANNELS):
    """The SoC's csr.csv, csr.json and C headers only (no software libraries, no gateware: seconds)."""
    soc = NandLabSimSoC(nand_dies=dies, nand_channels=channels)
    _builder(soc, build_dir, compile_software=False).build(build=False, run=False)
    return soc


def generate_software(build_dir, dies=NAND_DIES, channels=NAND_CHANNELS, idle_gating=True):
    """Generate the headers and libraries the firmware builds against (no gateware)."""
    soc = NandLabSimSoC(nand_dies=dies, nand_channels=channels, idle_gating=idle_gating)
    builder = _builder(soc, build_dir, compile_software=True)
    builder.build(build=False, run=False)
    # LiteX compiles its software libraries only for CPUs that boot from a ROM; this SoC boots
    # from main RAM, so build them here (without the BIOS, which it does not use).
    builder._prepare_rom_software()
    builder._generate_rom_software(compile_bios=False)
    return soc


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
    channels=NAND_CHANNELS, idle_gating=True):
    """Generate the simulator with `firmware` in main RAM and compile it (skipped when unchanged).

    Returns the gateware directory, from which `obj_dir/Vsim` must be run.
    """
    build_dir = Path(build_dir)
    soc  = NandLabSimSoC(main_ram_init=get_mem_data(str(firmware), endianness="little"), nand_dies=dies,
        nand_channels=channels, idle_gating=idle_gating)
    gateware_dir = build_dir / "gateware"
    extra_mods, extra_mods_path = _extra_modules(build_dir)
    _builder(soc, build_dir, compile_software=False).build(
        build      = True,
        run        = False,
        sim_config = sim_config(bridge_port, telemetry_port=TELEMETRY_PORT if dies else None),
        threads    = threads,
        trace      = trace,
        opt_level  = "O3",
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
    script = gateware_dir / "build_sim.sh"
    script.write_text(script.read_text().replace("OPT_LEVEL=O3", 'OPT_LEVEL="O3 -march=native"'))
    digest = _digest(sources) + f"threads={threads},trace={trace},march=native"
    stamp  = gateware_dir / "obj_dir" / ".nandlab-digest"
    vsim   = gateware_dir / "obj_dir" / "Vsim"
    if vsim.exists() and stamp.exists() and stamp.read_text() == digest:
        log("[nandlab] simulator up to date")
        return gateware_dir
    log("[nandlab] compiling the simulator with Verilator (a minute or two)...")
    out = subprocess.run(["bash", "build_sim.sh"], cwd=gateware_dir, capture_output=True, text=True)
    if out.returncode != 0 or not vsim.exists():
        tail = "\n".join((out.stdout + out.stderr).splitlines()[-40:])
        raise RuntimeError(f"Verilator build failed in {gateware_dir}:\n{tail}")
    stamp.write_text(digest)
    return gateware_dir


def build_dir_name(dies=NAND_DIES, channels=NAND_CHANNELS, idle_gating=True):
    """Build directory (under build/) of a sim SoC: `sim` for the default, `sim<dies>[x<channels>]` else
    (`-ungated` added without idle gating)."""
    suffix = "" if idle_gating else "-ungated"
    if dies == NAND_DIES and channels == NAND_CHANNELS:
        return "sim" + suffix
    return f"sim{dies}" + (f"x{channels}" if channels != 1 else "") + suffix


def build_all(build_dir, bridge_port=BRIDGE_PORT, threads=1, trace=False, verbose=False, dies=NAND_DIES,
    channels=NAND_CHANNELS, idle_gating=True):
    """Everything `nandlab sim` needs: headers and libraries, firmware, compiled simulator.

    Returns the gateware directory holding obj_dir/Vsim.
    """
    from nandlab.env import build_lock
    from nandlab.steps import say
    build_dir = Path(build_dir)
    with build_lock(build_dir.name):
        # Nothing that goes into the simulator changed since the last build: start at once.
        key = _inputs_key(bridge_port=bridge_port, threads=threads, trace=trace, dies=dies, channels=channels,
                          idle_gating=idle_gating)
        stamp = build_dir / ".nandlab-inputs"
        gateware_dir = build_dir / "gateware"
        if stamp.exists() and stamp.read_text() == key and (gateware_dir / "obj_dir" / "Vsim").exists():
            say(f"simulator up to date in {gateware_dir} (sources and options unchanged)")
            return gateware_dir
        stamp.unlink(missing_ok=True)
        gateware_dir = _build_all(build_dir, bridge_port, threads, trace, verbose, dies, channels, idle_gating)
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


def _build_all(build_dir, bridge_port, threads, trace, verbose, dies=NAND_DIES, channels=NAND_CHANNELS,
    idle_gating=True):
    from nandlab.firmware import build_firmware
    from nandlab.steps import step, say

    log = build_dir / "build.log"
    with step("generating the SoC and its software libraries", log, verbose):
        generate_software(build_dir, dies, channels, idle_gating)
    with step("building the firmware", log, verbose):
        firmware = build_firmware(build_dir)
    with step("generating and compiling the simulator", log, verbose):
        gateware_dir = build_simulator(build_dir, firmware, bridge_port=bridge_port,
            threads=threads, trace=trace, dies=dies, channels=channels, idle_gating=idle_gating)
    say(f"simulator ready in {gateware_dir} (log: {log})")
    return gateware_dir
