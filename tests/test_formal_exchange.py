"""The compositional proof of the token exchange (nandlab/formal_xnode.py, tests/formal/xnode_props.sv and
node_props.sv with EXCHANGE): one exchange node, and node 0 of a ring with an exchange node, each against an
abstract rest of the system; docs/power_proofs.md ("The token exchange for N rings") turns them into the
exchange's safety for any number of rings. Fast tasks in `make test`, with the exchange node at the widest
configuration (TT 248, Bitwuzla); node 0 at TT 248 and the refinement check on the real 2-ring exchange in
`make test-slow`.
"""

import pytest

from nandlab import formal, formal_xnode
from nandlab.gateware.power.common import ALPHA_RANGE, TG_RANGE
from nandlab.gateware.power.exchange import _share


def _run(task, tmp_path):
    passed, seconds, summary = formal.run([task], workdir=tmp_path)[task]
    return passed, summary, (tmp_path / f"{task}.log")


@pytest.mark.unit
def test_home_shares_add_up_to_tt():
    """INJECT gives ring 0 TT - (N - 1) floor(TT / N) and every other ring floor(TT / N) (exchange.py, with
    its divider-free floor): for every TT the controller accepts and N = 2..16 rings the shares are
    non-negative, add up to TT and each is at most TT (the proof's assumption on `share`)."""
    tts = {a * ((1 << tg) - 1) for a in range(ALPHA_RANGE[0], ALPHA_RANGE[1] + 1)
           for tg in range(TG_RANGE[0], TG_RANGE[1] + 1)}
    for n in range(2, 17):
        for tt in tts:
            share = _share(tt, n)
            assert share == tt // n, (tt, n)
            shares = [tt - (n - 1) * share] + [share] * (n - 1)
            assert min(shares) >= 0 and sum(shares) == tt and max(shares) <= tt


@pytest.mark.formal
@pytest.mark.parametrize("task", ["xnode", "xring_first"])
def test_exchange_node_proof_against_abstract_system(task, tmp_path):
    """k-induction at depth 2 closes: the exchange node against its abstract ring, pool word and rest of the
    system (global conservation, one key per ring, the ring holds its share + borrowed - lent, the node's
    guarantee); node 0 of a ring with an exchange node (INJECT puts any share <= TT into it)."""
    passed, summary, log = _run(task, tmp_path)
    assert passed and "PASS" in summary, f"{task}: {summary} (log: {log})"


@pytest.mark.formal
def test_exchange_node_environment_is_not_too_narrow(tmp_path):
    """Cover: the exchange node lends, borrows a non-empty pool word, its ring holds more than its home share,
    and it reclaims, all in the abstract environment."""
    passed, summary, _ = _run("xnode_cover", tmp_path)
    assert passed and "PASS" in summary, summary


@pytest.mark.formal
@pytest.mark.parametrize("task", ["xnode_weak_env", "xnode_mutant"])
def test_exchange_node_negative_controls(task, tmp_path):
    """Negative controls, from reset: a previous exchange node that may add one token to its pool word
    (weakened contract), and an exchange node that creates a token when it borrows (mutated design), each
    break global conservation as seen from the node."""
    passed, summary, log = _run(task, tmp_path)
    assert not passed and "FAIL" in summary, summary
    line = next(k for k, text in enumerate(formal_xnode.XNODE_PROPS.read_text().splitlines(), 1)
                if "assert (total == TT && tt == TT" in text)
    assert f"xnode_props.sv:{line}." in log.read_text(), log.read_text()[-2000:]


@pytest.mark.formal
def test_exchange_node_proof_at_tt_248(tmp_path):
    """The exchange node's proof at the SoC's widest configuration, alpha 8, TG 5 (TT = 248, 9-bit packets, 8-bit
    token counts used to the full): the same properties, k-induction at depth 2, with Bitwuzla (yices gives no
    answer in 20 CPU-minutes; docs/power_proofs.md)."""
    passed, summary, log = _run("xnode_wide_bw", tmp_path)
    assert passed and "PASS" in summary, f"xnode_wide_bw: {summary} (log: {log})"
    assert "successful proof by k-induction" in log.read_text()


@pytest.mark.formal
@pytest.mark.parametrize("task", ["xnode_weak_env_wide", "xnode_mutant_wide", "xnode_mutant_wide_step"])
def test_exchange_node_negative_controls_at_tt_248(task, tmp_path):
    """The wide proof's controls, with the same solver: the weakened contract and the mutant fail from reset (BMC)
    at global conservation, and the induction step alone returns a counterexample for the mutant: Bitwuzla's
    answers through the bitwuzla program are not vacuous at TT 248."""
    passed, summary, log = _run(task, tmp_path)
    text = log.read_text()
    assert not passed, summary
    assert ("FAIL" in summary) if task != "xnode_mutant_wide_step" else ("returned FAIL for induction" in text)
    line = next(k for k, t in enumerate(formal_xnode.XNODE_PROPS.read_text().splitlines(), 1)
                if "assert (total == TT && tt == TT" in t)
    assert f"xnode_props.sv:{line}." in text, text[-2000:]


@pytest.mark.formal
@pytest.mark.slow
@pytest.mark.parametrize("task", ["xring_first_wide", "exchange_refine"])
def test_exchange_proof_slow(task, tmp_path):
    """node 0's proof at alpha 8, TG 5 (TT = 248); the compositional proof's environments checked against the
    real 2-ring exchange from reset (bounded)."""
    passed, summary, log = _run(task, tmp_path)
    assert passed and "PASS" in summary, f"{task}: {summary} (log: {log})"
