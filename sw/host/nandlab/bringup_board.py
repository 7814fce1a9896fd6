"""`nandlab bringup` on a board (arty, colorlight_i5): find the board and its console first, build the bitstream and
firmware (with `--socket`, the ONFI socket's pin PHY and controller), load with openFPGALoader, boot the firmware
through the BIOS's serial boot and run the steps on the console; or (`--resources`) only build and cost the socket."""

import glob
import re
import shutil
import subprocess
import time
from argparse import Namespace
from pathlib import Path

from nandlab import env
from nandlab.errors import MissingToolError, NandLabError
from nandlab.simulator import BANNER, PROMPT

LOADER_BOARDS = {"arty": "arty", "colorlight_i5": "colorlight-i5"}     # openFPGALoader -b
FAMILY = {"arty": "xc7", "colorlight_i5": "ecp5"}
SOCKET_WAYS = {"arty": 2, "colorlight_i5": 1}                            # CE# pins of the socket maps
DETECT_TIMEOUT_S, LOAD_TIMEOUT_S, BOOT_TIMEOUT_S = 20, 300, 60
CONSOLE_BAUD = 115200
SERIAL_GLOBS = ("/dev/ttyUSB*", "/dev/ttyACM*")


def _loader():
    exe = shutil.which("openFPGALoader") or env.which("openFPGALoader")
    if exe is None:
        raise MissingToolError("openFPGALoader not found (looked on PATH and in .venv): apt-get install openfpgaloader")
    return exe


def find_board(args):
    """The board on its JTAG cable (openFPGALoader --detect, bounded in time) and its console UART; raises
    MissingToolError naming what was looked for."""
    cmd = [_loader(), "-b", LOADER_BOARDS[args.target]] + (["-c", args.cable] if args.cable else []) + ["--detect"]
    what = "'openFPGALoader " + ' '.join(cmd[1:]) + "'"
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=DETECT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise MissingToolError(f"no {args.target} found: {what} gave no answer within {DETECT_TIMEOUT_S} s "
                               "(is the cable attached?)") from None
    text = out.stdout + out.stderr
    if out.returncode != 0 or not re.search(r"idcode", text, re.I):
        last = (text.strip().splitlines() or ["no output"])[-1]
        raise MissingToolError(f"no {args.target} found: {what} saw no FPGA ({last}); is the board attached and "
                               "powered, its USB cable accessible?")
    return serial_port(args)


def serial_port(args):
    if args.serial:
        if not Path(args.serial).exists():
            raise MissingToolError(f"console UART {args.serial} not found: is the board attached?")
        return args.serial
    ports = sorted(p for g in SERIAL_GLOBS for p in glob.glob(g))
    if len(ports) != 1:
        raise MissingToolError(f"{'no' if not ports else 'more than one'} console UART ({', '.join(SERIAL_GLOBS)}"
                               f"{': ' + ', '.join(ports) if ports else ''}): attach the board or give --serial PORT")
    return ports[0]


def board_args(args):
    """The board's build options (its defaults, the socket with --socket), checked as `nandlab build` checks them."""
    from nandlab.cli import _target_parser
    from nandlab.soc import targets
    targs = _target_parser(args.target, targets.get_board(args.target)).parse_args(
        ["--nand-socket"] if args.socket else [])
    targets.check_arguments(targs)
    return targs


def build(args, say):
    from nandlab.soc import targets
    targs = board_args(args)
    say(f"building the {args.target} SoC{' with the NAND socket' if args.socket else ''}: bitstream and firmware "
        "(tens of minutes) ...")
    return targets.build_board(args.target, targs, compile=True), targs


def load(args, report, say):
    bitstream = report.get("bitstream")
    if not bitstream or not Path(bitstream).exists():
        raise NandLabError(f"no bitstream for {args.target}: run without --no-build")
    cmd = [_loader(), "-b", LOADER_BOARDS[args.target]] + (["-c", args.cable] if args.cable else []) + [bitstream]
    say(f"loading {bitstream} ...")
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=LOAD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise MissingToolError(f"openFPGALoader did not finish loading within {LOAD_TIMEOUT_S} s") from None
    if out.returncode != 0:
        raise MissingToolError(f"openFPGALoader could not load the {args.target}: "
                               f"{(out.stderr.strip().splitlines() or ['?'])[-1]}")


