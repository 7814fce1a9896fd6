"""The DW/SDW-NFM paper's experiments on the simulated SoC (issue 17; `nandlab reproduce dwsdw`).

One run replays a synthetic workload with the paper's trace statistics (nandlab.trace.DWSDW_TABLE3)
through the FTL and the multi-plane scheduler (sw/firmware/sched.c) on dies of the paper's MLC part at
its own array times (tR 45 us, tPROG 700 us, tBERS 3.5 ms: time scale 1), under one plane architecture.
The architecture is set at run time ('die arch'), so one simulator build per way count serves all
three, and one boot serves every run at that way count: each run formats the FTL afresh (at array
times divided by 2**PREP_SHIFT: only the state it leaves matters) and then replays at the part's own
times. Exploitation is what the dies count (their multi-plane counters, nandlab.planecount), not what
the firmware believes; throughput is bytes moved over the run's SoC time (the firmware's timebase).
"""

from typing import NamedTuple

from nandlab import env, replay

PART = "DWSDW-MLC-64G"
ARCHS = ("CNFM", "DW-NFM", "SDW-NFM")
WORKLOADS = ("Financial1", "Financial2", "MSN", "MSR", "TPC_C", "TPC_E")   # the paper's Table III
BLOCKS = 64                # blocks per die (the paper's 64 GB scaled down: see deviations())
PAGES_1WAY = 64            # pages per block at 1 way; 2 and 4 ways halve them, as Table II does (512/256/128)
DEPTH = 32                 # the scheduler's queue (the paper's NCQ 32, Table II) and the host's queue depth
PREP_SHIFT = 6             # format at array times / 64
CLOCK_HZ = 100e6
T_PROG_CYCLES = 700e-6 * CLOCK_HZ


class Point(NamedTuple):
    ways: int
    arch: str
    workload: str
    depth: int = DEPTH
    stagger: int = 0


