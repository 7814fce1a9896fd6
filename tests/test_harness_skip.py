"""The power harness's skip (gateware/power/skip.py, harness_skip.h) is exact: every counter the harness
reports is the same with quiet stretches skipped as cycle by cycle, for every policy and read ratio."""

import pytest

from nandlab import experiment
from nandlab.gateware.power.common import EXPERIMENT_POLICIES
from nandlab.testing import run_cli as nandlab


# The array-only harness (--no-channel, the default before issue 18) in make test-slow; make test runs the channel.
@pytest.mark.cocotb
@pytest.mark.parametrize("channel", [pytest.param(False, marks=pytest.mark.slow), True], ids=["no_channel", "channel"])
def test_skip_changes_no_result(tmp_path, channel):
    """Reads only, programs only and half and half, every policy (the ring's, NPM, PPM, DCC with its
    model checked every cycle): the same results with and without the skip, which skips most cycles.
    With the channel, dies wait for the bus and for tokens while holding it, and pages move
    (gateware/power/channel.py)."""
    kw = dict(n_ops=200, ratios=[0, 50, 100], time_scale=10, workdir=tmp_path, log=lambda *_: None,
              check_dcc=True, jobs=2, channel=channel)
    stats = []
    skipped, _ = experiment.run(skip=True, skip_stats=stats, **kw)
    stepped, _ = experiment.run(skip=False, **kw)
    assert [(r["ratio"], r["policy"]) for r in stepped] == [(q, p) for q in (0, 50, 100) for p in EXPERIMENT_POLICIES]
    for a, b in zip(skipped, stepped):
        assert a == b, (a, b)
    # The skip did skip: in every run, and most of the cycles over all runs.
    assert len(stats) == len(stepped) and all(s["skips"] > 0 for s in stats)
    assert sum(s["skipped_cycles"] for s in stats) > 0.5 * sum(r["cycles"] for r in stepped)


@pytest.mark.cocotb
@pytest.mark.parametrize("channel", [pytest.param(False, marks=pytest.mark.slow), True], ids=["no_channel", "channel"])
def test_skip_per_channel_rings(tmp_path, channel):
    """Two rings of four dies (packets rotate in each ring on its own; with the channel, a bus per
    channel, data input without tokens and SDR mode 4's slower pages): the same results too."""
    kw = dict(n_ops=160, ratios=[25], time_scale=10, workdir=tmp_path, log=lambda *_: None, jobs=2, channels=2,
              topology="per_channel", channel=channel, interface="sdr4", din_tokens=False)
    skipped, _ = experiment.run(skip=True, **kw)
    stepped, _ = experiment.run(skip=False, **kw)
    assert len(stepped) == len(EXPERIMENT_POLICIES) and skipped == stepped


@pytest.mark.unit
def test_no_skip_option():
    """--no-skip is an option of `experiment power` (checked before anything is built)."""
    out = nandlab("experiment", "power", "--no-skip", "--tg", "7")
    assert out.returncode != 0 and "TG = 7 is out of range" in out.stderr and "unrecognized" not in out.stderr
