"""Benchmarks: simulated system cycles per wall-clock second, the power harness's skip, and the ECP5 open-flow build.

Machines are shared and noisy, so every figure comes with a ratio measured in the same run.
"""

import contextlib
import re
import sys
import time

from nandlab import env
from nandlab.errors import NandLabError
from nandlab.steps import say, step


def _cycles(console):
    out = console.command("time")
    # "cycles: 0x0000abcd (...)"
    return int(out.split()[1], 16)


def bench_soc(verbose=False, seconds=10.0):
    from nandlab.soc.targets import sim as simtarget
    from nandlab.simulator import SimConsole, prepare_run_dir, free_tcp_port

    build_dir = env.BUILD_DIR / "sim"
    gateware = simtarget.build_all(build_dir, verbose=verbose)
    run_dir = prepare_run_dir(gateware, build_dir / "bench", bridge_port=free_tcp_port())
    rows = []
    with SimConsole(gateware, run_dir) as console:
        t0 = time.monotonic()
        console.boot()
        boot_s = time.monotonic() - t0
        # Idle shell: the CPU polls the UART between two time stamps.
        c0, w0 = _cycles(console), time.monotonic()
        time.sleep(seconds)
        c1, w1 = _cycles(console), time.monotonic()
        rows.append(("firmware shell, idle", c1 - c0, w1 - w0))
        # Busy CPU: fill 64 KiB of main RAM word by word.
        c0, w0 = _cycles(console), time.monotonic()
        for _ in range(24):
            console.command("mw 0x40010000 0x5a5aa5a5 16384", timeout=600)
        c1, w1 = _cycles(console), time.monotonic()
        rows.append(("firmware mw, 24 x 64 KiB", c1 - c0, w1 - w0))
        # NAND bring-up: the CPU bit-bangs the emulated dies (CSR traffic, dies busy).
        c0, w0 = _cycles(console), time.monotonic()
        console.command("nand scan", timeout=600)
        console.command("nand param 0", timeout=600)
        c1, w1 = _cycles(console), time.monotonic()
        rows.append(("firmware nand scan + param", c1 - c0, w1 - w0))
    nominal = simtarget.SYS_CLK_FREQ
    print()
    print(f"Simulated SoC (litex_sim + Verilator, nominal sys_clk {nominal / 1e6:.0f} MHz); boot to prompt {boot_s:.1f} s")
    print(f"{'workload':<28} {'sim cycles':>12} {'wall s':>8} {'cycles/s':>12} {'x real time':>12}")
    for name, cycles, wall in rows:
        rate = cycles / wall
        print(f"{name:<28} {cycles:>12} {wall:>8.2f} {rate:>12.0f} {rate / nominal:>12.5f}")
    idle = rows[0][1] / rows[0][2]
    for name, cycles, wall in rows[1:]:
        print(f"{name} / idle cycles-per-second ratio: {cycles / wall / idle:.3f}")
    return rows


SIM_LOADS = (
    # (name, short name (sim_ab), shell commands run before measuring, command measured or None for the idle shell)
    # Each setup works whatever ran before it (sim_ab runs the loads round after round, or some of them).
    ("idle shell", "idle", (), None),
    ("controller + BCH: ctl test", "ctl", ("ctl bringup",), "ctl test 4"),
    # The CPU bit-bangs every die (async SDR mode 0: bus-bound, ~10 cycles a byte; `ctl mode` needs a bring-up).
    ("dies: nand workload", "nand", ("ctl bringup", "ctl mode async 0"), "nand workload 2000 30"),
    # Host I/O through the FTL as `make sim` runs it (the channel brought up, formatted over every die; random
    # checked reads and writes of 1-8 sectors, 30 % reads, 32 requests in flight) on the controller with BCH.
    ("FTL + BCH: ftl workload", "ftl", ("ctl bringup", "ftl format"), "ftl workload 1000 30 32 1"),
)