def pages_for(ways):
    """Pages per block at `ways` dies: the same capacity at every way count (Table II keeps 64 GB)."""
    return max(4, PAGES_1WAY // ways)


def run_args(point, n, seed, out):
    """The `nandlab replay` arguments of one run (replay.arguments: the command's own parser and checks)."""
    return replay.arguments(f"dwsdw-{point.workload}", format="synth", max_requests=n, seed=seed, dies=point.ways,
                            nand_part=PART, blocks=BLOCKS, nand_pages=pages_for(point.ways), nand_sdw=True,
                            nand_time_scale=1, arch=point.arch, sched=point.depth,
                            qd=min(point.depth, replay.MAX_QD), prep_time_shift=PREP_SHIFT,
                            ftl_stagger=point.stagger, out=out)


def run_name(p):
    return f"w{p.ways}-{p.arch}-{p.workload}-d{p.depth}-s{p.stagger}"


def result_of(point, summary):
    """One run's numbers (from its replay summary)."""
    st, fw, dies = summary["stats"], summary["firmware"], summary["stats"]["die_operations"]
    run = fw.get("sched", {}).get("run", {})
    moved = st["read_bytes"] + st["write_bytes"]
    return {**point._asdict(), "requests": st["requests"], "soc_seconds": st["soc_seconds"],
            "mb_s": moved / st["soc_seconds"] / 1e6 if st["soc_seconds"] else None, "iops": st["iops"],
            "exploitation_pages": dies["exploitation_pages"], "exploitation_operations": dies["exploitation_operations"],
            "program_by_pages": dies["program"]["by_pages"], "read_by_pages": dies["read"]["by_pages"],
            "sched_mean_cycles": run.get("sched_mean_cycles"), "sched_decisions": run.get("sched_decisions"),
            "sched_max_cycles": fw.get("sched", {}).get("sched_max_cycles"),
            "latency_us_p50": st["latency_us_all"]["p50"], "latency_us_p99": st["latency_us_all"]["p99"],
            "errors": st["errors"], "mismatches": st["mismatches"], "span": summary["ring"].get("ftl_span"),
            "wall_seconds": summary["wall_seconds"]}


def progress(p, r):
    """A run's progress line (replay.sessions adds the prefix, the count and the time)."""
    return (f"{p.ways} way(s) {p.arch:<7} {p.workload:<10} depth {p.depth:<3} stagger {p.stagger}: "
            f"{r['mb_s']:.2f} MB/s, exploitation {r['exploitation_pages']:.1%}, "
            f"{r['sched_mean_cycles'] or 0:.0f} cycles/decision")


STUDY = replay.Study(name="dwsdw", out="planes", boot="run-planes", run_args=run_args, run_name=run_name,
                     result=result_of, line=progress,
                     cost=lambda p: 2 + p.ways)     # seen: 17, 22 and 36 s a run at 1, 2 and 4 ways (--quick)


def run_points(points, n=200, seed=1, out=None, log=print, jobs=1, scheduler=None):
    """Every point, one simulator boot per way count, each a Dask task (replay.sessions: `jobs` at once
    here, or on the cluster at `scheduler`); returns their results in the order given. A run whose
    requests fail or read back wrong raises (the data is checked, never assumed)."""
    out = env.BUILD_DIR / STUDY.out if out is None else out
    groups = [[p for p in points if p.ways == ways] for ways in sorted({p.ways for p in points})]
    results = replay.sessions(STUDY, groups, n, seed, out, jobs, scheduler, log)
    return [results[p] for p in points]


# Summaries ------------------------------------------------------------------------------------------

def _mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def by_key(results):
    return {(r["ways"], r["arch"], r["workload"], r["depth"], r["stagger"]): r for r in results}


def throughput_ratio(results, arch, ways, workloads, depth=DEPTH, stagger=0):
    """Mean over the workloads of arch's throughput over CNFM's (the paper's Fig. 7(a) averages the same way)."""
    t = by_key(results)
    ratios = []
    for w in workloads:
        a, c = t.get((ways, arch, w, depth, stagger)), t.get((ways, "CNFM", w, depth, stagger))
        if a and c and c["mb_s"]:
            ratios.append(a["mb_s"] / c["mb_s"])
    return _mean(ratios)


def exploitation(results, arch, ways, workloads, depth=DEPTH, stagger=0):
    """(min, mean, max) over the workloads of the pages in multi-plane operations (the paper's Fig. 6)."""
    t = by_key(results)
    xs = [t[(ways, arch, w, depth, stagger)]["exploitation_pages"] for w in workloads
          if (ways, arch, w, depth, stagger) in t]
    xs = [x for x in xs if x is not None]
    return (min(xs), sum(xs) / len(xs), max(xs)) if xs else (None, None, None)


# The paper's values (../shared/papers/plane-level-parallelism-dw-sdw-nfm; docs/design_plane_papers.md 1.4)
PAPER_RATIO = {("DW-NFM", 1): 1.213, ("DW-NFM", 2): 1.169, ("DW-NFM", 4): 1.15,
               ("SDW-NFM", 1): 1.439, ("SDW-NFM", 2): 1.395, ("SDW-NFM", 4): 1.34}
PAPER_EXPLOITATION = {"CNFM": (0.021, 0.022), "DW-NFM": (0.493, 0.621), "SDW-NFM": (0.672, 0.784)}
PAPER_SCHED_SHARE = 0.01     # "under 1 %" (dw:187), read against tPROG


def plan(quick):
    """(main grid, allocation sensitivity, queue-depth sweep) points, and the workloads they use."""
    workloads = ("Financial1", "TPC_E") if quick else WORKLOADS
    ways = (1, 2, 4)
    main = [Point(w, a, wl) for w in ways for a in ARCHS for wl in workloads]
    sens = [Point(1, a, workloads[0], DEPTH, 2) for a in ARCHS]
    depths = () if quick else (16, 64, 128, 256)      # (the paper gives no numbers for Fig. 8)
    sweep = [Point(1, a, workloads[0], d) for a in ("DW-NFM", "SDW-NFM") for d in depths]
    return main, sens, sweep, workloads


def deviations(n, quick):
    out = [f"Dies: {PART} (Table II's MLC: 8 KiB pages, 2 planes, tR 45 us, tPROG 700 us, tBERS 3.5 ms, at those "
           f"times), scaled to {BLOCKS} blocks x {PAGES_1WAY} pages at 1 way and {PAGES_1WAY // 2} / "
           f"{pages_for(4)} pages at 2 / 4 ways (the paper's 64 GB, 512 / 256 / 128 pages per block, kept equal "
           "across ways as Table II does, at 1/4096 of the size); 1 channel, NV-DDR mode 5 (200 MB/s: the paper "
           "does not give its bus), BCH-8 over 512 B codewords; spare size assumed (448 B).",
           "SDW-NFM's shorter array times applied under SDW-NFM: tR 75 %, tPROG 85 % of CNFM's (the paper gives "
           "25-30 % and 15-20 % reductions, dw:139, and does not say whether its experiments used them).",
           f"Workloads: the paper's traces are not available; synthetic requests with Table III's read ratio, "
           f"mean read and write lengths (512 B sectors) and random ratios, {n} requests each, seeded; footprint "
           "1 GiB folded into the device's capacity; closed loop at the queue depth; a fresh device (no "
           "preconditioning, so little garbage collection). The paper replays millions of requests of the "
           "real traces.",
           f"FTL: page-level map over 4 KiB sectors (a sub-page write is a read-modify-write of the 8 KiB page), "
           f"superblocks spanning the planes' four subplanes of every die (span 4), the scheduler's queue "
           f"{DEPTH} page operations (the paper: a request queue of 32) between the FTL and the controller.",
           "Allocation (unstated in the paper): one write stream that fills a superblock row by row, so the "
           "planes of a row share a page address (stagger 0) and CNFM pairs programs as DW does; the "
           "sensitivity rows stagger the planes' write points by 2 pages (page types kept, addresses apart), "
           "a model of unsynchronised allocation.",
           "CPU: the SoC's VexRiscv at 100 MHz (the paper assumes a 400 MHz embedded CPU for the scheduler's "
           "cost).",
           "Queue depth: the host keeps at most 32 requests in flight (the replay's slots, FTL_REPLAY_MAX_QD), so "
           "scheduler queues deeper than the page operations of 32 requests see the same stream (Fig. 8 above "
           "32 is flat for that reason, not because depth cannot help)."]
    if quick:
        out.append("--quick: two workloads (Financial1, write-heavy and random; TPC_E, read-heavy and sequential), "
                   "the allocation sensitivity on Financial1 only, no queue-depth sweep (Fig. 8: the paper gives no "
                   "numbers for it).")
    return out


def rows(results, workloads, row):
    """The report's rows (row(quantity, paper, ours, source, unit, fmt): reproduce._row)."""
    out = []
    for arch in ("DW-NFM", "SDW-NFM"):
        for ways in (1, 2, 4):
            out.append(row(f"{arch} throughput over CNFM, {ways} way(s)", PAPER_RATIO[(arch, ways)],
                           throughput_ratio(results, arch, ways, workloads), "IV-B2, Fig. 7(a)", "x"))
    for arch in ARCHS:
        lo, mean, hi = exploitation(results, arch, 1, workloads)
        p_lo, p_hi = PAPER_EXPLOITATION[arch]
        out.append(row(f"{arch} multi-plane exploitation, 1 way (mean over workloads)", (p_lo + p_hi) / 2, mean,
                       f"IV-B1, Fig. 6: {p_lo:.1%}-{p_hi:.1%}", "of pages"))
    for arch in ARCHS:
        lo, mean, hi = exploitation(results, arch, 1, workloads[:1], stagger=2)
        p_lo, p_hi = PAPER_EXPLOITATION[arch]
        out.append(row(f"{arch} exploitation, planes staggered by 2 pages ({workloads[0]})", (p_lo + p_hi) / 2, mean,
                       f"IV-B1, Fig. 6: {p_lo:.1%}-{p_hi:.1%}", "of pages"))
    for arch in ("DW-NFM", "SDW-NFM"):
        out.append(row(f"{arch} throughput over CNFM, planes staggered by 2 pages, 1 way ({workloads[0]})",
                       PAPER_RATIO[(arch, 1)], throughput_ratio(results, arch, 1, workloads[:1], stagger=2),
                       "IV-B2, Fig. 7(a)", "x"))
    for arch in ARCHS:
        cycles = _mean([r["sched_mean_cycles"] for r in results if r["arch"] == arch])
        out.append(row(f"scheduler decision / tPROG, {arch} (mean over its runs, 100 MHz)", PAPER_SCHED_SHARE,
                       cycles / T_PROG_CYCLES if cycles else None, "IV-D, dw:187: under 1 % (at 400 MHz)", "",
                       "{:.4f}"))
    return out


def figures(results, workloads, n, out):
    """Figs. 6, 7 and 8 and the allocation sensitivity as PNG files; returns their paths."""
    from nandlab.reproduce import _plt, _save
    plt = _plt()
    t = by_key(results)
    paths = []
    params = f"{PART} at time scale 1, {n} requests per run, queue {DEPTH}"
    # Fig. 6: exploitation per workload and architecture, 1 way.
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / len(ARCHS)
    for i, arch in enumerate(ARCHS):
        ys = [100 * (t.get((1, arch, w, DEPTH, 0)) or {}).get("exploitation_pages", 0) for w in workloads]
        ax.bar([k + i * width for k in range(len(workloads))], ys, width, label=f"{arch} (ours)", color=f"C{i}")
        lo, hi = PAPER_EXPLOITATION[arch]
        ax.axhspan(100 * lo, 100 * hi, color=f"C{i}", alpha=0.15, label=f"{arch} (paper's range)")
    ax.set_xticks([k + width for k in range(len(workloads))], workloads)
    ax.set_ylabel("pages in multi-plane operations (%)")
    ax.set_title(f"DW/SDW Fig. 6: multi-plane exploitation, 1 way ({params})", fontsize=8)
    ax.legend(fontsize=7, ncol=2)
    paths.append(_save(plt, fig, out / "dwsdw_fig6_exploitation.png"))
    # Fig. 7(a): throughput normalised to CNFM at 1, 2, 4 ways.
    fig, ax = plt.subplots(figsize=(7, 4))
    for i, arch in enumerate(("DW-NFM", "SDW-NFM")):
        ways = (1, 2, 4)
        ax.plot(ways, [throughput_ratio(results, arch, w, workloads) for w in ways], marker="o", color=f"C{i + 1}",
                label=f"{arch} (ours)")
        ax.plot(ways, [PAPER_RATIO[(arch, w)] for w in ways], linestyle="--", color=f"C{i + 1}", label=f"{arch} (paper)")
        staggered = throughput_ratio(results, arch, 1, workloads[:1], stagger=2)
        if staggered:
            ax.plot([1], [staggered], marker="s", linestyle="none", color=f"C{i + 1}",
                    label=f"{arch} (ours, planes staggered by 2 pages, {workloads[0]})")
    ax.axhline(1.0, color="C0", linewidth=0.8, label="CNFM")
    ax.set_xticks((1, 2, 4))
    ax.set_xlabel("ways on the channel (dies)")
    ax.set_ylabel("throughput / CNFM's (1), mean over workloads")
    ax.set_title(f"DW/SDW Fig. 7(a): throughput over CNFM ({params})", fontsize=8)
    ax.legend(fontsize=7)
    paths.append(_save(plt, fig, out / "dwsdw_fig7_throughput.png"))
    # Fig. 8: throughput against the queue depth, normalised to depth 32 (not in --quick runs).
    depths = sorted({r["depth"] for r in results if r["ways"] == 1 and r["workload"] == workloads[0]})
    if len(depths) > 1:
        paths.append(_fig8(plt, t, workloads, depths, params, out))
    # Sensitivity: exploitation with the planes' write points synchronised or staggered.
    fig, ax = plt.subplots(figsize=(7, 4))
    for i, arch in enumerate(ARCHS):
        ys = [100 * ((t.get((1, arch, workloads[0], DEPTH, s)) or {}).get("exploitation_pages") or 0) for s in (0, 2)]
        ax.bar([s + i * 0.25 for s in (0, 1)], ys, 0.25, color=f"C{i}", label=arch)
    ax.set_xticks([0.25, 1.25], ["stagger 0 (synchronised)", "stagger 2 (page addresses apart)"])
    ax.set_ylabel("pages in multi-plane operations (%)")
    ax.set_title(f"Allocation sensitivity, 1 way, {workloads[0]} ({params})", fontsize=8)
    ax.legend(fontsize=7)
    paths.append(_save(plt, fig, out / "dwsdw_allocation_sensitivity.png"))
    return [str(p) for p in paths]


def _fig8(plt, t, workloads, depths, params, out):
    from nandlab.reproduce import _save
    fig, ax = plt.subplots(figsize=(7, 4))
    for i, arch in enumerate(("DW-NFM", "SDW-NFM")):
        base = (t.get((1, arch, workloads[0], DEPTH, 0)) or {}).get("mb_s")
        ys = [(t.get((1, arch, workloads[0], d, 0)) or {}).get("mb_s") for d in depths]
        ax.plot(depths, [y / base if y and base else None for y in ys], marker="o", color=f"C{i + 1}", label=arch)
    ax.set_xscale("log", base=2)
    ax.set_xticks(depths, [str(d) for d in depths])
    ax.set_xlabel("scheduler queue depth (page operations)")
    ax.set_ylabel(f"throughput / depth {DEPTH}'s (1)")
    ax.set_title(f"DW/SDW Fig. 8: queue depth, 1 way, {workloads[0]} ({params}; the paper gives no numbers)",
                 fontsize=8)
    ax.legend(fontsize=7)
    return _save(plt, fig, out / "dwsdw_fig8_depth.png")


def section(quick, out, n=None, seed=1, log=print, jobs=1, scheduler=None):
    """The report's dwsdw section (nandlab.reproduce)."""
    main, sens, sweep, workloads = plan(quick)
    n = n or (100 if quick else 1000)
    points = list(dict.fromkeys(main + sens + sweep))
    log(f"dwsdw: {len(points)} runs of {n} requests on the simulated SoC ({len(main)} architecture x ways x "
        f"workload, {len(sens)} allocation sensitivity, {len(sweep)} queue depth)")
    results = run_points(points, n=n, seed=seed, out=out / "dwsdw_runs", log=log, jobs=jobs, scheduler=scheduler)
    from nandlab.reproduce import _row
    import json
    (out / "dwsdw_runs.json").write_text(json.dumps(results, indent=1, sort_keys=True, default=str))
    return {"title": "Plane-level parallelism: DW-NFM / SDW-NFM", "status": "reproduced",
            "rows": rows(results, workloads, _row), "figures": figures(results, workloads, n, out),
            "deviations": deviations(n, quick), "parameters": {"n": n, "seed": seed, "workloads": list(workloads),
                                                                "runs": results}}
