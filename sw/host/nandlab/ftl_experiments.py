"""`nandlab ftl experiment`: the FTL issue's host-side acceptance experiments as one command.

Every experiment is a run of the torture driver (sw/firmware/ftl/host: the FTL's C sources against
the NAND model, scored by a shadow of every sector), two at a time:

  1. random read/write/trim requests on three geometries (one MLC-like with 2 planes): 0 mismatches;
  2. power cuts at random NAND operations (a third wait for a program, a third for an erase):
     0 acknowledged writes lost, 0 mismatches, mount time on the host and in NAND-model time;
  3. write amplification of greedy GC under uniform random page writes at 7 % and 28 %
     over-provisioning against Desnoyers' analytic model (nandlab.ftl_waf_model), and greedy
     against cost-benefit GC under 80/20 hot/cold writes;
  4. the erase-count spread under hot/cold writes with static wear levelling on and off;
  5. injected program and erase failures: grown bad blocks retired, data intact while running and
     after a fresh mount of what the flash holds;
  6. RAM per mapped page at 1 GiB (8 dies x 1024 blocks x 64 pages x 2 KiB).

Prints a table (measured, target, pass/fail) and the WAF model's sensitivity to its mapping; writes
results.json, summary.txt and three figures into --out. --quick runs the same at a smaller scale.
"""

import json
import os
import subprocess
import sys
import time
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from nandlab import env
from nandlab import ftl_waf_model as wm
from nandlab.errors import NandLabError

# Geometries: name -> torture options. "mlc" is MLC-shaped (2 planes, 8 KiB pages, 128-page blocks,
# 4 KiB sectors so every write of one sector is a read-modify-write); the model has no MLC cells.
MIX_GEOMETRIES = {
    "slc-2k":     dict(dies=2, planes=1, blocks=64, pages=32, page_bytes=2048, sector_bytes=4096, max_sectors=8),
    "mlc-2plane": dict(dies=2, planes=2, blocks=64, pages=128, page_bytes=8192, sector_bytes=4096, max_sectors=8),
    "4k-512":     dict(dies=4, planes=1, blocks=128, pages=64, page_bytes=4096, sector_bytes=512, max_sectors=16),
}
# Write amplification: one page per request (sector = page), the model's workload.
WAF_GEOMETRY = dict(dies=4, planes=2, blocks=256, pages=64, page_bytes=512, sector_bytes=512, max_sectors=1)
WAF_SMALL_UNIT = dict(dies=2, planes=1, blocks=64, pages=32, page_bytes=512, sector_bytes=512, max_sectors=1)
WL_GEOMETRY = dict(dies=2, planes=1, blocks=64, pages=32, page_bytes=512, sector_bytes=512, max_sectors=1)
BAD_GEOMETRY = dict(dies=4, planes=2, blocks=128, pages=16, page_bytes=2048, sector_bytes=4096, max_sectors=8)
GIB_GEOMETRY = dict(dies=8, planes=1, blocks=1024, pages=64, page_bytes=2048, sector_bytes=4096, max_sectors=8)
WAF_POINTS = (70, 280)
DENSE_CUTS = 2000                # mean NAND operations between cuts (make test's spacing: most land in recoveries)
STEADY_CUTS = 20000              # cuts spaced so that GC runs for a while between them           # the acceptance's over-provisioning, per mille
WL_THRESHOLD = 32                # the FTL's default
RAM_TARGET = 8.5
WAF_TOLERANCE = 0.10

PLANS = {
    # mix ops per geometry, cuts per geometry, WAF curve, seeds, precondition/measured capacities, ...
    "full": dict(mix_ops=1_000_000, cuts={"slc-2k": 1000, "mlc-2plane": 1000, "4k-512": 1000}, steady_cuts=200,
                 waf_curve=(50, 70, 100, 150, 200, 280, 400), waf_seeds=3, precondition=4, measured=2.0,
                 hc_warmup=3.0, hc_measured=2.0, wl_ops=800_000, bad_ops=60_000, bad_seeds=2, sensitivity=True),
    "quick": dict(mix_ops=100_000, cuts={"slc-2k": 1000, "mlc-2plane": 250, "4k-512": 250}, steady_cuts=50,
                  waf_curve=(70, 150, 280), waf_seeds=1, precondition=3, measured=1.0,
                  hc_warmup=2.0, hc_measured=1.0, wl_ops=300_000, bad_ops=30_000, bad_seeds=1, sensitivity=False),
}


