"""`nandlab ftl cuts`: power cuts of the simulated SoC while its FTL writes, each followed by a recovery
and a check of every sector the host was told is written.

The FTL issue asks for >= 50 power cuts in simulation beside the host build's thousands: a cut here
is a reset of the whole SoC (`ctrl_reset` through the host bridge: CPU, channel controller and dies
restart mid-operation) while the simulated arrays keep what was programmed, as a real device keeps
its flash. The run:

1. builds the simulated SoC at a small geometry (a mount reads every page's tag: a small device
   keeps the 50 recoveries within minutes), formats the FTL with 512-byte sectors (a page holds
   whole sectors, so a page's atomicity makes each sector atomic), and writes every chunk of the
   logical space once (a chunk: CHUNK_SECTORS sectors, one request);
2. then, `cuts` times: overwrites a random chunk with a new pattern seed (the logical space is full,
   so the garbage collector runs and erases), resets the SoC once the controller has completed a
   random number of that write's operations (fewer than the write needs: the cut lands inside
   it), reboots, mounts (host time and the FTL's recovery time in SoC cycles recorded), checks that
   every sector of the cut chunk holds its old or its new pattern (`ftl check`), never anything
   else, writes that chunk once more (acknowledged, so the host's shadow is exact again) and checks
   CHECK_CHUNKS other chunks against the shadow;
3. checks every chunk at the end.

A write that completed before the reset reached the SoC counts as acknowledged (its chunk must
then hold the new pattern). A sector that holds neither expected pattern is counted (mismatches in
the cut chunk, lost_acknowledged elsewhere), named in bad_chunks, and makes the exit status 1. One
JSON object with --json.
"""

import random
import re
import time

from nandlab import env
from nandlab.errors import NandLabError

CHUNK_SECTORS = 128        # 64 KiB of 512-byte sectors: 32 pages of 2 KiB, one request
CHECK_CHUNKS  = 2          # acknowledged chunks checked after each cut (besides the cut one)
DEFAULTS = dict(cuts=50, dies=4, blocks=32, pages=16, seed=1)
LIMITS = dict(cuts=(1, 10000), dies=(1, 16), blocks=(4, 1024), pages=(4, 64))


def add_parser(fs):
    c = fs.add_parser("cuts", help="Power cuts of the simulated SoC while the FTL writes (SoC reset, arrays kept).",
        description=__doc__.split("\n\n")[0] + " Each cut: a random chunk overwritten, the SoC reset inside "
        "that write, `ftl mount`, the chunk checked (old or new pattern, nothing else), rewritten, and "
        "other chunks checked; every chunk checked at the end.")
    c.add_argument("--cuts", type=int, default=DEFAULTS["cuts"], help=f"Power cuts (default {DEFAULTS['cuts']}).")
    c.add_argument("--dies", type=int, default=DEFAULTS["dies"], help=f"Emulated dies (default {DEFAULTS['dies']}).")
    c.add_argument("--nand-blocks", type=int, default=DEFAULTS["blocks"],
                   help=f"Blocks per die (default {DEFAULTS['blocks']}: a mount reads every page's tag).")
    c.add_argument("--nand-pages", type=int, default=DEFAULTS["pages"],
                   help=f"Pages per block (default {DEFAULTS['pages']}).")
    c.add_argument("--seed", type=int, default=DEFAULTS["seed"], help="Seed of the chunks and cut points (default 1).")
    c.add_argument("--json", action="store_true", help="Print one JSON object instead of the summary.")
    c.add_argument("-v", "--verbose", action="store_true", help="Show the build's tool output.")


def check_args(args):
    """Every option in range, the geometry one the simulator takes (NandLabError), before any build."""
    for name, (lo, hi) in LIMITS.items():
        value = getattr(args, {"blocks": "nand_blocks", "pages": "nand_pages"}.get(name, name))
        if not lo <= value <= hi:
            flag = {"blocks": "--nand-blocks", "pages": "--nand-pages"}.get(name, f"--{name}")
            raise NandLabError(f"{flag} {value}: takes {lo}..{hi}")
    from nandlab.soc.targets import sim as simtarget
    try:
        simtarget.nand_options(blocks=args.nand_blocks, pages=args.nand_pages)
    except ValueError as e:
        raise NandLabError(str(e)) from None


def _stat(stats, name):
    m = re.search(rf"^{name}\s+(\d+)$", stats, re.M)
    if not m:
        raise NandLabError(f"ftl stats printed no {name}:\n{stats[-1500:]}")
    return int(m.group(1))


