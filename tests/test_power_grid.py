"""`experiment power --sweep grid`: issue 18's "0 violations for every token policy and for DCC across
all traces, alpha 1..8 and TG 2..5", as one command."""

import json

import pytest

from nandlab import power_grid
from nandlab.gateware.power.common import ALPHA_RANGE, TG_RANGE
from nandlab.testing import run_cli as nandlab


@pytest.mark.unit
def test_grid_points_cover_every_accepted_tg_and_alpha():
    every = {(tg, a) for tg in range(TG_RANGE[0], TG_RANGE[1] + 1) for a in range(ALPHA_RANGE[0], ALPHA_RANGE[1] + 1)}
    assert set(power_grid.points()) == every and len(power_grid.points()) == 32
    # Per-channel rings with 2 channels: alpha must split into two whole shares.
    assert {a for _, a in power_grid.points(2)} == {2, 4, 6, 8}


@pytest.mark.cocotb
def test_grid_keeps_the_budget_and_names_what_dcc_cannot_do(tmp_path):
    """A short grid with the channel: the token policy never exceeds PB at any of the 32 points, PPM
    does (the monitor sees violations in this setup: a control), and DCC is refused exactly where its
    cap, alpha x I_max less one page transfer's bus current, is below an operation's I_max peak."""
    fig = tmp_path / "grid.png"
    out = nandlab("experiment", "power", "--sweep", "grid", "--json", "--ops", "40", "--ratios", "50",
                  "--time-scale", "40", "--policies", "ppm,kmtpm_sub,dcc", "--figure", str(fig), timeout=900)
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    assert len(d["points"]) == 32 and fig.stat().st_size > 10_000
    s = d["summary"]
    assert s["kmtpm_sub"]["points"] == 32 and s["kmtpm_sub"]["violations"] == 0
    assert s["kmtpm_sub"]["cons_errors"] == 0 and s["kmtpm_sub"]["worst_peak_pb"] <= 1.0
    assert s["ppm"]["violations"] > 0 and s["ppm"]["worst_peak_pb"] > 1.0
    # The MTPM part's pre-charge peaks at I_max (the paper's Fig. 3 normalisation); NV-DDR mode 5's bus
    # current is 328 / 4096 = 0.080 I_max (docs/power_waveforms.md): the cap alpha - 0.080 is below 1 only at alpha 1.
    impossible = {(p["tg"], p["alpha"]) for p in d["points"] if "impossible" in p["policies"]["dcc"]}
    assert impossible == {(tg, 1) for tg in range(TG_RANGE[0], TG_RANGE[1] + 1)}
    assert all("cap of 0.920 I_max" in p["policies"]["dcc"]["impossible"] for p in d["points"] if p["alpha"] == 1)
    assert s["dcc"]["points"] == 28 and s["dcc"]["violations"] == 0
    # Throughput grows with the budget: alpha 8 is well above alpha 1 for the token policy at every TG.
    thr = {(p["tg"], p["alpha"]): p["policies"]["kmtpm_sub"]["throughput_vs_npm"] for p in d["points"]}
    assert all(thr[(tg, 8)] > thr[(tg, 1)] + 0.3 for tg in range(TG_RANGE[0], TG_RANGE[1] + 1))


@pytest.mark.unit
def test_grid_refuses_scales():
    out = nandlab("experiment", "power", "--sweep", "grid", "--scales", "0.5,1")
    assert out.returncode != 0 and "--scales: only with --sweep" in out.stderr
    assert "Traceback" not in out.stderr
