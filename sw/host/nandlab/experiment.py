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
import tempfile
from pathlib import Path

from nandlab import dcc, env, tokens
from nandlab.errors import NandLabError
from nandlab.testing import PortedTop

POLICIES = ["npm", "ppm", "dcc", "mtpm", "kmtpm_atomic", "kmtpm_sub"]
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


class HarnessTop(PortedTop):
    def __init__(self, part, n, sys_clk_freq, time_scale, depth, channels=1, topology="single"):
        from nandlab.gateware.power.harness import PowerHarness
        PortedTop.__init__(self)
        self.h = h = PowerHarness(part, n, sys_clk_freq, time_scale, depth, channels=channels, topology=topology)
        port = self.port
        for name in ("load_we", "load_die", "load_adr", "load_op", "go"):
            port(name, getattr(h, name), False)
        for i in range(n):
            port(f"count{i}", h.count[i], False)
            port(f"ops_done{i}", h.ops_done[i], True)
            for k in range(3):
                port(f"kind_ops{i}_{k}", h.kind_ops[i][k], True)
                port(f"kind_cycles{i}_{k}", h.kind_cycles[i][k], True)
            port(f"waited{i}", h.nodes[i].waited, True)
            port(f"hold{i}", h.hold[i], False)
            port(f"pending{i}", h.pending[i], True)
            port(f"next_op{i}", h.next_op[i], True)
        for name in ("req_mode", "req_tg", "req_alpha", "apply", "table_we", "table_adr", "table_dat",
                     "table_clear"):
            port(name, getattr(h, name), False)
        for name in ("running", "error", "tt"):
            port(name, getattr(h, name), True)
        port("done", h.done, True)
        port("total", h.monitor.total, True)
        port("cycles", h.cycles, True)
        for name in ("violations", "windows", "max_sample"):
            port(name, getattr(h.monitor, name), True)


RING_POLICIES = [p for p in POLICIES if p != "dcc"]


def run_cocotb_harness(part_name="MTPM-MLC", dies=8, n_ops=5000, ratios=READ_RATIOS, policies=RING_POLICIES, tg=4,
                       alpha=4, time_scale=1, sys_clk_freq=100e6, seed=1, log=print, workdir=None):
    """The same runs driven by cocotb (tests/tb/experiment_tb.py): an independent driver of the
    harness, ~5x slower than `run` (C++ main); the tests check that both agree. Ring policies only
    (DCC's scheduler is C, in the C++ main)."""
    if "dcc" in policies:
        raise NandLabError("the cocotb driver runs the ring policies only; DCC needs the C++ main (run)")
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
    results = json.loads((workdir / "results.json").read_text())
    for r in results:
        r["rings"] = 1                       # One ring: the cocotb driver runs the single topology.
    return results, table


def format_results(results, table, sys_clk_freq=100e6):
    by = {(r["policy"], r["ratio"]): r for r in results}
    ratios = sorted({r["ratio"] for r in results})
    policies = [p for p in POLICIES if any(r["policy"] == p for r in results)]
    rings = results[0].get("rings", 1) if results else 1
    pb = table.pb * rings
    per = f" per ring, {rings} rings" if rings > 1 else ""
    lines = [f"Throughput normalised to NPM (TG = {table.tg}, alpha = {table.alpha}, TT = {table.tt}{per}, "
             f"PB = {pb} x I_max)",
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
                         f"{x['violations']:>11}{x['max'] / 4096 / pb:>8.3f}")
    return "\n".join(lines)