def load_failed(output):
    """Whether a load's output (or its setup's) says it failed: an `error:` line of the shell, or a nonzero
    count of failed requests or of data that differs from what was written."""
    from nandlab.simulator import command_failed
    return command_failed(output) or re.search(r"\b[1-9]\d* (failed|sectors differ|bytes differ)\b", output) is not None


def measure_load(console, setup, command, idle_s, outputs=None):
    """One load on a running simulator: its `setup` commands, then `command` (None: the idle shell for
    `idle_s` wall seconds) between two readings of the firmware's `time` and the simulator's CPU time.
    Every command's output is appended to `outputs` (when given); NandLabError when one reports a
    failure. Returns dict(cycles, wall_s, cpu_s: None when the simulator's CPU time is unreadable)."""
    def run(line):
        out = console.command(line, timeout=1800)
        if outputs is not None:
            outputs.append(out)
        if load_failed(out):
            raise NandLabError(f"'{line}' reported a failure:\n{out}")
    for line in setup:
        run(line)
    c0, w0, p0 = _cycles(console), time.monotonic(), console.cpu_seconds()
    if command is None:
        time.sleep(idle_s)
    else:
        run(command)
    c1, w1, p1 = _cycles(console), time.monotonic(), console.cpu_seconds()
    cpu = p1 - p0 if p0 is not None and p1 is not None and p1 > p0 else None
    return dict(cycles=c1 - c0, wall_s=w1 - w0, cpu_s=cpu)


def _measure_sim(gateware, run_dir, seconds, dies):
    """Cycles/s of one simulator under each of SIM_LOADS; without dies only the idle shell (the loads are
    NAND commands)."""
    from nandlab.simulator import SimConsole, prepare_run_dir, free_tcp_port
    run_dir = prepare_run_dir(gateware, run_dir, bridge_port=free_tcp_port())
    rows = {}
    with SimConsole(gateware, run_dir) as console:
        t0 = time.monotonic()
        console.boot()
        rows["boot_s"] = round(time.monotonic() - t0, 2)
        for name, _, setup, command in SIM_LOADS:
            if command is not None and not dies:
                rows[name] = None
                continue
            m = measure_load(console, setup, command, seconds)
            cpu = m["cpu_s"]
            rows[name] = dict(cycles=m["cycles"], wall_s=round(m["wall_s"], 3),
                              cycles_per_s=round(m["cycles"] / m["wall_s"]),
                              cpu_s=cpu and round(cpu, 2), cycles_per_cpu_s=cpu and round(m["cycles"] / cpu))
    return rows


def _rates(row):
    """A load's cell in bench sim's table: M cycles per wall second / per processor second."""
    if not row:
        return "-"
    cpu = f"{row['cycles_per_cpu_s'] / 1e6:.3f}" if row.get("cycles_per_cpu_s") else "?"
    return f"{row['cycles_per_s'] / 1e6:.3f} / {cpu}"


