"""`nandlab ftl`: the FTL (sw/firmware/ftl) on the host against the NAND model.

`nandlab ftl torture` builds the FTL's C sources for the host with the NAND model and the torture
driver (sw/firmware/ftl/host) and runs them: random requests scored by a shadow model of every
sector, power cuts, injected NAND faults. On the simulated SoC the firmware's `ftl` shell commands
run the same sources over every die (`nandlab sim --run "ftl format; ..."`).
"""

import json
import re
import subprocess

from nandlab import env
from nandlab.errors import NandLabError

HOST_DIR = env.REPO / "sw" / "firmware" / "ftl" / "host"

# Torture options: (flag, type, default, lower bound, upper bound or None, help).
TORTURE_OPTIONS = [
    ("--dies", int, 2, 1, 64, "dies"),
    ("--planes", int, 1, 1, 8, "planes per die"),
    ("--blocks", int, 64, 4, 1 << 16, "blocks per die (a multiple of the planes)"),
    ("--pages", int, 32, 2, 1024, "pages per block"),
    ("--page-bytes", int, 2048, 512, 65536, "data bytes per page"),
    ("--sector-bytes", int, 4096, 512, 4096, "logical sector: 512 or 4096"),
    ("--op-permille", int, 70, 0, 10000, "over-provisioning, per mille of the logical capacity"),
    ("--wl-threshold", int, 32, 1, None, "static wear levelling: erase-count spread allowed"),
    ("--ops", int, 20000, 1, None, "requests"),
    ("--seed", int, 1, 0, None, "random seed"),
    ("--cuts", int, 0, 0, None, "power cuts (each followed by a remount and a check of every sector)"),
    ("--cut-mean", int, 0, 0, None, "mean NAND operations between cuts (0: 2000)"),
    ("--precondition", int, 0, 0, None, "requests of sequential fill before the measured run"),
    ("--read-ratio", float, 0.3, 0.0, 1.0, "fraction of reads"),
    ("--trim-ratio", float, 0.0, 0.0, 1.0, "fraction of trims"),
    ("--qd", int, 32, 1, 64, "requests in flight"),
    ("--max-sectors", int, 8, 1, 256, "largest request, sectors"),
    ("--flip", float, 0.0, 0.0, 1.0, "probability of correctable bit flips on a read"),
    ("--tag-flip", float, 0.0, 0.0, 1.0, "probability of a flipped bit in a page's tag"),
    ("--uncorrectable", float, 0.0, 0.0, 1.0, "probability of an uncorrectable read"),
    ("--program-fail", float, 0.0, 0.0, 1.0, "probability of a program failure (grown bad block)"),
    ("--erase-fail", float, 0.0, 0.0, 1.0, "probability of an erase failure (grown bad block)"),
    ("--factory-bad", float, 0.0, 0.0, 1.0, "fraction of factory bad blocks"),
    ("--refuse", float, 0.0, 0.0, 0.99, "probability that a submission finds the device's queue full"),
    ("--ckpt-pages", int, -1, -1, None, "map checkpoint every N pages written (-1: 32 x its own size, the FTL's "
     "default; 0: none)"),
    ("--ckpt-flush", int, 0, 0, 1, "a flush writes a checkpoint too (1)"),
    ("--corrupt-ckpt", float, 0.0, 0.0, 1.0, "probability per recovery that a page of the newest checkpoint rots"),
    ("--oracle", int, 0, 0, 1, "check every mount from a checkpoint against a full scan of a copy of the array (1)"),
]
CHOICES = {"--gc": ("greedy", "cost-benefit"), "--workload": ("uniform", "hotcold", "sequential")}


def add_parser(sub):
    f = sub.add_parser("ftl", help="The FTL on the host: torture against the NAND model.",
        description="'torture': the FTL's C sources built for the host against the NAND model, random "
        "requests checked against a shadow of every sector, with power cuts and injected faults "
        "(one JSON object with --json). On the simulated SoC: nandlab sim --run \"ftl format; ftl stats\".")
    fs = f.add_subparsers(dest="ftl_command", metavar="WHAT")
    t = fs.add_parser("torture", help="The FTL on the host against the NAND model.")
    for flag, kind, default, _, _, text in TORTURE_OPTIONS:
        t.add_argument(flag, type=kind, default=default, help=f"{text} (default {default}).")
    for flag, choices in CHOICES.items():
        t.add_argument(flag, choices=choices, default=choices[0], help=f"(default {choices[0]}).")
    t.add_argument("--static-wl", choices=("on", "off"), default="on", help="Static wear levelling (default on).")
    t.add_argument("--json", action="store_true", help="Print the run's JSON object only.")
    from nandlab import ftl_experiments, ftl_sim_cuts
    ftl_experiments.add_parser(fs)
    ftl_sim_cuts.add_parser(fs)
    r = fs.add_parser("remote", help="The FTL of a running SoC (simulated or a board) over the host bridge.",
        description="Runs 'ftl WORDS...' on a running SoC's firmware shell through litex_server (started by "
        "'nandlab sim', or 'nandlab server' for a board) and prints its output; the exit status is the "
        "command's. Example: nandlab ftl remote format; nandlab ftl remote write 0 64 7; "
        "nandlab ftl remote stats --json.")
    r.add_argument("words", nargs="+", metavar="WORD", help="The ftl command and its arguments (see 'ftl' on the shell).")
    r.add_argument("--target", default="sim", metavar="NAME", help="Whose build to use (default sim).")
    r.add_argument("--build-dir", metavar="DIR", help="The running SoC's build (e.g. build/sim8 after 'make sim'); "
        "default: the simulator serving --port, else build/TARGET, else the only build/sim*.")
    r.add_argument("--host", default="localhost")
    r.add_argument("--port", type=int, default=1234, help="litex_server port (default 1234).")
    r.add_argument("--timeout", type=float, default=600.0, help="Seconds to wait for the command (default 600).")
    r.add_argument("--json", action="store_true", help="One JSON object: command, status, output and its "
        "'name value' lines as values.")
    return f


