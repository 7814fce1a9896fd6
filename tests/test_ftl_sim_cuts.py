"""`nandlab ftl cuts`: power cuts of the simulated SoC inside FTL writes (the issue asks for >= 50)."""

import json

import pytest

from nandlab.testing import run_cli as nandlab


@pytest.mark.unit
@pytest.mark.parametrize("args, message", [
    (["--cuts", "0"], "--cuts 0: takes 1..10000"),
    (["--dies", "17"], "--dies 17: takes 1..16"),
    (["--nand-blocks", "33"], "33 blocks"),
    (["--nand-pages", "2"], "--nand-pages 2: takes 4..64"),
])
def test_bad_options_are_refused_before_any_build(args, message):
    out = nandlab("ftl", "cuts", *args, timeout=60)
    assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr, out.stderr
    assert "generating" not in out.stderr


@pytest.mark.slow
@pytest.mark.sim
def test_fifty_power_cuts_lose_nothing():
    """>= 50 SoC resets inside FTL writes: every cut chunk holds its old or its new data, every
    acknowledged chunk reads back, each recovery timed."""
    out = nandlab("ftl", "cuts", "--cuts", "50", "--json", timeout=4 * 3600)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    r = json.loads(out.stdout)
    # A write can finish before the reset (sent over the bridge) arrives: most cuts land inside one.
    assert r["cuts"] == 50 and r["cut_inside_write"] >= 25, r
    assert r["lost_acknowledged"] == 0 and r["mismatches"] == 0 and not r["bad_chunks"], r
    assert r["sectors_old"] + r["sectors_new"] == 50 * r["chunk_sectors"], r   # each sector old or new
    assert all(x["recovery_cycles"] > 0 and x["lost_pages"] == 0 for x in r["recoveries"]), r["recoveries"]