def bench_sim(verbose=False, seconds=8.0, die_counts=(0, 4, 8, 16), baseline_dies=(8,), as_json=False):
    """Simulated SoC speed (cycles of SoC time per wall second) at each die count, idle and loaded,
    and without idle gating at `baseline_dies` for the speed-up measured in the same run."""
    from nandlab.soc.targets import sim as simtarget
    plans = [(n, True) for n in die_counts] + [(n, False) for n in baseline_dies]
    results = []
    for dies, gated in plans:
        name = simtarget.build_dir_name(dies=dies, idle_gating=gated)
        build_dir = env.BUILD_DIR / name
        say(f"bench sim: {dies} dies, idle gating {'on' if gated else 'off'} ({build_dir})")
        t0 = time.monotonic()
        gateware = simtarget.build_all(build_dir, verbose=verbose, dies=dies, idle_gating=gated)
        build_s = time.monotonic() - t0
        rows = _measure_sim(gateware, build_dir / "bench", seconds, dies)
        results.append(dict(dies=dies, idle_gating=gated, build_s=round(build_s, 1), **rows))
    loads = [name for name, *_ in SIM_LOADS]
    speedups = []
    for base in (r for r in results if not r["idle_gating"]):
        gated = next((r for r in results if r["idle_gating"] and r["dies"] == base["dies"]), None)
        if gated:
            speedups.append(dict(dies=base["dies"], **{load: round(gated[load]["cycles_per_s"] / base[load]["cycles_per_s"], 2)
                                                       for load in loads if gated[load] and base[load]}))
    report = dict(bench="sim", nominal_sys_clk_hz=simtarget.SYS_CLK_FREQ, seconds_idle=seconds,
                  loads={name: (command or "(shell waiting at its prompt)") for name, _, _, command in SIM_LOADS},
                  results=results, speedup_gated_over_ungated=speedups)
    if as_json:
        return report
    print()
    print(f"Simulated SoC speed, M cycles of SoC time per wall second / per processor second of the simulator "
          f"(litex_sim + Verilator, nominal {simtarget.SYS_CLK_FREQ / 1e6:.0f} MHz)")
    print(f"{'dies':>4} {'gating':>7} " + " ".join(f"{n:>28}" for n in loads) + f" {'boot s':>7} {'build s':>8}")
    for r in results:
        print(f"{r['dies']:>4} {'on' if r['idle_gating'] else 'off':>7} "
              + " ".join(f"{_rates(r[n]):>28}" for n in loads) + f" {r['boot_s']:>7} {r['build_s']:>8}")
    for sp in speedups:
        print(f"speed-up of idle gating at {sp['dies']} dies: " + ", ".join(f"{n} {sp[n]:.2f}x" for n in loads if n in sp))
    return report


def _timed(fn):
    """fn() with its wall and CPU seconds (the CPU of the child processes it waited for: the harness's)."""
    import resource
    c0, w0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
    out = fn()
    c1, w1 = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
    return out, w1 - w0, (c1.ru_utime + c1.ru_stime) - (c0.ru_utime + c0.ru_stime)


def bench_power(verbose=False, as_json=False, **kw):
    """The power experiment at `nandlab experiment power`'s defaults (the paper-sized run: 8 dies,
    5000 operations per trace, every read ratio and policy) on the Verilator harness, with the
    harness's skip (quiet stretches in one cycle) and without it, in the same run: wall and CPU
    seconds, simulated cycles per second and the speed-up. The two runs' results must be identical.
    A first, untimed run with the skip builds the harness. `kw`: experiment.run keywords."""
    import os
    from nandlab import experiment
    kw = dict(dict(jobs=os.cpu_count() or 1, log=say if verbose else (lambda *_: None)), **kw)
    say("bench power: building the harness and a first run with the skip (untimed)")
    experiment.run(skip=True, **kw)
    stats = []
    say("bench power: the experiment with the skip")
    (fast, table), fast_wall, fast_cpu = _timed(lambda: experiment.run(skip=True, skip_stats=stats, **kw))
    say("bench power: the experiment cycle by cycle (--no-skip)")
    (slow, _), slow_wall, slow_cpu = _timed(lambda: experiment.run(skip=False, **kw))
    if fast != slow:
        bad = next((a, b) for a, b in zip(fast, slow) if a != b)
        raise NandLabError(f"bench power: the skip changed a result: {bad[0]} instead of {bad[1]}")
    cycles = sum(r["cycles"] for r in slow)
    skipped = sum(s["skipped_cycles"] for s in stats)
    skips = sum(s["skips"] for s in stats)
    rows = [dict(mode=mode, wall_s=round(wall, 2), cpu_s=round(cpu, 2), cycles_per_cpu_s=round(cycles / cpu),
                 cycles_per_wall_s=round(cycles / wall))
            for mode, wall, cpu in (("skip", fast_wall, fast_cpu), ("no skip", slow_wall, slow_cpu))]
    report = dict(bench="power", runs=len(slow), jobs=kw["jobs"], cycles=cycles, skipped_cycles=skipped,
                  skip_cycles=skips, results_identical=True, results=rows,
                  speedup_wall=round(slow_wall / fast_wall, 2), speedup_cpu=round(slow_cpu / fast_cpu, 2))
    if as_json:
        return report
    print()
    print(f"Power experiment on the Verilator harness (experiment power defaults: {len(slow)} runs, "
          f"{cycles / 1e6:.1f} M simulated cycles, {kw['jobs']} at a time), with and without the skip")
    print(f"{'mode':<8} {'wall s':>9} {'CPU s':>9} {'M cycles/CPU s':>15} {'M cycles/wall s':>16}")
    for r in rows:
        print(f"{r['mode']:<8} {r['wall_s']:>9.1f} {r['cpu_s']:>9.1f} {r['cycles_per_cpu_s'] / 1e6:>15.2f} "
              f"{r['cycles_per_wall_s'] / 1e6:>16.2f}")
    print(f"speed-up of the skip (same run): wall {report['speedup_wall']:.1f}x, CPU {report['speedup_cpu']:.1f}x; "
          f"{skipped / cycles:.1%} of the cycles skipped in {skips} skip cycles; results identical")
    return report


