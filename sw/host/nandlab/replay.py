"""`nandlab replay TRACE --format F`: an I/O trace replayed through the FTL on the simulated SoC (issue 16).

The trace is parsed and mapped on the host (nandlab.trace: TraceReader, Mapper, ring records), the SoC
booted in litex_sim, the FTL formatted, the records written into the firmware's ring in main RAM
through the host bridge (litex_server + RemoteClient), `ftl replay run` replays them (sw/firmware/
ftl_replay.c: checked writes and reads, closed or open loop) and one result per record is read back.
Out: per-request CSV and Parquet, a JSON summary (throughput, IOPS, latency percentiles and histogram,
throughput over time, the reader's and mapper's reports, the firmware's counters), a latency CDF and
throughput over time (PNG). All times are SoC
time (the firmware's timebase), so the host's load does not enter them. docs/replay.md has the layouts.
"""

import contextlib
import csv
import json
import math
import re
import struct
import sys
import time
from pathlib import Path
from typing import Callable, NamedTuple

from nandlab import env
from nandlab.errors import NandLabError
from nandlab.nand_model.common import ARCH_NAMES

# struct ftl_replay_result (sw/firmware/ftl_replay.h): id, submit_us, latency_cycles, result, flags, mismatches,
# wait_cycles (the CPU waiting for the NAND while the request was in flight).
RESULT_FORMAT = "<IIIbBHI"
RESULT_BYTES = struct.calcsize(RESULT_FORMAT)
RES_WRITE, RES_WAITED, RES_MISMATCH = 1, 2, 4
MAX_QD = 32                      # FTL_REPLAY_MAX_QD
MAX_DIES = 16
SCHED_MAX_DEPTH = 256            # sw/firmware/sched.h
ARCHS = tuple(ARCH_NAMES[i] for i in sorted(ARCH_NAMES))      # the dies' `arch` values, by name
BURST = 128                      # words per bridge transfer (an Etherbone record counts them in a byte)
PERCENTILES = (50, 99, 99.9)
BRIDGE_TIMEOUT_S = 300
TELEMETRY_FRAME_US = 10          # a telemetry frame per 10 us of SoC time during a replay (peaks kept per frame)


def add_parser(sub):
    p = sub.add_parser("replay", help="Replay an I/O trace through the FTL on the simulated SoC.",
        description="Parses and maps TRACE (mqsim, ssdsim, spc, msr, or a synth preset's name with --format "
        "synth), boots the simulated SoC, formats the FTL, writes the requests into the firmware's ring "
        "through the host bridge and replays them: every write fills its sectors with a pattern of (sector, "
        "write version), every read is checked. Closed loop (--qd N: N requests in flight, arrival times "
        "ignored) or open loop (--qd 0: each request at its arrival time x --time-scale). Writes a per-request "
        "CSV and Parquet table, a JSON summary, a latency CDF and throughput over time (PNG) to --out. Times are "
        "SoC time.")
    p.add_argument("trace", metavar="TRACE", help="Trace file, or a synth preset's name (--format synth).")
    p.add_argument("--format", required=True, choices=("mqsim", "ssdsim", "spc", "msr", "synth"), help="Trace format.")
    p.add_argument("--qd", type=int, default=32, help=f"Requests in flight, 1..{MAX_QD}; 0 = open loop (default 32).")
    p.add_argument("--time-scale", type=float, default=1.0, metavar="F",
                   help="Arrival times x F (open loop; 0.5 = twice as fast; default 1).")
    p.add_argument("--max-requests", type=int, metavar="N", help="Replay only the first N requests of the trace.")
    p.add_argument("--skip-bad", action="store_true", help="Skip malformed trace lines (counted by reason).")
    p.add_argument("--dies", type=int, default=4, help=f"Simulated dies, 1..{MAX_DIES} (default 4).")
    p.add_argument("--seed", type=int, default=1, help="Seed of a synth preset (default 1).")
    p.add_argument("--out", metavar="DIR", help="Output directory (default build/replay/<trace name>).")
    p.add_argument("--json", action="store_true", help="Print one JSON object (the summary) instead of the table.")
    p.add_argument("--precondition", choices=("none", "fill", "steady"), default="none",
                   help="Before the measured run: 'fill' writes every sector of the FTL once, sequentially (the "
                   "largest requests a slot takes); 'steady' then writes --precondition-writes x the capacity in "
                   "random single sectors, so that garbage collection runs as in a used device. Reads of the trace "
                   "check what the preconditioning wrote; its counters are reported apart. Slow at the default "
                   "capacity: use --blocks to simulate a smaller device (default none).")
    p.add_argument("--precondition-writes", type=float, default=1.0, metavar="X",
                   help="steady: random writes as a multiple of the capacity (default 1.0).")
    p.add_argument("--window", type=int, metavar="W", help="Stream the requests through a window of W ring entries "
                   "that the host refills while the run goes on (default: the whole trace in the ring when it fits, "
                   "else streamed through the whole ring). Underruns (the firmware waiting for the host) are counted.")
    p.add_argument("--blocks", type=int, metavar="N", help="Blocks per simulated die (default: the simulator's "
                   "1024); fewer make a smaller device that preconditioning fills quickly.")
    p.add_argument("--nand-part", metavar="NAME", help="Part of the simulated dies, from 'nandlab nand parts' "
                   "(default: the simulator's, NL-SLC-2K).")
    p.add_argument("--nand-pages", type=int, metavar="N", help="Pages per block of the simulated dies, up to the "
                   "part's (default: the simulator's 64).")
    p.add_argument("--nand-sdw", action="store_true", help="Simulated dies with SDW-NFM's subplane registers "
                   "(needed by --arch SDW-NFM to group more than one page per plane).")
    p.add_argument("--nand-time-scale", type=int, metavar="N", help="Simulated dies' array times divided by N "
                   "(1 = the part's own tR/tPROG/tBERS; default: the simulator's 10).")
    p.add_argument("--prep-time-shift", type=int, default=0, metavar="N",
                   help="Run the format and the preconditioning with the dies' array times divided by 2**N more "
                   "('die time-shift N'), the measured run at the build's own (0..20, default 0). Only the state "
                   "they leave matters: at --nand-time-scale 1 an erase-heavy format otherwise takes minutes.")
    p.add_argument("--arch", choices=ARCHS, help="Plane architecture the dies enforce for the run ('die arch'; "
                   "default: theirs, CNFM after a reset). SDW-NFM needs dies built with subplane registers.")
    p.add_argument("--sched", type=int, default=0, metavar="DEPTH",
                   help=f"Multi-plane scheduler between the FTL and the controllers with a queue of DEPTH page "
                   f"operations, 1..{SCHED_MAX_DEPTH}, pairing them under the dies' architecture (sw/firmware/sched.c); "
                   "0 = off, every operation alone (default 0).")
    p.add_argument("--ftl-span", default="auto", metavar="N|auto",
                   help="Block groups per plane an FTL superblock spans, 1..8 ('ftl config span'): auto takes 4 on dies "
                   "with SDW-NFM's subplane registers (a block of every subplane, so that a die's consecutive pages "
                   "fill its 8 registers) where the members fit, else 1 (default auto).")
    p.add_argument("--ftl-stagger", type=int, default=0, metavar="PAGES",
                   help="Pages by which each plane's write point trails the previous plane's ('ftl config stagger'): "
                   "0 keeps a superblock row's planes on one page address (pairs for CNFM by construction); an even "
                   "value keeps their page types equal and their addresses apart, a model of unsynchronised "
                   "allocation (default 0).")
    p.add_argument("--ftl-sector", type=int, choices=(512, 4096), metavar="BYTES",
                   help="The FTL's logical sector, 512 or 4096 bytes ('ftl config sector'; default: the firmware's 4096).")
    p.add_argument("--mpnfm", action="store_true",
                   help="MPNFM ('ftl config mpnfm on', sw/firmware/ftl/mpnfm.h): the dies' plane 1 in the part's small pages, "
                   "an FTL on each plane and the MPNFM paper's request distributor and region table in front of them "
                   "(an MPNFM part, e.g. --nand-part MPNFM-32-4; the paper's sectors are 512 B: --ftl-sector 512).")
    p.add_argument("--theta", type=int, default=0, metavar="BYTES",
                   help="With --mpnfm: writes smaller than BYTES go to the small pages (default 0: one small page, the "
                   "paper's theta).")
    p.add_argument("--theta-rule", choices=("lt", "le"), default="lt",
                   help="With --mpnfm: 'lt' sends writes below theta to the small pages (the paper: 'smaller than'), "
                   "'le' those of theta too (default lt).")
    p.add_argument("--timeout", type=float, default=7200.0,
                   help="Simulator processor seconds the replay may take (default 7200).")
    p.add_argument("--server", metavar="[HOST:]PORT", help="Replay on the SoC already running behind litex_server "
                   "there (a board after 'nandlab server --target NAME', or 'nandlab sim'), driving its shell through "
                   "the bridge, instead of booting a simulator. Telemetry is not recorded (watch it with 'nandlab "
                   "monitor').")
    p.add_argument("--target", default="sim", metavar="NAME", help="With --server: whose build the running SoC is "
                   "(csr.csv, firmware), default sim.")
    p.add_argument("--build-dir", metavar="DIR", help="With --server: the running SoC's build directory (default: "
                   "the simulator serving that port, else build/TARGET).")