class _Device:
    """The booted simulator, its bridge and the host's shadow: the pattern seed of every chunk (0: never written)."""

    def __init__(self, console, bus, say):
        self.console, self.bus, self.say = console, bus, say
        self.bad = []              # chunks with sectors holding neither expected pattern

    def run(self, line, timeout=900):
        from nandlab.simulator import command_failed
        out = self.console.command(line, timeout=timeout)
        if command_failed(out):
            raise NandLabError(f"'{line}' failed on the simulated SoC:\n{out[-2000:]}")
        return out

    def check(self, chunk, first, second=None):
        """`ftl check` of a chunk: sectors holding `first`'s pattern, `second`'s, and neither (those
        named in `self.bad`). A read the FTL refuses raises."""
        def arg(seed):
            return "zero" if seed == 0 else str(seed)
        line = f"ftl check {chunk * CHUNK_SECTORS} {CHUNK_SECTORS} {arg(first)}" + (
            f" {arg(second)}" if second is not None else "")
        out = self.console.command(line, timeout=900)
        m = re.search(r"^check sector=\d+ count=\d+ first=(\d+) second=(\d+) neither=(\d+)$", out, re.M)
        if not m:
            raise NandLabError(f"'{line}' failed on the simulated SoC:\n{out[-2000:]}")
        n1, n2, neither = (int(g) for g in m.groups())
        if neither:
            self.bad.append(dict(chunk=chunk, sectors=neither, output=out[-800:]))
        return n1, n2, neither

    def boot_after_reset(self):
        from nandlab.simulator import BANNER, PROMPT
        before = self.console.expect(BANNER, 300)
        self.console.expect(PROMPT, 300)
        return before


