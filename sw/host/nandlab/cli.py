"""The `nandlab` command line: simulate, build, load and talk to the nandlab SoC."""

import argparse
import math
import os
import shlex
import sys
import time
from pathlib import Path

from nandlab import checks, env
from nandlab.errors import NandLabError
from nandlab.gateware.power.common import POLICIES, EXPERIMENT_POLICIES, DEFAULT_TG, DEFAULT_ALPHA, TG_RANGE, \
    CHANNEL_INTERFACES, DEFAULT_CHANNEL_INTERFACE
from nandlab.nandimage import DEFAULT_PORT as DEFAULT_NAND_PORT

EPILOG = """\
Typical use:
  nandlab sim                          boot the simulated SoC, console on this terminal
  nandlab sim --non-interactive --run "version; csr read timebase_window"
  nandlab build --target arty --no-compile   generate the Vivado project
  nandlab build --target colorlight_i5       bitstream + utilisation + Fmax (open flow)
  nandlab csr read ctrl_scratch        read a CSR through litex_server (sim or board)
  nandlab bringup --target sim --skew-seed 3   bring-up steps and report (eyes) on the simulated SoC
"""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors that name the valid choices, and no usage dump."""
    def error(self, message):
        raise NandLabError(f"{message} (see '{self.prog} --help')")


# sim ----------------------------------------------------------------------------------------------

def cmd_sim(args):
    from nandlab.soc.targets import sim as simtarget
    from nandlab.simulator import (SimConsole, BridgeServer, prepare_run_dir, run_interactive, free_tcp_port,
                                   command_failed)
    from nandlab.steps import say

    if not args.non_interactive and not sys.stdin.isatty():
        # A script or a pipe: boot, run the commands it gives (--run, else its lines), exit.
        args.non_interactive = True
        if args.run is None:
            args.run = ";".join(sys.stdin.read().splitlines())
    _check_sim_args(args)                                  # Before the build, not after it.
    nand = _sim_nand(args, simtarget)
    if args.bridge_port and _listening(args.bridge_port):         # (the last check before the build)
        raise NandLabError(f"--bridge-port {args.bridge_port}: the TCP port is in use on this machine (another "
                           "'nandlab sim' or a litex_server?): stop that, or pass --bridge-port 0 for a free port")
    build_dir = env.BUILD_DIR / simtarget.build_dir_name(args.dies, args.channels, **nand)
    gateware = simtarget.build_all(build_dir, threads=args.threads, trace=args.trace, verbose=args.verbose,
                                   dies=args.dies, channels=args.channels, **nand)
    bridge_port = args.bridge_port or free_tcp_port()
    nand_port = args.nand_port or (None if args.non_interactive else _free_or_other(DEFAULT_NAND_PORT))
    run_dir = prepare_run_dir(gateware, build_dir / "run", bridge_port=bridge_port,
                              telemetry_port=None if args.non_interactive else args.telemetry_port,
                              nand_port=nand_port if nand["storage"] == "sim" else None, nand_image=args.nand_image)

    if args.workload is not None:
        from nandlab import capture
        lines, _, ok = capture.run(gateware, run_dir, bridge_port, us=args.workload, read_pct=args.reads,
                                   policy=args.policy, alpha=args.alpha, tg=args.tg, log=say)
        print("\n".join(lines))
        if not ok:
            raise NandLabError("the capture failed its checks: the recording against the on-chip counters, the FTL's reads (see above)")
        return 0

    if not args.non_interactive:
        # A person at the console gets litex_server beside it (scripts start their own).
        server = None
        if not args.no_server:
            import socket
            with socket.socket() as s:
                busy = s.connect_ex(("127.0.0.1", args.server_port)) == 0
            if busy:
                say(f"port {args.server_port} is in use: not starting litex_server (use --server-port)")
            else:
                server = BridgeServer(bridge_port, args.server_port, log_path=build_dir / "litex_server.log")
        say(f"telemetry on TCP {args.telemetry_port} ('nandlab monitor --tcp 127.0.0.1:{args.telemetry_port}' "
            f"in another terminal)")
        if nand["storage"] == "sim":
            say(f"NAND arrays: 'nandlab nand image save|load FILE" +
                (f" --port {nand_port}'" if nand_port != DEFAULT_NAND_PORT else "'") + " saves or loads them")
        say(f"console below; host bridge on TCP {bridge_port}" +
            (f", litex_server on {args.server_port} once the SoC runs" if server else "") +
            ". Ctrl-C ends the simulation.")
        if server is None:
            return run_interactive(gateware, run_dir)
        import threading
        from nandlab.simulator import note_served, forget_served
        def start_server():
            time.sleep(2)  # Let the simulator open its bridge socket.
            try:
                server.__enter__()
            except NandLabError as e:
                say(f"litex_server did not start: {e}")
        threading.Thread(target=start_server, daemon=True).start()
        note_served(args.server_port, build_dir / "csr.csv")   # 'nandlab csr' takes this build's map
        try:
            return run_interactive(gateware, run_dir)
        finally:
            server.__exit__(None, None, None)
            forget_served(args.server_port)

    commands = [c.strip() for c in (args.run or "").split(";") if c.strip()]
    echo = (lambda text: (sys.stdout.write(text), sys.stdout.flush())) if not args.quiet else None
    t0 = time.monotonic()
    with SimConsole(gateware, run_dir, echo=echo) as console:
        console.boot(timeout=args.timeout)
        say(f"firmware booted ({time.monotonic() - t0:.2f} s after the simulator started)")
        failed = False
        for c in commands:
            out = console.command(c, timeout=args.timeout)
            if args.quiet:
                sys.stdout.write(out)
            failed |= command_failed(out)
        if not args.quiet:
            print()
    return 1 if failed else 0


def _check_sim_args(args):
    """Every `nandlab sim` value that can be checked without the build."""
    from nandlab import tokens
    if not 1 <= args.dies <= 16:
        raise NandLabError(f"--dies {args.dies} is out of range: the channel takes 1..16 dies")
    if not 1 <= args.channels <= 8:
        raise NandLabError(f"--channels {args.channels} is out of range: the SoC takes 1..8 channels")
    from nandlab.soc.targets import check_power_topology
    check_power_topology(args.power_topology, args.channels, option="--channels")
    if args.nand_deviation is not None:
        from nandlab import deviation
        deviation.parse(args.nand_deviation, args.dies * args.channels, option="--nand-deviation")
    tokens.check_parameters(args.tg, args.alpha)
    if args.workload is not None and args.workload < 1:
        raise NandLabError(f"--workload {args.workload}: give the microseconds of SoC time to run, 1 or more")
    if not 0 <= args.reads <= 100:
        raise NandLabError(f"--reads {args.reads}: a percentage, 0..100")
    checks.positive(args, "timeout")
    checks.in_range(args, "threads", 1, 64, "Verilator threads")
    checks.port(args.bridge_port, "--bridge-port", allow_zero=True)
    checks.port(args.telemetry_port, "--telemetry-port", allow_zero=True)
    checks.port(args.server_port, "--server-port")


def _listening(port):
    """Whether something (another simulator) listens on TCP `port` of this machine."""
    import socket
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _free_or_other(port):
    """`port` if nothing listens on it (another simulator), else a free one."""
    from nandlab.simulator import free_tcp_port
    return free_tcp_port() if _listening(port) else port


def _sim_nand(args, simtarget):
    """The sim SoC's NAND options from --nand-*, and the --nand-image file, checked before any build."""
    from nandlab import nandimage
    from nandlab.nand_model.parts import get_part
    try:
        nand = simtarget.nand_options(part=args.nand_part, blocks=args.nand_blocks, pages=args.nand_pages,
                                      storage=args.nand_storage, sdw=args.nand_sdw,
                                      time_scale=args.nand_time_scale, power_topology=args.power_topology,
                                      deviation=args.nand_deviation,
                                      pin_model=dict(family=args.nand_pin_model, seed=args.skew_seed, lanes=args.skew))
    except ValueError as e:
        raise NandLabError(str(e)) from None
    if args.nand_port is not None and not 1 <= args.nand_port <= 65535:
        raise NandLabError(f"--nand-port {args.nand_port} is not a TCP port")
    if args.nand_image:
        if nand["storage"] != "sim":
            raise NandLabError("--nand-image needs --nand-storage sim (block RAM arrays start erased)")
        part = get_part(nand["part"])
        nandimage.check_geometry(args.nand_image, nandimage.Geometry(args.dies * args.channels, nand["blocks"],
                                 nand["pages"], part.page_size, part.spare_size))
    return nand


# build / load -------------------------------------------------------------------------------------

def _target_parser(name, board):
    p = _Parser(prog=f"nandlab build --target {name}", add_help=False)
    board.add_arguments(p)
    return p


def cmd_build(args, rest, parser):
    from nandlab.soc import targets
    if args.help:
        parser._subparsers._group_actions[0].choices["build"].print_help()
        if args.target in targets.BOARDS:
            print(f"\noptions of --target {args.target}:")
            _target_parser(args.target, targets.get_board(args.target)).print_help()
        return 0
    targs = _check_build(args, rest)
    if args.target == "sim":
        from nandlab.soc.targets import sim as simtarget
        simtarget.build_all(env.BUILD_DIR / "sim", verbose=args.verbose)
        return 0
    targets.build_board(args.target, targs, compile=not args.no_compile, verbose=args.verbose)
    if args.load:
        targets.load_board(args.target, targs)
    return 0


def _check_build(args, rest):
    """`build`'s target and the board's own options (None for the sim target)."""
    from nandlab.soc import targets
    if args.target is None:
        raise NandLabError("build needs --target NAME; valid targets: " + ", ".join(targets.TARGETS))
    targets.check_target(args.target)
    if args.target == "sim":
        if rest:
            raise NandLabError(f"unrecognized arguments for the sim target: {' '.join(rest)}")
        return None
    targs = _target_parser(args.target, targets.get_board(args.target)).parse_args(rest)
    targets.check_arguments(targs)
    return targs


def _check_load(args, rest):
    from nandlab.soc import targets
    targets.check_target(args.target, list(targets.BOARDS))
    return _target_parser(args.target, targets.get_board(args.target)).parse_args(rest)