def check_args(args):
    """Everything that can be checked before a build (cli.CHECKS)."""
    from nandlab import trace
    if not 0 <= args.sched <= SCHED_MAX_DEPTH:
        raise NandLabError(f"--sched {args.sched}: the scheduler's queue takes 1..{SCHED_MAX_DEPTH} entries (0: off)")
    if not 0 <= args.qd <= MAX_QD:
        raise NandLabError(f"--qd {args.qd}: takes 0 (open loop) .. {MAX_QD}")
    if not (math.isfinite(args.time_scale) and args.time_scale >= 0):
        raise NandLabError(f"--time-scale {args.time_scale}: a finite number >= 0")
    if args.ftl_span != "auto" and not (args.ftl_span.isdigit() and 1 <= int(args.ftl_span) <= 8):
        raise NandLabError(f"--ftl-span {args.ftl_span}: 1..8 block groups per plane, or auto")
    if not 0 <= args.ftl_stagger <= 255:
        raise NandLabError(f"--ftl-stagger {args.ftl_stagger}: 0..255 pages")
    if args.theta < 0 or args.theta % 512 or args.theta > 1 << 20:
        raise NandLabError(f"--theta {args.theta}: a multiple of 512 bytes up to 1 MiB (0: one small page)")
    if (args.theta or args.theta_rule != "lt") and not args.mpnfm:
        raise NandLabError("--theta and --theta-rule choose MPNFM's distributor: they need --mpnfm")
    if args.mpnfm and args.sched:
        raise NandLabError("--mpnfm runs without the multi-plane scheduler: drop --sched")
    if not 0 <= args.prep_time_shift <= 20:
        raise NandLabError(f"--prep-time-shift {args.prep_time_shift}: 0..20 (array times divided by 2**N)")
    if not 1 <= args.dies <= MAX_DIES:
        raise NandLabError(f"--dies {args.dies}: takes 1..{MAX_DIES}")
    if not args.timeout > 0 or not math.isfinite(args.timeout):
        raise NandLabError(f"--timeout {args.timeout}: more than 0 seconds")
    if args.out and Path(args.out).exists() and not Path(args.out).is_dir():
        raise NandLabError(f"--out {args.out}: exists and is not a directory")
    if args.window is not None and not 1 <= args.window <= 65536:
        raise NandLabError(f"--window {args.window}: 1..65536 ring entries")
    if not (math.isfinite(args.precondition_writes) and 0 < args.precondition_writes <= 100):
        raise NandLabError(f"--precondition-writes {args.precondition_writes}: a multiple of the capacity in (0, 100]")
    if args.server is not None:
        from nandlab import checks
        from nandlab.soc import targets
        host, args.port = checks.host_port(args.server if ":" in args.server else f":{args.server}", "--server")
        args.host = "localhost" if host == "127.0.0.1" else host
        args.csr_csv = None
        targets.check_target(args.target)
        given = [f for f, v in (("--blocks", args.blocks), ("--nand-part", args.nand_part),
                 ("--nand-pages", args.nand_pages), ("--nand-sdw", args.nand_sdw or None),
                 ("--nand-time-scale", args.nand_time_scale)) if v is not None]
        if given:
            raise NandLabError(f"{', '.join(given)}: a running SoC's dies are what they were built as (these options "
                               "only without --server)")
    elif args.target != "sim" or args.build_dir:
        raise NandLabError("--target and --build-dir name the build of a running SoC: give its --server too")
    else:
        from nandlab.soc.targets import sim as simtarget
        try:
            simtarget.nand_options(**sim_nand(args))
        except ValueError as e:
            raise NandLabError(str(e) if "--nand" in str(e) else
                               f"{_nand_flags(args) or '--nand-part'}: {e}") from None
        if args.mpnfm:
            from nandlab.nand_model.parts import get_part
            part = get_part(simtarget.nand_options(**sim_nand(args))["part"])
            if not part.is_mpnfm or part.small_page_size < 4096:
                what = f"small pages of {part.small_page_size} B (no room for the FTL's tag beside their ECC)" \
                    if part.is_mpnfm else "no small pages"
                raise NandLabError(f"--mpnfm: {part.model} has {what}; take an MPNFM part (--nand-part MPNFM-32-4)")
    trace.check_args(args)


def arguments(trace, **options):
    """The parsed and checked arguments of `nandlab replay TRACE --OPTION VALUE ...`, for replays started
    from Python (nandlab.planes, nandlab.mpnfm, the tests): options by their names in the namespace
    (format="synth", nand_part="MPNFM-32-4", nand_sdw=True); None or False leaves an option out (its
    default). Parsed and checked by the command line itself (cli.check_command_line), so that the
    defaults and checks are the command's and cannot drift from it; raises NandLabError as it does."""
    from nandlab import cli
    argv = ["replay", str(trace)]
    for name, value in options.items():
        if value is None or value is False:
            continue
        argv.append("--" + name.replace("_", "-"))
        if value is not True:
            argv.append(str(value))
    return cli.check_command_line(argv)


def sim_nand(args):
    """The simulated dies' options given on the command line (soc/targets/sim.py nand_options' keywords)."""
    given = {"blocks": args.blocks, "part": args.nand_part, "pages": args.nand_pages,
             "sdw": True if args.nand_sdw else None, "time_scale": args.nand_time_scale}
    return {k: v for k, v in given.items() if v is not None}


def _nand_flags(args):
    """The --blocks/--nand-* options given, for an error message."""
    names = {"blocks": "--blocks", "part": "--nand-part", "pages": "--nand-pages", "sdw": "--nand-sdw",
             "time_scale": "--nand-time-scale"}
    return ", ".join(f"{names[k]} {v}" if not isinstance(v, bool) else names[k] for k, v in sim_nand(args).items())


# Results ------------------------------------------------------------------------------------------------

def decode_results(data):
    """[(id, submit_us, latency_cycles, result, flags, mismatches, wait_cycles)] of the results buffer's bytes."""
    if len(data) % RESULT_BYTES:
        raise NandLabError(f"results: {len(data)} bytes is not a whole number of {RESULT_BYTES}-byte results")
    return [struct.unpack_from(RESULT_FORMAT, data, i) for i in range(0, len(data), RESULT_BYTES)]


def percentile(values, p):
    """Nearest-rank percentile p (0 < p <= 100) of `values` (None when empty): the smallest value with at
    least p % of the values at or below it."""
    if not values:
        return None
    s = sorted(values)
    return s[max(0, math.ceil(round(p * len(s) / 100, 9)) - 1)]   # round: 99.9 % of 1000 is 999