# A C++ Verilator main: the harness at Verilator speed (cocotb drives every clock edge through its
# GPI, which caps it near 0.2 M cycles/s). The spec goes in as text, the results come out as JSON
# lines; the ports are those of HarnessTop.
MAIN_CPP = r"""
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include "Vnandlab_harness.h"
#include "verilated.h"
#include "dcc.h"

static Vnandlab_harness *top;
static void tick() { top->sys_clk = 0; top->eval(); top->sys_clk = 1; top->eval(); }
static struct dcc sched;
static dcc_model models[4];       // sched points at them

int main(int argc, char **argv) {
    Verilated::commandArgs(argc, argv);
    if (argc < 2) { fprintf(stderr, "usage: %s SPEC\n", argv[0]); return 2; }
    FILE *f = fopen(argv[1], "r");
    if (!f) { perror(argv[1]); return 2; }
    top = new Vnandlab_harness;
@PORTS@
    int dies = 0, tg = 4, alpha = 4, check = 0;
    unsigned cap = 0;
    std::vector<std::pair<int,int>> table;
    std::vector<std::vector<dcc_piece>> pieces(4);
    char word[64];
    while (fscanf(f, "%63s", word) == 1) {
        if (!strcmp(word, "dies")) { if (fscanf(f, "%d", &dies) != 1) return 2; }
        else if (!strcmp(word, "tg")) { if (fscanf(f, "%d", &tg) != 1) return 2; }
        else if (!strcmp(word, "alpha")) { if (fscanf(f, "%d", &alpha) != 1) return 2; }
        else if (!strcmp(word, "check")) { if (fscanf(f, "%d", &check) != 1) return 2; }
        else if (!strcmp(word, "cap")) { if (fscanf(f, "%u", &cap) != 1) return 2; }
        else if (!strcmp(word, "table")) { int oi, rt; if (fscanf(f, "%d %d", &oi, &rt) != 2) return 2; table.push_back({oi, rt}); }
        else if (!strcmp(word, "model")) {
            int op, n;
            if (fscanf(f, "%d %d", &op, &n) != 2 || op < 0 || op > 3) return 2;
            pieces[op].resize(n);
            for (int i = 0; i < n; i++) if (fscanf(f, "%u %u", &pieces[op][i].cycles, &pieces[op][i].level) != 2) return 2;
        }
        else if (!strcmp(word, "job")) {
            char policy[32];
            int mode, use_dcc, ratio, n;
            if (fscanf(f, "%31s %d %d %d %d", policy, &mode, &use_dcc, &ratio, &n) != 5) return 2;
            std::vector<int> die(n), op(n);
            for (int i = 0; i < n; i++) if (fscanf(f, "%d %d", &die[i], &op[i]) != 2) return 2;
            if (use_dcc) {
                for (int k = 0; k < 4; k++) models[k] = {pieces[k].data(), (uint32_t)pieces[k].size()};
                int rc = dcc_init(&sched, cap, models, 4);
                if (rc) { fprintf(stderr, "DCC models refused (error %d)\n", rc); return 1; }
            }
            top->load_we = 0; top->go = 0; top->apply = 0; top->table_we = 0; top->table_clear = 0;
            for (int i = 0; i < dies; i++) *hold[i] = use_dcc;
            top->sys_rst = 1; tick(); tick(); tick(); top->sys_rst = 0; tick();
            for (auto &e : table) { top->table_adr = e.first; top->table_dat = e.second; top->table_we = 1; tick(); }
            top->table_we = 0;
            top->req_mode = mode; top->req_tg = tg; top->req_alpha = alpha; top->apply = 1; tick(); top->apply = 0;
            std::vector<int> counts(dies, 0);
            for (int i = 0; i < n; i++) {
                top->load_die = die[i]; top->load_adr = counts[die[i]]++; top->load_op = op[i]; top->load_we = 1; tick();
            }
            top->load_we = 0;
            for (int i = 0; i < dies; i++) *count[i] = counts[i];
            for (int i = 0; i < 20; i++) tick();
            if (!top->running || top->error) { fprintf(stderr, "ring not running (error %d)\n", (int)top->error); return 1; }
            top->go = 1; tick(); top->go = 0;
            // DCC: an operation a die shows (pending) is scheduled once; the die is held until its start.
            std::vector<long long> start_at(dies, -1);
            unsigned long long now = 0, dcc_waited = 0, dcc_read_wait = 0, dcc_prog_wait = 0;
            while (!top->done) {
                if (use_dcc) {
                    for (int i = 0; i < dies; i++) {
                        if (!*pending[i]) { *hold[i] = 1; continue; }
                        if (start_at[i] < 0) {
                            long long s = dcc_schedule(&sched, *next_op[i], now);
                            if (s < 0) { fprintf(stderr, "DCC scheduler error %lld\n", s); return 1; }
                            start_at[i] = s;
                        }
                        if ((unsigned long long)start_at[i] <= now) { *hold[i] = 0; start_at[i] = -1; }
                        else {
                            // Held: waiting counts in the operation's latency, as a token wait does.
                            *hold[i] = 1; dcc_waited++;
                            if (*next_op[i] == 0) dcc_read_wait++;
                            else if (*next_op[i] != 3) dcc_prog_wait++;
                        }
                    }
                    // The monitor's sum is registered: it shows the previous cycle.
                    if (check && now > 0 && top->total > dcc_model_at(&sched, now - 1)) {
                        fprintf(stderr, "DCC model below the dies' current at cycle %llu: %u > %u\n", now - 1,
                                (unsigned)top->total, dcc_model_at(&sched, now - 1));
                        return 1;
                    }
                }
                tick();
                if (++now > 4000000000ULL) { fprintf(stderr, "harness never finished\n"); return 1; }
            }
            unsigned long long ops = 0, reads = 0, rc = dcc_read_wait, progs = 0, pc = dcc_prog_wait, erases = 0;
            unsigned long long waited = dcc_waited;
@SUMS@
            printf("{\"policy\": \"%s\", \"ratio\": %d, \"cycles\": %llu, \"ops\": %llu, \"reads\": %llu, "
                   "\"read_cycles\": %llu, \"progs\": %llu, \"prog_cycles\": %llu, \"erases\": %llu, "
                   "\"waited\": %llu, \"violations\": %llu, \"windows\": %llu, \"max\": %llu}\n",
                   policy, ratio, (unsigned long long)top->cycles, ops, reads, rc, progs, pc, erases, waited,
                   (unsigned long long)top->violations, (unsigned long long)top->windows,
                   (unsigned long long)top->max_sample);
            fflush(stdout);
        }
    }
    delete top;
    return 0;
}
"""