def cmd_load(args, rest):
    from nandlab.soc import targets
    targs = _check_load(args, rest)
    if args.firmware:
        return _load_firmware(args)
    targets.load_board(args.target, targs, bitstream=args.bitstream)
    return 0


def _load_firmware(args):
    import subprocess
    from pathlib import Path
    from nandlab.errors import MissingToolError
    fw = env.BUILD_DIR / args.target / "software" / "firmware" / "firmware.bin"
    if not fw.exists():
        raise NandLabError(f"no firmware at {fw}; run 'nandlab build --target {args.target}' first")
    if not args.serial:
        raise NandLabError("--firmware needs --serial PORT (the board's console UART, e.g. /dev/ttyUSB1)")
    if not Path(args.serial).exists():
        raise MissingToolError(f"serial port {args.serial} not found: is the board attached?")
    term = Path(sys.executable).parent / "litex_term"
    return subprocess.call([str(term), "--kernel", str(fw), args.serial])


# host bridge --------------------------------------------------------------------------------------

def _csr_csv(args):
    """The csr.csv `csr` uses: --csr-csv, --build-dir, the one of the simulator that started the
    litex_server on --port (`nandlab sim` notes it), the target's default build, or the only
    simulator build there is (`make sim` builds in build/sim8)."""
    from nandlab.soc import targets
    from nandlab import simulator
    targets.check_target(args.target)
    if args.csr_csv or args.build_dir:
        path = Path(args.csr_csv) if args.csr_csv else Path(args.build_dir) / "csr.csv"
        if not path.is_file():
            raise NandLabError(f"{path} not found" + ("" if args.csr_csv else "; is it a build directory (build/sim8, "
                               "build/arty)?"))
        return path
    if args.target == "sim" and args.host in ("localhost", "127.0.0.1"):
        noted = simulator.served_csr_csv(args.port)
        if noted is not None:
            return noted
    path = env.BUILD_DIR / args.target / "csr.csv"
    if path.exists():
        return path
    builds = sorted(p.parent for p in env.BUILD_DIR.glob(f"{args.target}*/csr.csv")) if args.target == "sim" else []
    if len(builds) == 1:
        return builds[0] / "csr.csv"
    if builds:
        raise NandLabError(f"{path} not found, and there are several simulator builds ("
                           f"{', '.join(b.name for b in builds)}): choose one with --build-dir DIR or --csr-csv FILE")
    raise NandLabError(f"{path} not found; build the {args.target} target first (or give --build-dir DIR "
                       "or --csr-csv FILE)")


def _check_csr(args):
    checks.port(args.port, "--port")
    if args.action == "list" and (args.name or args.value):
        raise NandLabError("csr list takes no name or value")
    if args.action != "list" and not args.name:
        raise NandLabError(f"csr {args.action} needs a CSR name (see 'nandlab csr list')")
    if args.action == "read" and args.value is not None:
        raise NandLabError(f"csr read takes a name only, not also '{args.value}' (to write: csr write NAME VALUE)")
    if args.action == "write" and args.value is None:
        raise NandLabError(f"csr write {args.name} needs a value")
    if args.value is not None:
        _int(args.value)


def cmd_csr(args):
    from nandlab.csrmap import CSRMap
    _check_csr(args)
    csv = _csr_csv(args)
    csrs = CSRMap.from_csv(csv)
    if args.action == "list":
        for r in csrs:
            print(f"0x{r.address:08x}  {r.name:<36} {r.words * 32:>3} bit  {'rw' if r.writable else 'ro'}")
        return 0
    reg = csrs[args.name]
    value = None
    if args.action == "write":
        if not reg.writable:
            raise NandLabError(f"CSR '{reg.name}' is read-only")
        value = _int(args.value)
        if not 0 <= value < 1 << (32 * reg.words):
            raise NandLabError(f"{args.value} does not fit CSR '{reg.name}' ({reg.words * 32} bits, "
                               f"0..0x{(1 << (32 * reg.words)) - 1:x})")
    return _csr_access(args, csv, reg, value)


def _csr_access(args, csv, reg, value):
    """Read `reg`, or write `value` to it, through the litex_server on --host:--port."""
    from litex import RemoteClient
    bus = RemoteClient(host=args.host, port=args.port, csr_csv=str(csv))
    try:
        bus.open()
    except OSError:
        raise NandLabError(f"no litex_server at {args.host}:{args.port}; start 'nandlab sim' or "
                           f"'nandlab server --target {args.target}'") from None
    try:
        r = getattr(bus.regs, reg.name)
        if value is None:
            print(f"{reg.name} = 0x{r.read():x}")
        else:
            r.write(value)
    except OSError as e:
        raise NandLabError(f"litex_server at {args.host}:{args.port} stopped answering: {e}") from None
    finally:
        bus.close()
    return 0


def _int(text):
    try:
        return int(text, 0)
    except ValueError:
        raise NandLabError(f"'{text}' is not a number") from None


def _check_server(args):
    if args.target != "sim":
        from nandlab.soc import targets
        targets.check_target(args.target, list(targets.BOARDS))
        checks.ipv4(args.ip, "--ip")
    checks.port(args.bridge_port, "--bridge-port")
    checks.port(args.port, "--port")


def cmd_server(args):
    from nandlab import server
    _check_server(args)
    cmd, bridge = server.litex_server_command(args.target, args.bridge_port, args.ip, args.udp, args.port)
    print("[nandlab] " + shlex.join(cmd), file=sys.stderr)
    return server.run(cmd, bridge, args.target, args.bridge_port)


# nand (parameter pages and parts) -----------------------------------------------------------------

def _check_nand(args):
    from nandlab.nand_model import parts
    if args.action == "image":
        if args.file not in ("save", "load") or not args.path:
            raise NandLabError("usage: nandlab nand image save|load FILE [--port N]")
        if not 1 <= args.port <= 65535:
            raise NandLabError(f"--port {args.port} is not a TCP port")
        return
    if args.path:
        raise NandLabError(f"nand {args.action} takes one file, not also '{args.path}'")
    if not 0 < args.sys_clk_mhz < float("inf"):
        raise NandLabError(f"--sys-clk-mhz {args.sys_clk_mhz}: give the clock in MHz, a positive number")
    if args.scale_blocks is not None and args.scale_blocks < 1:
        raise NandLabError(f"--scale-blocks {args.scale_blocks}: give a number of blocks, 1 or more")
    if args.action == "page":
        if not args.output:
            raise NandLabError("nand page needs -o FILE")
        if not 1 <= args.copies <= MAX_PARAM_COPIES:
            raise NandLabError(f"--copies {args.copies}: a parameter page is written 1..{MAX_PARAM_COPIES} times "
                               "(ONFI devices keep 3 or more)")
    if args.action == "page" or (args.action == "info" and not args.file):
        _part(args, parts)


def cmd_nand(args):
    from nandlab.nand_model import param_page as pp
    from nandlab.nand_model import parts
    _check_nand(args)
    if args.action == "image":
        return _nand_image(args)
    if args.action == "parts":
        for name, cls in parts.PARTS.items():
            part = cls()
            mark = " (default)" if name == parts.DEFAULT_PART else ""
            print(f"{name:<16} {part.page_size}+{part.spare_size} B x {part.pages_per_block} pages x "
                  f"{part.blocks_per_lun} blocks, {part.bits_per_cell} b/cell{mark}: {part.source}")
        return 0
    if args.action == "page":
        return _nand_page(args, _part(args, parts))
    # info
    if args.file:
        from nandlab import dumps
        data = dumps.read_bytes(args.file, binary_magic=pp.SIGNATURE)
        try:
            page = pp.parse(data, strict=args.strict)
        except pp.ParamPageError as e:
            raise NandLabError(f"{args.file}: {e}") from None
        print(f"ONFI {page.revision_name} parameter page, copy "
              f"{page.copy if page.copy >= 0 else 'majority of 0-2'} used")
        print(f"features        {', '.join(page.feature_names) or 'none'}")
        print(f"optional cmds   {', '.join(page.optional_command_names) or 'none'}")
        part = parts.NandPart.from_param_page(page, source=str(args.file))
        for w in page.warnings:
            print(f"warning: {w}", file=sys.stderr)
    else:
        part = _part(args, parts)
    if args.scale_blocks is not None:
        try:
            part = part.scaled(blocks_per_lun=args.scale_blocks)
        except ValueError as e:
            raise NandLabError(str(e)) from None
        print(f"scaled to {args.scale_blocks} blocks per LUN (addresses as the full part)")
    print("\n".join(part.describe(sys_clk_freq=args.sys_clk_mhz * 1e6)))
    return 0


def _nand_page(args, part):
    """`nand page -o FILE`: the part's parameter page, binary or (--hex) an xxd-style dump."""
    data = part.param_page(copies=args.copies)
    text = "".join(f"{i:08x}: " + " ".join(f"{b:02x}" for b in data[i:i + 16]) + "\n" for i in range(0, len(data), 16))
    _write_output(args.output, text if args.hex else data)
    print(f"wrote {args.copies} copies of the {part.model} parameter page to {args.output}")
    return 0


MAX_PARAM_COPIES = 255


def _write_output(path, data):
    """Write an output file (text or bytes); a missing directory or a denied write is the user's error."""
    try:
        if isinstance(data, str):
            Path(path).write_text(data)
        else:
            Path(path).write_bytes(data)
    except OSError as e:
        raise NandLabError(f"cannot write {path}: {e.strerror or e}") from None


def _nand_image(args):
    """`nand image save|load FILE`: the running simulator's NAND arrays to or from an image file."""
    from nandlab.nandimage import NandStore
    store = NandStore(args.port)
    print((store.save if args.file == "save" else store.load)(args.path))
    return 0


def _part(args, parts):
    name = args.part or parts.DEFAULT_PART
    try:
        return parts.get_part(name)
    except KeyError as e:
        raise NandLabError(e.args[0]) from None


# report -------------------------------------------------------------------------------------------

