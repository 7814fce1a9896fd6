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
