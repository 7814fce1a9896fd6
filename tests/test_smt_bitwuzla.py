"""The `bitwuzla` program yosys-smtbmc runs (nandlab/smt_bitwuzla.py over the PyPI bitwuzla package): it splits
smtbmc's SMT-LIB 2 text into commands correctly, answers a dialogue as a solver must (checked against the
arithmetic here and against yices on the same text), and scopes assertions with push / pop. The formal tasks
that use it (`*_wide_bw`) and their negative controls are in test_formal_exchange.py / test_formal_protect.py.
"""

import io
import subprocess

import pytest

from nandlab import env
from nandlab.smt_bitwuzla import commands

# 4-bit a: a + a is even, so = 1 is unsat and = 2 is sat (a = 1 or 9); a * 3 = 7 has the one solution a = 13
# (3 x 13 = 39 = 2 x 16 + 7). `|x (y;|` checks quoted symbols with a parenthesis and a semicolon in them.
DIALOGUE = """(set-option :produce-models true)
(set-logic QF_BV)
(declare-fun a () (_ BitVec 4))   ; a comment (with a parenthesis
(declare-fun |x (y;| () (_ BitVec 4))
(push 1)
(assert (= (bvadd a a)
           #b0001))
(check-sat)
(pop 1)
(push 1)
(assert (= (bvadd a a) #b0010))
(check-sat)
(get-value (a))
(pop 1)
(assert (= (bvmul a #x3) #x7))
(assert (= |x (y;| a))
(check-sat)
(get-value (|x (y;|))
(exit)
"""


@pytest.mark.unit
def test_commands_split_at_top_level():
    cmds = list(commands(io.StringIO(DIALOGUE)))
    assert len(cmds) == 18 and cmds[-1] == "(exit)"
    assert cmds[2] == "(declare-fun a () (_ BitVec 4))"
    assert cmds[3] == "(declare-fun |x (y;| () (_ BitVec 4))"
    assert "".join(cmds[5].split()) == "(assert(=(bvaddaa)#b0001))"
    assert all(c.count("(") - c.count(")") == 0 for c in cmds if "|" not in c)


def _answers(program):
    out = subprocess.run(program, input=DIALOGUE, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return [line.strip() for line in out.stdout.splitlines() if line.strip()]


@pytest.mark.unit
def test_bitwuzla_program_answers_like_yices():
    bw = env.which("bitwuzla")
    assert bw is not None, "the bitwuzla package is pinned in requirements.txt: run make env"
    ours = _answers([bw, "--lang", "smt2"])
    assert ours[0] == "unsat" and ours[1] == "sat" and ours[3] == "sat"
    a = int(ours[2].split("#b")[1].strip(" )"), 2)
    assert (a + a) % 16 == 2
    assert ours[4].replace(" ", "") == "((|x(y;|#b1101))"      # 13
    yices = _answers([env.which("yices-smt2"), "--incremental"])
    assert [x for x in yices if x in ("sat", "unsat")] == [x for x in ours if x in ("sat", "unsat")]


@pytest.mark.unit
def test_bitwuzla_program_help_names_lang():
    """yosys-smtbmc calls the solver with `--lang smt2` only if `bitwuzla --help` mentions `--lang`."""
    out = subprocess.run([env.which("bitwuzla"), "--help"], capture_output=True, text=True, timeout=60)
    assert "--lang" in out.stdout
