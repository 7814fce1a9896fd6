"""nandlab build targets: the simulator and the boards, behind one build/load interface.

A board module gives NAME, DESCRIPTION, add_arguments(parser), make_soc(args), compiler(),
install_hint() and programmer(args). The simulator has its own flow (`nandlab sim`).
"""

import argparse
import importlib
import json
import re
import shutil
from pathlib import Path

from nandlab import env
from nandlab.errors import NandLabError, MissingToolError
from nandlab.soc.targets.nand_socket import TIMING_REPORT_SCRIPT

BOARDS = {
    "arty"          : "nandlab.soc.targets.arty",
    "colorlight_i5" : "nandlab.soc.targets.colorlight_i5",
    "ecpix5"        : "nandlab.soc.targets.ecpix5",
}
TARGETS = ["sim"] + list(BOARDS)

SIM_DESCRIPTION = "litex_sim on Verilator: firmware preloaded, console on the terminal, bridge on TCP"


def add_nand_arguments(parser, defaults, board=None):
    """Board options for the emulated dies; `defaults` are what fits the board's block RAM (dies,
    blocks, pages, and optionally channels, ecc, cache, storage); `board` is the board's NAME, for the block
    RAM check of `check_arguments`."""
    from nandlab.nand_model.parts import DEFAULT_PART
    parser.set_defaults(board=board, nand_defaults=defaults)
    parser.add_argument("--nand-part", default=DEFAULT_PART, metavar="NAME",
        help=f"Part of the dies, from 'nandlab nand parts' (default {DEFAULT_PART}; the DW/SDW-NFM paper's part "
             "for boards: DWSDW-MLC-2K).")
    parser.add_argument("--nand-dies", type=int, default=defaults["dies"],
        help=f"Emulated NAND dies (ways) on a channel (default {defaults['dies']}).")
    parser.add_argument("--nand-blocks", type=int, default=None,
        help=f"Blocks per emulated die (default {defaults['blocks']}; with --nand-sdw at least a block per "
             "subplane: planes x 4).")
    parser.add_argument("--nand-pages", type=int, default=defaults["pages"],
        help=f"Pages per block of an emulated die (default {defaults['pages']}).")
    parser.add_argument("--nand-sdw", action="store_true",
        help="Build the dies with SDW-NFM's subplane page registers (4 per plane, up to 8 pages in one "
             "operation; the firmware's 'die arch SDW-NFM' then enforces it).")
    cache = defaults.get("cache", True)
    parser.add_argument("--nand-cache", action=argparse.BooleanOptionalAction, default=None,
        help="Build the READ/PROGRAM CACHE register pairs (twice the page registers' block RAM; default: "
             f"{'on' if cache else 'off'} on this board, off for parts that announce no cache commands).")
    parser.add_argument("--nand-channels", type=int, default=defaults.get("channels", 1),
        help=f"NAND channels of --nand-dies dies each, a channel controller per channel (default {defaults.get('channels', 1)}).")
    parser.add_argument("--nand-ecc", default=defaults.get("ecc", "none"), choices=["none", "bch8"],
        help="BCH ECC in every channel controller: bch8 = t 8 per 512 B (about 7.8k LUT on xc7, 10.6k LUT4 "
             "on ECP5 per controller: `nandlab report controller`; with several channels the controllers share "
             f"one decoder, 9.7k LUT4 of it on ECP5; default {defaults.get('ecc', 'none')}).")
    from nandlab.gateware.power.common import TOPOLOGIES, DEFAULT_TOPOLOGY
    parser.add_argument("--power-topology", default=None, choices=TOPOLOGIES,
        help=f"Token rings over the channels: one ring through every die (single), a ring per channel each running "
             f"the configuration's alpha (per_channel), or a ring per channel sharing alpha as one budget through "
             f"exchange nodes (exchange, 2 or more channels; no packet protection); default {DEFAULT_TOPOLOGY}.")
    parser.add_argument("--nand-deviation", metavar="LEVEL[:STRETCH][@DIES]", default=None,
        help="Dies whose current deviates from the waveform the token tables are compiled from (LEVEL %% more "
             "current, phases STRETCH %% longer; dies over all channels, default 0 and N/2): for the firmware's "
             "'power adapt' (docs/power_deviation.md).")
    storage = defaults.get("storage", "bram")
    parser.add_argument("--nand-storage", default=storage, choices=["bram", "dram"],
        help="Where the emulated dies keep their arrays: block RAM, or regions at the top of the "
             f"board's DRAM main RAM (more blocks per die, fewer block RAMs; default {storage} on this board).")