ECP5_BOARDS = ("colorlight_i5", "ecpix5")


def soc_json(rows):
    """bench_soc's rows (workload, cycles, wall seconds) as JSON objects."""
    return [dict(workload=n, cycles=c, wall_s=round(w, 3)) for n, c, w in rows]


def bench_ecp5(verbose=False, boards=ECP5_BOARDS):
    """Open-flow builds (yosys, nextpnr-ecp5, ecppack) of the ECP5 board targets at their defaults,
    one after the other: each one's report, then one table of system-clock Fmax and LUT/FF/BRAM."""
    import argparse
    from nandlab.soc import targets
    rows = []
    for name in boards:
        board = targets.get_board(name)
        p = argparse.ArgumentParser()
        board.add_arguments(p)
        args = p.parse_args([])
        t0 = time.monotonic()
        report = targets.build_board(name, args, compile=True, verbose=verbose)
        wall = time.monotonic() - t0
        print()
        print(f"ECP5 open flow ({name}: {board.DESCRIPTION}), build wall time {wall:.0f} s")
        print(targets.format_ecp5_report(report))
        clk, f = targets.system_clock(report, args.sys_clk_freq / 1e6)
        if f is not None:
            print(f"system clock ({clk}) Fmax / target: {f['fmax_mhz'] / f['target_mhz']:.3f}")
        u = report["utilisation"]
        used = lambda cell: u.get(cell, {}).get("used", 0)
        rows.append({"board": name, "target_mhz": args.sys_clk_freq / 1e6, "fmax_mhz": f["fmax_mhz"] if f else None,
                     "lut4": used("TRELLIS_COMB"), "ff": used("TRELLIS_FF"), "bram": used("DP16KD"),
                     "bram_total": u.get("DP16KD", {}).get("total", 0), "wall_s": wall,
                     "config": f"{args.nand_channels} ch x {args.nand_dies} dies, ECC {args.nand_ecc}"})
    print()
    print(f"{'board':<14} {'SoC':<26} {'target':>7} {'Fmax':>7} {'LUT4':>7} {'FF':>7} {'BRAM':>9} {'build':>7}")
    for r in rows:
        fmax = f"{r['fmax_mhz']:.1f}" if r["fmax_mhz"] else "n/a"
        print(f"{r['board']:<14} {r['config']:<26} {r['target_mhz']:>7.1f} {fmax:>7} {r['lut4']:>7} {r['ff']:>7} "
              f"{r['bram']:>4}/{r['bram_total']:<4} {r['wall_s']:>6.0f}s")
    return rows