def _main_cpp(dies):
    def ptrs(name, ctype):
        return f"    {ctype} *{name}[] = {{" + ", ".join(f"&top->{name}{i}" for i in range(dies)) + "};"
    ports = "\n".join([ptrs("hold", "CData"), ptrs("pending", "CData"), ptrs("next_op", "CData"),
                       f"    decltype(&top->count0) count[] = {{" + ", ".join(f"&top->count{i}" for i in range(dies)) + "};"])
    sums = "\n".join(
        f"            ops += top->ops_done{i}; reads += top->kind_ops{i}_0; rc += top->kind_cycles{i}_0; "
        f"progs += top->kind_ops{i}_1; pc += top->kind_cycles{i}_1; erases += top->kind_ops{i}_2; "
        f"waited += top->waited{i};" for i in range(dies))
    return MAIN_CPP.replace("@PORTS@", ports).replace("@SUMS@", sums)


def build_native(part, dies, sys_clk_freq, time_scale, depth, workdir, log=print, channels=1, topology="single"):
    """Verilate the harness with the C++ main and the DCC scheduler (sw/firmware/dcc.c); returns the
    executable (rebuilt only when something changed)."""
    import hashlib
    import subprocess
    from nandlab.testing import to_verilog
    env.setup()
    top = HarnessTop(part, dies, sys_clk_freq, time_scale, depth, channels, topology)
    src = workdir / "src"
    verilog = to_verilog(top, top.ios, "nandlab_harness", src)
    (src / "main.cpp").write_text(_main_cpp(dies))
    fw = env.REPO / "sw" / "firmware"
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in (verilog, src / "main.cpp", fw / "dcc.c", fw / "dcc.h"))
                            ).hexdigest()
    exe = workdir / "obj_dir" / "Vnandlab_harness"
    stamp = workdir / "obj_dir" / "digest"
    if exe.exists() and stamp.exists() and stamp.read_text() == digest:
        return exe
    log("verilating the harness (C++ main) ...")
    cflags = f"-O2 -I{fw} -DDCC_MAX_PIECES={DCC_MAX_PIECES} -DDCC_MAX_RES={2 * 16}"
    cmd = [env.which("verilator"), "--cc", "--exe", "--build", "-O3", "--x-assign", "fast", "--x-initial", "fast",
           "-Wno-fatal", "-Wno-WIDTHEXPAND", "-Wno-WIDTHTRUNC", "-Wno-CASEINCOMPLETE", "-Wno-lint", "-Wno-style",
           "-CFLAGS", cflags, "-j", "2", "--Mdir", str(workdir / "obj_dir"), "--top-module", "nandlab_harness",
           str(verilog), str(src / "main.cpp"), str(fw / "dcc.c")]
    out = subprocess.run(cmd, cwd=src, capture_output=True, text=True)
    if out.returncode != 0:
        raise NandLabError(f"verilator failed building the harness:\n{(out.stdout + out.stderr)[-3000:]}")
    stamp.write_text(digest)
    return exe