def _telemetry_links():
    """What each board link carries (computed): payload rate, frames/s, the shortest frame period it
    sustains and the default decimation of 40 ns windows (a quarter to spare)."""
    from nandlab.gateware.telemetry.frame import frame_length, default_decimation
    from nandlab.soc.targets.arty import udp_payload_rate, TELEMETRY_FRAMES_PER_PACKET
    links = [("UDP 100 Mbit (Arty)", lambda fb: udp_payload_rate(TELEMETRY_FRAMES_PER_PACKET * fb)),
             ("UART 3 Mbaud (8N1)", lambda fb: 3e6 / 10)]
    print(f"\nTelemetry links (computed; UDP: {TELEMETRY_FRAMES_PER_PACKET} frames a packet, Ethernet/IP/UDP overhead "
          f"included), 100 MHz clock, 40 ns windows")
    print(f"{'link':<22} {'dies':>4} {'frame B':>7} {'payload MB/s':>12} {'frames/s':>9} {'min period':>10} "
          f"{'default decimation':>18}")
    for name, rate in links:
        for dies in (2, 8):
            fb = frame_length(dies)
            bps = rate(fb)
            dec = default_decimation(dies, 4, bps / 100e6)
            print(f"{name:<22} {dies:>4} {fb:>7} {bps / 1e6:>12.2f} {bps / fb:>9.0f} {1e6 * fb / bps:>8.2f} us "
                  f"{dec:>8} ({dec * 0.04:g} us)")


def _check_report(args):
    if args.what == "die":
        _check_die_geometry(args.blocks, args.pages)


def cmd_report(args):
    from nandlab import resources
    from nandlab.steps import say
    _check_report(args)
    if args.what == "fit":
        return _report_fit(resources, say)
    if args.what == "ring":
        res = resources.ring_node_resources(log=say)
        print("Power ring (yosys synthesis): one node with its run-time token table (256 x 8 bit), and a "
              "one-node ring with its controller")
        print(f"{'what':<10} {'family':<6} {'LUT':>6} {'FF':>6} {'LUTRAM':>7}")
        for (name, fam), r in res.items():
            print(f"{name:<10} {fam:<6} {r['lut']:>6} {r['ff']:>6} {r['lutram']:>7}")
        return 0
    families = ["xc7", "ecp5"] if args.family == "all" else [args.family]
    if args.what == "controller":
        res = resources.controller_resources(families=families, log=say)
        print("Channel controller (yosys synthesis): sequencer, microcode ROM, queues, beats, DMA (32-bit Wishbone);")
        print("'+ecc': with the SoC's BCH ECC (t=8 per 512 B: encoder, decoder, parity and correction buffers)")
        print(f"{'ways':<8} {'family':<6} {'LUT':>6} {'FF':>6} {'LUTRAM':>7} {'BRAM':>5}")
        for (n, fam), r in res.items():
            print(f"{n:<8} {fam:<6} {r['lut']:>6} {r['ff']:>6} {r['lutram']:>7} {r['bram']:>5g}")
        _report_phy(resources, families, say)
        return 0
    if args.what == "ecc":
        from nandlab.ecc_report import ecc_resources, format_ecc_resources
        print("\n".join(["BCH encoder + decoder (yosys synthesis)"] + format_ecc_resources(
            ecc_resources(families=families, log=say))))
        return 0
    if args.what == "telemetry":
        res = resources.telemetry_resources(families=families, log=say)
        print("Telemetry block (yosys synthesis): per-period sums and maxima, frame register, serializer, CRC "
              "(the ring's key/HT/UT inputs are not connected here)")
        print(f"{'dies':<6} {'family':<6} {'LUT':>6} {'FF':>6} {'LUTRAM':>7} {'BRAM':>5}")
        for (n, fam), r in res.items():
            print(f"{n:<6} {fam:<6} {r['lut']:>6} {r['ff']:>6} {r['lutram']:>7} {r['bram']:>5g}")
        _telemetry_links()
        return 0
    storage = {"bram": "bram", "dram": "wishbone"}[args.storage]
    config, res = resources.die_resources(families, blocks=args.blocks, pages=args.pages, storage=storage, log=say,
                                          stats=args.die_stats, cache=not args.no_cache, seg_rom=args.seg_rom)
    part = config.part
    print(f"One emulated die: {part.model}, {part.blocks_per_lun} blocks x {part.pages_per_block} pages "
          f"of {config.page_bytes} B, {part.planes} planes, {args.storage} storage, statistics in "
          f"{args.die_stats}, current tables in {args.seg_rom}{', no cache pairs' if args.no_cache else ''} "
          f"(yosys synthesis, no place and route)")
    print(f"{'family':<8} {'LUT':>7} {'FF':>7} {'LUTRAM':>7} {'BRAM':>7}  unit")
    for fam, r in res.items():
        print(f"{fam:<8} {r['lut']:>7} {r['ff']:>7} {r['lutram']:>7} {r['bram']:>7g}  {r['bram_unit']}")
    return 0


def _check_die_geometry(blocks, pages):
    """--blocks/--pages of `report die`: within the default part's, a multiple of its planes."""
    from nandlab.nand_model.parts import get_part, DEFAULT_PART
    part = get_part(DEFAULT_PART)
    if not 1 <= pages <= part.pages_per_block:
        raise NandLabError(f"--pages {pages}: {part.model} takes 1..{part.pages_per_block} pages per block")
    if not 1 <= blocks <= part.blocks_per_lun:
        raise NandLabError(f"--blocks {blocks}: {part.model} takes {part.planes}..{part.blocks_per_lun} blocks")
    try:
        part.scaled(blocks_per_lun=blocks, pages_per_block=pages)
    except ValueError as e:
        raise NandLabError(f"--blocks {blocks}: {e}") from None


def _report_phy(resources, families, say):
    """The socket's pin PHY beside the controller table: one channel = controller + PHY (+ ECC)."""
    res = resources.phy_resources(families=families, log=say)
    print("\nPin PHY (yosys synthesis on the board's NAND socket pins): DDR I/O, input delay lines, tap "
          "shadows, snapshot, R/B# synchronisers, CSR bank;")
    print("I/O cells are not in LUT/FF; the output and R/B# pins' pad buffers (added at the top level) "
          "are not counted")
    print(f"{'family':<6} {'board':<14} {'LUT':>6} {'FF':>6} {'LUTRAM':>7} {'BRAM':>5}  I/O cells")
    for fam, r in res.items():
        io = ", ".join(f"{c} {n}" for c, n in r["io"].items())
        print(f"{fam:<6} {resources.PHY_BOARDS[fam]:<14} {r['lut']:>6} {r['ff']:>6} {r['lutram']:>7} "
              f"{r['bram']:>5g}  {io}")


def _report_fit(resources, say):
    rows = resources.board_fit(log=say)
    print(f"Emulated dies per board (yosys synthesis of each board's SoC without dies and with its default "
          f"count; LUT/FF up to {resources.UTILISATION:.0%} of the device, block RAM up to 100 %)")
    print(f"{'device':<14} {'storage':<7} {'die':>5} {'SoC LUT':>8} {'SoC BRAM':>9} {'die LUT':>8} {'die FF':>7} "
          f"{'die BRAM':>9} {'fit':>4}  bound by")
    for r in rows:
        b, d = r["base"], r["die"]
        print(f"{r['device']:<14} {r['storage']:<7} {r['geometry']:>5} {b['lut']:>8} {b['bram']:>9g} {d['lut']:>8.0f} "
              f"{d['ff']:>7.0f} {d['bram']:>9g} {r['fit']:>4}  {r['bound']} ({r['bram_unit']} for BRAM)")
    return 0


# experiment ---------------------------------------------------------------------------------------

def _int_list(text, what, valid=None):
    try:
        vals = [int(v) for v in text.split(",") if v != ""]
    except ValueError:
        raise NandLabError(f"{what}: '{text}' is not a comma-separated list of integers") from None
    if not vals:
        raise NandLabError(f"{what}: '{text}' lists nothing; give one or more values separated by commas")
    if valid is not None:
        bad = [v for v in vals if v not in valid]
        if bad:
            raise NandLabError(f"{what}: {bad[0]} is not one of {', '.join(map(str, valid))}")
    return vals


def _check_ring_faults(args):
    """`experiment ring-faults`'s values; returns the ring policies to run."""
    from nandlab import ringfaults, tokens
    if args.alpha is None:
        args.alpha = ringfaults.ALPHA
    tokens.check_parameters(4, args.alpha)
    if args.alpha >= ringfaults.NODES:
        raise NandLabError(f"--alpha {args.alpha}: ring-faults needs alpha < {ringfaults.NODES} (TT below the "
                           f"{ringfaults.NODES} dies' summed peak), or the budget never binds")
    given = [p for p in args.policies.split(",") if p] if args.policies is not None else list(ringfaults.POLICIES)
    ringfaults.validate(args.faults, args.seed, given)
    return given