def bench_telemetry(verbose=False, seconds=20.0, die_counts=(4, 8)):
    """Telemetry frames per second and bytes per second reaching the host from the simulated SoC
    (telemetry2tcp socket) at the default rate, beside the simulator's own cycles per second: in
    simulation the frame rate follows the simulator's speed, so frames per simulated millisecond is
    the figure that carries to hardware."""
    from nandlab import telemetry
    from nandlab.soc.targets import sim as simtarget
    from nandlab.simulator import SimConsole, prepare_run_dir, free_tcp_port, telemetry_port

    rows = []
    for dies in die_counts:
        build_dir = env.BUILD_DIR / ("sim" if dies == simtarget.NAND_DIES else f"sim{dies}")
        gateware = simtarget.build_all(build_dir, verbose=verbose, dies=dies)
        run_dir = prepare_run_dir(gateware, build_dir / "bench_telemetry", bridge_port=free_tcp_port())
        frames = []
        with SimConsole(gateware, run_dir) as console:
            console.boot()
            rx = telemetry.TcpReceiver(telemetry_port(run_dir), lambda f: frames.append(f["seq"])).start()
            try:
                console.command("telemetry restart")
                time.sleep(1.0)
                n0, b0, c0, w0 = len(frames), rx.bytes, _cycles(console), time.monotonic()
                say(f"telemetry, {dies} dies: receiving for {seconds:.0f} s")
                time.sleep(seconds)
                n1, b1, c1, w1 = len(frames), rx.bytes, _cycles(console), time.monotonic()
                show = console.command("telemetry show")
            finally:
                rx.stop()
        stats = rx.decoder.stats
        rows.append(dict(dies=dies, frames=n1 - n0, bytes=b1 - b0, wall=w1 - w0, cycles=c1 - c0,
                         missing=stats.gaps, corrupt=stats.bad_crc + stats.bad_header, show=show.strip()))
    nominal = simtarget.SYS_CLK_FREQ
    print()
    print("Telemetry from the simulated SoC to the host (telemetry2tcp), default decimation, idle shell")
    print(f"{'dies':>4} {'frames/s':>10} {'MB/s':>8} {'sim cycles/s':>13} {'frames per sim ms':>18} "
          f"{'missing':>8} {'corrupt':>8}")
    for r in rows:
        fps = r["frames"] / r["wall"]
        print(f"{r['dies']:>4} {fps:>10.0f} {r['bytes'] / r['wall'] / 1e6:>8.3f} {r['cycles'] / r['wall']:>13.0f} "
              f"{r['frames'] / (r['cycles'] / nominal * 1e3):>18.1f} {r['missing']:>8} {r['corrupt']:>8}")
    for r in rows:
        print(f"  {r['dies']} dies, on chip: {r['show'].splitlines()[-1] if r['show'] else '?'}")
    if len(rows) > 1:
        a, b = rows[0], rows[-1]
        print(f"frames/s ratio {b['dies']} / {a['dies']} dies: {b['frames'] / b['wall'] / (a['frames'] / a['wall']):.3f}; "
              f"sim cycles/s ratio: {b['cycles'] / b['wall'] / (a['cycles'] / a['wall']):.3f}")
    return rows


# The DDR paper's Table 3 (MB/s): cell -> direction -> ways -> (CONV, SYNC_ONLY, PROPOSED).
PAPER_TABLE3 = {
    "SLC": {"write": {1: (7.77, 8.38, 8.50), 2: (15.22, 16.59, 17.52), 4: (28.94, 31.90, 34.30),
                      8: (39.78, 55.36, 63.00), 16: (39.76, 60.44, 97.35)},
            "read":  {1: (27.78, 36.66, 47.89), 2: (42.78, 67.16, 70.47), 4: (42.75, 67.13, 117.68),
                      8: (42.72, 67.11, 117.64), 16: (42.69, 67.11, 117.59)}},
    "MLC": {"write": {1: (4.43, 4.55, 4.65), 2: (8.36, 8.85, 9.24), 4: (15.24, 16.75, 18.13),
                      8: (25.86, 29.72, 34.08), 16: (32.45, 45.99, 57.23)},
            "read":  {1: (26.04, 33.58, 42.69), 2: (41.59, 60.41, 77.19), 4: (41.55, 64.76, 101.61),
                      8: (41.52, 64.75, 110.56), 16: (41.50, 64.73, 110.52)}},
}
BENCH_MODES = ("CONV", "SYNC_ONLY", "PROPOSED")


