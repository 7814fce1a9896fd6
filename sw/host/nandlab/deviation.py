"""`nandlab experiment power --deviation`: dies whose real waveform deviates from the compiled one, with
static token tables and with tables adapted at run time (issue 18 b; docs/power_deviation.md).

The deviated dies play their phases at LEVEL % more current and STRETCH % longer
(gateware/power/deviation.py); the token tables stay compiled from the nominal waveform. The harness's
driver measures each die's peak current per phase (OI) and, with adaptive tables, re-compiles the RT of a
phase whose peak is above the level its RT covers, in that die's ring node only
(gateware/power/harness_deviation.h). Three cases on the same traces: deviation off, deviation on with
static tables, deviation on with adaptive tables.
"""

from nandlab.errors import NandLabError

LEVEL_RANGE = (-50, 100)
STRETCH_RANGE = (0, 200)
CASES = ["off", "static", "adaptive"]
# The counters the adaptive harness adds to a run's (gateware/power/harness_deviation.h).
ADDED = ("detected", "first_detect", "table_writes", "last_write", "violations_adapting")


def default_dies(dies):
    """The dies that deviate when the option names none: die 0 and die dies // 2 (2 of 8)."""
    return sorted({0, dies // 2})


def parse(text, dies, option="--deviation"):
    """`LEVEL_PCT[:STRETCH_PCT][@DIE,DIE,...]` -> {die: (level %, stretch %)}, refusing bad input with a
    message naming it (and `option`)."""
    what = f"{option} '{text}'"
    body, _, at = str(text).partition("@")
    level, _, stretch = body.partition(":")
    try:
        lv = int(level)
        st = int(stretch) if stretch else 0
    except ValueError:
        raise NandLabError(f"{what}: expected LEVEL_PCT[:STRETCH_PCT][@DIES], whole numbers (e.g. 10, 20:0@0,3, "
                           f"0:30)") from None
    if not LEVEL_RANGE[0] <= lv <= LEVEL_RANGE[1]:
        raise NandLabError(f"{what}: level {lv} % is outside {LEVEL_RANGE[0]}..{LEVEL_RANGE[1]} %")
    if not STRETCH_RANGE[0] <= st <= STRETCH_RANGE[1]:
        raise NandLabError(f"{what}: stretch {st} % is outside {STRETCH_RANGE[0]}..{STRETCH_RANGE[1]} %")
    if not lv and not st:
        raise NandLabError(f"{what}: deviates nothing (level and stretch both 0)")
    if at:
        try:
            which = sorted({int(d) for d in at.split(",")})
        except ValueError:
            raise NandLabError(f"{what}: dies must be a comma-separated list of die numbers") from None
        bad = [d for d in which if not 0 <= d < dies]
        if bad:
            raise NandLabError(f"{what}: die {bad[0]} is not one of the {dies} dies (0..{dies - 1})")
    else:
        which = default_dies(dies)
    return {d: (lv, st) for d in which}


def nominal_peaks(tables):
    """{OI: the nominal waveform's largest current in that array phase} (I_max / 4096, the die's fixed
    point), `tables` a PhaseTables."""
    from nandlab.nand_model.current import ACC_FRAC
    peak = {}
    for phases, _ in tables.ops.values():
        for ph in phases:
            top = max(max(i0 >> ACC_FRAC, (i0 + (n - 1) * slope) >> ACC_FRAC) for n, i0, slope in ph.segments)
            peak[ph.oi] = max(peak.get(ph.oi, 0), top)
    return peak


def raised_with(table):
    """{OI: the OIs a raise of its RT raises} (the phases before it in its atomic operation, and itself),
    `table` a tokens.TokenTable (the same for every TG)."""
    prefix = {}
    for rows in table.phases.values():
        group = []
        for oi, _, _ in rows:
            group = [oi] if table.first[oi] else group + [oi]
            prefix[oi] = list(group)
    return prefix


def spec_part(tables, table, adaptive):
    """The harness spec's "deviation" (gateware/power/harness_deviation.h): `adaptive`, the token unit's
    denominator 2^TG - 1, TT, each array phase's limit (I_max / 4096: the larger of what its RT covers
    and the nominal waveform's peak in the die's fixed point) and, per OI, the OIs a raise of it
    raises (the phases before it in its atomic operation, and itself). `tables` is the nominal
    PhaseTables, `table` the tokens.TokenTable loaded."""
    den = 2**table.tg - 1
    peak, prefix = nominal_peaks(tables), raised_with(table)
    limit = {oi: max(p, table.rt[oi] * 4096 // den) for oi, p in peak.items()}
    return {"adaptive": bool(adaptive), "den": den, "tt": table.tt,
            "limit": [[oi, limit[oi]] for oi in sorted(limit)],
            "prefix": [[oi] + prefix[oi] for oi in sorted(prefix)]}


def run(deviation, policies, tg, alpha, **common):
    """The three cases ({case: results}, and the table): deviation off (the nominal harness), on with
    static tables (detection only), on with adaptive tables; and "off_adaptive", deviation off with
    adaptive tables (which must detect nothing and change nothing). Keywords as experiment.run."""
    from nandlab import experiment
    out = {}
    out["off"], table = experiment.run(policies=policies, tg=tg, alpha=alpha, **common)
    out["off_adaptive"], _ = experiment.run(policies=policies, tg=tg, alpha=alpha, adaptive=True, **common)
    out["static"], _ = experiment.run(policies=policies, tg=tg, alpha=alpha, deviation=deviation, adaptive=False,
                                      **common)
    out["adaptive"], _ = experiment.run(policies=policies, tg=tg, alpha=alpha, deviation=deviation, adaptive=True,
                                        **common)
    return out, table


def summary(out, sys_clk_freq):
    """{case: {policy: {throughput_vs_npm (mean over the ratios, NPM of the same case),
    throughput_vs_nominal_npm (NPM without deviation: a stretched die is slower under NPM too), cycles,
    violations, and for the deviated cases the dies detected, table writes, violations before the
    last write and the time of the last write (us)}}}."""
    from nandlab.experiment import throughput_vs_npm
    npm = {r["ratio"]: r["cycles"] for r in out["off"] if r["policy"] == "npm"}
    res = {}
    for case, results in out.items():
        thr = throughput_vs_npm(results)
        res[case] = {}
        for p in thr:
            runs = [r for r in results if r["policy"] == p]
            row = {"throughput_vs_npm": thr[p]["mean"], "cycles": sum(r["cycles"] for r in runs),
                   "violations": sum(r["violations"] for r in runs),
                   "throughput_vs_nominal_npm": sum(npm[r["ratio"]] / r["cycles"] for r in runs) / len(runs)}
            if "detected" in runs[0]:
                row["detected"] = sorted({d for r in runs for d in r["detected"]})
                row["table_writes"] = sum(r["table_writes"] for r in runs)
                row["violations_adapting"] = sum(r["violations_adapting"] for r in runs)
                row["violations_steady"] = row["violations"] - row["violations_adapting"]
                row["last_write_us"] = max(r["last_write"] for r in runs) * 1e6 / sys_clk_freq
            res[case][p] = row
    return res


def format_summary(res, deviation, same=True):
    """The summary as a table: one row per policy, the three cases side by side, and whether the adaptive
    tables without deviation changed nothing (`same`)."""
    dies = ",".join(str(d) for d in sorted(deviation))
    lv, st = next(iter(deviation.values()))
    lines = [f"Deviation: dies {dies} at {lv:+d} % level, {st:+d} % duration; tables compiled from the nominal "
             f"waveform. Throughput normalised to NPM without deviation (mean over the ratios) / violating "
             f"40 ns windows (summed); the adaptive run's windows before the last table write and after it:",
             f"{'policy':<13}" + "".join(f"{c + ' thr':>14}{c + ' viol':>14}" for c in CASES) +
             f"{'detected':>10}{'writes':>8}{'viol<conv':>10}{'steady':>8}{'conv us':>10}"]
    for p in res["off"]:
        cells = "".join(f"{res[c][p]['throughput_vs_nominal_npm']:>14.3f}{res[c][p]['violations']:>14}" for c in CASES)
        a = res["adaptive"][p]
        lines.append(f"{p:<13}{cells}{','.join(map(str, a['detected'])) or '-':>10}{a['table_writes']:>8}"
                     f"{a['violations_adapting']:>10}{a['violations_steady']:>8}{a['last_write_us']:>10.1f}")
    lines.append(f"deviation off, adaptive tables: {'no detection, the same counters as static' if same else 'DIFFERS'}")
    return "\n".join(lines)


def no_false_detection(out):
    """Deviation off: the adaptive runs detected nothing and gave exactly the static runs' counters."""
    off = {(r["policy"], r["ratio"]): r for r in out["off"]}
    return all(r["detected"] == [] and {k: v for k, v in r.items() if k not in ADDED} == off[(r["policy"], r["ratio"])]
               for r in out["off_adaptive"])


def cmd(args, policies, common, params):
    """`experiment power --deviation SPEC`: the three cases, as a table or (--json) one JSON object."""
    import json
    deviation = parse(args.deviation, args.dies)
    if args.sweep is not None:
        raise NandLabError("--deviation runs one point: it does not combine with --sweep")
    out, table = run(deviation, policies, args.tg, args.alpha, **common)
    res = summary(out, args.clock_mhz * 1e6)
    if args.json:
        print(json.dumps({"params": dict(params, tg=args.tg, alpha=args.alpha, deviation=args.deviation,
                                         deviating_dies=sorted(deviation)),
                          "tt": table.tt, "summary": res, "no_false_detection": no_false_detection(out), "runs": out},
                         sort_keys=True))
    else:
        print(format_summary(res, deviation, no_false_detection(out)))
    return 0
