"""Token exchange between channels' rings (gateware/power/exchange.py, `--topology exchange`): the global
budget holds, tokens are conserved in every cycle, and a mutated exchange that creates tokens is caught."""

import pytest

from nandlab import experiment
from nandlab.errors import NandLabError
from nandlab.testing import run_cli as nandlab

# One harness build for the tests below: 2 channels of 4 dies, the same trace depth.
KW = dict(dies=8, channels=2, n_ops=120, time_scale=20, log=lambda *_: None, jobs=2)
TOKEN_POLICIES = ["mtpm", "kmtpm_atomic", "kmtpm_sub"]


def _check_budget(res, table):
    """Every run finished its operations; no token policy went over the global budget; the harness found
    the global token sum at TT in every cycle (it stops at the first cycle it is not)."""
    pb = table.pb * res[0]["rings"] * 4096        # per_channel: the table is one ring's (alpha / rings).
    by = {(r["policy"], r["ratio"]): r for r in res}
    for (p, q), r in by.items():
        assert r["ops"] == by[("npm", q)]["ops"] > 0, r
        assert r["cons_errors"] == 0, r
        if p in TOKEN_POLICIES:
            assert r["violations"] == 0 and 0 < r["max"] <= pb, r


@pytest.mark.cocotb
@pytest.mark.parametrize("skew, ratios", [(None, [0, 50, 100]), (75, [50])], ids=["even", "skew75"])
def test_exchange_keeps_the_global_budget(tmp_path, skew, ratios):
    """Reads only, half and half, programs only; every token policy (and PPM, whose key the exchange
    forwards): 0 violations of the global PB = alpha x I_max (the monitor sums every channel's dies), the
    global sum of tokens conserved, and tokens did move between the rings."""
    res, table = experiment.run(ratios=ratios, policies=["npm", "ppm"] + TOKEN_POLICIES, alpha=4,
                                topology="exchange", skew=skew, workdir=tmp_path, **KW)
    assert table.alpha == 4 and table.tt == 60        # The global budget: the rings share it.
    _check_budget(res, table)
    for r in res:
        if r["policy"] in TOKEN_POLICIES:
            assert r["lent"] > 0 and r["borrowed"] > 0, r
            # What is lent and not yet borrowed is in the exchange ring (at most TT tokens).
            assert 0 <= r["lent"] - r["borrowed"] <= table.tt, r
        else:
            assert r["lent"] == r["borrowed"] == 0, r     # NPM, PPM: the exchange only forwards.


@pytest.mark.cocotb
def test_mutated_exchange_is_caught(tmp_path):
    """Negative control: exchange nodes that create a token whenever they borrow. The harness stops at
    the first cycle whose global token sum is not TT."""
    with pytest.raises(NandLabError, match="token conservation broken at cycle"):
        experiment.run(ratios=[50], policies=["npm", "kmtpm_sub"], alpha=4, topology="exchange", mutate=True,
                       workdir=tmp_path, **KW)


@pytest.mark.cocotb
@pytest.mark.slow
def test_exchange_against_fixed_budgets(tmp_path):
    """The same traces with fixed per-channel budgets (alpha / 2 each) and shared through the exchange:
    both keep the global budget; with channel 0 loaded at 90 % the exchange is not slower than fixed
    budgets in KMTPM-S (the idle channel's tokens go where the work is). (Gains are measured, not
    asserted: docs/power_exchange.md.)"""
    out = {}
    for topo in ("per_channel", "exchange"):
        res, table = experiment.run(ratios=[50], policies=["npm", "kmtpm_sub"], alpha=4, topology=topo, skew=90,
                                    workdir=tmp_path / topo, **KW)
        _check_budget(res, table)
        out[topo] = {r["policy"]: r["cycles"] for r in res}
    assert out["exchange"]["kmtpm_sub"] <= out["per_channel"]["kmtpm_sub"], out


@pytest.mark.unit
def test_skewed_traces():
    """--skew 75 puts about 75 % of the operations on channel 0's dies; without it the traces are as before."""
    t = experiment.synthetic_trace(2000, 50, 8, skew=75, channels=2)
    share = sum(1 for d, _ in t if d < 4) / len(t)
    assert 0.72 < share < 0.78
    assert {d for d, _ in t} == set(range(8))
    assert experiment.synthetic_trace(300, 50, 8) == experiment.synthetic_trace(300, 50, 8, skew=None, channels=2)


@pytest.mark.unit
@pytest.mark.parametrize("args, message", [
    (["--topology", "exchange"], "topology exchange lends tokens between channels' rings: it needs --channels 2"),
    (["--channels", "1", "--topology", "exchange"], "needs --channels 2 or more (got 1)"),
    (["--skew", "75"], "--skew 75: uneven load between channels needs --channels 2 or more"),
    (["--channels", "2", "--skew", "120"], "--skew 120: channel 0's share of the operations is a percentage"),
])
def test_exchange_options_refused(args, message):
    out = nandlab("experiment", "power", *args)
    assert out.returncode != 0 and message in out.stderr, out.stderr


@pytest.mark.unit
def test_exchange_refuses_an_rt_above_a_home_share():
    """TG 4, alpha 1 over 2 channels: home shares of 7 and 8 tokens, a program's pre-charge needs 15 (the
    SoC's refusal, gateware/power/rings.py); alpha 2 gives shares of 15 and passes the check."""
    from nandlab.nand_model.parts import get_part
    part = get_part("MTPM-MLC")
    with pytest.raises(NandLabError, match=r"above a ring's home share of 7 \(TT 15 // 2 channels\)"):
        experiment.check_exchange_shares(part, [(4, 1)], 2)
    experiment.check_exchange_shares(part, [(4, 2)], 2)
    out = nandlab("experiment", "power", "--channels", "2", "--topology", "exchange", "--alpha", "1")
    assert out.returncode != 0 and "above a ring's home share" in out.stderr, out.stderr