def _bench_part(cell):
    from nandlab.nand_model.parts import NandLabSLC, DWSDWPaperMLC
    if cell == "SLC":
        return NandLabSLC().scaled(blocks_per_lun=4, pages_per_block=16), 5
    return DWSDWPaperMLC().scaled(blocks_per_lun=4, pages_per_block=16), 5


def bench_interface(verbose=False, cells=("SLC", "MLC"), way_counts=(1, 2, 4, 8, 16)):
    """Read and write MB/s of CONV (async SDR mode 5), SYNC_ONLY (sync SDR mode 5) and PROPOSED
    (NV-DDR mode 5) at 1-16 ways on 16 emulated dies with real array times, as the DDR paper's
    Table 3; measured in one simulator build per cell type (cocotb on Verilator)."""
    import json
    import math
    from nandlab.gateware.onfi.sim_top import NandLabChannelSimTop
    from nandlab.nand_model.reference import DieConfig
    from nandlab.testing import run_cocotb, TB_DIR

    if not (TB_DIR / "interface_bench_tb.py").exists():
        raise NandLabError(f"the interface benchmark's testbench ({TB_DIR / 'interface_bench_tb.py'}) is part of "
                           f"the source checkout, not of the installed package: run it from a checkout")
    clock_hz = 100e6
    tables = {}
    for cell in cells:
        part, pages = _bench_part(cell)
        config = DieConfig(part, sys_clk_freq=clock_hz)
        top = NandLabChannelSimTop(config, ways=16, mem_bytes=max(64 * 1024, 8 * part.page_size))
        build = env.BUILD_DIR / f"bench_interface_{cell.lower()}"
        out = build / "results.json"
        plan = dict(clock_ns=1e9 / clock_hz, ways=16, way_counts=list(way_counts), modes=list(BENCH_MODES),
                    pages=pages, page_bytes=part.page_size, page_total=part.page_size + part.spare_size,
                    page_bits=config.page_bits, pages_per_block=part.pages_per_block, blocks=part.blocks_per_lun,
                    mem_bytes=max(64 * 1024, 8 * part.page_size))
        title = (f"interface benchmark, {cell} ({part.model}: {part.page_size} B pages, tR {part.t_r:g} us, tPROG "
                 f"{part.t_prog:g} us): building and running 16 dies, max({pages}, 4 x ways + 1) pages per point")
        # (Verilator's and cocotb's output go to the build's log: stdout holds the tables or the JSON only.)
        with step(title, build / "bench.log", verbose):
            run_cocotb(top, top.ios, "nandlab_bench_channel", "interface_bench_tb", build,
                       extra_env={"NANDLAB_BENCH_PLAN": json.dumps(plan), "NANDLAB_BENCH_OUT": str(out)})
        data = json.loads(out.read_text())
        bad = {k: v for k, v in data["violations"].items() if v}
        if bad:
            raise AssertionError(f"timing violations during the benchmark: {bad}")
        tables[cell] = {(r["direction"], r["ways"], r["mode"]): r["mb_s"] for r in data["results"]}

    print()
    print("Interface bandwidth (MB/s of page data, steady state: max(5, 4 x ways + 1) pages round robin; whole rounds")
    print("from the end of the first round to the same way's completion k rounds later, before the last round),")
    print("1 channel, 16 emulated dies with real array times, 100 MHz system clock;")
    print("C = CONV (async SDR mode 5, 20 ns), S = SYNC_ONLY (sync SDR mode 5, 10 ns clock),")
    print("P = PROPOSED (NV-DDR mode 5, DDR on a 10 ns clock); paper = the DDR paper's Table 3")
    head = f"{'cell':<5}{'mode':<7}{'way':>5}{'C':>9}{'S':>9}{'P':>9}{'P/S':>7}{'P/C':>7}   {'paper P/S':>9}{'paper P/C':>10}"
    print(head)
    rows = []
    for cell, t in tables.items():
        for direction in ("write", "read"):
            cs, ss, ps, r1, r2 = [], [], [], [], []
            for ways in way_counts:
                c, s_, p = (t[(direction, ways, m)] for m in BENCH_MODES)
                paper = PAPER_TABLE3[cell][direction].get(ways)
                pps = f"{paper[2] / paper[1]:>9.2f}{paper[2] / paper[0]:>10.2f}" if paper else ""
                print(f"{cell:<5}{direction.capitalize():<7}{ways:>5}{c:>9.2f}{s_:>9.2f}{p:>9.2f}{p / s_:>7.2f}{p / c:>7.2f}   {pps}")
                cs.append(c), ss.append(s_), ps.append(p), r1.append(p / s_), r2.append(p / c)
                rows.append(dict(cell=cell, direction=direction, ways=ways, conv=c, sync=s_, ddr=p))
            gm = lambda v: math.exp(sum(math.log(x) for x in v) / len(v))
            print(f"{'':<5}{'Mean':<7}{'':>5}{sum(cs) / len(cs):>9.2f}{sum(ss) / len(ss):>9.2f}{sum(ps) / len(ps):>9.2f}"
                  f"{gm(r1):>7.2f}{gm(r2):>7.2f}")
    if "SLC" in tables and 16 in way_counts:
        t = tables["SLC"]
        peak = t[("read", 16, "PROPOSED")]
        print(f"\nSLC, 16 ways: P/C write {t[('write', 16, 'PROPOSED')] / t[('write', 16, 'CONV')]:.2f} (paper 2.45), "
              f"read {peak / t[('read', 16, 'CONV')]:.2f} (paper 2.75); NV-DDR mode 5 page reads "
              f"{peak:.1f} MB/s = {peak / 200:.1%} of 200 MB/s")
    return rows


