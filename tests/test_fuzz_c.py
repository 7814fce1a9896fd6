"""Coverage-guided fuzzing (libFuzzer, clang) of the firmware's C on the host (issue 19): the shell with
its commands over a model of the HAL, and the FTL's API on the host NAND model with a shadow of every
sector (sw/firmware/host, `nandlab fuzz`). `make test` runs a short budget per target; the long run
(marker slow, `make test-slow`) tries 1 000 000 inputs per target. No input may crash a target.

The FTL bugs the fuzzer found are guarded in fuzz_ftl.c so that fuzzing goes past them; their
reproducers (sw/firmware/host/seeds/ftl-bugs) must still crash the unguarded build until the FTL is
fixed, when test_known_ftl_bugs_still_reproduce fails to say that a guard can go.
"""

import pytest

from nandlab import env, fuzz
from nandlab.errors import MissingToolError

SHORT_RUNS = 20_000
LONG_RUNS = 1_000_000
# Coverage a short run reaches from the seed corpus alone (edges): far below means the target no
# longer reaches the commands or the FTL's request paths.
MIN_EDGES = {"shell": 450, "ftl": 500}
BUGS = fuzz.HOST_DIR / "seeds" / "ftl-bugs"


def _fuzz(target, runs):
    res = fuzz.run(target, runs=runs, seed=1, log=env.BUILD_DIR / "fuzz" / f"{target}-test.log")
    assert res["crashes"] == 0, f"{target}: {res['crash']}\ninput: {res['crash_file']}"
    assert res["inputs"] >= runs
    assert res["edges"] >= MIN_EDGES[target], res
    return res


@pytest.mark.unit
@pytest.mark.parametrize("target", fuzz.TARGETS)
def test_fuzz_short(target):
    _fuzz(target, SHORT_RUNS)


@pytest.mark.slow
@pytest.mark.parametrize("target", fuzz.TARGETS)
def test_fuzz_million_inputs(target):
    res = _fuzz(target, LONG_RUNS)
    print(fuzz.summary(res))


@pytest.mark.unit
def test_reproducers_of_known_ftl_bugs_pass_the_guarded_target():
    res = fuzz.run("ftl", files=sorted(BUGS.iterdir()))
    assert res["crashes"] == 0, res["crash"]


@pytest.mark.unit
def test_known_ftl_bugs_still_reproduce(tmp_path):
    exe = fuzz.build(["ftl"], out=tmp_path, extra_make=["FTL_KNOWN=-DFUZZ_FTL_UNGUARDED"])["ftl"]
    for bug in sorted(BUGS.iterdir()):
        res = fuzz.run("ftl", files=[bug], exe=exe, out=tmp_path)
        assert res["crashes"], f"{bug.name} no longer crashes the FTL: the bug is fixed, remove its guard in fuzz_ftl.c"


@pytest.mark.unit
def test_missing_clang_is_named_with_its_packages(monkeypatch):
    monkeypatch.setattr(env, "which", lambda name: None)
    with pytest.raises(MissingToolError, match="apt-get install clang-14 libclang-rt-14-dev"):
        fuzz.build(["shell"])


OPEN = fuzz.HOST_DIR / "seeds" / "ftl-open"


@pytest.mark.unit
@pytest.mark.xfail(strict=True, reason="FTL bug (open, found by the fuzzer in session 10): after several formats "
                   "and remounts, an acknowledged write is not found by the next mount (sector 2 is not version 4)")
def test_open_ftl_bugs_are_fixed():
    """Reproducers of FTL bugs found but not yet fixed (no guard in the harness): each fails the
    target today; the xfail turns into a failure once they all pass, then move them to the corpus."""
    res = fuzz.run("ftl", files=sorted(OPEN.iterdir()))
    assert res["crashes"] == 0, res["crash"]