def _check_experiment(args):
    """`experiment power`'s values; returns (ratios, policies) with NPM first (the baseline)."""
    from nandlab import experiment, tokens
    from nandlab.nand_model.parts import PARTS
    if args.what == "ring-faults":
        return None, _check_ring_faults(args)
    if args.alpha is None:
        args.alpha = DEFAULT_ALPHA
    if args.policies is None:
        from nandlab.power_grid import GRID_POLICIES
        args.policies = ",".join(GRID_POLICIES if args.sweep == "grid" else EXPERIMENT_POLICIES)
    if args.part.lower() not in {p.lower() for p in PARTS}:
        raise NandLabError(f"unknown part '{args.part}'; known parts: {', '.join(PARTS)}")
    tokens.check_parameters(args.tg, args.alpha)
    if not 1 <= args.dies <= 16:
        raise NandLabError(f"--dies {args.dies} is out of range: the harness takes 1..16 dies")
    if args.ops < 1:
        raise NandLabError(f"--ops {args.ops}: a trace needs at least one operation")
    if args.time_scale < 1:
        raise NandLabError(f"--time-scale {args.time_scale}: must be 1 or more")
    cycles_per_window = args.clock_mhz * 0.04 if math.isfinite(args.clock_mhz) else 0.5
    if not (25 <= args.clock_mhz <= 1000 and abs(cycles_per_window - round(cycles_per_window)) < 1e-9):
        raise NandLabError(f"--clock-mhz {args.clock_mhz:g}: 25..1000 MHz, a whole number of cycles per 40 ns "
                           f"window (e.g. 100 or 200)")
    ratios = _int_list(args.ratios, "--ratios", experiment.READ_RATIOS)
    policies = [p for p in args.policies.split(",") if p]
    if not policies:
        raise NandLabError(f"--policies: '{args.policies}' lists nothing; give one or more of "
                           f"{', '.join(EXPERIMENT_POLICIES)}")
    from nandlab.gateware.power.common import ALL_EXPERIMENT_POLICIES
    for p in policies:
        if p not in ALL_EXPERIMENT_POLICIES:
            raise NandLabError(f"--policies: '{p}' is not one of {', '.join(ALL_EXPERIMENT_POLICIES)}")
    _check_dcc_fw(args, policies, ratios)
    if "npm" not in policies:
        policies.insert(0, "npm")        # The baseline everything is normalised to.
    if args.jobs < 1:
        raise NandLabError(f"--jobs {args.jobs}: must be 1 or more")
    alphas = [args.alpha] if args.sweep != "alpha" else list(range(4, 9))
    if args.sweep == "grid":
        from nandlab import power_grid
        rings = args.channels if args.topology == "per_channel" else 1
        alphas = sorted({a for _, a in power_grid.points(rings)})
        if not alphas:
            raise NandLabError(f"--sweep grid: no alpha in 1..8 splits into {rings} per-channel rings")
    experiment.check_layout(args.dies, args.channels, args.topology, alphas, args.skew)
    _check_waveform_sweep(args)
    from nandlab import cluster
    args.scheduler = cluster.scheduler_address(args.scheduler)
    if args.csv:
        checks.output_file(args.csv, "--csv")
    return ratios, policies


def _check_dcc_fw(args, policies, ratios):
    """--dcc-fw-cycles: CPU cycles per DCC decision for policies dcc_fw and dcc_fw_flat (default: the mean
    the firmware measured for the model each uses: --dcc-model's, the flat one's)."""
    from nandlab import dcc_fw
    from nandlab.gateware.power.common import DCC_FW, DCC_FW_FLAT
    wanted = [p for p in (DCC_FW, DCC_FW_FLAT) if p in policies]
    if args.dcc_fw_cycles is not None and not wanted:
        raise NandLabError("--dcc-fw-cycles: only with policy dcc_fw or dcc_fw_flat in --policies")
    args.dcc_fw_harness = args.dcc_fw_flat_harness = 0
    args.dcc_fw_flat_cycles = None
    if not wanted:
        return
    if args.dcc_fw_cycles is not None:
        if args.dcc_fw_cycles < 1:
            raise NandLabError(f"--dcc-fw-cycles {args.dcc_fw_cycles}: must be 1 or more")
        args.dcc_fw_flat_cycles = args.dcc_fw_cycles
        args.dcc_fw_harness = args.dcc_fw_flat_harness = \
            dcc_fw.harness_cycles(args.dcc_fw_cycles, args.clock_mhz * 1e6, args.time_scale)
        return
    # The measured mean at each read ratio for the model in use (nandlab.dcc_fw.DECISION_CPU_CYCLES).
    measured = {}
    for p in wanted:
        model = args.dcc_model if p == DCC_FW else "atomic"
        table = dcc_fw.DECISION_CPU_CYCLES.get(model, {})
        missing = [r for r in ratios if r not in table]
        if missing:
            raise NandLabError(f"policy {p}: no measured decision cost of the {model} model at R{missing[0]} "
                               "(nandlab.dcc_fw); give --dcc-fw-cycles N")
        cpu = {r: table[r] for r in ratios}
        measured[p] = (cpu, {r: dcc_fw.harness_cycles(c, args.clock_mhz * 1e6, args.time_scale) for r, c in cpu.items()})
    args.dcc_fw_cycles, args.dcc_fw_harness = measured.get(DCC_FW, (None, 0))
    args.dcc_fw_flat_cycles, args.dcc_fw_flat_harness = measured.get(DCC_FW_FLAT, (None, 0))


def _check_waveform_sweep(args):
    """--sweep precharge|level2|transfer|rate: its factors (args.factors), its figure's path."""
    from nandlab import sensitivity
    args.factors = None
    if args.sweep == "grid":
        if args.scales is not None:
            raise NandLabError(f"--scales: only with --sweep {'|'.join(sensitivity.SWEEPS)}")
        args.figure = _figure_path(args.figure, "grid")
        return
    if args.sweep not in sensitivity.SWEEPS:
        if args.scales is not None:
            raise NandLabError(f"--scales: only with --sweep {'|'.join(sensitivity.SWEEPS)}")
        if args.figure is not None:
            raise NandLabError(f"--figure: only with --sweep {'|'.join(sensitivity.SWEEPS)}")
        return
    if args.no_channel and args.sweep in ("transfer", "rate"):
        raise NandLabError(f"--sweep {args.sweep} scales the channel's transfers; --no-channel has none")
    args.factors = sensitivity.parse_scales(args.scales, args.sweep)
    args.figure = _figure_path(args.figure, args.sweep)


def _figure_path(figure, sweep):
    """A sweep's figure: `figure` checked (a writable .png), or build/experiment/sweep_<sweep>.png."""
    if figure is None:
        (env.BUILD_DIR / "experiment").mkdir(parents=True, exist_ok=True)
        return str(env.BUILD_DIR / "experiment" / f"sweep_{sweep}.png")
    checks.output_file(figure, "--figure")
    if not figure.lower().endswith(".png"):
        raise NandLabError(f"--figure {figure}: the figure is a PNG; give a name ending in .png")
    return figure


def cmd_ring_faults(args, policies):
    """`experiment ring-faults`: the fault bench (Verilator), one summary; exit 1 when a check failed."""
    import json
    from nandlab import ringfaults
    from nandlab.steps import step
    log = env.BUILD_DIR / "ring_faults" / "ring_faults.log"
    with step(f"Ring fault injection: {args.faults} faults, seed {args.seed} (Verilator build and run)", log):
        s = ringfaults.run(args.faults, args.seed, env.BUILD_DIR / "ring_faults", policies=policies, alpha=args.alpha)
    bad = ringfaults.check(s)
    s["violations"] = bad
    if args.json:
        print(json.dumps(s))
    else:
        print(ringfaults.format_summary(s))
    return 1 if bad else 0


def cmd_experiment(args):
    import json
    from nandlab import experiment, tokens
    from nandlab.steps import say
    ratios, policies = _check_experiment(args)
    if args.what == "ring-faults":
        return cmd_ring_faults(args, policies)
    common = dict(part_name=args.part, dies=args.dies, n_ops=args.ops, ratios=ratios, time_scale=args.time_scale,
                  seed=args.seed, log=say, dcc_granularity=args.dcc_model, check_dcc=args.check_dcc, jobs=args.jobs,
                  channels=args.channels, topology=args.topology, skip=not args.no_skip, scheduler=args.scheduler,
                  sys_clk_freq=args.clock_mhz * 1e6, channel=not args.no_channel, interface=args.interface,
                  din_tokens=not args.din_free, dcc_fw_cycles=args.dcc_fw_harness,
                  dcc_fw_flat_cycles=args.dcc_fw_flat_harness, skew=args.skew)
    params = dict(part=args.part, dies=args.dies, ops=args.ops, ratios=ratios, policies=policies,
                  clock_mhz=args.clock_mhz,
                  time_scale=args.time_scale, seed=args.seed, dcc_model=args.dcc_model, channels=args.channels,
                  topology=args.topology, skip=not args.no_skip, channel=not args.no_channel,
                  interface=args.interface, din_tokens=not args.din_free, skew=args.skew)
    if args.dcc_fw_harness:
        params.update(dcc_fw_cpu_cycles=args.dcc_fw_cycles, dcc_fw_harness_cycles=args.dcc_fw_harness)
    if args.dcc_fw_flat_harness:
        params.update(dcc_fw_flat_cpu_cycles=args.dcc_fw_flat_cycles, dcc_fw_flat_harness_cycles=args.dcc_fw_flat_harness)
    if args.deviation is not None:      # Issue 18 b: static vs adaptive tables (nandlab.deviation).
        from nandlab import deviation
        return deviation.cmd(args, policies, common, params)
    if args.sweep is None:
        from nandlab import power_paper
        res, table = experiment.run(policies=policies, tg=args.tg, alpha=args.alpha, **common)
        if args.csv:
            experiment.write_csv(args.csv, [((args.tg, args.alpha), res)])
        rows, diffs = power_paper.compare(res, table), power_paper.setup_differences(params, table)
        if args.json:
            print(json.dumps({**experiment.results_json(res, table, params),
                              "paper": power_paper.compare_json(rows, diffs)}, sort_keys=True))
        else:
            print(experiment.format_results(res, table, sys_clk_freq=args.clock_mhz * 1e6))
            print("\n" + power_paper.format_compare(rows, diffs))
        return 0
    if args.factors is not None:
        return _cmd_waveform_sweep(args, policies, common, params)
    if args.sweep == "grid":
        return _cmd_grid(args, policies, common, params)
    # Sweeps: throughput (normalised to NPM at the same point) against TG (Fig. 12) or alpha (Fig. 15).
    values = range(tokens.TG_RANGE[0], tokens.TG_RANGE[1] + 1) if args.sweep == "tg" else range(4, 9)
    points = [(v, args.alpha) if args.sweep == "tg" else (args.tg, v) for v in values]
    out = experiment.run_points(points, policies=policies, **common)
    rows = [(v, out[pt][0]) for v, pt in zip(values, points)]
    if args.csv:
        experiment.write_csv(args.csv, [(pt, out[pt][0]) for pt in points])
    if args.json:
        print(json.dumps({"sweep": args.sweep, "params": params, "points": [
            {args.sweep: v, **experiment.results_json(*out[pt], params)} for v, pt in zip(values, points)]},
            sort_keys=True))
    else:
        print(experiment.format_sweep(args.sweep, rows, policies))
    return 0