def histogram(values):
    """Counts in power-of-two buckets: [(lo, hi, count)] with lo <= v < hi (the first bucket from 0)."""
    if not values:
        return []
    top = max(1, math.ceil(max(values)))
    edges = [0] + [2 ** k for k in range(0, top.bit_length() + 1)]
    counts = [0] * (len(edges) - 1)
    for v in values:
        i = 0 if v < 1 else min(len(counts) - 1, int(math.floor(math.log2(v))) + 1)
        counts[i] += 1
    return [(edges[i], edges[i + 1], c) for i, c in enumerate(counts) if c]


def parse_kv(text, prefix):
    """The `prefix k=v ...` line of a firmware command as a dict (ints, hex addresses included)."""
    m = re.search(rf"^{prefix} (\S+=.+)$", text, re.M)
    if not m:
        raise NandLabError(f"the firmware printed no '{prefix} ...' line:\n{text[-1500:]}")
    return {k: int(v, 0) for k, v in (kv.split("=", 1) for kv in m.group(1).split())}


def analyze(records, results, fw, clock_hz, sector_bytes, layered=False):
    """Throughput, IOPS, latency statistics and the host-vs-firmware count check of one run."""
    if len(results) != len(records):
        raise NandLabError(f"{len(results)} results for {len(records)} requests")
    bad_ids = [i for i, (rec, res) in enumerate(zip(records, results)) if rec.request_id != res[0]]
    if bad_ids:
        raise NandLabError(f"results read back do not match the ring (request {bad_ids[0]}: id {results[bad_ids[0]][0]}, "
                           f"expected {records[bad_ids[0]].request_id}): the bridge lost data")
    per_us = clock_hz / 1e6
    lat = [r[2] / per_us for r in results]
    reads = sum(1 for r in records if not r.is_write)
    writes = len(records) - reads
    seconds = fw["cycles"] / clock_hz if fw["cycles"] else 0.0
    rbytes = sum(r.count for r in records if not r.is_write) * sector_bytes
    wbytes = sum(r.count for r in records if r.is_write) * sector_bytes
    counts = {"host_reads": reads, "host_writes": writes, "fw_reads": fw["reads"], "fw_writes": fw["writes"],
              "ftl_host_reads": fw["ftl_host_reads"], "ftl_host_writes": fw["ftl_host_writes"]}
    counts["agree"] = reads == fw["reads"] and writes == fw["writes"]
    if layered:
        # MPNFM's layer splits, fills and merges: its FTLs see more requests than the host sent, never fewer.
        counts["agree"] = counts["agree"] and fw["ftl_host_reads"] + fw["ftl_host_writes"] >= reads + writes
    else:
        counts["agree"] = counts["agree"] and reads == fw["ftl_host_reads"] and writes == fw["ftl_host_writes"]
    out = {"requests": len(records), "reads": reads, "writes": writes, "soc_seconds": seconds,
           "read_bytes": rbytes, "write_bytes": wbytes,
           "iops": len(records) / seconds if seconds else None,
           "read_mb_s": rbytes / seconds / 1e6 if seconds else None,
           "write_mb_s": wbytes / seconds / 1e6 if seconds else None,
           "errors": fw["errors"], "mismatches": fw["mismatches"], "overlap_waits": fw["overlap_waits"],
           "failed_requests": sum(1 for r in results if r[3] != 0), "counts": counts}
    for name, sel in (("all", lambda r: True), ("read", lambda r: not r.is_write), ("write", lambda r: r.is_write)):
        vals = [v for v, rec in zip(lat, records) if sel(rec)]
        out[f"latency_us_{name}"] = {"n": len(vals), "mean": sum(vals) / len(vals) if vals else None,
                                     "max": max(vals) if vals else None,
                                     **{f"p{p:g}": percentile(vals, p) for p in PERCENTILES}}
    # The NAND's share of each latency: the cycles the CPU waited for it while the request was in flight (at
    # qd 1 the rest of the latency is the CPU's own work: the FTL, the layer, the replay's pattern check).
    wait = [r[6] / per_us for r in results]
    for name, sel in (("all", lambda r: True), ("read", lambda r: not r.is_write), ("write", lambda r: r.is_write)):
        vals = [v for v, rec in zip(wait, records) if sel(rec)]
        out[f"nand_wait_us_{name}"] = {"n": len(vals), "mean": sum(vals) / len(vals) if vals else None,
                                       "p50": percentile(vals, 50)}
    out["latency_histogram_us"] = [{"lo": lo, "hi": hi, "count": c} for lo, hi, c in histogram(lat)]
    return out, lat


# Outputs ------------------------------------------------------------------------------------------------

COLUMNS = ("index", "id", "op", "sector", "count", "arrival_us", "submit_us", "latency_cycles", "latency_us",
           "complete_us", "result", "overlap_wait", "mismatched_sectors", "nand_wait_us")


def request_rows(records, results, clock_hz, open_loop):
    """One tuple per request in COLUMNS' order. Latency counts from the arrival (open loop) or from the
    submission (closed loop), so the completion is that time + the latency (SoC us)."""
    per_us = clock_hz / 1e6
    for i, (rec, res) in enumerate(zip(records, results)):
        rid, submit_us, cyc, result, flags, mism, wait = res
        lat = cyc / per_us
        start = rec.time_us if open_loop else submit_us
        yield (i, rid, "write" if rec.is_write else "read", rec.sector, rec.count, rec.time_us, submit_us, cyc,
               round(lat, 3), round(start + lat, 3), result, int(bool(flags & RES_WAITED)), mism, round(wait / per_us, 3))


