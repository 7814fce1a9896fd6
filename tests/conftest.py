"""pytest configuration: the project's tool environment and shared fixtures."""

import os

import pytest

from nandlab import env

env.setup()

# `nandlab.cli.main` re-executes itself under PYTHONHASHSEED=0 (reproducible netlists) when the variable is
# not 0: called in-process by a test, that would replace pytest with the command (`make test` exports it; a
# bare `pytest` does not). Children started by tests inherit it too.
os.environ["PYTHONHASHSEED"] = "0"


@pytest.fixture
def verilog_wrapping_shift(monkeypatch):
    """Migen's simulator refuses the negative shift the ring's idle sender's tx_data computes (tx_cnt - 1
    at tx_cnt = 0); in Verilog the 4-bit shift count wraps to 15 and the bit is 0: simulate it so."""
    from migen.fhdl.structure import _Operator
    from migen.sim.core import Evaluator
    evaluate = Evaluator.eval

    def eval_wrapping_shift(self, node, postcommit=False):
        if type(node) is _Operator and node.op == ">>>":
            a, b = (eval_wrapping_shift(self, o, postcommit) for o in node.operands)
            return a >> b if b >= 0 else 0
        return evaluate(self, node, postcommit)
    monkeypatch.setattr(Evaluator, "eval", eval_wrapping_shift)