def _cmd_grid(args, policies, common, params):
    """--sweep grid: every (TG, alpha) for the token policies, every alpha for DCC; a table (or --json) and a
    PNG figure (nandlab.power_grid)."""
    from nandlab import power_grid
    rings = args.channels if args.topology == "per_channel" else 1
    result = power_grid.run([p for p in policies if p != "npm"], args.tg, rings=rings, **common)
    if args.csv:
        print("--csv is not written by --sweep grid; the --json output carries every cell", file=sys.stderr)
    params = {k: v for k, v in params.items() if k not in ("tg", "alpha")}
    fig = power_grid.figure(result, params, args.figure)
    if args.json:
        print(power_grid.dumps(result, params, fig))
    else:
        print(power_grid.format_grid(result, params))
        print(f"figure: {fig}")
    return 0


def _cmd_waveform_sweep(args, policies, common, params):
    """--sweep precharge|level2|transfer|rate: a harness per factor, a table (or --json) and a PNG figure."""
    from pathlib import Path
    import json
    from nandlab import experiment, sensitivity
    params = dict(params, tg=args.tg, alpha=args.alpha, factors=args.factors)
    points = sensitivity.run(args.sweep, args.factors, args.tg, args.alpha, policies=policies, **common)
    if args.csv:
        experiment.write_csv(args.csv, [((args.tg, args.alpha), res) for _, res, _ in points])
    Path(args.figure).parent.mkdir(parents=True, exist_ok=True)
    fig = sensitivity.figure(args.sweep, points, params, args.figure)
    if args.json:
        obj = sensitivity.sweep_json(args.sweep, points, params)
        obj["figure"] = str(fig)
        print(json.dumps(obj, sort_keys=True))
    else:
        print(sensitivity.format_sweep(args.sweep, points, params))
        print(f"\nfigure: {fig}")
    return 0


# monitor ------------------------------------------------------------------------------------------

def _check_monitor(args):
    """`monitor`'s values; returns (host, port) of --tcp (None without it)."""
    if sum(x is not None for x in (args.tcp, args.udp, args.serial)) != 1:
        raise NandLabError("give one of --tcp HOST:PORT (the simulator), --udp PORT (a board's Ethernet) or "
                           "--serial DEVICE (a board's telemetry UART)")
    tcp = checks.host_port(args.tcp, "--tcp") if args.tcp is not None else None
    if args.udp is not None:
        checks.port(args.udp, "--udp")
    if args.web is not None:
        checks.port(args.web, "--web", allow_zero=True)
    checks.positive(args, "seconds", "connect_timeout", "clock", "baud")
    return tcp


def cmd_monitor(args):
    """Receive a running SoC's telemetry, show it as a status line, record it; Ctrl-C (or --seconds) ends."""
    from nandlab import telemetry, plots
    from nandlab.capture import LiveStatus
    from nandlab.steps import say
    tcp = _check_monitor(args)
    prefix = Path(args.record) if args.record else env.BUILD_DIR / "recordings" / time.strftime("monitor-%Y%m%d-%H%M%S")
    try:
        prefix.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise NandLabError(f"cannot record in {prefix.parent}: {e.strerror or e}") from None
    status, recs = LiveStatus(), []
    live = web = None
    if args.web is not None:
        from nandlab.webmonitor import LiveState, WebMonitor
        live = LiveState()
        web = WebMonitor(live, port=args.web)
        say(f"live monitor page: {web.url} (open it in a browser)")

    def on_frame(f):
        if live is not None:
            live.add(f)
        if not recs:
            recs[:] = [telemetry.CsvRecorder(f"{prefix}.csv", args.clock), telemetry.VcdRecorder(f"{prefix}.vcd",
                                                                                               args.clock, f["dies"])]
        status.add(f)
        for r in recs:
            r.add(f)

    if tcp is not None:
        rx = telemetry.TcpReceiver(tcp[1], on_frame, host=tcp[0], log=say)
    elif args.udp is not None:
        rx = telemetry.UdpReceiver(args.udp, on_frame, log=say)
    else:
        rx = telemetry.SerialReceiver(args.serial, on_frame, baud=args.baud, log=say)
    if live is not None:
        live.stats = rx.decoder.stats
    rx.start(wait=args.connect_timeout)
    say(f"recording to {prefix}.csv / .vcd; Ctrl-C ends")
    t0 = time.monotonic()
    try:
        while args.seconds is None or time.monotonic() - t0 < args.seconds:
            status.show(rx.decoder.stats)
            if live is not None:
                live.link = rx.state()
            time.sleep(0.1)
    except KeyboardInterrupt:
        pass
    finally:
        rx.stop()
        for r in recs:
            r.close()
        if web is not None:
            web.close()
    status.show(rx.decoder.stats, force=True)
    if not recs:
        raise NandLabError("no telemetry frame arrived")
    say(f"{rx.connects} connection(s), {rx.disconnects} disconnect(s), {rx.bytes} bytes")
    paths, _ = plots.plot_recording(f"{prefix}.csv")
    print("\n".join(plots.summary(plots.read_recording(f"{prefix}.csv"))))
    for p in [f"{prefix}.csv", f"{prefix}.vcd", *paths]:
        print(f"wrote {p}")
    return 0


# plot ---------------------------------------------------------------------------------------------

def cmd_plot(args):
    from nandlab import plots
    paths, _ = plots.plot_recording(args.recording, args.out)
    print("\n".join(plots.summary(plots.read_recording(args.recording))))
    for p in paths:
        print(f"wrote {p}")
    return 0


# bench --------------------------------------------------------------------------------------------

def _check_bench(args):
    """`bench`'s values; returns the die counts of --dies (None: not given)."""
    dies = None
    if args.dies is not None:
        try:
            dies = tuple(int(x) for x in args.dies.split(",") if x.strip())
        except ValueError:
            raise NandLabError(f"--dies {args.dies!r}: give die counts separated by commas, e.g. 0,4,8")
        if not dies or any(not 0 <= d <= 16 for d in dies):
            raise NandLabError(f"--dies {args.dies!r}: die counts from 0 to 16 (the simulated channel's limit)")
    if args.seconds is not None and not args.seconds > 0:
        raise NandLabError(f"--seconds {args.seconds}: give a positive number of wall seconds")
    if args.seconds is not None and args.what != "sim":
        raise NandLabError("--seconds applies to 'bench sim' only")
    if dies is not None and args.what not in ("sim", "ftl"):
        raise NandLabError("--dies applies to 'bench sim' and 'bench ftl' only")
    if dies is not None and args.what == "ftl" and 0 in dies:
        raise NandLabError(f"--dies {args.dies!r}: bench ftl needs dies (1 to 16)")
    if args.board is not None and args.what != "ecp5":
        raise NandLabError("--board applies to 'bench ecp5' only")
    return dies


def cmd_bench(args):
    from nandlab import bench
    dies = _check_bench(args)
    result = bench.run(args.what, verbose=args.verbose, as_json=args.json, dies=dies, seconds=args.seconds,
        board=args.board)
    if args.json:
        import json
        print(json.dumps(result))
    return 0


def _check_ecc(args):
    from nandlab.ecc_torture import check_plan
    return check_plan(args.seed, args.reads, args.rate, args.beyond)


def cmd_ecc(args):
    """`ecc torture`: flips per codeword until uncorrectable, and a histogram under random read flips."""
    from nandlab import env
    from nandlab.ecc_torture import run_torture, format_tables
    from nandlab.steps import step
    plan = _check_ecc(args)
    # (Verilator's and cocotb's output go to the log: stdout holds the tables or the JSON only.)
    log = env.BUILD_DIR / "ecc_torture" / "torture.log"
    with step(f"ECC torture: build and run the simulated channel ({plan['reads']} reads at rate {plan['rate']}/65536)",
              log):
        result = run_torture(plan, log=print)
    if args.json:
        import json
        print(json.dumps(result))
    else:
        print("\n".join(format_tables(result)))
    return 0


def _check_ftl(args):
    from nandlab.ftl import check_args
    check_args(args)


def _cmd_ftl(args):
    from nandlab.ftl import cmd_ftl
    _check_ftl(args)
    return cmd_ftl(args)


def _check_fuzz(args):
    from nandlab.fuzz import check_args
    check_args(args)


def _check_profile(args):
    from nandlab.profile import check_args
    check_args(args)


def _cmd_profile(args):
    from nandlab.profile import cmd_profile
    _check_profile(args)
    return cmd_profile(args)


def _check_trace(args):
    from nandlab.trace import check_args
    check_args(args)


def _cmd_trace(args):
    from nandlab.trace import cmd_trace
    return cmd_trace(args)


def _check_replay(args):
    from nandlab.replay import check_args
    check_args(args)


def _cmd_replay(args):
    from nandlab.replay import cmd_replay
    return cmd_replay(args)


def _check_reproduce(args):
    from nandlab.reproduce import check_args
    check_args(args)


def _cmd_reproduce(args):
    from nandlab.reproduce import cmd_reproduce
    return cmd_reproduce(args)


def _check_cluster(args):
    from nandlab.cluster import check_args
    check_args(args)


def _cmd_cluster(args):
    from nandlab.cluster import cmd
    return cmd(args)


def _cmd_fuzz(args):
    from nandlab.fuzz import cmd_fuzz
    return cmd_fuzz(args)


# Positionals after an option: argparse fills every optional positional at its first match (`nand info`
# with file and path None), so `nand info --strict FILE` left FILE over as an unrecognized argument.
# Those left over go, in order, to the command's optional positionals still empty.
LATE_POSITIONALS = {"nand": ("file", "path")}


def _late_positionals(args, rest):
    """`rest` without the words given to empty optional positionals of args.command."""
    names = [n for n in LATE_POSITIONALS.get(args.command, ()) if getattr(args, n, None) is None]
    left = []
    for word in rest:
        if names and not word.startswith("-"):
            setattr(args, names.pop(0), word)
        else:
            left.append(word)
    return left


# main ---------------------------------------------------------------------------------------------

