"""`nandlab experiment power`: the MTPM paper's power experiment on the CPU-less harness in Verilator.

Synthetic traces as in Section IV-A: N operations, one erase after every 500 programs, reads at a
ratio R0..R100, spread over the dies at random (seeded); MLC programs alternate LSB and MSB pages
per die. The harness (gateware/power/harness.py) runs every policy on the same traces; results
are cycles until all dies finish (throughput, normalised to NPM), program / read latency, waiting
for tokens, and budget violations per 40 ns window.
"""

import json
import os
import random
from dataclasses import dataclass
from pathlib import Path

from migen import Signal

from litex.gen import LiteXModule

from nandlab import env, tokens
from nandlab.errors import NandLabError

POLICIES = ["npm", "ppm", "mtpm", "kmtpm_atomic", "kmtpm_sub"]
READ_RATIOS = [0, 25, 50, 75, 100]


def synthetic_trace(n_ops, read_pct, dies, erase_every=500, seed=1):
    """[(die, op)] with op in read / program_lsb / program_msb / erase."""
    rng = random.Random(seed * 1000 + read_pct)
    msb = [False] * dies
    out, programs = [], 0
    for _ in range(n_ops):
        die = rng.randrange(dies)
        if rng.random() * 100 < read_pct:
            out.append((die, "read"))
            continue
        out.append((die, "program_msb" if msb[die] else "program_lsb"))
        msb[die] = not msb[die]
        programs += 1
        if programs % erase_every == 0:
            out.append((rng.randrange(dies), "erase"))
    return out


class HarnessTop(LiteXModule):
    def __init__(self, part, n, sys_clk_freq, time_scale, depth):
        from nandlab.gateware.power.harness import PowerHarness
        self.h = h = PowerHarness(part, n, sys_clk_freq, time_scale, depth)
        self.ios = []
        def port(name, sig, out):
            p = Signal(len(sig), name=name)
            self.comb += (p.eq(sig) if out else sig.eq(p))
            self.ios.append(p)
        for name in ("load_we", "load_die", "load_adr", "load_op", "go"):
            port(name, getattr(h, name), False)
        for i in range(n):
            port(f"count{i}", h.count[i], False)
            port(f"ops_done{i}", h.ops_done[i], True)
            for k in range(3):
                port(f"kind_ops{i}_{k}", h.kind_ops[i][k], True)
                port(f"kind_cycles{i}_{k}", h.kind_cycles[i][k], True)
            port(f"waited{i}", h.ring.nodes[i].waited, True)
        for name in ("req_mode", "req_tg", "req_alpha", "apply", "table_we", "table_adr", "table_dat",
                     "table_clear"):
            port(name, getattr(h.ring, name), False)
        for name in ("running", "error", "tt"):
            port(name, getattr(h.ring, name), True)
        port("done", h.done, True)
        port("cycles", h.cycles, True)
        for name in ("violations", "windows", "max_sample"):
            port(name, getattr(h.monitor, name), True)


def run(part_name="MTPM-MLC", dies=8, n_ops=5000, ratios=READ_RATIOS, policies=POLICIES, tg=4, alpha=4,
        time_scale=1, sys_clk_freq=100e6, seed=1, log=print, workdir=None):
    from nandlab.nand_model.parts import get_part
    from nandlab.testing import run_cocotb
    part = get_part(part_name)
    table = tokens.compile_tables(part, tg=tg, alpha=alpha)
    traces = {r: synthetic_trace(n_ops, r, dies, seed=seed) for r in ratios}
    depth = 1 << max(max(sum(1 for d, _ in t if d == i) for i in range(dies)) for t in traces.values()).bit_length()
    jobs = [{"policy": p, "ratio": r} for r in ratios for p in policies]
    workdir = (env.BUILD_DIR / "experiment" if workdir is None else Path(workdir)).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    spec = {"dies": dies, "tg": tg, "alpha": alpha, "table": table.words(), "jobs": jobs,
            "traces": {str(r): t for r, t in traces.items()}, "results": str(workdir / "results.json")}
    (workdir / "spec.json").write_text(json.dumps(spec))
    log(f"harness: {dies} dies of {part_name}, {n_ops} operations per trace, {len(jobs)} runs "
        f"(Verilator; progress in {workdir / 'progress.txt'}) ...")
    top = HarnessTop(part, dies, sys_clk_freq, time_scale, depth)
    run_cocotb(top, top.ios, "nandlab_harness", "experiment_tb", workdir,
               extra_env={"NANDLAB_EXPERIMENT": str(workdir / "spec.json")},
               build_args=["-O3", "--x-assign", "fast", "--x-initial", "fast", "-CFLAGS", "-O2"])
    return json.loads((workdir / "results.json").read_text()), table


def format_results(results, table, sys_clk_freq=100e6):
    by = {(r["policy"], r["ratio"]): r for r in results}
    ratios = sorted({r["ratio"] for r in results})
    policies = [p for p in POLICIES if any(r["policy"] == p for r in results)]
    lines = [f"Throughput normalised to NPM (TG = {table.tg}, alpha = {table.alpha}, TT = {table.tt}, "
             f"PB = {table.pb} x I_max)",
             f"{'policy':<13}" + "".join(f"{'R' + str(r):>8}" for r in ratios) + f"{'mean':>8}"]
    for p in policies:
        vals = [by[("npm", r)]["cycles"] / by[(p, r)]["cycles"] for r in ratios]
        lines.append(f"{p:<13}" + "".join(f"{v:>8.3f}" for v in vals) + f"{sum(vals) / len(vals):>8.3f}")
    lines.append("")
    lines.append(f"{'policy':<13}{'ratio':>6}{'cycles':>12}{'prog lat us':>12}{'read lat us':>12}"
                 f"{'wait us/op':>11}{'violations':>11}{'max/PB':>8}")
    us = 1e6 / sys_clk_freq
    for r in ratios:
        for p in policies:
            x = by[(p, r)]
            pl = x["prog_cycles"] / x["progs"] * us if x["progs"] else 0
            rl = x["read_cycles"] / x["reads"] * us if x["reads"] else 0
            w = x["waited"] / max(x["ops"], 1) * us
            lines.append(f"{p:<13}{'R' + str(r):>6}{x['cycles']:>12}{pl:>12.1f}{rl:>12.1f}{w:>11.2f}"
                         f"{x['violations']:>11}{x['max'] / 4096 / table.pb:>8.3f}")
    return "\n".join(lines)