def write_csv(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        w.writerows(rows)


def write_parquet(path, rows):
    """The same table as the CSV, typed (integers, float us, the op as a string), in Parquet (pyarrow)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    types = {"op": pa.string(), "latency_us": pa.float64(), "complete_us": pa.float64(), "result": pa.int8(),
             "nand_wait_us": pa.float64()}
    cols = list(zip(*rows)) if rows else [()] * len(COLUMNS)
    table = pa.table({name: pa.array(col, type=types.get(name, pa.int64())) for name, col in zip(COLUMNS, cols)})
    pq.write_table(table, path)


def throughput_series(rows, sector_bytes, bins=100):
    """Completions over SoC time in `bins` equal bins from 0 to the last completion: a list of
    {t_us (bin start), width_us, read_mb_s, write_mb_s, iops}. Bytes are counted at completion."""
    rows = list(rows)
    if not rows:
        return []
    c_op, c_count, c_done = COLUMNS.index("op"), COLUMNS.index("count"), COLUMNS.index("complete_us")
    end = max(r[c_done] for r in rows)
    width = max(end / bins, 1e-3)
    n = max(1, min(bins, math.ceil(end / width)))
    acc = [[0, 0, 0] for _ in range(n)]          # read bytes, write bytes, requests
    for r in rows:
        k = min(n - 1, int(r[c_done] / width))
        acc[k][0 if r[c_op] == "read" else 1] += r[c_count] * sector_bytes
        acc[k][2] += 1
    return [{"t_us": k * width, "width_us": width, "read_mb_s": a[0] / width, "write_mb_s": a[1] / width,
             "iops": a[2] / width * 1e6} for k, a in enumerate(acc)]     # bytes/us = MB/s


def plot_throughput(path, series, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    t = [(b["t_us"] + b["width_us"] / 2) / 1e3 for b in series]
    ax.plot(t, [b["read_mb_s"] for b in series], label="read")
    ax.plot(t, [b["write_mb_s"] for b in series], label="write")
    ax.set_xlabel("SoC time (ms, completion)")
    ax.set_ylabel("throughput (MB/s)")
    ax.set_title(title + (f"\nbins of {series[0]['width_us']:.1f} us" if series else ""), fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_cdf(path, lat, records, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, sel in (("all", lambda r: True), ("reads", lambda r: not r.is_write), ("writes", lambda r: r.is_write)):
        vals = sorted(v for v, rec in zip(lat, records) if sel(rec))
        if vals:
            ax.step(vals, [(i + 1) / len(vals) for i in range(len(vals))], where="post", label=f"{name} ({len(vals)})")
    ax.set_xscale("log")
    ax.set_xlabel("latency (us, SoC time)")
    ax.set_ylabel("fraction of requests")
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# The run ------------------------------------------------------------------------------------------------

def load_requests(args, ring):
    """(ring records, encoded ring bytes, reader report, mapper report) of the trace mapped onto the FTL
    the firmware reported (`ring`: the `replay ring=...` line)."""
    from nandlab import trace
    sb = ring["sector_bytes"]
    mapper = trace.Mapper(ring["sectors"] * sb, sector_bytes=sb, max_request_bytes=min(ring["slot_bytes"],
                          trace.FTL_MAX_SECTORS_BYTES), time_scale=args.time_scale)
    if args.format == "synth":
        source = trace.preset(args.trace, n=args.max_requests, seed=args.seed)
        reader, read_report = None, {"preset": args.trace, "seed": args.seed, "requests": args.max_requests or 5000}
    else:
        source = reader = trace.TraceReader(args.trace, args.format, skip_bad=args.skip_bad,
                                            max_requests=args.max_requests)
    data = bytearray()
    for r in mapper(source):
        data += trace.encode_record(r, sb)
    if not data:
        raise NandLabError(f"{args.trace}: no request to replay")
    if reader is not None:
        read_report = reader.report()
    return trace.decode_records(bytes(data)), bytes(data), read_report, mapper.report()


def _write_mem(bus, address, data):
    """Write `data` (whole words) at `address`, each burst read back before the next: bridge writes are
    posted (no answer), and a stream of them overruns the simulated UART's socket buffer (the bridge then
    loses bytes and answers garbage); the read paces the writes and checks them."""
    words = list(struct.unpack(f"<{len(data) // 4}I", data))
    for i in range(0, len(words), BURST):
        chunk = words[i:i + BURST]
        bus.write(address + 4 * i, chunk)
        got = bus.read(address + 4 * i, length=len(chunk))
        if got != chunk:
            j = next(j for j, (a, b) in enumerate(zip(got, chunk)) if a != b)
            raise NandLabError(f"the ring read back through the bridge differs from what was written (word {i + j} "
                               f"at 0x{address + 4 * (i + j):08x}: 0x{got[j]:08x}, written 0x{chunk[j]:08x})")


def _read_mem(bus, address, nbytes):
    words = []
    for i in range(0, nbytes // 4, BURST):
        got = bus.read(address + 4 * i, length=min(BURST, nbytes // 4 - i))
        words += got if isinstance(got, list) else [got]
    return struct.pack(f"<{len(words)}I", *words)


class Streamer:
    """The host side of `ftl replay stream` (struct ftl_replay_stream, docs/replay.md): a thread that reads
    the firmware's `completed`, takes the results of the records finished since, and writes the records
    that take their places in the window, then `produced`. Before the command: the first window of
    records and produced = their count are written (`start`)."""
    def __init__(self, bus, ring, data, n, window, poll_s=0.02):
        import threading
        from nandlab import trace
        self.bus, self.ring, self.data, self.n, self.window, self.poll_s = bus, ring, data, n, window, poll_s
        self.rb = trace.RECORD_BYTES
        self.results = bytearray(n * RESULT_BYTES)
        self.written = min(n, window)
        self.acked = 0
        self.refills = 0
        self.idle_s = 0.0
        self.error = None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        # (completed first: a stale value from an earlier run must not be taken for this one's)
        self.bus.write(self.ring["stream"] + 4, 0)
        self.bus.write(self.ring["stream"], self.written)
        self.thread.start()

    def _spans(self, lo, hi):
        """[lo, hi) as (first record, count) pieces that do not wrap around the window."""
        while lo < hi:
            k = min(hi - lo, self.window - lo % self.window)
            yield lo, k
            lo += k

    def _take_results(self, completed):
        for lo, k in self._spans(self.acked, completed):
            got = _read_mem(self.bus, self.ring["results"] + (lo % self.window) * RESULT_BYTES, k * RESULT_BYTES)
            self.results[lo * RESULT_BYTES:(lo + k) * RESULT_BYTES] = got
        self.acked = completed

    def _refill(self):
        target = min(self.n, self.acked + self.window)
        if target <= self.written:
            return False
        for lo, k in self._spans(self.written, target):
            _write_mem(self.bus, self.ring["ring"] + (lo % self.window) * self.rb,
                       self.data[lo * self.rb:(lo + k) * self.rb])
        self.written = target
        self.bus.write(self.ring["stream"], target)
        self.refills += 1
        return True

    def _run(self):
        try:
            while self.acked < self.n and not self.stop.is_set():
                completed = min(self.bus.read(self.ring["stream"] + 4), self.n)
                if completed > self.acked:
                    self._take_results(completed)
                if not self._refill():
                    t = time.monotonic()
                    self.stop.wait(self.poll_s)
                    self.idle_s += time.monotonic() - t
        except Exception as e:        # reported by finish(), in the main thread
            self.error = e

    def finish(self):
        """After the command (the firmware is done): the thread's end; results_bytes() takes the rest."""
        self.stop.set()
        self.thread.join(timeout=BRIDGE_TIMEOUT_S)
        if self.error is not None:
            raise NandLabError(f"replay: streaming the requests through the bridge failed: {self.error}")

    def results_bytes(self):
        completed = min(self.bus.read(self.ring["stream"] + 4), self.n)
        if completed > self.acked:
            self._take_results(completed)
        return bytes(self.results[:self.acked * RESULT_BYTES])


class TelemetryCapture:
    """The telemetry frames of one run: those after `telemetry restart` (its sequence starts again; what
    came before is dropped), complete once the chip's telemetry_seq frames have arrived."""
    def __init__(self):
        self.frames = []

    def on_frame(self, f):
        if self.frames and f["seq"] <= self.frames[-1]["seq"]:
            self.frames.clear()
        self.frames.append(f)

    def complete(self, seq):
        return bool(self.frames) and self.frames[-1]["seq"] == seq - 1


def telemetry_outputs(frames, t0, clock_hz, out_dir, title):
    """Frames on the replay's time axis (us from its start, t0 in timebase cycles): a CSV recording (the
    monitor's format, `nandlab plot` reads it) and the current figures; returns (summary, files)."""
    from nandlab import plots, telemetry
    path = out_dir / "telemetry.csv"
    rec = telemetry.CsvRecorder(path, clock_hz)
    try:
        for f in frames:
            rec.add({**f, "timestamp": f["timestamp"] - t0})
    finally:
        rec.close()
    summary = {"frames": len(frames), "windows": sum(f["windows"] for f in frames),
               "violations": sum(f["violations"] for f in frames),
               "peak_x_pb": max((f["total_max"] / max(f["pb"], 1) for f in frames), default=None)}
    files = {"telemetry": str(path)}
    if frames:
        figs, _ = plots.plot_recording(path, out_dir / "telemetry", title=f"NAND current during the replay: {title}")
        files.update(current=str(figs[0]), dies=str(figs[1]))
    return summary, files


