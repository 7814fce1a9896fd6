"""Cycles a scheduler decision on the simulated SoC for firmware variants, at 1, 2 and 4 ways (issue 17).

    python sw/firmware/host/sched_cost.py [--ways 1,2,4] [--archs SDW-NFM] [--workloads Financial1,TPC_E]
        [--n 60] [--seed 1] [--tag NAME] [--src DIR] [--make VAR=VALUE ...]

Each way count's simulator is `nandlab reproduce dwsdw`'s (nandlab.planes: built, or found up to date, in
build/). A variant's firmware (`--make`: variables for sw/firmware/Makefile, e.g. SCHED_HOT_OFFSET=0xd00) is
compiled into build/sched_cost/<tag>-w<ways>/ against that build's generated software, and its image replaces
the simulator's main RAM .init file in a private gateware directory (links to the compiled simulator): no
Verilator run and no SoC generation per variant. The runs are planes' own (each formats afresh, data checked);
one line per run: ways, arch, workload, cycles a decision, decisions, MB/s, exploitation, program groups, and
the scheduler's stretch offsets from the ELF (appended to build/sched_cost/<tag>.json). Cycle counts are simulated
cycles: machine load does not move them. A revision's firmware (the "before" of a table):

    mkdir -p build/base_src && git archive main sw/firmware | tar -x -C build/base_src
    python sw/firmware/host/sched_cost.py --tag base --src build/base_src/sw/firmware
"""

import argparse
import json
import subprocess
import sys
from pathlib import Path

from litex.soc.integration.common import get_mem_data

from nandlab import env, planes, replay
from nandlab.soc.targets import sim as simtarget

ROOT = env.BUILD_DIR / "sched_cost"
SYMBOLS = ("_sched_hot", "_sched_hot_end", "_drv_hot", "_hot_end", "_etext", "sched_pick", "sched_push_n")


def built(ways, rebuild=False):
    """(build_dir, gateware_dir) of the way count's simulator: the one compiled in build/ if there is one (a
    variant only replaces its firmware; the gateware does not depend on it), else (or with `rebuild`) built now."""
    p = planes.Point(ways, "SDW-NFM", "Financial1")
    probe = planes.STUDY.run_args(p, 60, 1, ROOT / "probe")
    build_dir = env.BUILD_DIR / simtarget.build_dir_name(probe.dies, **replay.sim_nand(probe))
    if not rebuild and (build_dir / "gateware" / "obj_dir" / "Vsim").exists() and (build_dir / "csr.csv").exists():
        return build_dir, build_dir / "gateware"
    return replay._build([p], planes.STUDY, 60, 1, ROOT / "probe")


def _link_all(src, dst, but):
    """`dst` made with a link to every entry of `src` except the one named `but`."""
    dst.mkdir(parents=True, exist_ok=True)
    for entry in Path(src).iterdir():
        link = dst / entry.name
        if entry.name != but and not link.exists():
            link.symlink_to(entry.resolve())


def variant(build_dir, gateware, tag, make_vars, src=env.FIRMWARE_DIR):
    """A directory like `build_dir` whose firmware is compiled with `make_vars` and whose gateware/ runs it:
    (variant dir, symbols of its ELF)."""
    vdir = ROOT / f"{tag}-{Path(build_dir).name}"
    sw = vdir / "software"
    _link_all(Path(build_dir) / "software", sw, but="firmware")
    for name in ("csr.csv", "csr.json"):
        if not (vdir / name).exists() and (Path(build_dir) / name).exists():
            (vdir / name).symlink_to((Path(build_dir) / name).resolve())
    cmd = ["make", "-C", str(src), f"BUILD_DIR={vdir}", "-j2"] + list(make_vars)
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"firmware build failed ({' '.join(cmd)}):\n{out.stdout[-3000:]}{out.stderr[-3000:]}")
    fw = sw / "firmware"
    gw = vdir / "gateware"
    _link_all(gateware, gw, but="sim_main_ram.init")
    # The whole image, as the SoC's build loads it (soc/targets/sim.py: LiteX's get_mem_data).
    words = get_mem_data(str(fw / "firmware.bin"), endianness="little")
    (gw / "sim_main_ram.init").write_text("".join(f"{w:08x}\n" for w in words))
    nm = subprocess.run([env.which("riscv64-unknown-elf-nm"), str(fw / "firmware.elf")], capture_output=True,
                        text=True, check=True).stdout
    syms = {f[2]: int(f[0], 16) for f in (line.split() for line in nm.splitlines()) if len(f) == 3}
    return vdir, syms


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ways", default="1,2,4")
    ap.add_argument("--archs", default=",".join(planes.ARCHS))
    ap.add_argument("--workloads", default="Financial1,TPC_E")
    ap.add_argument("--n", type=int, default=60)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tag", default="base")
    ap.add_argument("--make", nargs="*", default=[], help="VAR=VALUE for sw/firmware/Makefile")
    ap.add_argument("--src", default=str(env.FIRMWARE_DIR),
                    help="the firmware's sources (e.g. a revision's: git archive REV sw/firmware | tar -x -C DIR)")
    ap.add_argument("--build-only", action="store_true", help="build the simulators, run nothing")
    a = ap.parse_args()
    env.setup()
    rows = []
    for ways in map(int, a.ways.split(",")):
        build_dir, gateware = built(ways, a.build_only)
        if a.build_only:
            print(f"{ways} way(s): {gateware}", flush=True)
            continue
        vdir, syms = variant(build_dir, gateware, a.tag, a.make, Path(a.src).resolve())
        where = " ".join(f"{s}={syms[s] & 0xfff:#05x}" for s in SYMBOLS[:4] if s in syms)
        print(f"{a.tag} {ways} way(s): {where} text_end={syms.get('_etext', 0):#x}", flush=True)
        points = [planes.Point(ways, arch, w) for w in a.workloads.split(",") for arch in a.archs.split(",")]
        res = replay._session(points, planes.STUDY, a.n, a.seed, vdir / "runs",
                              {tuple(points): (str(vdir), str(vdir / "gateware"))})
        for p in points:
            r = res[p]
            rows.append({"tag": a.tag, **r})
            print(f"{a.tag} w{ways} {p.arch:<7} {p.workload:<10} {r['sched_mean_cycles']:7.1f} cycles/decision "
                  f"({r['sched_decisions']} decisions) {r['mb_s']:.3f} MB/s exploitation {r['exploitation_pages']:.4f} "
                  f"groups {json.dumps(r['program_by_pages'], sort_keys=True)} requests {r['requests']}", flush=True)
    with open(ROOT / f"{a.tag}.json", "a") as f:
        for r in rows:
            f.write(json.dumps(r, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
