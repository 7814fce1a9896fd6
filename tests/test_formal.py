"""Formal proofs of the power ring (SymbiYosys, yices): run by `make test`, the liveness proof and the
protected ring's check (about 8 minutes of a core together: 283 s and 188 s in session 25) by `make test-slow`.
The ring's safety for any number of nodes: the compositional proof (`node_*`, `refine3`), in `make test`;
the node's proof at every accepted configuration (~8 min wall at load ~10) in `make test-slow`.

The proof tasks and what they state are in nandlab/formal.py and tests/formal/ring_props.sv.
"""

import re

import pytest

from nandlab import formal, formal_exchange, tokens
from nandlab.nand_model.parts import NandLabSLC


@pytest.mark.unit
def test_proof_table_is_the_compiled_one():
    """The fixed table the proofs use is the token compiler's at TG = 4 (the first read phases R_A1,
    with RTs below R_A2's, are left out of the proof model), and ring_ops.vh (included by ring_props.sv and
    exchange_props.sv) states it the same."""
    t = tokens.compile_tables(NandLabSLC(), tg=4, alpha=4)
    for oi, rt in formal.TABLE_TG4.items():
        assert t.rt[oi] == rt, hex(oi)
    sv = formal.OPS.read_text()
    for props in (formal.PROPS, formal_exchange.PROPS):
        assert '`include "ring_ops.vh"' in props.read_text(), props.name
    stated = {int(a, 16): int(b) for a, b in re.findall(r"oi == 8'h([0-9a-f]{2}) \? (\d+)", sv)}
    assert stated == formal.TABLE_TG4


@pytest.mark.unit
def test_liveness_bound_formula():
    # N (A + lap + 2) + lap with P = 5 packet bits (TT = 15), A = 6 (RUN_MAX + 2).
    assert formal.liveness_bound(2, 1, 3) == 2 * (30 + 12 + 2) + 12
    assert formal.liveness_bound(3, 1, 3) == 3 * (30 + 18 + 2) + 18


@pytest.mark.formal
@pytest.mark.parametrize("task", ["safety", "safety1", "safety3", "deadlock",
                                  # about 5 and 3 minutes of yices: make test-slow
                                  pytest.param("liveness", marks=pytest.mark.slow),
                                  pytest.param("safety_protect", marks=pytest.mark.slow)])
def test_ring_proof(task, tmp_path):
    result = formal.run([task], workdir=tmp_path)
    passed, seconds, summary = result[task]
    assert passed, f"{task}: {summary} (log: {tmp_path / (task + '.log')})"
    if task == "deadlock":
        assert "PASS" in summary            # the cover was reached: the keyless ring deadlocks


# The compositional proof (tests/formal/node_props.sv; docs/power_proofs.md says why it covers every ring
# of N >= 2 nodes, 3 among them). The monolithic 3-node k-induction (`safety3_induction`) does not close
# in 30 minutes and is not a test.

@pytest.mark.formal
@pytest.mark.parametrize("task", ["node_first", "node_other", "node_first_wide", "node_other_wide"])
def test_node_proof_against_abstract_ring(task, tmp_path):
    """One node and the ring controller against an abstract predecessor and rest of the ring: k-induction
    at depth 2 closes (about 1 s of yices each at alpha 1 and TG 4, 5 s at alpha 8 and TG 5: TT = 248)."""
    passed, _, summary = formal.run([task], workdir=tmp_path)[task]
    assert passed and "PASS" in summary, f"{task}: {summary} (log: {tmp_path / (task + '.log')})"


@pytest.mark.formal
@pytest.mark.slow
def test_node_proof_every_configuration(tmp_path):
    """The node's proof (both variants) at every alpha 1..8 and TG 2..5 the controller accepts whose TT holds
    the fixed table's largest RT: 26 configurations, 52 k-inductions (a few minutes of yices)."""
    tasks = [name for name in formal.NODE_TASKS if re.fullmatch(r"node_(first|other)_a\dt\d", name)]
    assert len(tasks) == 2 * len(formal.NODE_CONFIGS) == 52
    result = formal.run(tasks, workdir=tmp_path)
    failed = {k: v[2] for k, v in result.items() if not (v[0] and "PASS" in v[2])}
    assert not failed, failed