DCC_MAX_PIECES = 1024       # Pieces per DCC model in the harness (segment granularity: 320 at the paper's MLC).


def run(part_name="MTPM-MLC", dies=8, n_ops=5000, ratios=READ_RATIOS, policies=POLICIES, tg=4, alpha=4, **kw):
    """Every (ratio, policy) run on the harness verilated with a C++ main; returns (results, table).
    Keywords as `run_points`."""
    return run_points([(tg, alpha)], part_name, dies, n_ops, ratios, policies, **kw)[(tg, alpha)]


def run_points(points, part_name="MTPM-MLC", dies=8, n_ops=5000, ratios=READ_RATIOS, policies=POLICIES,
               time_scale=1, sys_clk_freq=100e6, seed=1, log=print, workdir=None,
               dcc_granularity=dcc.DEFAULT_GRANULARITY, check_dcc=False, jobs=1, channels=1, topology="single"):
    """Every (ratio, policy) run at every (tg, alpha) point, `jobs` harness processes at a time;
    returns {(tg, alpha): (results, table)}. `check_dcc` makes the harness stop if the DCC model ever
    falls below the dies' summed current. `channels` / `topology`: the dies in channels with one ring
    through all of them ("single") or a ring per channel with alpha / channels each ("per_channel");
    DCC schedules every channel against the whole budget either way."""
    from nandlab.gateware.power.harness import TOPOLOGIES
    if topology not in TOPOLOGIES:
        raise NandLabError(f"topology '{topology}' is not one of {', '.join(TOPOLOGIES)}")
    if channels < 1 or dies % channels:
        raise NandLabError(f"{dies} dies do not split evenly into {channels} channels")
    rings = channels if topology == "per_channel" else 1
    for _, alpha in points:
        if alpha % rings:
            raise NandLabError(f"alpha = {alpha} does not split into {rings} per-channel rings (alpha per ring "
                               f"must be a whole number)")
    import subprocess
    import threading
    from nandlab.nand_model.parts import get_part
    from nandlab.gateware.power.ring import MODES
    from nandlab.gateware.power.harness import OP_CODES as ops
    from nandlab.nand_model.current import PhaseTables
    part = get_part(part_name)
    traces = {r: synthetic_trace(n_ops, r, dies, seed=seed) for r in ratios}
    longest = max(max(sum(1 for d, _ in t if d == i) for i in range(dies)) for t in traces.values())
    depth = 1 << max(longest, 1).bit_length()
    workdir = (env.BUILD_DIR / "experiment" if workdir is None else Path(workdir)).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    exe = build_native(part, dies, sys_clk_freq, time_scale, depth,
                       workdir / f"native_{dies}_{depth}_{time_scale}_{rings}", log=log, channels=channels,
                       topology=topology)
    models = dcc.models(PhaseTables(part, sys_clk_freq, time_scale), dcc_granularity) if "dcc" in policies else []
    for op, m in enumerate(models):
        if len(m) > DCC_MAX_PIECES:
            raise NandLabError(f"DCC: the {dcc_granularity} model of op {op} has {len(m)} pieces; the "
                               f"harness takes {DCC_MAX_PIECES}")
    heads, tables = {}, {}
    for tg, alpha in points:
        # Each ring's table is checked against its own TT (alpha / rings).
        tables[(tg, alpha)] = table = tokens.compile_tables(part, tg=tg, alpha=alpha // rings)
        cap = alpha << 12
        dcc.check_cap(models, cap)
        head = [f"dies {dies}", f"tg {tg}", f"alpha {alpha // rings}", f"cap {cap}", f"check {int(check_dcc)}"]
        head += [f"table {oi} {rt}" for oi, rt, _ in table.words()]
        head += [f"model {op} {len(m)} " + " ".join(f"{n} {lv}" for n, lv in m) for op, m in enumerate(models)]
        heads[(tg, alpha)] = head
    order = [(pt, r, p) for pt in points for r in ratios for p in policies]
    jobs = max(1, min(jobs, len(order)))
    log(f"harness: {dies} dies of {part_name}, {n_ops} operations per trace, {len(order)} runs, "
        f"{jobs} at a time ...")
    results, errors, lock = {}, [], threading.Lock()
    queue = list(enumerate(order))

    def worker():
        # One process per run, taken from a shared queue: long and short runs balance out.
        while True:
            with lock:
                if not queue or errors:
                    return
                k, (pt, r, p) = queue.pop(0)
            t = traces[r]
            mode = MODES.index("npm" if p == "dcc" else p)
            lines = heads[pt] + [f"job {p} {mode} {int(p == 'dcc')} {r} {len(t)}"]
            lines += [f"{d} {ops[o]}" for d, o in t]
            # A file of its own: several experiments may share the work directory.
            with tempfile.NamedTemporaryFile("w", dir=workdir, prefix="spec", suffix=".txt", delete=False) as f:
                f.write("\n".join(lines) + "\n")
            out = subprocess.run([str(exe), f.name], capture_output=True, text=True)
            os.unlink(f.name)
            with lock:
                if out.returncode != 0:
                    errors.append(out.stderr.strip()[-500:])
                    return
                results[k] = res = json.loads(out.stdout)
                res["rings"] = rings
                where = f"TG {pt[0]} alpha {pt[1]} " if len(points) > 1 else ""
                log(f"  {where}{p:<13} R{r:<4} {res['cycles']:>11} cycles, {res['violations']} violations "
                    f"[{len(results)}/{len(order)}]")

    threads = [threading.Thread(target=worker) for _ in range(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise NandLabError(f"the harness failed: {errors[0]}")
    return {pt: ([results[k] for k, (q, _, _) in enumerate(order) if q == pt], tables[pt]) for pt in points}


def format_sweep(what, rows, policies):
    """Throughput normalised to NPM (mean over the read ratios) and violations, per sweep point."""
    label = {"tg": "TG", "alpha": "alpha"}[what]
    lines = [f"Sweep of {label}: throughput normalised to NPM (mean over the read ratios) / budget violations",
             f"{label:<6}" + "".join(f"{p:>22}" for p in policies)]
    for v, res in rows:
        by = {(r["policy"], r["ratio"]): r for r in res}
        ratios = sorted({r["ratio"] for r in res})
        cells = []
        for p in policies:
            thr = sum(by[("npm", q)]["cycles"] / by[(p, q)]["cycles"] for q in ratios) / len(ratios)
            viol = sum(by[(p, q)]["violations"] for q in ratios)
            cells.append(f"{thr:>12.3f} / {viol:<7}")
        lines.append(f"{v:<6}" + "".join(f"{c:>22}" for c in cells))
    return "\n".join(lines)
