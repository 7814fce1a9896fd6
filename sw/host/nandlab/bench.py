"""Benchmarks: simulated system cycles per wall-clock second, and the ECP5 open-flow build.

Machines are shared and noisy, so every figure comes with a ratio measured in the same run.
"""

import time

from nandlab import env
from nandlab.steps import say


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


def bench_ecp5(verbose=False):
    import argparse
    from nandlab.soc import targets
    board = targets.get_board("colorlight_i5")
    p = argparse.ArgumentParser()
    board.add_arguments(p)
    args = p.parse_args([])
    t0 = time.monotonic()
    report = targets.build_board("colorlight_i5", args, compile=True, verbose=verbose)
    wall = time.monotonic() - t0
    print()
    print(f"ECP5 open flow (colorlight_i5, LFE5U-25F), build wall time {wall:.0f} s")
    print(targets.format_ecp5_report(report))
    name, f = targets.system_clock(report, args.sys_clk_freq / 1e6)
    if f is not None:
        print(f"system clock ({name}) Fmax / target: {f['fmax_mhz'] / f['target_mhz']:.3f}")
    return report


def run(what, verbose=False):
    if what in ("soc", "all"):
        bench_soc(verbose)
    if what in ("ecp5", "all"):
        bench_ecp5(verbose)
    return 0
