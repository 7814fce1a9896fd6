"""`nandlab bench ftl`: the FTL's sequential throughput against the channel controller's, on the simulated SoC,
and the firmware's cycles per request.

For each die count the firmware's `ftl bench KIB` programs and reads KIB through the FTL's NAND port
alone (raw: the same descriptors, DMA and in-flight limit, no mapping) and then through a freshly
formatted FTL, in the same run; the ratio is the FTL's cost. SoC time (the firmware's timebase),
so the host's load does not enter the rates.
"""

import re

from nandlab import env
from nandlab.errors import NandLabError

FIELDS = ("raw_write_kbps", "ftl_write_kbps", "raw_read_kbps", "ftl_read_kbps", "mismatches")
PHASES = ("raw_write", "raw_read", "ftl_write", "ftl_read")


def parse_bench_line(text):
    """The `bench key=value ...` line of `ftl bench` as a dict of ints."""
    m = re.search(r"^bench (.+)$", text, re.M)
    if not m:
        raise NandLabError(f"ftl bench printed no result line:\n{text[-1500:]}")
    return {k: int(v) for k, v in (kv.split("=") for kv in m.group(1).split())}


def bench_ftl(verbose=False, die_counts=(4, 8), kib=128, as_json=False, timeout=1800):
    from nandlab.soc.targets import sim as simtarget
    from nandlab.simulator import SimConsole, prepare_run_dir, free_tcp_port
    from nandlab.steps import say
    rows = []
    for dies in die_counts:
        build_dir = env.BUILD_DIR / simtarget.build_dir_name(dies)
        gateware = simtarget.build_all(build_dir, verbose=verbose, dies=dies)
        run_dir = prepare_run_dir(gateware, build_dir / "run-bench-ftl", bridge_port=free_tcp_port())
        say(f"bench ftl: {dies} dies, {kib} KiB sequential, raw then through the FTL ...")
        with SimConsole(gateware, run_dir) as console:
            console.boot(timeout=300)
            out = console.command(f"ftl bench {kib}", timeout=timeout)
        r = parse_bench_line(out)
        if r["mismatches"]:
            raise NandLabError(f"ftl bench at {dies} dies: {r['mismatches']} sectors read back wrong:\n{out}")
        r.update(dies=dies, kib=kib,
                 write_ratio=r["ftl_write_kbps"] / r["raw_write_kbps"] if r["raw_write_kbps"] else None,
                 read_ratio=r["ftl_read_kbps"] / r["raw_read_kbps"] if r["raw_read_kbps"] else None)
        rows.append(r)
    result = {"bench": "ftl", "kib": kib, "time": "SoC time (firmware timebase, 100 MHz)", "rows": rows}
    if as_json:
        return result
    print(f"\nFTL vs raw channel controller, {kib} KiB sequential, MB/s in SoC time (array times / "
          f"{simtarget.NAND_TIME_SCALE})")
    print("| dies | raw write | FTL write | FTL/raw | FTL first write | raw read | FTL read | FTL/raw |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['dies']} | {r['raw_write_kbps'] / 1000:.1f} | {r['ftl_write_kbps'] / 1000:.1f} | "
              f"{r['write_ratio']:.2f} | {r['ftl_first_write_kbps'] / 1000:.1f} | {r['raw_read_kbps'] / 1000:.1f} | "
              f"{r['ftl_read_kbps'] / 1000:.1f} | {r['read_ratio']:.2f} |")
    print("(FTL first write: the write that opens a superblock, its erases and header included)")
    print("\nSoC cycles per 2 KiB page: all / the CPU busy (not waiting for the NAND) / of it, waiting on its "
          "instruction bus and data bus")
    print("| dies | phase | all | CPU busy | instruction-bus wait | data-bus wait |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        for phase in PHASES:
            print(f"| {r['dies']} | {phase.replace('_', ' ')} | {r[phase + '_cycles_per_page']} | "
                  f"{r[phase + '_cpu_cycles_per_page']} | {r[phase + '_ibus_wait_per_page']} | "
                  f"{r[phase + '_dbus_wait_per_page']} |")
    print("(a phase is CPU-bound when the CPU is busy for all its cycles; the bus waits are the VexRiscv's "
          "cache refills, write-through stores and CSR accesses, queued behind the controller's DMA)")
    print(f"\nThe firmware's SoC cycles per {kib} KiB request through the FTL (one request per phase; raw: the "
          f"same pages as port operations): all / CPU busy")
    print("| dies | FTL write | FTL read | raw write | raw read |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['dies']} | " + " | ".join(f"{r[p + '_cycles']} / {r[p + '_cpu_cycles']}"
                                             for p in ("ftl_write", "ftl_read", "raw_write", "raw_read")) + " |")
    return result