MAX_DIES_PER_CHANNEL = 16        # ways of a channel controller (one CE each)
MAX_CHANNELS         = 8


class NandOptionError(ValueError):
    """A NAND option the SoC cannot take; `option` names it (--nand-part, --nand-blocks, ...)."""
    def __init__(self, option, message):
        ValueError.__init__(self, message)
        self.option = option


def check_nand_part(part, blocks, pages, sdw=False, ecc=None):
    """The part of the database called `part`, checked with the geometry an SoC builds its dies with
    (the simulator and the boards): at most its pages per block and its blocks (its address cycles then
    reach every page), blocks a multiple of its planes, with `sdw` (SDW-NFM's subplane registers) a
    block in every subplane, pages (data and spare) within the controllers' 16-bit columns, and with
    `ecc` (a NAND_ECC_CODES name, or None / "none") a spare that holds the parity. Raises
    NandOptionError naming the option at fault."""
    from nandlab.nand_model.common import SUBPLANES
    from nandlab.nand_model.parts import get_part
    try:
        full = get_part(part)
    except KeyError as e:
        raise NandOptionError("--nand-part", e.args[0]) from None
    if not 1 <= pages <= full.pages_per_block:
        raise NandOptionError("--nand-pages", f"{pages} pages per block: {full.model} takes 1..{full.pages_per_block}")
    takes = f"{full.model} takes {full.planes}..{full.blocks_per_lun}, a multiple of its {full.planes} plane(s)"
    if not full.planes <= blocks <= full.blocks_per_lun:
        raise NandOptionError("--nand-blocks", f"{blocks} blocks: {takes}")
    if blocks % full.planes:
        raise NandOptionError("--nand-blocks", f"{blocks} blocks do not divide into {full.planes} planes ({takes})")
    if sdw and blocks < full.planes * SUBPLANES:
        raise NandOptionError("--nand-sdw", f"--nand-sdw: {blocks} blocks cannot give each of the {full.planes} x "
                              f"{SUBPLANES} subplanes a block (at least {full.planes * SUBPLANES})")
    if full.page_size + full.spare_size > 0xFFFF:
        raise NandOptionError("--nand-part", f"{full.model}: pages of {full.page_size} + {full.spare_size} B; the "
                              f"controllers' 16-bit column and length and the emulated dies' 16-bit page pointers "
                              f"reach {0xFFFF} bytes")
    if ecc not in (None, "none"):
        from nandlab.gateware.onfi.controller.ecc import ecc_geometry
        from nandlab.soc.nandlab_soc import NAND_ECC_CODES
        try:
            ecc_geometry(NAND_ECC_CODES[ecc], full, 4)          # (4-byte DMA words: the 32-bit bus)
        except ValueError as e:
            raise NandOptionError("--nand-part", f"{full.model} with the controllers' {ecc} ECC: {e}") from None
    try:
        full.scaled(blocks_per_lun=blocks, pages_per_block=pages)
    except ValueError as e:
        raise NandOptionError("--nand-blocks", str(e)) from None
    return full


def nand_choices(args):
    """The dies a board builds from its options, defaults resolved: part, blocks, pages, sdw, cache.
    Blocks default to the board's, raised to a block per subplane with --nand-sdw; cache register
    pairs to the board's choice, off for a part that announces no cache commands."""
    from nandlab.nand_model.common import SUBPLANES
    from nandlab.nand_model.parts import PARTS
    defaults = args.nand_defaults
    part = next((cls() for model, cls in PARTS.items() if model.lower() == str(args.nand_part).lower()), None)
    blocks = args.nand_blocks
    if blocks is None:
        blocks = defaults["blocks"]
        if args.nand_sdw and part is not None:
            blocks = max(blocks, part.planes * SUBPLANES)
    cache = args.nand_cache
    if cache is None:
        cache = defaults.get("cache", True) and (part is None or part.with_cache)
    return dict(part=part.model if part else args.nand_part, blocks=blocks, pages=args.nand_pages,
                sdw=args.nand_sdw, cache=cache)