def geometry_text(g):
    planes = f" x {g['planes']} planes" if g["planes"] > 1 else ""
    return (f"{g['dies']} dies{planes} x {g['blocks']} blocks x {g['pages']} pages x {g['page_bytes']} B "
            f"({g['sector_bytes']} B sectors)")


def argv_for(g, seed, **opts):
    """The torture driver's argv for a geometry and options (every fault off unless given). Map
    checkpoints off unless given (the FTL's default turns them on): the WAF models have no metadata
    writes, and the numbers stay comparable with the runs before checkpoints were the default."""
    base = dict(op_permille=70, gc="greedy", static_wl=1, wl_threshold=WL_THRESHOLD, read_ratio=0.0,
                trim_ratio=0.0, qd=32, flip=0.0, factory_bad=0.0, workload="uniform", ckpt_pages=0)
    base.update(g)
    base.update(opts)
    base["seed"] = seed
    out = []
    for k, v in base.items():
        out += [f"--{k.replace('_', '-')}", str(v)]
    return out


class Job:
    def __init__(self, name, group, argv, note=""):
        self.name, self.group, self.argv, self.note = name, group, argv, note
        self.result = None

    def weight(self):
        a = dict(zip(self.argv[::2], self.argv[1::2]))
        return int(a.get("--ops", 0)) * (3 if a.get("--page-bytes") == "8192" else 1) + 40 * int(a.get("--cuts", 0))


def plan_jobs(mode, seed):
    p = PLANS[mode]
    jobs = []
    mix = dict(read_ratio=0.3, trim_ratio=0.1, flip=0.01, tag_flip=0.001, factory_bad=0.01)
    for i, (name, g) in enumerate(MIX_GEOMETRIES.items()):
        gc = "cost-benefit" if name == "4k-512" else "greedy"
        jobs.append(Job(f"mix/{name}", "mix", argv_for(g, seed + i, ops=p["mix_ops"], gc=gc, **mix)))
        jobs.append(Job(f"cuts/{name}", "cuts", argv_for(g, seed + 10 + i, ops=20000, cuts=p["cuts"][name],
                                                         cut_mean=DENSE_CUTS, precondition=2, **mix)))
        for trims in (0.1, 0.0):
            jobs.append(Job(f"steady/{name}/{'trims' if trims else 'no-trims'}", "steady", argv_for(
                g, seed + 20 + i, ops=20000, cuts=p["steady_cuts"], cut_mean=STEADY_CUTS, precondition=2,
                **dict(mix, trim_ratio=trims))))
    for op in p["waf_curve"]:
        for s in range(p["waf_seeds"]):
            jobs.append(_waf_job(f"waf/op{op}/s{seed + s}", "waf", WAF_GEOMETRY, op, seed + s, p, p["precondition"]))
    for op in WAF_POINTS:
        for gc in ("greedy", "cost-benefit"):
            L = wm.logical_pages(WAF_GEOMETRY["dies"], WAF_GEOMETRY["planes"], WAF_GEOMETRY["blocks"],
                                 WAF_GEOMETRY["pages"], op, WAF_GEOMETRY["page_bytes"])
            jobs.append(Job(f"hotcold/op{op}/{gc}", "hotcold", argv_for(
                WAF_GEOMETRY, seed, op_permille=op, gc=gc, static_wl=0, workload="hotcold", precondition=1,
                warmup=int(p["hc_warmup"] * L), ops=int(p["hc_measured"] * L))))
    if p["sensitivity"]:
        for pre in (1, 2):
            jobs.append(_waf_job(f"waf-pre{pre}/op70", "waf-sens", WAF_GEOMETRY, 70, seed, p, pre))
        for op in WAF_POINTS:
            jobs.append(_waf_job(f"waf-np63/op{op}", "waf-sens", WAF_SMALL_UNIT, op, seed, p, p["precondition"]))
    for wl in (1, 0):
        jobs.append(Job(f"wl/{'on' if wl else 'off'}", "wl", argv_for(
            WL_GEOMETRY, seed, static_wl=wl, workload="hotcold", precondition=1, ops=p["wl_ops"])))
    for s in range(p["bad_seeds"]):
        for kind, rate in (("program", 1e-5), ("erase", 2e-4)):
            # Hot/cold: cold data stays where it was written, in blocks that may go bad meanwhile.
            jobs.append(Job(f"bad/{kind}/s{seed + s}", "bad", argv_for(
                BAD_GEOMETRY, seed + s, ops=p["bad_ops"], read_ratio=0.3, trim_ratio=0.05, factory_bad=0.01,
                workload="hotcold", final_remount=1, **{f"{kind}_fail": rate})))
    jobs.append(Job("ram/1GiB", "ram", argv_for(GIB_GEOMETRY, seed, ops=2000, read_ratio=0.3)))
    return jobs