def make_parser():
    from nandlab.soc import targets
    from nandlab.soc.targets import sim as simtarget
    target_help = "; ".join(f"{n}: {d}" for n, d in targets.describe())
    p = _Parser(prog="nandlab", description="nandlab: ONFI NAND controller and peak-current power "
        "manager on a LiteX SoC.", epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action=_VersionAction, help="Print the version (package and source revision) and exit.")
    common = _Parser(add_help=False)
    common.add_argument("-v", "--verbose", action="store_true", help="Show tool output instead of logging it.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    _add = sub.add_parser
    def add_parser(name, **kw):
        return _add(name, parents=[common], **kw)
    sub.add_parser = add_parser

    s = sub.add_parser("sim", help="Build and run the SoC in litex_sim (Verilator) with the firmware.",
        description="Build (incrementally) and run the simulated SoC. Interactive on a terminal; "
        "--non-interactive (or a non-terminal stdin) boots, runs the --run commands (or stdin's lines) "
        "and exits (status 1 if a command printed an error).")
    s.add_argument("--non-interactive", action="store_true", help="Boot, run --run commands, exit.")
    s.add_argument("--run", metavar="CMDS", help="Shell commands separated by ';' (non-interactive).")
    s.add_argument("--timeout", type=float, default=300, help="Seconds of simulator processor time to wait for boot or a command (default 300; a busy machine does not shorten it).")
    s.add_argument("--quiet", action="store_true", help="Print only the commands' output.")
    s.add_argument("--bridge-port", type=int, default=1235, help="TCP port of the UARTBone host bridge (default 1235; 0 picks one).")
    s.add_argument("--server-port", type=int, default=1234, help="Port of the litex_server started beside an interactive sim (default 1234).")
    s.add_argument("--no-server", action="store_true", help="Do not start litex_server (interactive runs).")
    s.add_argument("--threads", type=int, default=1, help="Verilator simulation threads.")
    s.add_argument("--trace", action="store_true", help="Build with waveform tracing.")
    s.add_argument("--telemetry-port", type=int, default=1236, help="TCP port of the telemetry stream (default 1236).")
    s.add_argument("--dies", type=int, default=4, help="Emulated dies (default 4; other counts build in build/simN).")
    s.add_argument("--nand-part", default=simtarget.NAND_PART, metavar="NAME",
        help=f"Part of the dies, from 'nandlab nand parts' (default {simtarget.NAND_PART}).")
    s.add_argument("--nand-blocks", type=int, default=simtarget.NAND_BLOCKS,
        help=f"Blocks per die, up to the part's (default {simtarget.NAND_BLOCKS}).")
    s.add_argument("--nand-pages", type=int, default=simtarget.NAND_PAGES,
        help=f"Pages per block, up to the part's (default {simtarget.NAND_PAGES}).")
    s.add_argument("--nand-storage", default=simtarget.NAND_STORAGE, choices=simtarget.NAND_STORAGES,
        help="Where the dies' arrays live: sim (default: outside the model, sparse, kept over a SoC reset, "
             "images) or bram (inside the model, small geometries only).")
    s.add_argument("--nand-sdw", action="store_true",
        help="Build the dies with SDW-NFM's subplane page registers (4 per plane, up to 8 pages in one "
             "operation; 'die arch SDW-NFM' then enforces it; slower to simulate; builds in build/sim...-sdw).")
    s.add_argument("--nand-time-scale", type=int, default=simtarget.NAND_TIME_SCALE, metavar="N",
        help=f"The dies' array times (tR, tPROG, tBERS) divided by N, 1..{simtarget.MAX_TIME_SCALE} (default "
             f"{simtarget.NAND_TIME_SCALE}; 1 = the part's own times, as the plane papers' experiments need; other "
             "values build in build/sim...-ts<N>).")
    s.add_argument("--nand-pin-model", nargs="?", const="xc7", metavar="FAMILY",
        help="Put channel 0's dies behind the pin PHY and the pin-level die model (per-lane skew, the chip's output "
             "timings, the delay line of FAMILY: xc7 (default: 32 taps of 78 ps) or ecp5 (128 of 25 ps)); the "
             "controller reads with the PHY's latencies and NV-DDR reads need 'train'. Builds in build/sim...-pin<family>.")
    s.add_argument("--skew-seed", type=int, metavar="N",
        help="The pin model's lane timings drawn from seed N (default 0) within the datasheet ranges.")
    s.add_argument("--skew", metavar="LANES",
        help="The pin model's lane timings given: delay:start:end (ps) for DQ0..DQ7 and DQS, comma-separated.")
    s.add_argument("--nand-image", metavar="FILE",
        help="Start the NAND arrays from this image ('nandlab nand image save' writes them).")
    s.add_argument("--nand-port", type=int, metavar="PORT",
        help=f"TCP control port of the NAND arrays, for 'nandlab nand image' (default {DEFAULT_NAND_PORT} "
             "interactive, a free one otherwise).")
    s.add_argument("--channels", type=int, default=1,
        help="NAND channels, each with --dies dies and a channel controller (default 1; more build in build/simNxC).")
    from nandlab.gateware.power.common import TOPOLOGIES, DEFAULT_TOPOLOGY
    s.add_argument("--power-topology", choices=TOPOLOGIES, default=None,
        help=f"Token rings over the channels (default {DEFAULT_TOPOLOGY}): one ring through every die (single), a "
             "ring per channel each running the configuration's alpha (per_channel), or a ring per channel sharing "
             "alpha as one budget through exchange nodes (exchange: 2 channels or more; docs/power_exchange.md).")
    s.add_argument("--nand-deviation", metavar="LEVEL[:STRETCH][@DIES]", default=None,
        help="Dies whose current deviates from the waveform the token tables are compiled from: LEVEL %% more "
             "current, each phase STRETCH %% longer, on the dies listed (over all channels; default 0 and N/2). "
             "The firmware's 'power peaks' sees it and 'power adapt' re-compiles those dies' RTs "
             "(docs/power_deviation.md).")
    s.add_argument("--workload", type=int, metavar="US",
        help="Capture telemetry over the firmware's mixed workload for US microseconds of SoC time, check it "
             "against the on-chip counters, write the recording (CSV, VCD) and figures, print a summary.")
    s.add_argument("--reads", type=int, default=30, help="Read percentage of the workload (default 30).")
    # The ring's policies that make progress (mtpm_nokey is the paper's Fig. 4 deadlock: a capture would stall).
    s.add_argument("--policy", default="kmtpm_sub", choices=[p for p in POLICIES if p in EXPERIMENT_POLICIES],
        help="Power policy during the capture (default kmtpm_sub).")
    s.add_argument("--alpha", type=int, default=2, help="Budget PB = alpha x I_max during the capture (default 2).")
    s.add_argument("--tg", type=int, default=DEFAULT_TG,
        help=f"Token granularity TG during the capture ({TG_RANGE[0]}..{TG_RANGE[1]}, default {DEFAULT_TG}).")

    b = sub.add_parser("build", add_help=False, help="Build a target: sim, or a board (see --target).",
        description=f"Build a target. Targets: {target_help}. Board options follow --target "
        "(e.g. --variant a7-100 for arty); 'nandlab build --target NAME --help' lists them.")
    b.add_argument("--target", metavar="NAME", help="One of: " + ", ".join(targets.TARGETS))
    b.add_argument("--no-compile", action="store_true", help="Generate the project only (no synthesis).")
    b.add_argument("--load", action="store_true", help="Program the board after a successful build.")
    b.add_argument("-h", "--help", action="store_true", help="Show this help and the target's options.")

    l = sub.add_parser("load", help="Program a board with its bitstream (or upload the firmware).",
        description="Program a board: arty through OpenOCD, colorlight_i5 through openFPGALoader.")
    l.add_argument("--target", required=True, metavar="NAME", help="One of: " + ", ".join(targets.BOARDS))
    l.add_argument("--bitstream", help="Bitstream file (default: the last build's).")
    l.add_argument("--firmware", action="store_true", help="Upload the firmware through the BIOS serial boot instead.")
    l.add_argument("--serial", help="Console serial port for --firmware.")

    c = sub.add_parser("csr", help="List, read or write CSRs by name through litex_server.",
        description="CSR access by name from the target's csr.csv, through a running litex_server "
        "(started by 'nandlab sim', or 'nandlab server' for a board).")
    c.add_argument("action", choices=["list", "read", "write"])
    c.add_argument("name", nargs="?")
    c.add_argument("value", nargs="?")
    c.add_argument("--target", default="sim", metavar="NAME", help="Whose csr.csv to use (default sim).")
    c.add_argument("--build-dir", metavar="DIR", help="Take csr.csv from this build (e.g. build/sim8 after "
        "'make sim'); default: the simulator serving --port, else build/TARGET, else the only build/sim*.")
    c.add_argument("--csr-csv", metavar="FILE", help="Take the CSR map from this file.")
    c.add_argument("--host", default="localhost")
    c.add_argument("--port", type=int, default=1234, help="litex_server port (default 1234).")

    v = sub.add_parser("server", help="Run litex_server on a target's host bridge.",
        description="litex_server for RemoteClient: on the simulator's UARTBone socket, or Etherbone (UDP) of a board.")
    v.add_argument("--target", default="sim", metavar="NAME")
    v.add_argument("--bridge-port", type=int, default=1235, help="Simulator bridge port (sim).")
    v.add_argument("--ip", default="192.168.1.50", help="Board IP address (Etherbone).")
    v.add_argument("--udp", action="store_true", help="Etherbone even where JTAGbone is the default bridge.")
    v.add_argument("--port", type=int, default=1234, help="Port litex_server listens on.")

    d = sub.add_parser("nand", help="NAND parts, ONFI parameter pages, images of the simulated dies.",
        description="'info FILE' checks a parameter page (binary or hex dump; the first good copy, "
        "else the majority of three) and prints the die configuration it gives; a broken page is "
        "refused naming the field. 'info --part NAME' prints a database part; 'parts' lists them; "
        "'page --part NAME -o FILE' writes a part's parameter page. 'image save FILE' saves the arrays of "
        "a running simulator's dies (only the pages not erased), 'image load FILE' replaces them by an "
        "image of the same geometry.")
    d.add_argument("action", choices=["info", "parts", "page", "image"])
    d.add_argument("file", nargs="?", help="Parameter page file (info); save or load (image).")
    d.add_argument("path", nargs="?", help="Image file (image save|load).")
    d.add_argument("--port", type=int, default=DEFAULT_NAND_PORT,
        help=f"The simulator's NAND control port (image; default {DEFAULT_NAND_PORT}).")
    d.add_argument("--part", help="Part from the database (see 'nandlab nand parts').")
    d.add_argument("--strict", action="store_true",
        help="Refuse pages with warnings too (exit 2); rules in docs/param_page_checker.md.")
    d.add_argument("--scale-blocks", type=int, help="Show the emulator geometry with this many blocks per LUN.")
    d.add_argument("--sys-clk-mhz", type=float, default=100.0, help="Clock for timings in cycles (default 100).")
    d.add_argument("-o", "--output", help="Output file (page).")
    d.add_argument("--copies", type=int, default=3, help="Copies to write (page, default 3).")
    d.add_argument("--hex", action="store_true", help="Write a hex dump instead of binary (page).")

    r = sub.add_parser("report", help="Resource estimates (yosys): one emulated die, dies per board.",
        description="Synthesise one emulated die with yosys for Xilinx 7-series and/or ECP5 and print "
        "its LUT/FF/LUTRAM/BRAM counts.")
    r.add_argument("what", choices=["die", "fit", "ring", "telemetry", "controller", "ecc"], help="die: one emulated "
        "die; fit: how many dies fit each board (synthesises the board SoCs, several minutes); ring: one power-ring "
        "node; telemetry: the telemetry block for 2 and 8 dies; controller: one channel controller (4 and 16 ways, "
        "and 4 with ECC) and the socket's pin PHY; "
        "ecc: the BCH encoder + decoder (512 B t=8, 1 KB t=40; the latter takes long).")
    r.add_argument("--storage", choices=["bram", "dram"], default="bram",
        help="Die storage backend (die report; default bram).")
    r.add_argument("--family", choices=["xc7", "ecp5", "all"], default="all")
    r.add_argument("--die-stats", choices=["counters", "memory"], default="counters",
        help="Die statistics: a register each, or one block RAM (die report; the ECPIX-5's is memory).")
    r.add_argument("--no-cache", action="store_true", help="Die without cache register pairs (die report).")
    r.add_argument("--seg-rom", choices=["logic", "memory"], default="logic",
        help="The die's current-sequencer segment table: logic, or a block RAM (die report; the ECPIX-5's is memory).")
    r.add_argument("--blocks", type=int, default=4, help="Blocks per die (default 4).")
    r.add_argument("--pages", type=int, default=4, help="Pages per block (default 4).")

    e = sub.add_parser("experiment", help="Power experiment on the CPU-less harness (Verilator).",
        description="The MTPM paper's power experiment: synthetic traces (one erase per 500 programs, "
        "reads at each ratio) on N emulated dies with the token ring and the current monitor, for each "
        "policy; prints throughput normalised to NPM, latencies, token waiting and budget violations.")
    e.add_argument("what", choices=["power", "ring-faults"])
    e.add_argument("--part", default="MTPM-MLC", help="Die part (default MTPM-MLC: the paper's timings).")
    e.add_argument("--dies", type=int, default=8, help="Dies on the ring (default 8).")
    e.add_argument("--ops", type=int, default=5000, help="Operations per trace (default 5000).")
    e.add_argument("--ratios", default="0,25,50,75,100", help="Read ratios in %% (default 0,25,50,75,100).")
    e.add_argument("--policies", default=None,
        help=f"Policies to run (default all: {','.join(EXPERIMENT_POLICIES)}; also dcc_fw: DCC charged its "
             "firmware's time per decision, --dcc-fw-cycles; dcc_flat, dcc_fw_flat: the same with the flat model; ring-faults: ppm,mtpm,kmtpm_atomic,kmtpm_sub).")
    e.add_argument("--dcc-model", default="segment", choices=["segment", "atomic", "operation"],
        help="Corners of DCC's current model (policies dcc, dcc_fw): every waveform segment, the slides' "
             "corner-based piecewise-linear model (default), one flat piece per atomic operation at its peak "
             "(also policies dcc_flat, dcc_fw_flat whatever this is), or one piece per operation.")
    e.add_argument("--dcc-fw-cycles", type=int, metavar="N", help="Policy dcc_fw (DCC charged its firmware's "
        "time): CPU cycles a scheduling decision takes on the SoC's 100 MHz VexRiscv, decisions one at a time "
        "(default: the mean the firmware's 'dcc bench' measured at the trace's read ratio, nandlab.dcc_fw).")
    e.add_argument("--check-dcc", action="store_true",
        help="Stop if DCC's model ever falls below the dies' summed current (slower; the tests do this).")
    e.add_argument("--channels", type=int, default=1, help="Channels the dies are spread over (default 1).")
    e.add_argument("--topology", default="single", choices=["single", "per_channel", "exchange"],
        help="One ring through every die (default; the paper's scenario 1), a ring per channel with "
             "alpha / channels each (scenario 2), or a ring per channel sharing the global alpha through "
             "exchange nodes that lend and borrow tokens (docs/power_exchange.md; no skip).")
    e.add_argument("--skew", type=float, default=None, metavar="PCT",
        help="Uneven load: channel 0's dies get PCT %% of the operations, the other channels the rest "
             "(default: every die alike; needs --channels 2 or more).")
    e.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
        help="Simulations run at once (default: the number of CPUs).")
    e.add_argument("--tg", type=int, default=4, help="Token granularity TG (2..5, default 4).")
    e.add_argument("--alpha", type=int, default=None, help="Budget factor alpha (1..8, default 4; ring-faults 2).")
    e.add_argument("--faults", type=int, default=10_000,
        help="ring-faults: faults to inject, split over the policies (default 10000).")
    e.add_argument("--json", action="store_true", help="Print one JSON object instead of the tables (power: the "
                   "parameters, throughput normalised to NPM and every run's counters; a sweep: one per point).")
    e.add_argument("--time-scale", type=int, default=1,
        help="Divide array times by this (default 1, the paper's timings: ~15 min for every policy and "
             "ratio; 10 gives a quick look in ~2 min).")
    e.add_argument("--seed", type=int, default=1, help="Trace seed (default 1).")
    e.add_argument("--deviation", metavar="LEVEL[:STRETCH][@DIES]",
                   help="power: dies whose waveform deviates (LEVEL %% current, STRETCH %% duration; default dies 0 "
                        "and N/2), run with the tables off / static / adaptive (docs/power_deviation.md).")
    e.add_argument("--clock-mhz", type=float, default=200.0,
        help="power: the harness's clock in MHz (default 200, as the MTPM paper; the ring's hops and the "
             "monitor's 40 ns windows are counted in its cycles).")
    e.add_argument("--interface", default=DEFAULT_CHANNEL_INTERFACE, choices=CHANNEL_INTERFACES, metavar="nvddr0..5|sdr0..5",
        help="power: the channel's interface mode, whose rate data input and output move a page at (default "
             "nvddr5: NV-DDR mode 5, 200 MB/s).")
    e.add_argument("--no-channel", action="store_true",
        help="power: no channel (the harness before issue 18): array operations only, no data transfers, every "
             "die starting at once.")
    e.add_argument("--din-free", action="store_true",
        help="power: data input takes no tokens, as the paper counts a program (20 atomic operations); default: "
             "it asks the ring for the tokens of its bus current as data output does.")
    e.add_argument("--no-skip", action="store_true",
        help="Simulate every cycle (default: quiet stretches in one cycle each, exactly the same results).")
    e.add_argument("--sweep", choices=["tg", "alpha", "grid", "precharge", "level2", "transfer", "rate"],
        help="Sweep TG 2..5 (Fig. 12) or alpha 4..8 (Fig. 15) and print throughput normalised to NPM and "
        "violations per point; grid: every TG 2..5 x alpha 1..8 for the token policies and every alpha for DCC "
        "(default policies mtpm,kmtpm_atomic,kmtpm_sub,dcc), violations, peaks and throughput per cell, a PNG "
        "figure; or scale one waveform quantity (docs/power_waveforms.md): precharge (P_A1's "
        "pre-charge duration), level2 (P_A1's post-peak level), transfer (the bus current of a page transfer), "
        "rate (the bus rate; current follows), with a harness built per factor, and print KMTPM-S / NPM, every "
        "policy's throughput and the NPM and PPM peaks per factor, with a PNG figure.")
    e.add_argument("--scales", metavar="X,Y,...", help="Factors of a waveform sweep (default 0.5,0.75,1,1.5,2).")
    e.add_argument("--figure", metavar="FILE.png", help="The waveform sweep's figure (default "
                   "build/experiment/sweep_<what>.png).")
    e.add_argument("--scheduler", metavar="tcp://HOST:PORT",
        help="Run the simulations on this Dask cluster (default: $NANDLAB_SCHEDULER, else a cluster embedded in "
             "this process running --jobs at a time). Workers: 'nandlab worker tcp://HOST:PORT'.")
    e.add_argument("--csv", metavar="FILE", help="power: also write every run's counters to FILE (one row per "
                   "run, and per sweep point).")

    m = sub.add_parser("monitor", help="Receive, show and record a running SoC's telemetry.",
        description="Connects to the telemetry of a running simulator (--tcp, printed by 'nandlab sim') or "
        "listens for a board's UDP stream (--udp 5000), shows frames, drops and peak current against the budget "
        "on a status line, records CSV and VCD, and plots the recording at the end.")
    m.add_argument("--tcp", metavar="HOST:PORT", help="The simulator's telemetry socket (default port 1236).")
    m.add_argument("--udp", type=int, metavar="PORT", help="UDP port a board streams to (Arty: 5000).")
    m.add_argument("--serial", metavar="DEVICE", help="A board's telemetry UART (Arty built with --no-etherbone: "
        "Pmod JD pin 1), e.g. /dev/ttyUSB2.")
    m.add_argument("--baud", type=int, default=3_000_000, help="Telemetry UART baud rate (default 3000000).")
    m.add_argument("--record", metavar="PREFIX", help="Recording files PREFIX.csv / .vcd (default build/recordings/).")
    m.add_argument("--seconds", type=float, help="Stop after this many seconds (default: at Ctrl-C).")
    m.add_argument("--clock", type=float, default=100e6, help="SoC clock in Hz, for the time axis (default 100e6).")
    m.add_argument("--connect-timeout", type=float, default=30, help="Seconds to wait for the link (default 30).")
    m.add_argument("--web", type=int, nargs="?", const=8080, metavar="PORT",
        help="Serve the live monitor page on http://127.0.0.1:PORT/ (default 8080).")

    t = sub.add_parser("plot", help="Figures of a telemetry recording (CSV).",
        description="Writes RECORDING's figures: the summed current normalised to the power budget over time "
        "with the budget line and the periods over it marked (like the MTPM paper's Fig. 11), and the dies' "
        "currents stacked.")
    t.add_argument("recording", help="A recording CSV (nandlab sim --workload writes them).")
    t.add_argument("--out", help="Prefix of the PNG files (default: the recording's path without .csv).")

    from nandlab import ftl
    ftl.add_parser(sub)
    from nandlab import fuzz
    fuzz.add_parser(sub)
    from nandlab import profile
    profile.add_parser(sub)
    from nandlab import trace
    trace.add_parser(sub)
    from nandlab import replay
    replay.add_parser(sub)
    from nandlab import reproduce
    reproduce.add_parser(sub)
    from nandlab import cluster
    cluster.add_parser(sub)
    from nandlab import bringup
    bringup.add_parser(sub)

    x = sub.add_parser("ecc", help="ECC torture of the channel controller's BCH path (simulated).",
        description="'torture': in the spirit of Linux's nandbiterrs, on the simulated channel (2 emulated dies, "
        "BCH t = 8 per 512 B): one codeword of a page gets 1, 2, ... t, t + 1 and more flipped bits (data area, "
        "parity, both), READ_ECC after each, every outcome printed (corrected with its count, uncorrectable, or "
        "miscorrected - judged against bchlib and the data written); then repeated reads with the die's random read "
        "flips and a histogram of the corrected counts. A Verilator build and run, about a minute.")
    x.add_argument("what", choices=["torture"])
    x.add_argument("--reads", type=int, default=40, help="Reads with random flips (default 40).")
    x.add_argument("--rate", type=int, default=2500,
        help="Random flip rate: a 32-bit word read from the array gets a flipped bit with probability RATE/65536 "
             "(default 2500: about 5 flips per 512 B codeword).")
    x.add_argument("--beyond", type=int, default=4, help="Flips past t + 1 in the incremental part (default 4).")
    x.add_argument("--seed", type=int, default=1, help="Seed of the data and the flipped bits (default 1).")
    x.add_argument("--json", action="store_true", help="Print one JSON object instead of the tables.")

    n = sub.add_parser("bench", help="Benchmarks: simulated cycles/s, ECP5 Fmax and utilisation.",
        description="Benchmarks, printed as tables. 'sim': simulated SoC cycles/s at 0, 4, 8 and 16 dies, "
        "idle and loaded, with and without idle gating (8 dies), --json for one JSON object; 'soc': simulated system cycles per wall-clock "
        "second (4 dies); 'telemetry': frames/s and MB/s reaching the host from the simulated SoC (4 and 8 dies); "
        "'interface': read/write MB/s of async SDR, sync SDR and NV-DDR at 1-16 ways on emulated dies (the DDR "
        "paper's Table 3); 'ftl': the FTL's sequential write and read rate against the raw channel controller's "
        "(4 and 8 dies, 128 KiB, SoC time); 'ecp5': open-flow builds of the ECP5 boards (colorlight_i5, ecpix5) with Fmax and LUT/FF/BRAM; "
        "'power': the power experiment at its defaults with and without the harness's skip (speed-up); 'all': every one.")
    n.add_argument("what", choices=["sim", "soc", "telemetry", "interface", "ftl", "ecp5", "power", "all"])
    n.add_argument("--dies", metavar="LIST", help="bench sim / ftl: die counts, comma-separated (default 0,4,8,16; ftl: 4,8).")
    n.add_argument("--seconds", type=float, metavar="S", help="bench sim: wall seconds of the idle measurement (default 8).")
    n.add_argument("--json", action="store_true", help="Print one JSON object on standard output instead of "
                        "the tables (tables still printed go to standard error).")
    n.add_argument("--board", choices=["colorlight_i5", "ecpix5"], help="bench ecp5: only this board (default both).")
    return p