def page_register_tiles(part, sdw, cache, words36, rom=0):
    """(registers, block RAM tiles) of one die outside its array: the page registers, each a memory
    of 36-bit words (32 data bits and a generation tag), a tile holding `words36` of them (ECP5
    DP16KD 512, 7-series RAMB36 1024), planes x (4 subplanes with SDW) x (2 with cache) of them,
    and `rom` tiles for the parameter page (yosys: a DP16KD on ECP5, LUTs on 7-series)."""
    from nandlab.nand_model.common import SUBPLANES
    from nandlab.nand_model.die.common import words
    registers = part.planes * (SUBPLANES if sdw else 1) * (2 if cache else 1)
    return registers, registers * -(-words(part.page_size + part.spare_size) // words36) + rom


def check_arguments(args):
    """A board's options checked before anything is generated: NAND dies, channels, part and geometry
    the SoC takes, page registers within the board's block RAM, IP addresses, a positive clock.
    Raises NandLabError naming the option."""
    if not 1 <= args.nand_dies <= MAX_DIES_PER_CHANNEL:
        raise NandLabError(f"--nand-dies {args.nand_dies} is out of range: a channel takes 1..{MAX_DIES_PER_CHANNEL} dies")
    if not 1 <= args.nand_channels <= MAX_CHANNELS:
        raise NandLabError(f"--nand-channels {args.nand_channels} is out of range: the SoC takes 1..{MAX_CHANNELS}")
    check_power_topology(getattr(args, "power_topology", None), args.nand_channels)
    if getattr(args, "nand_deviation", None) is not None:
        from nandlab import deviation
        deviation.parse(args.nand_deviation, args.nand_dies * args.nand_channels, option="--nand-deviation")
    nand = nand_choices(args)
    values = {"--nand-part": nand["part"], "--nand-pages": nand["pages"], "--nand-blocks": nand["blocks"]}
    try:
        part = check_nand_part(nand["part"], nand["blocks"], nand["pages"], sdw=nand["sdw"], ecc=args.nand_ecc)
    except NandOptionError as e:
        message = str(e)
        if not message.startswith(e.option):
            message = f"{e.option} {values[e.option]}: {message}"
        raise NandLabError(message) from None
    if args.nand_cache and not part.with_cache:
        raise NandLabError(f"--nand-cache: {part.model} announces no cache commands (its parameter page); "
                           "leave the option out")
    board = getattr(args, "board", None)
    if board is not None:
        _check_block_ram(args, get_board(board), part, nand)
    clock = getattr(args, "sys_clk_freq", None)
    if clock is not None and not 1e6 <= clock <= 1e9:
        raise NandLabError(f"--sys-clk-freq {clock:g}: give the system clock in Hz (1e6..1e9, e.g. 100e6)")
    from nandlab import checks
    for option in ("eth_ip", "telemetry_ip"):
        if getattr(args, option, None) is not None:
            checks.ipv4(getattr(args, option), "--" + option.replace("_", "-"))


def check_power_topology(topology, channels, option="--nand-channels"):
    """The token rings' layout against the channel count (NandLabError naming the options)."""
    from nandlab.gateware.power.common import DEFAULT_TOPOLOGY
    from nandlab.gateware.power.rings import check_topology
    try:
        check_topology(topology or DEFAULT_TOPOLOGY, channels)
    except ValueError as e:
        raise NandLabError(f"--power-topology {topology} with {option} {channels}: {e}") from None


def _check_block_ram(args, board, part, nand):
    """The dies' page registers within the block RAM the board's SoC leaves them (its block_ram(): the
    SoC's own share measured with yosys; the arrays, in block RAM or DRAM, are the geometry's business)."""
    ram = board.block_ram(args)
    registers, tiles = page_register_tiles(part, nand["sdw"], nand["cache"], ram["words36"], ram["rom"])
    dies = args.nand_dies * args.nand_channels
    free = ram["tiles"] - ram["soc"]
    if dies * tiles <= free:
        return
    what = f"--nand-part {part.model}" + (" --nand-sdw" if nand["sdw"] else "") + \
        (" with cache register pairs" if nand["cache"] else "")
    limit = (f"the {ram['device']} has {ram['tiles']} {ram['unit']}, the SoC without dies takes about {ram['soc']}, "
             f"leaving {free} for the dies")
    ways = f"at most {free // tiles} die(s) fit: fewer --nand-dies or --nand-channels" if free >= tiles else \
        "no such die fits this board"
    hints = (["--no-nand-cache halves the registers"] if nand["cache"] else []) + \
        (["DWSDW-MLC-2K is the DW/SDW part for boards"] if part.page_size > 2048 else [])
    raise NandLabError(f"{what}: {dies} die(s) x {registers} page registers of {part.page_size + part.spare_size} B "
                       f"take {dies * tiles} {ram['unit']} ({tiles} a die); {limit}: {ways}"
                       + "".join(f"; {h}" for h in hints))


def nand_kwargs(args, **extra):
    nand = nand_choices(args)
    return dict(nand_dies=args.nand_dies, nand_part=nand["part"], nand_blocks=nand["blocks"],
                nand_pages=nand["pages"], nand_sdw=nand["sdw"], nand_cache=nand["cache"],
                nand_storage=args.nand_storage, nand_channels=args.nand_channels, nand_ecc=args.nand_ecc,
                power_topology=getattr(args, "power_topology", None),
                nand_deviation=getattr(args, "nand_deviation", None), **extra)


def check_target(name, allowed=None):
    allowed = allowed or TARGETS
    if name not in allowed:
        raise NandLabError(f"unknown target '{name}'; valid targets: {', '.join(allowed)}")
    return name


def get_board(name):
    check_target(name, list(BOARDS))
    return importlib.import_module(BOARDS[name])


def describe():
    """(name, description) of every target, for help texts."""
    rows = [("sim", SIM_DESCRIPTION)]
    for name in BOARDS:
        rows.append((name, get_board(name).DESCRIPTION))
    return rows


def build_dir_of(name):
    return env.BUILD_DIR / name


# Reports ------------------------------------------------------------------------------------------

def parse_nextpnr_log(text):
    """Utilisation and per-clock Fmax from a nextpnr-ecp5 log (the last, post-route figures)."""
    util = {}
    block = text.rfind("Device utilisation:")
    if block >= 0:
        for m in re.finditer(r"Info:\s+(\w+):\s+(\d+)/\s*(\d+)\s+(\d+)%", text[block:block + 4000]):
            util[m.group(1)] = {"used": int(m.group(2)), "total": int(m.group(3))}
    fmax = {}
    for m in re.finditer(r"Max frequency for clock\s+'([^']+)':\s+([\d.]+) MHz \((PASS|FAIL) at ([\d.]+) MHz\)", text):
        fmax[m.group(1)] = {"fmax_mhz": float(m.group(2)), "target_mhz": float(m.group(4)),
                            "pass": m.group(3) == "PASS"}
    return {"utilisation": util, "fmax": fmax}


def parse_vivado_timing(text):
    """The verdict line of nandlab_timing.tcl's report: worst setup and hold slack (ns)."""
    m = re.search(r"nandlab: WNS (\S+) ns, WHS (\S+) ns, socket ports (\d+)", text)
    if m is None:
        return {}
    return {"wns_ns": float(m.group(1)), "whs_ns": float(m.group(2)), "socket_ports": int(m.group(3)),
            "met": float(m.group(1)) >= 0 and float(m.group(2)) >= 0}


def system_clock(report, sys_clk_mhz):
    """The Fmax entry of the system clock: nextpnr names it after a net, so match the target."""
    for name, f in report["fmax"].items():
        if abs(f["target_mhz"] - sys_clk_mhz) < 0.01:
            return name, f
    return None, None


def format_ecp5_report(report):
    u = report["utilisation"]
    def row(label, cell):
        c = u.get(cell)
        if c is None:
            return f"  {label:<22} n/a"
        return f"  {label:<22} {c['used']:>6} / {c['total']:<6} ({100 * c['used'] / c['total']:.1f} %)"
    lines = ["ECP5 utilisation (nextpnr, after routing):",
        row("LUT4 (TRELLIS_COMB)", "TRELLIS_COMB"),
        row("FF (TRELLIS_FF)", "TRELLIS_FF"),
        row("BRAM (DP16KD)", "DP16KD"),
        row("DSP (MULT18X18D)", "MULT18X18D"),
        row("I/O (TRELLIS_IO)", "TRELLIS_IO"),
        "Fmax (nextpnr timing analysis):"]
    for clk, f in report["fmax"].items():
        lines.append(f"  {clk:<40} {f['fmax_mhz']:7.2f} MHz  (target {f['target_mhz']:.2f} MHz, "
                     f"{'PASS' if f['pass'] else 'FAIL'})")
    return "\n".join(lines)


# Build / load -------------------------------------------------------------------------------------

def build_board(name, args, compile=True, verbose=False):
    """Generate (and, with the tool present, compile) a board target; returns a report dict."""
    with env.build_lock(name):
        return _build_board(name, args, compile, verbose)


def _build_board(name, args, compile, verbose):
    from litex.soc.integration.builder import Builder
    from nandlab.firmware import build_firmware
    from nandlab.steps import step, say

    board = get_board(name)
    build_dir = build_dir_of(name)
    log = build_dir / "build.log"
    tool = board.compiler()
    have_tool = env.which(tool) is not None
    run = compile and have_tool
    with step(f"generating the {name} SoC, BIOS and project files", log, verbose):
        soc = board.make_soc(args)
        builder = Builder(soc, output_dir=str(build_dir), compile_gateware=False,
            csr_csv=str(build_dir / "csr.csv"), csr_json=str(build_dir / "csr.json"))
        builder.build(run=False)
    with step("building the firmware", log, verbose):
        firmware = build_firmware(build_dir)
    gateware = build_dir / "gateware"
    if hasattr(board, "write_extra_files"):
        board.write_extra_files(soc, gateware)
    report = {"target": name, "gateware_dir": str(gateware), "firmware": str(firmware),
              "files": sorted(p.name for p in gateware.iterdir() if p.is_file())}
    if compile and not have_tool:
        raise MissingToolError(f"{tool} not found: {board.install_hint()}. The project is generated in "
                               f"{gateware}; use --no-compile to only generate it.")
    if run:
        tool_log = build_dir / "toolchain.log"
        tool_log.write_text("")
        script = _toolchain_command(soc, gateware)
        with step(f"running {tool} (synthesis, place and route, bitstream; several minutes)", tool_log, verbose):
            import subprocess
            rc = subprocess.call(script, cwd=gateware)
            if rc != 0:
                raise RuntimeError(f"{' '.join(script)} exited with status {rc}")
        bitstream = builder.get_bitstream_filename(mode="sram")
        report["bitstream"] = bitstream
        if tool == "nextpnr-ecp5":
            report.update(parse_nextpnr_log(tool_log.read_text(errors="replace")))
            say(format_ecp5_report(report))
        elif tool == "vivado" and (gateware / TIMING_REPORT_SCRIPT).exists():
            with step("reporting timing (Vivado, routed checkpoint)", tool_log, verbose):
                import subprocess
                subprocess.call(["vivado", "-mode", "batch", "-source", TIMING_REPORT_SCRIPT], cwd=gateware)
            rpt = gateware / "nandlab_timing.rpt"
            if rpt.exists():
                report["timing"] = parse_vivado_timing(rpt.read_text(errors="replace"))
                say(f"Vivado timing: {report['timing']}")
    else:
        say(f"project generated in {gateware} (no compile requested)")
    (build_dir / "report.json").write_text(json.dumps(report, indent=2))
    return report


def _toolchain_command(soc, gateware):
    """The script LiteX generated for the vendor/open flow."""
    build_name = soc.get_build_name()
    sh = gateware / f"build_{build_name}.sh"
    if sh.exists():
        return ["bash", sh.name]
    tcl = gateware / f"{build_name}.tcl"
    if tcl.exists():
        return ["vivado", "-mode", "batch", "-source", tcl.name]
    raise NandLabError(f"no build script found in {gateware}")


def load_board(name, args, bitstream=None):
    board = get_board(name)
    build_dir = build_dir_of(name)
    report_path = build_dir / "report.json"
    if bitstream is None:
        if report_path.exists():
            bitstream = json.loads(report_path.read_text()).get("bitstream")
        if not bitstream:
            raise NandLabError(f"no bitstream for {name} in {build_dir}; run 'nandlab build --target {name}' "
                               "(with its compiler installed) or pass --bitstream FILE")
    if not Path(bitstream).exists():
        raise NandLabError(f"bitstream {bitstream} does not exist")
    prog, tool, hint = board.programmer(args)
    if shutil.which(tool) is None and env.which(tool) is None:
        raise MissingToolError(f"{tool} not found: {hint}")
    try:
        prog.load_bitstream(str(bitstream))
    except (OSError, RuntimeError):
        raise MissingToolError(f"{tool} could not program the {name} (its messages are above): "
                               "is the board attached, powered and its USB cable accessible?") from None