def run_on_sim(args, say):
    """Boot the simulated SoC, format, write the ring, replay (telemetry recorded), read back: (ring, fw
    summary, records, results, reader report, mapper report, wall s, telemetry frames, the dies'
    operations over the run (nandlab.planecount.summary))."""
    from litex import RemoteClient
    from nandlab import telemetry
    from nandlab.soc.targets import sim as simtarget
    from nandlab.simulator import SimConsole, BridgeServer, prepare_run_dir, free_tcp_port, telemetry_port
    nand = sim_nand(args)
    build_dir = env.BUILD_DIR / simtarget.build_dir_name(args.dies, **nand)
    gateware = simtarget.build_all(build_dir, dies=args.dies, **nand)
    bridge = free_tcp_port()
    run_dir = prepare_run_dir(gateware, build_dir / "run-replay", bridge_port=bridge)

    pending = [""]

    def echo(text):             # console text as it comes, in chunks: whole lines only
        lines = (pending[0] + text.replace("\r", "")).split("\n")
        pending[0] = lines.pop()
        for line in lines:
            if line.startswith("replay progress"):
                say(f"replay: {line.split()[-1]} requests done")

    cap = TelemetryCapture()
    with SimConsole(gateware, run_dir, echo=echo) as console:
        say(f"replay: booting the simulated SoC ({args.dies} dies) ...")
        console.boot(timeout=300)
        rx = telemetry.TcpReceiver(telemetry_port(run_dir), cap.on_frame).start()
        ring = _format(console, say, args)
        with BridgeServer(bridge, log_path=run_dir / "litex_server.log") as server:
            bus = RemoteClient(port=server.bind_port, csr_csv=str(build_dir / "csr.csv"))
            bus.open()
            # RemoteClient gives a read 2 s and then returns zeros: far too short for a burst over the
            # simulated UART bridge on a busy machine. (Wall clock: the bridge is a host process.)
            bus.socket.settimeout(BRIDGE_TIMEOUT_S)
            try:
                fw, records, results, read_report, map_report, wall, dies, seq = _replay_on(
                    args, console, bus, ring, say, with_telemetry=True)
            finally:
                bus.close()
        budget = console.budget(60)      # (simulator processor time: the frames still in flight)
        while not budget.expired() and not cap.complete(seq):
            time.sleep(0.2)
        rx.stop()
        if not cap.complete(seq):
            say(f"replay: telemetry: {len(cap.frames)} of {seq} frames arrived")
    return ring, fw, records, results, read_report, map_report, wall, cap.frames, dies


class ShellOverBridge:
    """A running SoC's shell through its remote-shell mailbox (nandlab.remote.RemoteShell), answering as
    SimConsole.command does: the command's output, with an error line added when it returned non-zero
    without printing one."""
    def __init__(self, shell):
        self.shell = shell

    def command(self, line, timeout=600.0):
        from nandlab.simulator import command_failed
        status, out = self.shell.run(line, timeout=timeout)
        if status != 0 and not command_failed(out):
            out += f"\nerror: '{line}' returned {status}\n"
        return out


def run_on_server(args, say):
    """The replay on a SoC already running behind litex_server at --server (a board after `nandlab server
    --target ...`, or `nandlab sim`), its shell driven through the remote-shell mailbox: the same ring,
    runs and checks as in simulation, without the telemetry recording (a board sends it to `nandlab
    monitor`). Returns what run_on_sim does (no frames)."""
    from nandlab.cli import _csr_csv
    from nandlab.remote import RemoteShell
    csr_csv = _csr_csv(args)
    say(f"replay: the SoC behind litex_server at {args.host}:{args.port} (build {csr_csv.parent}) ...")
    from litex import RemoteClient
    with RemoteShell.connect(args.port, csr_csv.parent, host=args.host) as shell:
        shell.bus.socket.settimeout(BRIDGE_TIMEOUT_S)
        console = ShellOverBridge(shell)
        ring = _format(console, say, args)
        # The streamer refills the ring while the shell's mailbox is polled: a connection of its own
        # (litex_server serves several clients; one socket must not carry two threads' requests).
        stream_bus = RemoteClient(host=args.host, port=args.port, csr_csv=str(csr_csv))
        stream_bus.open()
        stream_bus.socket.settimeout(BRIDGE_TIMEOUT_S)
        try:
            got = _replay_on(args, console, shell.bus, ring, say, with_telemetry=False, stream_bus=stream_bus)
        finally:
            stream_bus.close()
    fw, records, results, read_report, map_report, wall, dies, _ = got
    return ring, fw, records, results, read_report, map_report, wall, [], dies


@contextlib.contextmanager
def booted(gateware, build_dir, run_name):
    """A simulator of `gateware` (built in `build_dir`) booted, its bridge up: (console, bus), for runs one
    after another on the same SoC (nandlab.planes, nandlab.mpnfm: each run formats afresh)."""
    from litex import RemoteClient
    from nandlab.simulator import SimConsole, BridgeServer, prepare_run_dir, free_tcp_port
    bridge = free_tcp_port()
    run_dir = prepare_run_dir(gateware, build_dir / run_name, bridge_port=bridge)
    with SimConsole(gateware, run_dir) as console:
        console.boot(timeout=300)
        with BridgeServer(bridge, log_path=run_dir / "litex_server.log") as server:
            bus = RemoteClient(port=server.bind_port, csr_csv=str(build_dir / "csr.csv"))
            bus.open()
            bus.socket.settimeout(BRIDGE_TIMEOUT_S)
            try:
                yield console, bus
            finally:
                bus.close()


def run_checked(args, console, bus, what):
    """One replay on a booted SoC (booted()): format, replay, analyze; raises when a request failed, data
    read back wrong or the counts disagree (the data is checked, never assumed). (stats, fw, ring, wall s)."""
    quiet = lambda msg: None
    ring = _format(console, quiet, args)
    fw, records, res, _, _, wall, dies, _ = _replay_on(args, console, bus, ring, quiet, with_telemetry=False)
    stats, _ = analyze(records, res, fw, ring["clock_hz"], ring["sector_bytes"], layered=args.mpnfm)
    stats["die_operations"] = dies
    if args.out:                          # the run's requests, one row each (as `nandlab replay` writes them)
        Path(args.out).mkdir(parents=True, exist_ok=True)
        write_csv(Path(args.out) / "requests.csv", request_rows(records, res, ring["clock_hz"], open_loop=not args.qd))
    if stats["errors"] or stats["mismatches"] or not stats["counts"]["agree"]:
        raise NandLabError(f"{what}: {stats['errors']} failed requests, {stats['mismatches']} sectors read back "
                           f"wrong, counts {stats['counts']}")
    return stats, fw, ring, wall


class Study(NamedTuple):
    """What sessions() needs of a paper's runs on the simulated SoC (nandlab.planes, nandlab.mpnfm): the
    rest (build, boot, one run after another, the checks, the progress line's count and time) is the same
    for every paper."""
    name: str                 # the progress lines' prefix and the runs' name in errors ("dwsdw")
    out: str                  # the runs' directory in the build directory where the caller's is not
                              # (a session on another machine)
    boot: str                 # the simulator's run directory in its build directory ("run-planes")
    run_args: Callable        # (point, n, seed, out): the run's arguments (arguments())
    run_name: Callable        # point: the run's directory in the runs' directory
    result: Callable          # (point, summary): the run's result from its replay summary ("stats",
                              # "firmware", "ring", "wall_seconds", as in `nandlab replay`'s summary.json)
    line: Callable            # (point, result): the progress line of a run done
    cost: Callable = None     # point: its run's relative wall time (sessions() balances on it; None: 1 each)


def sessions(study, groups, n, seed, out, jobs=1, scheduler=None, log=print):
    """The runs of `study` (a Study), a group of points per simulator build: each group one session (a
    simulator built and booted once, its runs one after another, each formatting afresh), each session a
    Dask task (nandlab.cluster.sim_sessions: `jobs` at once here, or on the cluster at `scheduler`, whose
    workers write into their own build directory, not `out`). {point: result}; a run whose requests fail or
    read back wrong raises."""
    from nandlab import cluster
    if scheduler is None:
        # The embedded cluster's sessions are threads of this process, and a LiteX build is not thread-safe
        # (it changes the process's working directory, Migen names signals from global state, and the build
        # steps redirect the process's output into the build's log): every simulator is built here first,
        # one after another, and the sessions find theirs up to date.
        # The sessions get the built directories, so as not to hash every source again.
        built = _build_groups(groups, study, n, seed, Path(out), jobs)
        chunks = balanced(groups, study.cost, jobs)
        built = {tuple(c): built[tuple(g)] for g in groups for c in chunks if c[0] in g}
        return cluster.sim_sessions(_session, chunks, (study, n, seed, str(out), built), jobs, None, log)
    return cluster.sim_sessions(_session, balanced(groups, study.cost, jobs), (study, n, seed, None, None), jobs,
                                scheduler, log)