def version():
    """'nandlab <package version>', and the git revision when run from a source checkout."""
    from importlib import metadata
    try:
        text = f"nandlab {metadata.version('nandlab')}"
    except metadata.PackageNotFoundError:
        text = "nandlab (not installed)"
    return text + (f" (source {env.git_revision()})" if env.SOURCE_CHECKOUT else "")


class _VersionAction(argparse.Action):
    """--version, worked out only when asked (it runs git)."""
    def __init__(self, option_strings, dest, **kw):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kw)

    def __call__(self, parser, namespace, values, option_string=None):
        print(version())
        parser.exit()


def _deterministic_hashing(argv):
    """Re-run under PYTHONHASHSEED=0: Migen's Verilog statement order follows Python's string
    hashing, and a reproducible netlist lets unchanged designs skip the Verilator rebuild."""
    import os
    if os.environ.get("PYTHONHASHSEED") != "0":
        os.environ["PYTHONHASHSEED"] = "0"
        os.execv(sys.executable, [sys.executable, "-m", "nandlab.cli"] + list(argv))


def _check_sim(args):
    from nandlab.soc.targets import sim as simtarget
    _check_sim_args(args)
    _sim_nand(args, simtarget)


def _check_bringup(args):
    from nandlab import bringup
    bringup.check_args(args)