def check_torture_args(args):
    """Every option in range (NandLabError naming the option) before anything is built."""
    for flag, kind, _, lo, hi, _ in TORTURE_OPTIONS:
        v = getattr(args, flag[2:].replace("-", "_"))
        if v < lo or (hi is not None and v > hi):
            limit = f"{lo}..{hi}" if hi is not None else f">= {lo}"
            raise NandLabError(f"{flag} {v}: takes {limit}")
    if args.sector_bytes not in (512, 4096):
        raise NandLabError(f"--sector-bytes {args.sector_bytes}: 512 or 4096")
    if args.page_bytes & (args.page_bytes - 1):
        raise NandLabError(f"--page-bytes {args.page_bytes}: a power of two")
    if args.blocks % args.planes:
        raise NandLabError(f"--blocks {args.blocks}: not a multiple of --planes {args.planes}")
    if args.read_ratio + args.trim_ratio > 1:
        raise NandLabError(f"--read-ratio {args.read_ratio} + --trim-ratio {args.trim_ratio} exceed 1")


def build_torture(out=None):
    """Compile the host torture driver (make; nothing when up to date); returns its path."""
    out = out or env.REPO / "build" / "ftl-host"
    r = subprocess.run(["make", "-s", "-C", str(HOST_DIR), f"OUT={out}"], capture_output=True, text=True)
    if r.returncode:
        raise NandLabError(f"building the FTL torture driver failed:\n{(r.stdout + r.stderr)[-3000:]}")
    return out / "ftl-torture"


def torture_argv(args):
    argv = []
    for flag, *_ in TORTURE_OPTIONS:
        argv += [flag, str(getattr(args, flag[2:].replace("-", "_")))]
    argv += ["--gc", args.gc, "--workload", args.workload, "--static-wl", "1" if args.static_wl == "on" else "0"]
    return argv


def run_torture(args):
    check_torture_args(args)
    exe = build_torture()
    r = subprocess.run([str(exe), *torture_argv(args)], capture_output=True, text=True)
    try:
        result = json.loads(r.stdout)
    except json.JSONDecodeError:
        raise NandLabError(f"the torture driver gave no result (exit {r.returncode}):\n{(r.stdout + r.stderr)[-2000:]}")
    return r.returncode, result


def _summary(d):
    keys = ["ops", "mismatches", "lost_acked", "power_cuts", "waf", "gc_runs", "gc_moves", "wl_moves", "nand_erases",
            "erase_min", "erase_max", "bad_grown", "ecc_corrected", "uncorrectable", "max_in_flight", "full_rejects",
            "ckpt_writes", "mounts_ckpt", "mounts_scan", "mount_reads_ckpt_mean", "mount_reads_scan_mean",
            "ckpt_fallbacks", "seconds"]
    width = max(map(len, keys))
    lines = [f"{k:<{width}}  {d[k]}" for k in keys if k in d]
    if d.get("first_error"):
        lines.append(f"first error: {d['first_error']}")
    return "\n".join(lines)


def check_args(args):
    """Every value of `nandlab ftl ...` checked before anything is built (NandLabError)."""
    if args.ftl_command == "torture":
        check_torture_args(args)
    elif args.ftl_command == "experiment":
        from nandlab.ftl_experiments import check_args as check_experiment
        check_experiment(args)
    elif args.ftl_command == "cuts":
        from nandlab.ftl_sim_cuts import check_args as check_cuts
        check_cuts(args)
    elif args.ftl_command == "remote":
        from nandlab import checks
        checks.port(args.port, "--port")
        if not args.timeout > 0:
            raise NandLabError(f"--timeout {args.timeout}: a positive number of seconds")
    else:
        raise NandLabError("nandlab ftl: say what: torture, experiment or cuts (see 'nandlab ftl --help')")


def remote_values(output):
    """The `name value` lines of a firmware command's output (ftl stats) as {name: int}."""
    values = {}
    for line in output.splitlines():
        m = re.fullmatch(r"([a-z_]+)\s+(\d+)(?:\.(\d+))?", line.strip())
        if m:
            values[m.group(1)] = float(f"{m.group(2)}.{m.group(3)}") if m.group(3) else int(m.group(2))
    return values


def cmd_remote(args):
    """`nandlab ftl remote WORDS...`: the words as one ftl command on the running SoC's shell."""
    from nandlab.cli import _csr_csv
    from nandlab.remote import RemoteShell
    args.csr_csv = None
    line = " ".join(["ftl", *args.words])
    with RemoteShell.connect(args.port, _csr_csv(args).parent, host=args.host) as sh:
        status, output = sh.run(line, timeout=args.timeout)
    if args.json:
        print(json.dumps(dict(command=line, status=status, output=output, values=remote_values(output))))
    else:
        print(output, end="" if output.endswith("\n") else "\n")
    return 0 if status == 0 else 1


def cmd_ftl(args):
    if args.ftl_command == "torture":
        rc, result = run_torture(args)
        print(json.dumps(result) if args.json else _summary(result))
        return 1 if rc or result.get("mismatches") else 0
    if args.ftl_command == "experiment":
        from nandlab.ftl_experiments import cmd_experiment
        return cmd_experiment(args)
    if args.ftl_command == "cuts":
        from nandlab.ftl_sim_cuts import cmd_cuts
        return cmd_cuts(args)
    if args.ftl_command == "remote":
        return cmd_remote(args)
    raise NandLabError("nandlab ftl: say what: torture, experiment or cuts (see 'nandlab ftl --help')")