@pytest.mark.formal
def test_node_proof_environment_is_not_too_narrow(tmp_path):
    """Cover: a node other than node 0 runs a pre-charge needing all TT tokens, which came over its link;
    its die runs while packets come in and go out; it holds the PPM key through a pre-charge."""
    passed, _, summary = formal.run(["node_cover"], workdir=tmp_path)["node_cover"]
    assert passed and "PASS" in summary, summary


@pytest.mark.formal
@pytest.mark.parametrize("task", ["node_weak_env", "node_mutant"])
def test_node_proof_negative_controls(task, tmp_path):
    """Negative controls, from reset: a predecessor that may put one token more into a packet than the rest
    of the ring has (weakened assumption), and a node whose comparator grants one token short (mutated
    design), each break conservation as seen from the node."""
    passed, _, summary = formal.run([task], workdir=tmp_path)[task]
    assert not passed and "FAIL" in summary, summary
    log = (tmp_path / f"{task}.log").read_text()
    line = next(k for k, text in enumerate(formal.NODE_PROPS.read_text().splitlines(), 1)
                if "assert (total == TT && keys == 1" in text)
    assert f"node_props.sv:{line}." in log, log[-2000:]


@pytest.mark.formal
def test_node_abstraction_holds_in_three_node_ring(tmp_path):
    """The node proof's abstract environment, checked on the 3-node ring from reset (16 cycles, ~10 s):
    each predecessor's packets and the rest of the ring's sum move only as the abstraction allows."""
    passed, _, summary = formal.run(["refine3"], workdir=tmp_path)["refine3"]
    assert passed and "PASS" in summary, summary


@pytest.mark.formal
def test_ring_liveness_bound_is_tight_enough_to_fail(tmp_path):
    """The same property with a bound of 12 cycles fails: dies do wait, so the proof above is not
    vacuous (its assumptions leave dies free to start operations and compete for tokens)."""
    result = formal.run(["liveness_tight"], workdir=tmp_path)
    passed, _, summary = result["liveness_tight"]
    assert not passed and "FAIL" in summary, summary


# The token exchange between rings (nandlab/formal_exchange.py, tests/formal/exchange_props.sv).

@pytest.mark.formal
def test_exchange_loan_is_covered(tmp_path):
    """A die of ring 1 runs a pre-charge needing all 15 tokens, more than ring 1's home share of 7:
    ring 0's tokens went through the exchange and are in use in ring 1 (~30 s of yices)."""
    passed, _, summary = formal.run(["exchange_cover"], workdir=tmp_path)["exchange_cover"]
    assert passed and "PASS" in summary, summary


@pytest.mark.formal
def test_exchange_mutant_breaks_conservation(tmp_path):
    """Exchange nodes that create a token when they borrow fail the global conservation assertion: the
    bounded check is not vacuous (~20 s)."""
    from nandlab import formal_exchange
    passed, _, summary = formal.run(["exchange_mutant"], workdir=tmp_path)["exchange_mutant"]
    assert not passed and "FAIL" in summary, summary
    log = (tmp_path / "exchange_mutant.log").read_text()
    line = next(k for k, text in enumerate(formal_exchange.PROPS.read_text().splitlines(), 1)
                if "assert (held + flying + used == TT)" in text)
    assert f"exchange_props.sv:{line}." in log, log[-2000:]


@pytest.mark.formal
@pytest.mark.slow
def test_exchange_conservation_bounded(tmp_path):
    """Global conservation, one key per ring and summed RTs <= TT for 2 rings with exchange nodes, every
    cycle from reset to the check's depth (nandlab.formal_exchange: ~5 min of yices)."""
    passed, _, summary = formal.run(["exchange_bmc"], workdir=tmp_path)["exchange_bmc"]
    assert passed, summary