def balanced(groups, cost=None, jobs=1):
    """The groups cut into sessions that keep `jobs` (> 1) workers busy to the end: a group whose runs cost
    more than a quarter of a worker's share (`cost`: point -> relative wall time, 1 each if None) is cut into
    consecutive pieces of about that cost; the pieces, largest first (the longest session starts first).
    Every run formats the device afresh, so which session runs it does not change its result."""
    cost = cost or (lambda p: 1)
    if jobs <= 1:                       # one worker: nothing to balance, a boot per build
        return sorted(groups, key=lambda c: -sum(cost(p) for p in c))
    share = sum(cost(p) for g in groups for p in g) / jobs / 4
    chunks = []
    for g in groups:
        pieces = max(1, round(sum(cost(p) for p in g) / share)) if share else 1
        size = -(-len(g) // pieces)
        chunks += [g[i:i + size] for i in range(0, len(g), size)]
    return sorted(chunks, key=lambda c: -sum(cost(p) for p in c))


# Builds of several groups in processes of their own, `jobs` at once (False: one after another here).
PARALLEL_BUILDS = True


def _build_groups(groups, study, n, seed, out, jobs):
    """{tuple(group): (build_dir, gateware_dir)} of every group's simulator. A LiteX build is not
    thread-safe but is process-safe (each build has its own directory): with `jobs` > 1 the builds run in
    processes of their own, so that one's single-threaded SoC generation overlaps another's compile."""
    if jobs <= 1 or len(groups) <= 1 or not PARALLEL_BUILDS:
        return {tuple(g): tuple(map(str, _build(g, study, n, seed, out))) for g in groups}
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    module = study.run_args.__module__              # the study's module (its STUDY), importable there
    with ProcessPoolExecutor(min(jobs, len(groups)), mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {tuple(g): pool.submit(_build_in_process, module, g, n, seed, str(out)) for g in groups}
        return {k: f.result() for k, f in futures.items()}


def _build_in_process(module, group, n, seed, out):
    import importlib
    study = importlib.import_module(module).STUDY
    return tuple(map(str, _build(group, study, n, seed, Path(out))))


def _build(points, study, n, seed, out):
    """The simulator of a group (the first run's dies and options, with its arguments written to
    `out`/probe/<first run>: a study may write the run's trace there; every run of the group shares
    them): (build_dir, gateware_dir)."""
    from nandlab.soc.targets import sim as simtarget
    probe = study.run_args(points[0], n, seed, out / "probe" / study.run_name(points[0]))
    nand = sim_nand(probe)
    build_dir = env.BUILD_DIR / simtarget.build_dir_name(probe.dies, **nand)
    return build_dir, simtarget.build_all(build_dir, dies=probe.dies, **nand)


def _session(points, study, n, seed, out, built=None, log=None):
    """The runs of one build on one booted simulator: {point: result}. `out` None: the worker's own build
    directory (a session on another machine). `built`: {tuple(points): (build_dir, gateware_dir)} of the
    simulators already built here (else this session builds, or finds up to date, its own)."""
    log = log or (lambda msg: None)
    out = Path(out) if out else env.BUILD_DIR / study.out
    if built and tuple(points) in built:
        build_dir, gateware = map(Path, built[tuple(points)])
    else:
        build_dir, gateware = _build(points, study, n, seed, out)
    results = {}
    todo = []
    stamp = Path(build_dir) / ".nandlab-inputs"
    stamp = stamp.read_text() if stamp.exists() else None
    keys = {p: (out / study.run_name(p) / RESULT_FILE, _result_key(study, p, n, seed, out, stamp)) for p in points}
    for p in points:
        kept = _kept_result(*keys[p])
        if kept is None:
            todo.append(p)
        else:
            results[p] = kept
            log(f"{study.name}: [*] {study.line(p, kept)} (kept from an earlier run: same build and arguments)")
    if not todo:
        return results
    # A run directory per session (sessions of one build may run at once): named by its first run.
    with booted(gateware, build_dir, f"{study.boot}-{study.run_name(todo[0])}") as (console, bus):
        image = None
        for p in todo:
            t0 = time.monotonic()
            image = as_booted(console, bus, image)
            args = study.run_args(p, n, seed, out / study.run_name(p))
            stats, fw, ring, wall = run_checked(args, console, bus, f"{study.name} run {tuple(p)}")
            results[p] = r = study.result(p, {"stats": stats, "firmware": fw, "ring": ring, "wall_seconds": wall})
            _keep_result(*keys[p], r)
            log(f"{study.name}: [*] {study.line(p, r)} ({time.monotonic() - t0:.0f} s)")
    return results


# A long study resumes: each run's result is kept in its directory (RESULT_FILE) under a key of everything it
# depends on (the simulator's inputs, which hash the gateware, firmware and host sources, and the run's
# arguments); the same command again reuses every run whose key still matches. Every run starts from the
# SoC as booted (as_booted), so a kept result is the one a new run would give.
RESULT_FILE = "result.pickle"


def _result_key(study, p, n, seed, out, stamp):
    """The key of a run's result, `stamp` the text of its simulator's inputs stamp (.nandlab-inputs), or
    None when that is unknown (None: the result is not kept)."""
    import hashlib
    if stamp is None:
        return None
    args = vars(study.run_args(p, n, seed, Path(out) / study.run_name(p)))
    trace = Path(str(args.get("trace", "")))
    text = json.dumps({"study": study.name, "point": list(p), "inputs": stamp,
                       "trace": hashlib.sha256(trace.read_bytes()).hexdigest() if trace.is_file() else None,
                       "args": {k: v for k, v in sorted(args.items()) if not callable(v)}}, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _kept_result(path, key):
    """The result kept in `path` by an earlier run with the same key, or None."""
    import pickle
    if key is None or not path.exists():
        return None
    try:
        kept = pickle.loads(path.read_bytes())
    except (OSError, EOFError, pickle.UnpicklingError):
        return None                       # (a file cut short by a killed run: run again)
    return kept["result"] if kept.get("key") == key else None


def _keep_result(path, key, result):
    import pickle
    if key is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(pickle.dumps({"key": key, "result": result}))
    tmp.replace(path)                     # whole or not at all


def as_booted(console, bus, image=None):
    """Every run of a session starts from the SoC as it booted, so that its result does not depend on the
    runs before it (nor on how a sweep is cut into sessions): `ftl format` keeps what it finds on the
    device (sequence numbers, dirty blocks to erase), the CPU its caches and the firmware its state. The
    first call saves the NAND arrays as booted into an image beside the simulator and returns its path;
    each later call loads that image back and resets the whole SoC (CPU, controllers, dies: `ctrl_reset`
    through the host bridge), then waits for the firmware's prompt."""
    from nandlab.nandimage import NandStore
    from nandlab.simulator import BANNER, PROMPT, nand_port
    store = NandStore(nand_port(console.run_dir))
    if image is None:
        image = Path(console.run_dir).resolve() / "as-booted.nandimg"
        store.save(image)
        return image
    store.load(image)
    bus.regs.ctrl_reset.write(1)
    console.expect(BANNER, 300)
    console.expect(PROMPT, 300)
    return image


def _format(console, say, args):
    """The dies' architecture (--arch) and the scheduler (--sched), `ftl format`, then the ring's geometry
    (`ftl replay ring`)."""
    from nandlab.simulator import command_failed
    say("replay: formatting the FTL (a factory bad-block scan of every die: about a minute simulated) ...")
    first = ([f"die arch {args.arch}"] if args.arch else []) + [
        f"ftl config sched {args.sched or 'off'} span {args.ftl_span} stagger {args.ftl_stagger}",
        # (the shell takes 8 words a command)
        f"ftl config mpnfm {'on' if args.mpnfm else 'off'}" + (f" sector {args.ftl_sector}" if args.ftl_sector else "")]
    first += [f"ftl config theta {args.theta} theta_rule {args.theta_rule}"] if args.mpnfm else []
    first += [f"die time-shift {args.prep_time_shift}"] if args.prep_time_shift else []
    outs = {}
    for line in first + ["ftl format", "ftl info", "ftl replay ring"]:
        outs[line] = out = console.command(line, timeout=1800)
        if command_failed(out):
            raise NandLabError(f"'{line}' on the SoC failed:\n{out.strip()}")
    ring = parse_kv(out, "replay")
    if ring.get("result_bytes", RESULT_BYTES) != RESULT_BYTES or ring.get("record_bytes", 16) != 16:
        raise NandLabError(f"the firmware's replay records are {ring.get('record_bytes')} bytes and its results "
                           f"{ring.get('result_bytes')}, this host reads 16 and {RESULT_BYTES}: firmware and host "
                           f"are from different versions (rebuild the simulator or reload the board)")
    m = re.search(r"superblocks: (\d+) dies x (\d+) planes x span (\d+) = (\d+) blocks each, planes staggered by "
                  r"(\d+) pages", outs["ftl info"])
    if m:
        ring["ftl_span"], ring["ftl_stagger"], ring["ftl_superblock_blocks"] = int(m[3]), int(m[5]), int(m[4])
    return ring


def _replay_on(args, console, bus, ring, say, with_telemetry, stream_bus=None):
    """Load the trace, precondition, write the ring, run (streamed when it does not fit, through
    `stream_bus` when given, else `bus`), read the results back: (fw summary, records, results, reader
    report, mapper report, wall s, the dies' operations, the telemetry frame count at the end or 0)."""
    from nandlab import planecount, trace
    from nandlab.simulator import command_failed
    records, data, read_report, map_report = load_requests(args, ring)
    n = len(records)
    pre = precondition(args, console, bus, ring, say)
    if args.prep_time_shift:
        out = console.command("die time-shift 0")          # the measured run at the build's array times
        if command_failed(out):
            raise NandLabError(f"'die time-shift 0' on the SoC failed:\n{out.strip()}")
    window = args.window or (ring["capacity"] if n > ring["capacity"] else 0)
    if window > ring["capacity"]:
        raise NandLabError(f"--window {window}: the firmware's ring holds {ring['capacity']} records")
    first = min(n, window) if window else n
    say(f"replay: writing {first} requests into the ring at 0x{ring['ring']:08x} through the bridge ...")
    _write_mem(bus, ring["ring"], data[:first * trace.RECORD_BYTES])
    mode = f"closed loop, qd {args.qd}" if args.qd else f"open loop, time scale {args.time_scale:g}"
    say(f"replay: running {n} requests ({mode}" + (f", streamed through a window of {window}" if window
                                                   else "") + ") ...")
    if with_telemetry:
        window_reg = max(1, bus.regs.timebase_window.read())
        rate = max(1, min(1 << 16, round(TELEMETRY_FRAME_US * ring["clock_hz"] / 1e6 / window_reg)))
        for line in (f"telemetry rate {rate}", "telemetry restart"):
            out = console.command(line)
            if command_failed(out):
                raise NandLabError(f"'{line}' on the SoC failed:\n{out.strip()}")
    keep = " keep" if pre["runs"] else ""
    sched0 = sched_stats(console.command("ftl stats")) if args.sched else {}
    die_stats = getattr(getattr(bus, "constants", None), "d", {}).get("nandlab_die_stats")
    counts0 = planecount.read(bus.regs, die_stats)        # (before the streamer shares the bus)
    streamer = None
    if window:
        streamer = Streamer(stream_bus or bus, ring, data, n, window)
        streamer.start()
        command = f"ftl replay stream {n} {args.qd} {window} 1000{keep}"
    else:
        command = f"ftl replay run {n} {args.qd} 1000{keep}"
    t0 = time.monotonic()
    try:
        out = console.command(command, timeout=args.timeout)
    finally:
        if streamer is not None:
            streamer.finish()
    wall = time.monotonic() - t0
    dies = planecount.summary(planecount.delta(counts0, planecount.read(bus.regs, die_stats)))
    if with_telemetry:
        console.command("telemetry stop")
    fw = parse_kv(out, "replay")
    if args.sched:
        fw["sched"] = sched_stats(console.command("ftl stats"))
        fw["sched"]["run"] = sched_delta(sched0, fw["sched"])
    if args.mpnfm:
        fw["mpnfm"] = prefixed_stats(console.command("ftl stats"), ("mpnfm_", "small_"))
    for line in out.splitlines():
        if line.startswith(("error:", "mismatch:")):
            say(f"replay: firmware: {line}")
    if streamer is not None:
        results = decode_results(streamer.results_bytes())
        fw["host_refills"], fw["host_wait_s"] = streamer.refills, streamer.idle_s
    else:
        say("replay: reading the results back ...")
        results = decode_results(_read_mem(bus, ring["results"], n * RESULT_BYTES))
    seq = bus.regs.telemetry_seq.read() if with_telemetry else 0
    map_report["precondition"] = pre
    return fw, records, results, read_report, map_report, wall, dies, seq


def prefixed_stats(text, prefixes):
    """The `name value` lines of `ftl stats` whose names start with one of `prefixes` (MPNFM's layer and
    its small-page FTL: counted since the format)."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].startswith(prefixes) and parts[1].isdigit():
            out[parts[0]] = int(parts[1])
    return out


def sched_stats(text):
    """The scheduler's and the port's group counters from `ftl stats` (name value lines), with the mean
    decision in SoC cycles: {} when the scheduler was off."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].startswith(("sched_", "port_group")) and parts[1].isdigit():
            out[parts[0]] = int(parts[1])
    if out.get("sched_decisions"):
        out["sched_mean_cycles"] = out["sched_cycles"] / out["sched_decisions"]
    return out


def sched_delta(before, after):
    """The scheduler's counters over the measured run alone (the format's and the preconditioning's
    decisions taken out: a tag or marker read never pairs, so it is a cheap decision), with its mean."""
    out = {k: v - before.get(k, 0) for k, v in after.items()
           if k in ("sched_decisions", "sched_cycles", "port_groups", "port_group_pages") or k.startswith(("sched_groups_", "sched_perf_"))}
    if out.get("sched_decisions"):
        out["sched_mean_cycles"] = out["sched_cycles"] / out["sched_decisions"]
    return out


PRECONDITION_SUMS = ("n", "writes", "write_sectors", "errors", "mismatches", "cycles", "ftl_host_writes",
                     "ftl_nand_programs", "ftl_nand_reads", "ftl_nand_erases", "ftl_gc_moves")


def precondition_records(mode, sectors, per_request, writes, seed=1):
    """The preconditioning's requests as (sector, count) writes: 'fill' every sector once in order,
    `per_request` at a time; 'steady' that and then round(writes x sectors) random single sectors."""
    import random
    if mode == "none":
        return []
    out = [(s, min(per_request, sectors - s)) for s in range(0, sectors, per_request)]
    if mode == "steady":
        rng = random.Random(seed)
        out += [(rng.randrange(sectors), 1) for _ in range(round(writes * sectors))]
    return out


def precondition(args, console, bus, ring, say):
    """Run the preconditioning (`--precondition`) through the ring, a ring's capacity at a time, closed loop
    at the deepest queue; every run after the first keeps the versions, so the preconditioned data is
    checked by every later read. Returns its report (mode, requests, runs and the runs' summed counters)."""
    from nandlab import trace
    from nandlab.simulator import command_failed
    sb, sectors = ring["sector_bytes"], ring["sectors"]
    per = max(1, min(ring["slot_bytes"], trace.FTL_MAX_SECTORS_BYTES) // sb)
    reqs = precondition_records(args.precondition, sectors, per, args.precondition_writes, args.seed)
    report = {"mode": args.precondition, "requests": len(reqs), "runs": 0, "capacity_sectors": sectors,
              "sector_bytes": sb, "random_writes_x_capacity": args.precondition_writes
              if args.precondition == "steady" else 0, **{k: 0 for k in PRECONDITION_SUMS}}
    if not reqs:
        return report
    t0 = time.monotonic()
    say(f"replay: preconditioning ({args.precondition}): {len(reqs)} writes over {sectors} sectors of {sb} B "
        f"({sectors * sb / 2**20:.1f} MiB) ...")
    cap = ring["capacity"]
    for i in range(0, len(reqs), cap):
        chunk = reqs[i:i + cap]
        data = b"".join(struct.pack(trace.RECORD_FORMAT, 0, s, c, trace.FLAG_WRITE, 0, i + k)
                        for k, (s, c) in enumerate(chunk))
        _write_mem(bus, ring["ring"], data)
        keep = " keep" if report["runs"] else ""
        out = console.command(f"ftl replay run {len(chunk)} {MAX_QD} 1000{keep}", timeout=args.timeout)
        if command_failed(out):
            raise NandLabError(f"preconditioning run {report['runs'] + 1} failed on the simulated SoC:\n{out.strip()[-1500:]}")
        fw = parse_kv(out, "replay")
        report["runs"] += 1
        for k in PRECONDITION_SUMS:
            report[k] += fw.get(k, 0)
        say(f"replay: preconditioning: {i + len(chunk)} of {len(reqs)} writes done")
    report["soc_seconds"] = report["cycles"] / ring["clock_hz"]
    report["wall_seconds"] = time.monotonic() - t0
    return report


def cmd_replay(args):
    check_args(args)
    from nandlab.steps import say
    log = (lambda msg: print(f"[nandlab] {msg}", file=sys.stderr, flush=True)) if args.json else say
    out_dir = Path(args.out) if args.out else env.BUILD_DIR / "replay" / Path(args.trace).name
    run = run_on_server if args.server else run_on_sim
    ring, fw, records, results, read_report, map_report, wall, frames, dies = run(args, log)
    if args.server:
        args.dies = dies["dies"]          # the running SoC's
    stats, lat = analyze(records, results, fw, ring["clock_hz"], ring["sector_bytes"], layered=args.mpnfm)
    stats["die_operations"] = dies       # counted by the dies over the measured run (nandlab.planecount)
    params = {"trace": str(args.trace), "format": args.format, "qd": args.qd, "loop": "closed" if args.qd else "open",
              "time_scale": args.time_scale, "dies": args.dies, "seed": args.seed, "max_requests": args.max_requests,
              "precondition": args.precondition, "precondition_writes": args.precondition_writes, "window": args.window,
              "blocks": args.blocks, "arch": args.arch, "sched": args.sched, "ftl_span": args.ftl_span,
              "ftl_stagger": args.ftl_stagger, "ftl_sector": args.ftl_sector, "mpnfm": args.mpnfm,
              "theta": args.theta if args.mpnfm else None, "theta_rule": args.theta_rule if args.mpnfm else None,
              "prep_time_shift": args.prep_time_shift, "soc": f"running, litex_server at {args.host}:{args.port}" if args.server
              else "simulated, booted for the replay"}
    if not args.server:
        from nandlab.soc.targets import sim as simtarget
        params["nand"] = simtarget.nand_options(**sim_nand(args))      # every option, the defaults resolved
    if fw.get("window"):
        stats["stream"] = {"window": fw["window"], "underruns": fw["underruns"],
                           "stall_us": fw["stall_cycles"] / ring["clock_hz"] * 1e6, "host_refills": fw["host_refills"],
                           "host_idle_s": fw["host_wait_s"]}
    summary = {"replay": params, "stats": stats, "firmware": fw, "ring": ring, "read": read_report,
               "mapping": map_report, "wall_seconds": wall, "requests_per_wall_second": len(records) / wall if wall else None}
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = list(request_rows(records, results, ring["clock_hz"], open_loop=not args.qd))
    write_csv(out_dir / "requests.csv", rows)
    write_parquet(out_dir / "requests.parquet", rows)
    title = (f"{Path(args.trace).name} ({args.format}), {len(records)} requests, "
             + (f"closed loop qd {args.qd}" if args.qd else f"open loop x{args.time_scale:g}") + f", {args.dies} dies")
    plot_cdf(out_dir / "latency_cdf.png", lat, records, title)
    series = throughput_series(rows, ring["sector_bytes"])
    plot_throughput(out_dir / "throughput.png", series, title)
    summary["throughput_over_time"] = series
    if args.server:
        summary["telemetry"], files = {"recorded": False, "reason": "a running SoC's telemetry goes to 'nandlab "
                                       "monitor', not to the replay"}, {}
    else:
        summary["telemetry"], files = telemetry_outputs(frames, fw["t0"], ring["clock_hz"], out_dir, title)
    summary["files"] = {**{k: str(out_dir / v) for k, v in
                           (("csv", "requests.csv"), ("parquet", "requests.parquet"), ("json", "summary.json"),
                            ("cdf", "latency_cdf.png"), ("throughput", "throughput.png"))}, **files}
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
    if args.json:
        print(json.dumps(summary, sort_keys=True))
    else:
        _print_table(summary)
    problems = []
    if stats["errors"] or stats["mismatches"]:
        problems.append(f"{stats['errors']} failed requests, {stats['mismatches']} sectors read back wrong")
    if not stats["counts"]["agree"]:
        problems.append(f"request counts disagree: {stats['counts']}")
    if problems:
        raise NandLabError("replay: " + "; ".join(problems) + f" (details in {out_dir})")
    return 0


def _print_table(s):
    st, la = s["stats"], s["stats"]["latency_us_all"]
    fmt = lambda v, f="{:.1f}": "-" if v is None else f.format(v)
    rows = [("requests", f"{st['requests']} ({st['reads']} reads, {st['writes']} writes)"),
            ("SoC time", f"{st['soc_seconds'] * 1e3:.3f} ms"), ("IOPS (SoC time)", fmt(st["iops"], "{:.0f}")),
            ("read / write MB/s", f"{fmt(st['read_mb_s'], '{:.2f}')} / {fmt(st['write_mb_s'], '{:.2f}')}"),
            ("latency us p50 / p99 / p99.9 / max",
             " / ".join(fmt(la[k]) for k in ("p50", "p99", "p99.9", "max"))),
            ("errors / mismatches / overlap waits", f"{st['errors']} / {st['mismatches']} / {st['overlap_waits']}"),
            ("counts host = firmware = FTL", "yes" if st["counts"]["agree"] else f"NO {st['counts']}"),
            ("wall clock", f"{s['wall_seconds']:.1f} s ({fmt(s['requests_per_wall_second'])} requests/s)"),
            ("files", ", ".join(s["files"].values()))]
    sm = st.get("stream")
    if sm:
        rows.insert(-1, ("streamed", f"window {sm['window']}: {sm['underruns']} underruns, "
                         f"{sm['stall_us']:.0f} us of SoC time waiting for the host, {sm['host_refills']} refills"))
    pre = s["mapping"].get("precondition") or {}
    if pre.get("runs"):
        rows.insert(-1, ("preconditioning", f"{pre['mode']}: {pre['requests']} writes in {pre['runs']} runs, "
                         f"{pre['soc_seconds'] * 1e3:.1f} ms SoC time, {pre['ftl_nand_erases']} erases, "
                         f"{pre['ftl_gc_moves']} GC moves, 0 errors"))
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
