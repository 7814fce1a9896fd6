"""MPNFM on the simulated SoC (issue 17 step 9): the MPNFM paper's 32 KiB + 4 KiB part, plane 1 in its
small pages through the controller's SMALL layout, two FTLs and MPNFM's layer in the firmware, a trace of
small and large writes replayed through it and checked sector by sector (the replay's own pattern check).
Slow: a build of its own (about 6 minutes) and the replay."""

import json
import random

import pytest

from nandlab.testing import run_cli as nandlab

N = 150


def mixed_trace(path, n=N, seed=18):
    """MQSim lines (time_ns device lba size type): writes of 1..7 sectors of 512 B (below one small page:
    the small FTL's), writes of 8..64 sectors (the large FTL's), reads of 1..32, all within 1 MiB so that
    small and large writes land on the same large pages and reads cross both."""
    rng, lines = random.Random(seed), []
    for i in range(n):
        lba = rng.randrange(0, 2048 - 64)
        kind = rng.random() if i >= 10 else 0.0
        if kind < 0.55:
            lines.append(f"0 0 {lba} {rng.randrange(1, 8)} 0")
        elif kind < 0.8:
            lines.append(f"0 0 {lba} {rng.randrange(8, 65)} 0")
        else:
            lines.append(f"0 0 {lba} {rng.randrange(1, 33)} 1")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.slow
@pytest.mark.sim
def test_mpnfm_replay_on_the_soc(tmp_path):
    t = mixed_trace(tmp_path / "mixed.mqsim")
    out = nandlab("replay", str(t), "--format", "mqsim", "--qd", "8", "--mpnfm", "--ftl-sector", "512",
                  "--nand-part", "MPNFM-32-4", "--blocks", "64", "--nand-pages", "32", "--out", str(tmp_path / "r"),
                  "--json", timeout=3600)
    assert out.returncode == 0, out.stderr[-3000:]
    s = json.loads(out.stdout)
    st, fw = s["stats"], s["firmware"]
    assert st["requests"] == N and st["errors"] == 0 and st["mismatches"] == 0 and st["counts"]["agree"]
    assert st["overlap_waits"] > 0 and s["replay"]["mpnfm"] and s["replay"]["ftl_sector"] == 512
    mp = fw["mpnfm"]
    # The distributor: writes below 4 KiB to the small pages, the rest to the large; small writes into
    # large-page data read it first; large writes over small-page data moved its other sectors.
    small = sum(1 for line in t.read_text().split("\n") if line.endswith(" 0") and int(line.split()[3]) < 8)
    assert mp["mpnfm_small_writes"] == small and mp["mpnfm_large_writes"] == st["writes"] - small
    assert mp["mpnfm_fills"] > 0 and mp["mpnfm_edge_moves"] > 0 and mp["small_nand_programs"] > 0
    # The dies counted every program the two FTLs issued in the run (the replay line sums both FTLs).
    assert st["die_operations"]["program"]["pages"] == fw["ftl_nand_programs"] + fw["ftl_meta_programs"]
    assert fw["fc_sectors"] >= 0 and fw["ftl_rmw_reads"] > 0


def _args(trace, out, **extra):
    """`nandlab replay` arguments (replay.arguments: the command's own parser and checks) for the
    one-bitstream build below."""
    from nandlab import replay
    return replay.arguments(trace, format="mqsim", dies=1, nand_part="MPNFM-32-4", nand_sdw=True, blocks=64,
                            nand_pages=32, nand_time_scale=1, prep_time_shift=6, qd=8, out=out, **extra)


@pytest.mark.slow
@pytest.mark.sim
def test_one_bitstream_runs_three_plane_architectures_and_both_page_size_modes(tmp_path):
    """Issue 17's "all three architectures and both page-size modes switchable at run time in one
    bitstream": one build of the MPNFM part with SDW-NFM's subplane registers, booted once; CNFM, DW-NFM and
    SDW-NFM (the dies' `arch`, the scheduler on, the 32 KiB page mode) and MPNFM (the layer on, plane 1 in
    4 KiB pages) run one after another on it, every read checked. What the dies counted follows each
    architecture: CNFM and DW-NFM program at most two pages at once, SDW-NFM more; MPNFM programs small pages."""
    from nandlab import env, replay
    from nandlab.soc.targets import sim as simtarget
    t = mixed_trace(tmp_path / "mixed.mqsim", n=60)
    runs = [("CNFM", dict(arch="CNFM", sched=32)), ("DW-NFM", dict(arch="DW-NFM", sched=32)),
            ("SDW-NFM", dict(arch="SDW-NFM", sched=32)), ("MPNFM", dict(mpnfm=True, ftl_sector=512))]
    all_args = [_args(t, tmp_path / name, **extra) for name, extra in runs]
    nands = [replay.sim_nand(a) for a in all_args]
    assert all(n == nands[0] for n in nands)                  # one build serves every run
    build_dir = env.BUILD_DIR / simtarget.build_dir_name(1, **nands[0])
    gateware = simtarget.build_all(build_dir, dies=1, **nands[0])
    res = {}
    with replay.booted(gateware, build_dir, "run-one-bitstream") as (console, bus):
        for (name, _), args in zip(runs, all_args):
            stats, fw, ring, _ = replay.run_checked(args, console, bus, f"one-bitstream run {name}")
            assert stats["requests"] == 60
            res[name] = (stats, fw)

    def groups(name, more_than):
        by = res[name][0]["die_operations"]["program"]["by_pages"]
        return sum(v for k, v in by.items() if int(k) > more_than)
    for name in ("CNFM", "DW-NFM"):
        assert groups(name, 1) > 0 and groups(name, 2) == 0, (name, res[name][0]["die_operations"])
    assert groups("SDW-NFM", 2) > 0, res["SDW-NFM"][0]["die_operations"]
    mp = res["MPNFM"][1]["mpnfm"]
    assert mp["mpnfm_small_writes"] > 0 and mp["small_nand_programs"] > 0
    assert groups("MPNFM", 1) == 0                            # no scheduler under the layer: one plane at a time
