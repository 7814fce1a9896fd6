"""The packet-protected ring's compositional proof (nandlab/formal_protect.py, tests/formal/pnode_props.sv and
hop_props.sv): one protected node with the ring controller against an abstract ring whose link drops,
duplicates and corrupts packets, and the real fault injector checked against that link model.
docs/power_proofs.md ("The packet-protected ring") states the fault model and turns them into the budget
safety of the SoC's protected rings for any number of nodes. The TT 15 proofs and the controls in `make test`
(about 8 minutes at load 10, a fraction of that on a quiet machine); the injector and the node at TT 248 (the
node with Bitwuzla) and their controls in `make test-slow`.
"""

import re

import pytest

from nandlab import formal, formal_protect


def _run(task, tmp_path):
    passed, seconds, summary = formal.run([task], workdir=tmp_path)[task]
    return passed, summary, (tmp_path / f"{task}.log")


def _line(path, text):
    return next(k for k, line in enumerate(path.read_text().splitlines(), 1) if text in line)


@pytest.mark.unit
def test_soc_rings_keep_their_own_audit_and_hops():
    """The proof's hooks (node 0 fed from x_valid, the audit an input) exist only when a ring is built with
    faults and an exchange together, which no build does: the SoC's protected rings audit their own tokens
    and every node receives through its hop."""
    from nandlab.gateware.power.ring import PowerRing
    from nandlab.gateware.power.rings import PowerRings
    ring = PowerRing(2, with_faults=True)
    assert not hasattr(ring, "audit_ext") and len(ring.hops) == 2
    assert hasattr(PowerRing(1, with_faults=True, with_exchange=True), "audit_ext")
    rings = PowerRings(2, 2, "exchange", with_faults=True)
    assert not rings.with_faults and not any(r.with_faults for r in rings.rings)


@pytest.mark.unit
def test_mutant_drops_only_the_sequence_check(tmp_path):
    """pnode_mutant's Verilog differs from the node's in exactly the receiver's sequence check."""
    formal_protect.generate("p1o", tmp_path)
    formal_protect.generate("p1m", tmp_path)
    good = (tmp_path / "p1o" / "nandlab_pnode.v").read_text().splitlines()
    bad = (tmp_path / "p1m" / "nandlab_pnode.v").read_text().splitlines()
    diff = [(a, b) for a, b in zip(good, bad) if a != b]
    assert len(good) == len(bad) and len(diff) == 1, diff
    assert re.search(r"rx_seq_r == \w+rx_last", diff[0][0]) and diff[0][1].endswith("= 1'd0;")


@pytest.mark.formal
@pytest.mark.parametrize("task", ["pnode_first", "pnode_other"])
def test_protected_node_proof_against_faulty_link(task, tmp_path):
    """k-induction at depth 2 closes: a protected node (node 0, or any other) and the controller with its
    recovery, against an abstract ring whose link into the node drops, duplicates and corrupts packets:
    held + in use + in flight + lost = TT, at most one key, the node's running phase covered by its tokens
    in use, its receiver in step with the link, copies and corrupted packets never taken, and its own
    packets carry only what it had, with the parity its successor checks."""
    passed, summary, log = _run(task, tmp_path)
    assert passed and "PASS" in summary, f"{task}: {summary} (log: {log})"


@pytest.mark.formal
def test_fault_injector_stays_within_the_link_model(tmp_path):
    """The real RingHopFault, armed with any fault at any time, on a protected sender's packets: every packet
    out of the hop is whole and is an original (one bit inverted at most, never delivered before, the latest
    started) or a copy of the one before: the steps pnode_props.sv's link may take (bounded from reset)."""
    passed, summary, log = _run("hop_refine", tmp_path)
    assert passed and "PASS" in summary, f"hop_refine: {summary} (log: {log})"


@pytest.mark.formal
@pytest.mark.parametrize("task", ["pnode_cover", "hop_cover"])
def test_fault_models_are_not_empty(task, tmp_path):
    """Every cover is reached: the node rejects a copy and a corrupted packet, takes one after a loss, runs a
    phase after a recovery; the injector's copy, inverted bit, loss and delay all occur."""
    passed, summary, log = _run(task, tmp_path)
    text = log.read_text()
    assert passed and "PASS" in summary, summary
    assert text.count("Reached cover statement") == 4 and "Unreached" not in text, text[-2000:]


@pytest.mark.formal
@pytest.mark.parametrize("task, props, text", [
    ("pnode_weak_env", formal_protect.PNODE_PROPS, "assert (total == TT && keys == 1"),
    ("pnode_mutant", formal_protect.PNODE_PROPS, "assert (total == TT && keys == 1"),
    ("hop_no_copy", formal_protect.HOP_PROPS, "if (done) assert (match_orig);"),
])
def test_protection_negative_controls(task, props, text, tmp_path):
    """Negative controls, from reset, each must fail: a link that inverts two bits (outside the fault model:
    the parity cannot see it) breaks conservation; so does a node that does not check the sequence bit (it
    takes a copy); and a link model without copies does not cover the injector."""
    passed, summary, log = _run(task, tmp_path)
    assert not passed and "FAIL" in summary, summary
    assert f"{props.name}:{_line(props, text)}." in log.read_text(), log.read_text()[-2000:]


@pytest.mark.formal
@pytest.mark.slow
def test_fault_injector_within_the_link_model_wide(tmp_path):
    """The injector check at alpha 8, TG 5 (TT = 248, 11-bit packets), the link model the wide node proofs
    below assume."""
    passed, summary, log = _run("hop_refine_wide", tmp_path)
    assert passed and "PASS" in summary, f"hop_refine_wide: {summary} (log: {log})"


@pytest.mark.formal
@pytest.mark.slow
@pytest.mark.parametrize("task", ["pnode_first_wide_bw", "pnode_other_wide_bw"])
def test_protected_node_proof_at_tt_248(task, tmp_path):
    """The protected node's proof at the SoC's configuration, alpha 8, TG 5 (TT = 248, 11-bit packets): the same
    properties, k-induction at depth 2, with Bitwuzla (5 and 8 CPU-minutes; yices gives no answer in 18
    CPU-minutes: docs/power_proofs.md)."""
    passed, summary, log = _run(task, tmp_path)
    assert passed and "PASS" in summary, f"{task}: {summary} (log: {log})"
    assert "successful proof by k-induction" in log.read_text()


@pytest.mark.formal
@pytest.mark.slow
@pytest.mark.parametrize("task", ["pnode_weak_env_wide", "pnode_mutant_wide", "pnode_mutant_wide_step"])
def test_protection_negative_controls_at_tt_248(task, tmp_path):
    """The wide proofs' controls: two inverted bits and the node without the sequence check break conservation
    from reset (BMC, yices: steps 18 and 29), and the mutant's induction step alone with Bitwuzla (the real
    proof's assertions) returns a counterexample to induction in which it takes a copy: Bitwuzla's answers at
    TT 248 are not vacuous."""
    passed, summary, log = _run(task, tmp_path)
    text = log.read_text()
    assert not passed, summary
    props = formal_protect.PNODE_PROPS
    if task == "pnode_mutant_wide_step":
        assert "returned FAIL for induction" in text, text[-2000:]
        line = _line(props, "if (w_last && (!w_fresh || w_flipped)) assert (!took);")
    else:
        assert "FAIL" in summary, summary
        line = _line(props, "assert (total == TT && keys == 1")
    assert f"{props.name}:{line}." in text, text[-2000:]