def run(what, verbose=False, as_json=False, dies=None, seconds=None, board=None):
    """Run the benchmark `what`; with `as_json`, return one dict of its results (the tables go to
    standard error) instead of printing tables."""
    if what == "all":
        from nandlab.bench_summary import bench_all
        return bench_all(verbose, as_json=as_json, board=board)
    if what == "ftl":
        from nandlab.bench_ftl import bench_ftl
        return bench_ftl(verbose, as_json=as_json, **({"die_counts": dies} if dies is not None else {}))
    if what == "sim":
        kw = {k: v for k, v in (("die_counts", dies), ("seconds", seconds)) if v is not None}
        return bench_sim(verbose, as_json=as_json, **kw)
    if what == "power":
        return bench_power(verbose, as_json=as_json)
    benches = {"soc": lambda: bench_soc(verbose), "telemetry": lambda: bench_telemetry(verbose),
               "interface": lambda: bench_interface(verbose),
               "ecp5": lambda: bench_ecp5(verbose, **({"boards": (board,)} if board else {}))}
    if what not in benches:
        raise NandLabError(f"bench {what}: unknown benchmark (one of sim, soc, telemetry, interface, ftl, ecp5, "
                           "power, all)")
    with contextlib.redirect_stdout(sys.stderr) if as_json else contextlib.nullcontext():
        rows = benches[what]()
    if what == "soc":
        rows = soc_json(rows)
    return dict(bench=what, rows=rows) if as_json else 0
