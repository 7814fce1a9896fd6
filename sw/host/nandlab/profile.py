"""`nandlab profile`: where the soft CPU spends its time in a piece of firmware work, by function.

Boots the simulated SoC, runs `prof start PERIOD`, the given shell commands, then `prof dump` (the
firmware's sampling profiler, sw/firmware/cmds_prof.c: timer 0 interrupts every PERIOD cycles and
counts the interrupted program counter), and names the histogram's buckets from the firmware
image's symbols (`riscv64-unknown-elf-nm`). Prints the functions by share of the samples, or one
JSON object with --json.
"""

import re
import subprocess
from bisect import bisect_right

from nandlab import env
from nandlab.errors import NandLabError

DEFAULTS = dict(dies=4, period=20000, top=25)


def add_parser(sub):
    p = sub.add_parser("profile", help="Where the firmware's CPU time goes (sampling profiler, simulated SoC).",
        description=__doc__.split("\n\n")[1].replace("\n", " "))
    p.add_argument("--run", required=True, metavar="CMDS",
                   help="Shell commands to profile, separated by ';' (e.g. \"ftl format; ftl bench 128\").")
    p.add_argument("--setup", metavar="CMDS", default="",
                   help="Shell commands run before the profiler starts (e.g. \"ftl format\").")
    p.add_argument("--dies", type=int, default=DEFAULTS["dies"], help=f"Emulated dies (default {DEFAULTS['dies']}).")
    p.add_argument("--period", type=int, default=DEFAULTS["period"],
                   help=f"SoC cycles between samples (default {DEFAULTS['period']}; at least 1000).")
    p.add_argument("--top", type=int, default=DEFAULTS["top"], help=f"Functions listed (default {DEFAULTS['top']}).")
    p.add_argument("--timeout", type=float, default=1800,
                   help="Seconds of simulator processor time for the commands (default 1800).")
    p.add_argument("--json", action="store_true", help="One JSON object instead of the table.")


def check_args(args):
    if not 1 <= args.dies <= 16:
        raise NandLabError(f"--dies {args.dies}: takes 1..16")
    if not 1000 <= args.period <= 2**32 - 1:
        raise NandLabError(f"--period {args.period}: takes 1000..{2**32 - 1} cycles")
    if args.top < 1:
        raise NandLabError(f"--top {args.top}: at least 1")
    if not [c for c in args.run.split(";") if c.strip()]:
        raise NandLabError("--run: give at least one shell command")


def symbols(elf):
    """The image's functions as a sorted list of (address, size, name)."""
    nm = env.which("riscv64-unknown-elf-nm")
    if nm is None:
        raise NandLabError("riscv64-unknown-elf-nm not found: install gcc-riscv64-unknown-elf (make env does this)")
    out = subprocess.run([nm, "-S", "--defined-only", str(elf)], capture_output=True, text=True)
    syms = []
    for line in out.stdout.splitlines():
        f = line.split()
        if len(f) == 4 and f[2] in "tTwW":
            syms.append((int(f[0], 16), int(f[1], 16), f[3]))
    return sorted(syms)


def parse_dump(text):
    """`prof dump`'s output as (header dict, {bucket: count})."""
    m = re.search(r"^prof base=0x([0-9a-f]+) shift=(\d+) period=(\d+) samples=(\d+) outside=(\d+)$", text, re.M)
    if not m:
        raise NandLabError(f"prof dump printed no header:\n{text[-1500:]}")
    head = dict(base=int(m.group(1), 16), shift=int(m.group(2)), period=int(m.group(3)), samples=int(m.group(4)),
                outside=int(m.group(5)))
    counts = {int(b): int(c) for b, c in re.findall(r"^prof (\d+) (\d+)$", text, re.M)}
    return head, counts


def attribute(head, counts, syms):
    """Samples per function (a bucket goes to the function holding its first address)."""
    starts = [s[0] for s in syms]
    per = {}
    for b, c in counts.items():
        addr = head["base"] + (b << head["shift"])
        i = bisect_right(starts, addr) - 1
        name = syms[i][2] if i >= 0 and addr < syms[i][0] + max(syms[i][1], 1 << head["shift"]) else "(unknown)"
        per[name] = per.get(name, 0) + c
    total = sum(per.values()) or 1
    rows = sorted(({"function": n, "samples": c, "share": c / total} for n, c in per.items()),
                  key=lambda r: -r["samples"])
    return rows


def run_profile(cmds, dies=4, period=20000, timeout=1800, verbose=False, setup=""):
    from nandlab.soc.targets import sim as simtarget
    from nandlab.simulator import SimConsole, prepare_run_dir, free_tcp_port, command_failed
    build_dir = env.BUILD_DIR / simtarget.build_dir_name(dies)
    gateware = simtarget.build_all(build_dir, verbose=verbose, dies=dies)
    run_dir = prepare_run_dir(gateware, build_dir / "run-profile", bridge_port=free_tcp_port())
    outputs = []
    with SimConsole(gateware, run_dir) as console:
        console.boot(timeout=300)
        for cmd in (c.strip() for c in setup.split(";")):
            if cmd:
                out = console.command(cmd, timeout=timeout)
                if command_failed(out):
                    raise NandLabError(f"setup command '{cmd}' failed:\n{out[-1500:]}")
        out = console.command(f"prof start {period}")
        if command_failed(out):
            raise NandLabError(f"prof start failed:\n{out}")
        for cmd in (c.strip() for c in cmds.split(";")):
            if cmd:
                out = console.command(cmd, timeout=timeout)
                outputs.append(dict(command=cmd, output=out, failed=command_failed(out)))
        dump = console.command("prof dump", timeout=300)
    head, counts = parse_dump(dump)
    rows = attribute(head, counts, symbols(build_dir / "software" / "firmware" / "firmware.elf"))
    return dict(profile="firmware", dies=dies, period_cycles=period, samples=head["samples"],
                outside_text=head["outside"], commands=outputs, functions=rows)


def cmd_profile(args):
    import json
    r = run_profile(args.run, dies=args.dies, period=args.period, timeout=args.timeout, verbose=args.verbose,
                    setup=args.setup)
    if args.json:
        r["functions"] = r["functions"][:max(args.top, 1)] if args.top else r["functions"]
        print(json.dumps(r))
    else:
        for c in r["commands"]:
            print(f"> {c['command']}\n{c['output'].rstrip()}")
        print(f"\nprofile: {r['samples']} samples, one per {r['period_cycles']} SoC cycles ({r['dies']} dies); "
              f"{r['outside_text']} outside the image's code")
        print("| function | samples | share |")
        print("|---|---|---|")
        for row in r["functions"][:args.top]:
            print(f"| {row['function']} | {row['samples']} | {100 * row['share']:.1f} % |")
    return 1 if any(c["failed"] for c in r["commands"]) else 0
