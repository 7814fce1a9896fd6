"""nandlab build targets: the simulator and the boards, behind one build/load interface.

A board module gives NAME, DESCRIPTION, add_arguments(parser), make_soc(args), compiler(),
install_hint() and programmer(args). The simulator has its own flow (`nandlab sim`).
"""

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


def add_nand_arguments(parser, defaults):
    """Board options for the emulated dies; `defaults` are what fits the board's block RAM."""
    parser.add_argument("--nand-dies", type=int, default=defaults["dies"],
        help=f"Emulated NAND dies (default {defaults['dies']}).")
    parser.add_argument("--nand-blocks", type=int, default=defaults["blocks"],
        help=f"Blocks per emulated die (default {defaults['blocks']}).")
    parser.add_argument("--nand-pages", type=int, default=defaults["pages"],
        help=f"Pages per block of an emulated die (default {defaults['pages']}).")
    parser.add_argument("--nand-channels", type=int, default=defaults.get("channels", 1),
        help=f"NAND channels of --nand-dies dies each, a channel controller per channel (default {defaults.get('channels', 1)}).")
    parser.add_argument("--nand-ecc", default=defaults.get("ecc", "none"), choices=["none", "bch8"],
        help="BCH ECC in every channel controller: bch8 = t 8 per 512 B (about 7.8k LUT on xc7, 10.6k LUT4 "
             f"on ECP5 per controller: `nandlab report controller`; default {defaults.get('ecc', 'none')}).")
    parser.add_argument("--nand-storage", default="bram", choices=["bram", "dram"],
        help="Where the emulated dies keep their arrays: block RAM, or regions at the top of the "
             "board's DRAM main RAM (more blocks per die, fewer block RAMs; default bram).")


MAX_DIES_PER_CHANNEL = 16        # ways of a channel controller (one CE each)
MAX_CHANNELS         = 8


def check_arguments(args):
    """A board's options checked before anything is generated: NAND dies, channels and geometry the
    SoC takes, IP addresses, a positive clock. Raises NandLabError naming the option."""
    from nandlab.nand_model.parts import DEFAULT_PART, get_part
    if not 1 <= args.nand_dies <= MAX_DIES_PER_CHANNEL:
        raise NandLabError(f"--nand-dies {args.nand_dies} is out of range: a channel takes 1..{MAX_DIES_PER_CHANNEL} dies")
    if not 1 <= args.nand_channels <= MAX_CHANNELS:
        raise NandLabError(f"--nand-channels {args.nand_channels} is out of range: the SoC takes 1..{MAX_CHANNELS}")
    part = get_part(DEFAULT_PART)
    if not 1 <= args.nand_pages <= part.pages_per_block:
        raise NandLabError(f"--nand-pages {args.nand_pages}: {part.model} takes 1..{part.pages_per_block} pages per block")
    if not 1 <= args.nand_blocks <= part.blocks_per_lun:
        raise NandLabError(f"--nand-blocks {args.nand_blocks}: {part.model} takes {part.planes}..{part.blocks_per_lun} blocks")
    try:
        part.scaled(blocks_per_lun=args.nand_blocks, pages_per_block=args.nand_pages)
    except ValueError as e:
        raise NandLabError(f"--nand-blocks {args.nand_blocks}: {e}") from None
    clock = getattr(args, "sys_clk_freq", None)
    if clock is not None and not 1e6 <= clock <= 1e9:
        raise NandLabError(f"--sys-clk-freq {clock:g}: give the system clock in Hz (1e6..1e9, e.g. 100e6)")
    from nandlab import checks
    for option in ("eth_ip", "telemetry_ip"):
        if getattr(args, option, None) is not None:
            checks.ipv4(getattr(args, option), "--" + option.replace("_", "-"))


def nand_kwargs(args, **extra):
    return dict(nand_dies=args.nand_dies, nand_blocks=args.nand_blocks, nand_pages=args.nand_pages,
                nand_storage=args.nand_storage, nand_channels=args.nand_channels, nand_ecc=args.nand_ecc, **extra)


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