def _waf_job(name, group, g, op, seed, p, precondition):
    L = wm.logical_pages(g["dies"], g["planes"], g["blocks"], g["pages"], op, g["page_bytes"])
    return Job(name, group, argv_for(g, seed, op_permille=op, static_wl=0, precondition=precondition,
                                     ops=int(p["measured"] * L)))


def run_job(exe, job, timeout=3600, log=None):
    """One torture run; its progress lines (every tenth of a long run) go to log as they come."""
    t0 = time.monotonic()
    with subprocess.Popen([str(exe), *job.argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        err = []
        for line in proc.stderr:          # the result comes on stdout at the very end
            err.append(line)
            if log and line.startswith("ftl-torture: ") and " of " in line:
                log(f"        {job.name}: {line[len('ftl-torture: '):].strip()}")
        out = proc.stdout.read()
        rc = proc.wait()
        timer.cancel()
    try:
        d = json.loads(out)
    except json.JSONDecodeError:
        why = f"killed after {timeout} s" if rc < 0 else f"exit {rc}"
        d = {"error": f"no result ({why}): {(out + ''.join(err))[-300:]}"}
    d["exit_code"] = rc
    d["wall_s"] = round(time.monotonic() - t0, 2)
    d["command"] = " ".join(["ftl-torture", *job.argv])
    job.result = d
    return job


def run_jobs(exe, jobs, parallel, log):
    """Runs every job, `parallel` at a time, longest first; a line on stderr as each ends."""
    t0 = time.monotonic()
    order = sorted(jobs, key=lambda j: -j.weight())
    log(f"ftl experiment: {len(jobs)} runs of {exe}, {parallel} at a time")
    with ThreadPoolExecutor(max_workers=parallel) as pool:
        futures = [pool.submit(run_job, exe, j, 3600, log) for j in order]
        for k, fut in enumerate(as_completed(futures), 1):
            j = fut.result()
            bad = " ERROR: " + j.result["error"] if "error" in j.result else ""
            log(f"  [{k:>2}/{len(jobs)}] {j.name:<24} {j.result['wall_s']:7.1f} s   "
                f"(elapsed {time.monotonic() - t0:5.0f} s){bad}")
    return {j.name: j.result for j in jobs}


# Evaluation ----------------------------------------------------------------------------------------

def _row(item, what, measured, target, ok, **details):
    return dict(item=item, what=what, measured=measured, target=target, ok=bool(ok), details=details)


def _failed(runs, names):
    return [n for n in names if "error" in runs[n]]


def eval_mix(runs, mode):
    names = [n for n in runs if n.startswith("mix/")]
    need = PLANS[mode]["mix_ops"]
    bad = _failed(runs, names)
    ops = sum(runs[n].get("ops", 0) for n in names)
    mism = sum(runs[n].get("mismatches", 0) for n in names)
    ok = not bad and mism == 0 and len(names) >= 3 and all(runs[n]["ops"] >= need and runs[n]["exit_code"] == 0
                                                            for n in names)
    ok = ok and any(runs[n]["planes"] >= 2 for n in names)
    scale = "" if mode == "full" else " (--quick; acceptance: 1 M)"
    return _row("1", "random read/write/trim mix vs shadow model",
                f"{ops / 1e6:.2f} M ops on {len(names)} geometries, {mism} mismatches",
                f">= {need / 1e6:g} M ops each on >= 3 geometries incl. MLC 2-plane{scale}; 0 mismatches", ok,
                runs={n: {k: runs[n].get(k) for k in ("ops", "mismatches", "waf", "gc_runs", "wl_moves",
                                                      "ecc_corrected", "seconds", "first_error")} for n in names},
                errors=bad)


def _cut_summary(runs, names):
    tot = lambda k: sum(runs[n].get(k, 0) for n in names)
    mx = lambda k: max((runs[n].get(k, 0) for n in names), default=0)
    rec = tot("recoveries")
    wmean = lambda k: sum(runs[n].get(k, 0) * runs[n].get("recoveries", 0) for n in names) / max(rec, 1)
    return dict(power_cuts=tot("power_cuts"), recoveries=rec, interrupted_programs=tot("interrupted_programs"),
                interrupted_erases=tot("interrupted_erases"), lost_acked=tot("lost_acked"),
                mismatches=tot("mismatches"), mount_failures=tot("mount_failures"), torn_sectors=tot("torn_sectors"),
                recovery_host_ms_mean=wmean("recovery_host_ms_mean"), recovery_host_ms_max=mx("recovery_host_ms_max"),
                recovery_model_ms_mean=wmean("recovery_model_us_mean") / 1e3,
                recovery_model_ms_max=mx("recovery_model_us_max") / 1e3,
                recovery_pages_read_max=mx("recovery_pages_read_max"),
                first_errors={n: runs[n].get("first_error") or runs[n].get("error") for n in names
                              if runs[n].get("first_error") or runs[n].get("error")})


CUT_KEYS = ("power_cuts", "recoveries", "interrupted_programs", "interrupted_erases", "lost_acked", "mismatches",
            "mount_failures", "torn_sectors", "recovery_host_ms_mean", "recovery_host_ms_max", "recovery_model_us_mean",
            "recovery_model_us_max", "recovery_pages_read_max", "first_error")


def eval_cuts(runs, mode):
    names = [n for n in runs if n.startswith("cuts/")]
    bad = _failed(runs, names)
    c = _cut_summary(runs, names)
    ok = (not bad and c["power_cuts"] >= 1000 and c["interrupted_programs"] > 0 and c["interrupted_erases"] > 0
          and c["lost_acked"] == 0 and c["mismatches"] == 0 and c["mount_failures"] == 0)
    rows = [_row("2", f"power cuts, {DENSE_CUTS} NAND ops apart on average",
                 f"{c['power_cuts']} cuts ({c['interrupted_programs']} programs, {c['interrupted_erases']} "
                 f"erases cut short), {c['recoveries']} mounts; {c['lost_acked']} lost, {c['mismatches']} mismatches; "
                 f"mount: host {c['recovery_host_ms_mean']:.1f} ms mean / {c['recovery_host_ms_max']:.1f} ms max, "
                 f"NAND model {c['recovery_model_ms_mean']:.0f} ms mean / {c['recovery_model_ms_max']:.0f} ms max",
                 ">= 1000 cuts incl. mid-program and mid-erase; 0 acknowledged writes lost; 0 mismatches; "
                 "recovery time reported", ok, summary=c, errors=bad,
                 runs={n: {k: runs[n].get(k) for k in CUT_KEYS} for n in names})]
    for kind in ("trims", "no-trims"):
        names = [n for n in runs if n.startswith("steady/") and n.endswith("/" + kind)]
        c = _cut_summary(runs, names)
        bad = _failed(runs, names)
        ok = bool(names) and not bad and c["lost_acked"] == 0 and c["mismatches"] == 0 and c["mount_failures"] == 0
        first = next(iter(c["first_errors"].items()), None)
        rows.append(_row("2", f"power cuts {STEADY_CUTS} ops apart (GC between), {'10 % trims' if kind == 'trims' else 'no trims'}",
                         f"{c['power_cuts']} cuts, {c['recoveries']} mounts, {c['mount_failures']} failed mounts, "
                         f"{c['lost_acked']} lost, {c['mismatches']} mismatches"
                         + (f"; first: {first[0]}: {first[1]}" if first else ""),
                         "0 failed mounts, 0 lost, 0 mismatches", ok, summary=c, errors=bad,
                         runs={n: {k: runs[n].get(k) for k in CUT_KEYS} for n in names}))
    return rows


def waf_point(run, mapping=wm.PRIMARY, header_counts=False, metadata=False):
    """(measured, model) write amplification of one uniform run under a mapping."""
    measured = run["waf_with_metadata"] if metadata else run["waf"]
    return measured, wm.waf_greedy(wm.alpha_for(run, mapping), wm.np_for(run, header_counts))


def waf_table(runs):
    """Per over-provisioning point of the main geometry: seeds' measured WAF and the model's."""
    points = {}
    for n, d in runs.items():
        if n.startswith("waf/") and "error" not in d:
            points.setdefault(d["op_permille"], []).append(d)
    out = {}
    for op, ds in sorted(points.items()):
        meas = [d["waf"] for d in ds]
        mean = sum(meas) / len(meas)
        row = dict(op_permille=op, seeds=len(ds), waf=mean, waf_min=min(meas), waf_max=max(meas),
                   waf_with_metadata=sum(d["waf_with_metadata"] for d in ds) / len(ds),
                   free_superblocks_mean=sum(d["free_superblocks_mean"] for d in ds) / len(ds),
                   capacities_measured=sum(d["host_page_writes"] / d["logical_pages"] for d in ds) / len(ds))
        for m in wm.MAPPINGS:
            a = sum(wm.alpha_for(d, m) for d in ds) / len(ds)
            row[f"alpha_{m}"] = a
            row[f"model_{m}"] = wm.waf_greedy(a, wm.np_for(ds[0]))
        row["model_np_with_header"] = wm.waf_greedy(row[f"alpha_{wm.PRIMARY}"], wm.np_for(ds[0], True))
        row["model_large_unit_limit"] = wm.waf_agarwal(op / 1000)
        row["deviation"] = mean / row[f"model_{wm.PRIMARY}"] - 1
        out[op] = row
    return out


def eval_waf(runs, mode):
    table = waf_table(runs)
    rows = []
    for op in WAF_POINTS:
        t = table.get(op)
        if not t:
            rows.append(_row("3", f"WAF uniform, OP {op / 10:g} %", "no result", "", False))
            continue
        ok = abs(t["deviation"]) <= WAF_TOLERANCE
        nominal = t["waf"] / t["model_nominal"] - 1
        rows.append(_row("3", f"WAF greedy, uniform random, OP {op / 10:g} %",
                         f"{t['waf']:.3f} vs model {t[f'model_{wm.PRIMARY}']:.3f} ({t['deviation']:+.1%}); "
                         f"nominal-OP model {t['model_nominal']:.3f} ({nominal:+.1%})",
                         "within +-10 % of Desnoyers' greedy model (Eq. 12)", ok, **t))
    hc = {n: d for n, d in runs.items() if n.startswith("hotcold/")}
    parts, ok = [], not _failed(runs, list(hc))
    for op in WAF_POINTS:
        g, c = hc.get(f"hotcold/op{op}/greedy", {}), hc.get(f"hotcold/op{op}/cost-benefit", {})
        if "waf" in g and "waf" in c:
            parts.append(f"OP {op / 10:g} %: greedy {g['waf']:.2f}, cost-benefit {c['waf']:.2f} "
                         f"({c['waf'] / g['waf'] - 1:+.0%})")
    rows.append(_row("3", "greedy vs cost-benefit, 80/20 hot/cold", "; ".join(parts) or "no result",
                     "reported", ok and len(parts) == len(WAF_POINTS),
                     runs={n: {k: d.get(k) for k in ("waf", "waf_with_metadata", "gc_runs", "gc_moves",
                                                     "free_superblocks_mean")} for n, d in hc.items()}))
    return rows, table


def eval_wl(runs, mode):
    on, off = runs.get("wl/on", {}), runs.get("wl/off", {})
    if "error" in on or "error" in off or not on or not off:
        return _row("4", "erase-count spread, static WL", "no result", "", False)
    thr = on["wl_threshold"]
    over = on["erase_spread_over_samples"] / max(on["samples"], 1)
    ok = on["erase_spread_max"] <= thr and on["mismatches"] == 0 and off["mismatches"] == 0
    return _row("4", "erase-count spread, hot/cold 80/20",
                f"WL on: max {on['erase_spread_max']} (over {thr} in {over:.1%} of samples), end "
                f"{on['erase_max'] - on['erase_min']}; WL off: max {off['erase_spread_max']}, end "
                f"{off['erase_max'] - off['erase_min']}",
                f"max spread <= threshold {thr} with static WL on; off shown for contrast", ok,
                on={k: on[k] for k in ("erase_min", "erase_max", "erase_mean", "erase_spread_max", "wl_moves", "waf")},
                off={k: off[k] for k in ("erase_min", "erase_max", "erase_mean", "erase_spread_max", "wl_moves", "waf")},
                over_threshold_fraction=over)


def eval_bad(runs, mode):
    names = [n for n in runs if n.startswith("bad/")]
    bad = _failed(runs, names)
    tot = lambda k, sel=names: sum(runs[n].get(k, 0) for n in sel)
    running = tot("mismatches") - tot("mismatches_after_remount")
    ok_run = (bool(names) and not bad and tot("bad_grown") > 0 and running == 0 and tot("lost_pages") == 0
              and tot("grown_bad_unretired") == 0)
    each = ", ".join(f"{n[4:]}: {runs[n].get('bad_grown', 0)}" for n in names)
    rows = [_row("5", "grown bad blocks: retired, data intact (running)",
                 f"{tot('grown_bad_in_array')} blocks failed ({each}), "
                 f"{tot('grown_bad_unretired')} not in the bad-block table; {running} mismatches, "
                 f"{tot('lost_pages')} pages lost", "every failed block retired; 0 mismatches, 0 lost", ok_run,
                 errors=bad)]
    per_kind = {k: tot("mismatches_after_remount", [n for n in names if n.startswith(f"bad/{k}/")])
                for k in ("program", "erase")}
    rows.append(_row("5", "grown bad blocks: data intact after a fresh mount",
                     f"sectors wrong after remount: {per_kind['program']} (program failures), "
                     f"{per_kind['erase']} (erase failures)", "0", bool(names) and not bad and sum(per_kind.values()) == 0,
                     runs={n: {k: runs[n].get(k) for k in ("bad_grown", "grown_bad_unretired", "mismatches",
                           "mismatches_after_remount", "lost_pages", "first_error")} for n in names}))
    return rows


def eval_ram(runs, mode):
    d = runs.get("ram/1GiB", {})
    if "error" in d or not d:
        return _row("6", "RAM per mapped page at 1 GiB", "no result", "", False)
    gib = d["physical_pages"] * d["page_bytes"] / 2 ** 30
    return _row("6", "RAM per mapped page at 1 GiB",
                f"{d['ram_per_logical_page']:.2f} B per logical page ({d['ram_bytes'] / 2 ** 20:.2f} MiB / "
                f"{d['logical_pages']} pages), {d['ram_per_physical_page']:.2f} B per physical page ({gib:g} GiB)",
                f"<= {RAM_TARGET} B per mapped page", d["ram_per_logical_page"] <= RAM_TARGET and d["mismatches"] == 0,
                **{k: d[k] for k in ("ram_bytes", "logical_pages", "physical_pages", "ram_per_logical_page",
                                     "ram_per_physical_page")})


def evaluate(runs, mode):
    waf_rows, table = eval_waf(runs, mode)
    rows = [eval_mix(runs, mode), *eval_cuts(runs, mode), *waf_rows, eval_wl(runs, mode), *eval_bad(runs, mode),
            eval_ram(runs, mode)]
    return rows, table


def sensitivity_lines(runs, table):
    """How the WAF comparison moves with the model mapping, metadata, preconditioning and erase unit."""
    lines = ["WAF model mapping (Desnoyers Eq. 12; measured / model - 1):",
             f"  {'OP':>5} {'measured':>9} {'free-pool*':>11} {'nominal':>9} {'all-spare':>10} {'Np+header':>10} "
             f"{'+metadata':>10} {'free SBs':>8} {'seeds':>5}"]
    for op, t in table.items():
        dev = lambda m: f"{t['waf'] / m - 1:+.1%}"
        meta = t["waf_with_metadata"] / t[f"model_{wm.PRIMARY}"] - 1
        lines.append(f"  {op / 10:>4g}% {t['waf']:>9.3f} {dev(t['model_free-pool']):>11} {dev(t['model_nominal']):>9} "
                     f"{dev(t['model_all-spare']):>10} {dev(t['model_np_with_header']):>10} {meta:>+10.1%} "
                     f"{t['free_superblocks_mean']:>8.2f} {t['seeds']:>5}")
    lines.append("  (* primary: alpha = data slots of the superblocks holding data / logical pages, the free pool's "
                 "mean measured)")
    for op in WAF_POINTS:
        g = runs.get(f"hotcold/op{op}/greedy", {})
        if "waf" in g:
            m = wm.waf_greedy_hotcold(wm.alpha_for(g), wm.np_for(g), 0.8, 0.2)
            lines.append(f"  80/20 at OP {op / 10:g} %: greedy {g['waf']:.3f} vs Desnoyers Eq. 16 {m:.3f} "
                         f"({g['waf'] / m - 1:+.1%}, primary mapping; a reference, not a target)")
    extra = [(n, d) for n, d in runs.items() if n.startswith("waf-") and "error" not in d]
    if extra:
        lines.append("Preconditioning (main geometry, OP 7 %) and a smaller erase unit (2 dies x 32 pages):")
        for n, d in sorted(extra):
            meas, model = waf_point(d)
            _, nominal = waf_point(d, "nominal")
            lines.append(f"  {n:<16} fill + {d['precondition'] - 1} capacities, Np {wm.np_for(d)}: {meas:.3f} vs "
                         f"{model:.3f} ({meas / model - 1:+.1%}; nominal alpha: {meas / nominal - 1:+.1%}), "
                         f"free superblocks {d['free_superblocks_mean']:.2f}")
    return lines


def table_lines(rows):
    w = [4, 46, 10]
    out = [f"{'item':<{w[0]}} {'what':<{w[1]}} {'result':<{w[2]}} measured  |  target"]
    for r in rows:
        out.append(f"{r['item']:<{w[0]}} {r['what']:<{w[1]}} {'PASS' if r['ok'] else 'FAIL':<{w[2]}} {r['measured']}")
        out.append(f"{'':<{w[0] + w[1] + w[2] + 2}} target: {r['target']}")
    return out


# Command line --------------------------------------------------------------------------------------

def add_parser(fs):
    e = fs.add_parser("experiment", help="The FTL issue's host-side acceptance experiments (table, figures).",
                      description="Runs the FTL's host acceptance experiments with the torture driver (two runs "
                      "at a time): 1 M-op random mixes on three geometries, >= 1000 power cuts, write amplification "
                      "against Desnoyers' greedy model at 7 and 28 % OP, greedy vs cost-benefit on 80/20 writes, "
                      "erase-count spread with static WL on/off, grown bad blocks, RAM per page at 1 GiB. Prints a "
                      "table; writes results.json, summary.txt and PNG figures into --out. The full run takes "
                      "about 5 minutes on 2 cores (3 CPU-minutes per core), --quick about 1.5.")
    e.add_argument("--quick", action="store_true", help="Smaller runs (about 1.5 minutes on 2 cores).")
    e.add_argument("--json", action="store_true", help="Print one JSON object instead of the table.")
    e.add_argument("--out", default=None, help="Directory for results and figures (default build/ftl-experiments"
                   "[-quick]).")
    e.add_argument("--seed", type=int, default=1, help="Base random seed (default 1).")
    e.add_argument("--jobs", type=int, default=2, help="Torture runs at a time (default 2).")
    return e


def check_args(args):
    """Every option checked before anything is built (NandLabError names the option)."""
    if args.seed < 0 or args.seed > 2 ** 31:
        raise NandLabError(f"--seed {args.seed}: takes 0..{2 ** 31}")
    if not 1 <= args.jobs <= 16:
        raise NandLabError(f"--jobs {args.jobs}: takes 1..16")
    out = Path(args.out) if args.out else env.BUILD_DIR / ("ftl-experiments-quick" if args.quick else "ftl-experiments")
    if out.exists() and not out.is_dir():
        raise NandLabError(f"--out {out}: exists and is not a directory")
    parent = next((p for p in [out, *out.parents] if p.exists()), None)
    if parent is None or not os.access(parent, os.W_OK):
        raise NandLabError(f"--out {out}: cannot create it ({parent} is not writable)")
    return out


def run_experiments(mode="full", seed=1, jobs=2, out=None, log=None):
    """Builds the torture driver, runs every experiment, evaluates and draws; returns the result dict."""
    from nandlab.ftl import build_torture
    from nandlab.ftl_experiment_figures import make_figures
    log = log or (lambda s: print(s, file=sys.stderr, flush=True))
    t0 = time.monotonic()
    exe = build_torture(env.BUILD_DIR / "ftl-host")
    planned = plan_jobs(mode, seed)
    runs = run_jobs(exe, planned, jobs, log)
    rows, table = evaluate(runs, mode)
    out = Path(out or env.BUILD_DIR / "ftl-experiments")
    out.mkdir(parents=True, exist_ok=True)
    figures = make_figures(runs, table, out, seed)
    result = dict(mode=mode, seed=seed, jobs=jobs, elapsed_s=round(time.monotonic() - t0, 1), out=str(out),
                  all_pass=all(r["ok"] for r in rows), items=rows, waf=list(table.values()),
                  model=dict(formula="A(alpha) = alpha / (alpha + W0(-alpha e^-alpha)) [Eq. 4]; greedy: "
                             "A(k alpha) / k, k = 1 + 1/(2 Np) [Eq. 12]",
                             citation="P. Desnoyers, Analytic modeling of SSD write performance, SYSTOR 2012; "
                             "L. Xiang and B. Kurkoski, An improved analytic expression for write amplification "
                             "in NAND flash, arXiv:1110.4245", primary_mapping=wm.PRIMARY),
                  sensitivity=sensitivity_lines(runs, table), figures=figures,
                  commands={n: r["command"] for n, r in runs.items()},
                  runs={n: {k: v for k, v in r.items() if k != "erase_series" or n.startswith("wl/")}
                        for n, r in runs.items()})
    (out / "results.json").write_text(json.dumps(result, indent=1) + "\n")
    (out / "summary.txt").write_text("\n".join(summary_lines(result)) + "\n")
    return result


def summary_lines(result):
    head = (f"nandlab ftl experiment{' --quick' if result['mode'] == 'quick' else ''} --seed {result['seed']}: "
            f"{result['elapsed_s']:.0f} s")
    if result["mode"] == "quick":
        head += " (reduced scale: the acceptance run is without --quick)"
    return [head, "", *table_lines(result["items"]), "", *result["sensitivity"], "",
            "Model: " + result["model"]["formula"], "  " + result["model"]["citation"], "",
            "Figures: " + ", ".join(result["figures"]), f"Results: {result['out']}/results.json"]


def cmd_experiment(args):
    out = check_args(args)
    result = run_experiments("quick" if args.quick else "full", args.seed, args.jobs, out)
    if args.json:
        print(json.dumps(result))
    else:
        print("\n".join(summary_lines(result)))
    return 0 if result["all_pass"] else 1