def _cmd_bringup(args):
    from nandlab import bringup
    return bringup.cmd_bringup(args)


# What each command checks before it builds, starts or writes anything (`check_command_line`).
CHECKS = {"sim": _check_sim, "csr": _check_csr, "server": _check_server, "bench": _check_bench,
          "experiment": _check_experiment, "monitor": _check_monitor, "nand": _check_nand,
          "report": _check_report, "plot": lambda args: None, "ftl": _check_ftl, "fuzz": _check_fuzz,
          "profile": _check_profile, "ecc": _check_ecc, "trace": _check_trace,
          "replay": _check_replay, "reproduce": _check_reproduce, "scheduler": _check_cluster,
          "worker": _check_cluster, "bringup": _check_bringup}


def check_command_line(argv, parser=None):
    """Parse `argv` and check every value that can be checked without building, starting or writing
    anything; returns the parsed arguments or raises NandLabError. The commands run the same checks
    first; the fuzz tests (tests/test_fuzz.py) drive this."""
    parser = parser or make_parser()
    args, rest = parser.parse_known_args(argv)
    from nandlab.soc.targets.sim import sim_pgo
    sim_pgo()                                       # NANDLAB_SIM_PGO, read by every simulator build
    if args.command == "build":
        _check_build(args, rest) if not args.help else None
    elif args.command == "load":
        _check_load(args, rest)
    elif args.command is not None:
        rest = _late_positionals(args, rest)
        if rest:
            raise NandLabError(f"unrecognized arguments: {' '.join(rest)} (see 'nandlab {args.command} --help')")
        CHECKS[args.command](args)
    return args


class Terminated(BaseException):
    """SIGTERM, raised in the main thread so that what a command started is ended on the way out (the
    `finally` and `with` blocks around litex_server and the simulator run)."""


def _on_sigterm(signum, frame):
    raise Terminated()


def _stdout_closed():
    """True when our standard output is a pipe whose reader has gone (`nandlab ... | head`)."""
    import select
    try:
        poll = select.poll()
        poll.register(sys.stdout.fileno(), select.POLLOUT)
        return any(ev & select.POLLERR for _, ev in poll.poll(0))
    except (OSError, ValueError, AttributeError):
        return False


def main(argv=None):
    import signal
    argv = sys.argv[1:] if argv is None else argv
    _deterministic_hashing(argv)
    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        parser = make_parser()
        args, rest = parser.parse_known_args(argv)
        if args.command is None:
            parser.print_help()
            return 2
        env.setup()
        if args.command == "build":
            return cmd_build(args, rest, parser)
        if args.command == "load":
            return cmd_load(args, rest)
        rest = _late_positionals(args, rest)
        if rest:
            raise NandLabError(f"unrecognized arguments: {' '.join(rest)} (see 'nandlab {args.command} --help')")
        return {"sim": cmd_sim, "csr": cmd_csr, "server": cmd_server, "bench": cmd_bench,
                "experiment": cmd_experiment, "plot": cmd_plot, "monitor": cmd_monitor,
                "nand": cmd_nand, "report": cmd_report, "ftl": _cmd_ftl, "fuzz": _cmd_fuzz,
                "profile": _cmd_profile, "ecc": cmd_ecc, "trace": _cmd_trace,
                "replay": _cmd_replay, "reproduce": _cmd_reproduce, "scheduler": _cmd_cluster,
                "worker": _cmd_cluster, "bringup": _cmd_bringup}[args.command](args)
    except NandLabError as e:
        print(f"nandlab: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("nandlab: interrupted", file=sys.stderr)
        return 130
    except Terminated:
        print("nandlab: terminated", file=sys.stderr)
        return 128 + signal.SIGTERM
    except BrokenPipeError:
        if not _stdout_closed():
            raise
        # The reader of our output left (e.g. `| head`): stop quietly, as a program killed by SIGPIPE would.
        _discard_stdout()
        return 128 + signal.SIGPIPE
    finally:
        # What is still buffered is written now, where a closed pipe is caught (not at exit).
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            _discard_stdout()
        except (OSError, ValueError):
            pass


def _discard_stdout():
    """Later writes to standard output (the interpreter's last flush too) go nowhere."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


if __name__ == "__main__":
    sys.exit(main())