def run_cuts(cuts=50, dies=4, blocks=32, pages=16, seed=1, verbose=False, progress=True):
    """The experiment; returns its result dict (raises NandLabError on a lost or wrong sector)."""
    from litex import RemoteClient
    from nandlab.soc.targets import sim as simtarget
    from nandlab.simulator import SimConsole, BridgeServer, prepare_run_dir, free_tcp_port, PROMPT
    from nandlab.steps import say
    log = say if progress else (lambda *a, **k: None)
    nand = dict(blocks=blocks, pages=pages)
    build_dir = env.BUILD_DIR / simtarget.build_dir_name(dies, **nand)
    gateware = simtarget.build_all(build_dir, verbose=verbose, dies=dies, **nand)
    bridge = free_tcp_port()
    run_dir = prepare_run_dir(gateware, build_dir / "run-ftl-cuts", bridge_port=bridge)
    rng = random.Random(seed)
    result = dict(experiment="ftl power cuts in simulation", dies=dies, blocks=blocks, pages=pages,
                  sector_bytes=512, chunk_sectors=CHUNK_SECTORS, seed=seed, cuts=0, cut_inside_write=0,
                  write_done_before_cut=0, sectors_old=0, sectors_new=0, lost_acknowledged=0, mismatches=0,
                  recoveries=[])
    with SimConsole(gateware, run_dir) as console:
        console.boot(timeout=300)
        with BridgeServer(bridge, log_path=run_dir / "litex_server.log") as server:
            bus = RemoteClient(port=server.bind_port, csr_csv=str(build_dir / "csr.csv"))
            bus.open()
            try:
                dev = _Device(console, bus, log)
                dev.run("ftl config sector 512")
                dev.run("ftl format")
                sectors = int(re.search(r"^capacity: (\d+) sectors", dev.run("ftl info"), re.M).group(1))
                chunks = sectors // CHUNK_SECTORS
                if chunks < CHECK_CHUNKS + 2:
                    raise NandLabError(f"{dies} dies x {blocks} blocks x {pages} pages hold {chunks} chunks of "
                                       f"{CHUNK_SECTORS} sectors: too few for the experiment (more blocks or pages)")
                result["chunks"] = chunks
                shadow, next_seed = [0] * chunks, 1
                log(f"ftl cuts: filling {chunks} chunks of {CHUNK_SECTORS} sectors ...")
                for c in range(chunks):
                    dev.run(f"ftl write {c * CHUNK_SECTORS} {CHUNK_SECTORS} {next_seed}")
                    shadow[c], next_seed = next_seed, next_seed + 1
                pages_per_chunk = CHUNK_SECTORS * 512 // 2048
                for k in range(cuts):
                    c, new = rng.randrange(chunks), next_seed
                    next_seed += 1
                    at = rng.randrange(1, pages_per_chunk)
                    done0 = bus.regs.nand_ctrl_completed.read()
                    console.send(f"ftl write {c * CHUNK_SECTORS} {CHUNK_SECTORS} {new}\r")
                    budget = console.budget(600)
                    while bus.regs.nand_ctrl_completed.read() < done0 + at and PROMPT not in console.unread():
                        if budget.expired():
                            raise NandLabError(f"the write of chunk {c} made no progress within {budget.describe()}:"
                                               f"\n{console.unread()[-1500:]}")
                    bus.regs.ctrl_reset.write(1)
                    before = dev.boot_after_reset()
                    acknowledged = re.search(rf"ftl write: sectors {c * CHUNK_SECTORS}\.\.", before) is not None
                    dev.run("ftl config sector 512")
                    t0 = time.monotonic()
                    dev.run("ftl mount")
                    wall = time.monotonic() - t0
                    stats = dev.run("ftl stats")
                    rec = dict(cut=k, chunk=c, after_completions=at, acknowledged=acknowledged,
                               recovery_us=_stat(stats, "recovery_us"),
                               recovery_cycles=_stat(stats, "recovery_us") * 100,
                               recovery_pages_read=_stat(stats, "recovery_pages_read"),
                               lost_pages=_stat(stats, "lost_pages"), host_s=round(wall, 2))
                    if acknowledged:
                        newer, _, neither = dev.check(c, new)
                        old = 0
                        result["write_done_before_cut"] += 1
                        result["lost_acknowledged"] += neither
                    else:
                        newer, old, neither = dev.check(c, new, shadow[c])
                        result["cut_inside_write"] += 1
                    result["mismatches"] += neither
                    result["sectors_old"] += old
                    result["sectors_new"] += newer
                    rec.update(sectors_old=old, sectors_new=newer)
                    result["recoveries"].append(rec)
                    # The chunk made exact again, then others checked against the shadow.
                    dev.run(f"ftl write {c * CHUNK_SECTORS} {CHUNK_SECTORS} {next_seed}")
                    shadow[c], next_seed = next_seed, next_seed + 1
                    for o in rng.sample(range(chunks), CHECK_CHUNKS):
                        result["lost_acknowledged"] += dev.check(o, shadow[o])[2]
                    result["cuts"] += 1
                    log(f"ftl cuts: {k + 1}/{cuts}: chunk {c} cut after {at} completions "
                        f"({'acknowledged first' if acknowledged else f'{old} old, {newer} new sectors'}), "
                        f"mount {rec['recovery_us']} us SoC time ({rec['recovery_pages_read']} pages read), "
                        f"{wall:.1f} s host")
                log(f"ftl cuts: checking all {chunks} chunks ...")
                for c in range(chunks):
                    result["lost_acknowledged"] += dev.check(c, shadow[c])[2]
                result["bad_chunks"] = dev.bad
                stats = dev.run("ftl stats")
                result.update(nand_erases=_stat(stats, "nand_erases"), gc_runs=_stat(stats, "gc_runs"))
            finally:
                bus.close()
    recs = result["recoveries"]
    if recs:
        for key in ("recovery_us", "recovery_pages_read", "host_s"):
            vals = sorted(r[key] for r in recs)
            result[f"{key}_median"] = vals[len(vals) // 2]
            result[f"{key}_max"] = vals[-1]
    return result


def summary(r):
    lines = [
        f"FTL power cuts on the simulated SoC: {r['dies']} dies x {r['blocks']} blocks x {r['pages']} pages, "
        f"512 B sectors, chunks of {r['chunk_sectors']}, seed {r['seed']}",
        f"  cuts: {r['cuts']} ({r['cut_inside_write']} inside a write, {r['write_done_before_cut']} after it was "
        f"acknowledged)",
        f"  sectors of the cut writes found old / new: {r['sectors_old']} / {r['sectors_new']}; "
        f"acknowledged sectors lost: {r['lost_acknowledged']}; mismatches: {r['mismatches']}",
    ]
    if r["recoveries"]:
        lines.append(f"  recovery (ftl mount): median {r['recovery_us_median']} us SoC time "
                     f"({r['recovery_us_median'] * 100} cycles at 100 MHz), max {r['recovery_us_max']} us; "
                     f"{r['recovery_pages_read_median']} pages read; host {r['host_s_median']} s median, "
                     f"{r['host_s_max']} s max")
        lines.append(f"  the FTL's erases over the run: {r.get('nand_erases')}, GC runs: {r.get('gc_runs')}")
    return "\n".join(lines)


def cmd_cuts(args):
    import json
    r = run_cuts(cuts=args.cuts, dies=args.dies, blocks=args.nand_blocks, pages=args.nand_pages, seed=args.seed,
                 verbose=args.verbose)   # progress on stderr, the JSON alone on stdout
    print(json.dumps(r) if args.json else summary(r))
    return 1 if r["lost_acknowledged"] or r["mismatches"] else 0