class SerialShell:
    """The firmware's shell on the console UART: booted through the BIOS's serial boot (LiteX's litex_term
    upload), then one command at a time up to the next prompt, each within a wall-clock timeout."""

    def __init__(self, port, firmware, address):
        import serial
        from litex.tools.litex_term import LiteXTerm
        self.term = LiteXTerm(serial_boot=True, kernel_image=str(firmware), kernel_address=address,
                              json_images=None, safe=True)
        self.term.open(port, CONSOLE_BAUD)
        self.port = self.term.port
        self.buf = b""
        self._serial = serial

    def _read(self):
        data = self.port.read(self.port.in_waiting or 1)
        for b in data:
            one = bytes([b])
            if self.term.detect_prompt(one):
                self.term.answer_prompt()
            if self.term.detect_magic(one):
                self.term.answer_magic()            # uploads the firmware and jumps to it
        self.buf += data

    def expect(self, text, timeout):
        deadline = time.monotonic() + timeout
        while text.encode() not in self.buf:
            if time.monotonic() > deadline:
                raise NandLabError(f"no {text!r} on the console within {timeout:.0f} s; last output: "
                                   f"{self.buf[-300:].decode(errors='replace')!r}")
            self._read()
        i = self.buf.index(text.encode()) + len(text)
        out, self.buf = self.buf[:i], self.buf[i:]
        return out.decode(errors="replace").replace("\r", "")

    def boot(self):
        self.port.write(b"\r")
        self.expect(BANNER, BOOT_TIMEOUT_S)
        self.expect(PROMPT, BOOT_TIMEOUT_S)

    def command(self, line, timeout):
        self.port.write(line.encode() + b"\r")
        out = self.expect(PROMPT, timeout)[:-len(PROMPT)]
        first, _, rest = out.partition("\n")
        return rest if first.strip() == line.strip() else out

    def close(self):
        self.term.close()


def main_ram_address(build_dir):
    for line in (Path(build_dir) / "csr.csv").read_text().splitlines():
        f = line.split(",")
        if len(f) >= 3 and f[0] == "memory_region" and f[1] == "main_ram":
            return int(f[2], 0)
    raise NandLabError(f"{build_dir}/csr.csv has no main_ram region")


def run_board(args, say, bringup_class):
    """Board found (else a one-line error before anything is built), built, loaded, booted; the steps run."""
    from nandlab.soc import targets
    port = find_board(args)
    build_dir = targets.build_dir_of(args.target)
    if args.no_build:
        import json
        report_path = build_dir / "report.json"
        if not report_path.exists():
            raise NandLabError(f"no build of {args.target} in {build_dir}: run without --no-build")
        report = json.loads(report_path.read_text())
    else:
        report, _ = build(args, say)
    load(args, report, say)
    shell = SerialShell(port, build_dir / "software" / "firmware" / "firmware.bin", main_ram_address(build_dir))
    try:
        say("booting the firmware over the console (BIOS serial boot) ...")
        shell.boot()
        b = bringup_class(shell, args.block_range, args.pages, args.timeout, log=say, socket=args.socket)
        b.run()
    finally:
        shell.close()
    return b, {"target": args.target, "socket": args.socket, "serial": port, "build_dir": str(build_dir),
               "utilisation": report.get("utilisation"), "fmax": report.get("fmax")}


# --resources ----------------------------------------------------------------------------------------

def socket_resources(target, say):
    """{"phy": cells, "controller": cells, "total": sums} of the socket on `target`'s family (yosys)."""
    from nandlab import resources
    family = FAMILY[target]
    ways = SOCKET_WAYS[target]
    phy = resources.phy_resources(families=(family,), log=say)[family]
    ctrl = resources.controller_resources(ways=(ways,), families=(family,), log=say, ecc_ways=())[(ways, family)]
    keys = [k for k in ("lut", "ff", "bram", "lutram", "dsp") if isinstance(phy.get(k), (int, float))]
    return {"family": family, "ways": ways, "phy": phy, "controller": ctrl,
            "total": {k: phy.get(k, 0) + ctrl.get(k, 0) for k in keys}}


def cmd_resources(args, out, say):
    """Generate the board SoC with the socket and build its firmware (no bitstream, no board), then the socket's cost."""
    import json
    from nandlab import resources
    from nandlab.soc import targets
    targs = board_args(Namespace(**{**vars(args), "socket": True}))
    say(f"generating the {args.target} SoC with the NAND socket and building its firmware (no bitstream) ...")
    report = targets.build_board(args.target, targs, compile=False)
    cost = socket_resources(args.target, say)
    device = resources.DEVICES["arty-a7-35" if args.target == "arty" else "colorlight_i5"]
    result = {"target": args.target, "firmware": report["firmware"], "gateware_dir": report["gateware_dir"],
              "socket": cost, "device": device}
    out.mkdir(parents=True, exist_ok=True)
    (out / "resources.json").write_text(json.dumps(result, indent=1, default=str))
    lines = [f"{args.target}: SoC with the NAND socket generated in {report['gateware_dir']}, firmware "
             f"{report['firmware']} built",
             f"socket cost on {cost['family']} (yosys, synthesis only; controller of {cost['ways']} way(s)):"]
    for part in ("phy", "controller", "total"):
        c = cost[part]
        lines.append(f"  {part:<10} " + ", ".join(f"{k.upper()} {c.get(k)}" for k in ("lut", "ff", "bram", "lutram")
                                                  if k in c))
    t = cost["total"]
    if t.get("lut"):
        lines.append(f"  of the device: {100 * t.get('lut', 0) / device['lut']:.1f} % of {device['lut']} LUTs, "
                     f"{100 * t.get('ff', 0) / device['ff']:.1f} % of {device['ff']} FFs")
    print(json.dumps(result, default=str) if args.json else "\n".join(lines))
    return 0
