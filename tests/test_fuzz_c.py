"""Coverage-guided fuzzing (libFuzzer, clang) of the firmware's C on the host (issue 19): the shell with
its commands over a model of the HAL, the FTL's API on the host NAND model with a shadow of every
sector, and the trace replay's ring records and command on that FTL (sw/firmware/host, `nandlab fuzz`). `make test` runs a short budget per target; the long run
(marker slow, `make test-slow`) tries 1 000 000 inputs per target. No input may crash a target.

FTL bugs the fuzzer finds are guarded in fuzz_ftl.c so that fuzzing goes past them; their
reproducers (sw/firmware/host/seeds/ftl-bugs) must still crash the unguarded build until the FTL is
fixed, when test_known_ftl_bugs_still_reproduce fails to say that a guard can go. The five found so far
are fixed: their reproducers are regular seeds (seeds/ftl/bug*), run by test_fixed_ftl_bugs_stay_fixed.
"""

import pytest

from nandlab import env, fuzz
from nandlab.errors import MissingToolError

# The FTL target runs ~100 inputs a second (the replay ~400, the shell ~2000): 4 000 already reach its
# full short-run coverage (1020 edges at seed 1, session 21; 8 000 gave about 1000).
SHORT_RUNS = {"shell": 20_000, "ftl": 4_000, "replay": 20_000}
LONG_RUNS = 1_000_000
# Coverage a short run reaches from the seed corpus alone (edges): far below means the target no
# longer reaches the commands or the FTL's request paths.
MIN_EDGES = {"shell": 450, "ftl": 500, "replay": 550}
BUGS = fuzz.HOST_DIR / "seeds" / "ftl-bugs"
FIXED = sorted((fuzz.HOST_DIR / "seeds" / "ftl").glob("bug*"))


def open_bugs():
    return sorted(p for p in BUGS.glob("bug*") if p.is_file()) if BUGS.is_dir() else []


def _fuzz(target, runs):
    res = fuzz.run(target, runs=runs, seed=1, log=env.BUILD_DIR / "fuzz" / f"{target}-test.log")
    assert res["crashes"] == 0, f"{target}: {res['crash']}\ninput: {res['crash_file']}"
    assert res["inputs"] >= runs
    assert res["edges"] >= MIN_EDGES[target], res
    return res


@pytest.mark.unit
@pytest.mark.parametrize("target", fuzz.TARGETS)
def test_fuzz_short(target):
    _fuzz(target, SHORT_RUNS[target])


@pytest.mark.slow
@pytest.mark.parametrize("target", fuzz.TARGETS)
def test_fuzz_million_inputs(target):
    res = _fuzz(target, LONG_RUNS)
    print(fuzz.summary(res))


def guards():
    """The KNOWN_BUG guards used in fuzz_ftl.c (its definitions aside)."""
    src = (fuzz.HOST_DIR / "fuzz_ftl.c").read_text()
    return [line.strip() for line in src.splitlines() if "KNOWN_BUG(" in line and "#define" not in line]


@pytest.mark.unit
def test_open_ftl_bugs_have_guards_and_reproducers(tmp_path):
    """Every guard in fuzz_ftl.c has a reproducer in seeds/ftl-bugs and the other way round; each
    reproducer passes the guarded target and still crashes the unguarded one (once it does not, the
    bug is fixed: its guard goes and its reproducer moves to seeds/ftl)."""
    bugs, used = open_bugs(), guards()
    assert bool(bugs) == bool(used), f"reproducers {[b.name for b in bugs]} but guards {used}"
    if not bugs:
        return
    res = fuzz.run("ftl", files=bugs)
    assert res["crashes"] == 0, res["crash"]
    exe = fuzz.build(["ftl"], out=tmp_path, extra_make=["FTL_KNOWN=-DFUZZ_FTL_UNGUARDED"])["ftl"]
    for bug in bugs:
        res = fuzz.run("ftl", files=[bug], exe=exe, out=tmp_path)
        assert res["crashes"], f"{bug.name} no longer crashes the FTL: the bug is fixed, remove its guard in fuzz_ftl.c"


@pytest.mark.unit
def test_fixed_ftl_bugs_stay_fixed(tmp_path):
    """The reproducers of the fixed FTL bugs (1 planes = 0 divided by zero; 2 data and trims written before
    a format came back; 3 ftl_init accepted geometries ftl_format refused; 4 trims made a device without
    over-provisioning refuse writes within its capacity; 5 an acknowledged write lost at a remount after
    several formats) pass the target built without any guard."""
    assert len(FIXED) >= 7
    exe = fuzz.build(["ftl"], out=tmp_path, extra_make=["FTL_KNOWN=-DFUZZ_FTL_UNGUARDED"])["ftl"]
    res = fuzz.run("ftl", files=FIXED, exe=exe, out=tmp_path)
    assert res["crashes"] == 0, res["crash"]


@pytest.mark.unit
def test_missing_clang_is_named_with_its_packages(monkeypatch):
    monkeypatch.setattr(env, "which", lambda name: None)
    with pytest.raises(MissingToolError, match="apt-get install clang-14 libclang-rt-14-dev"):
        fuzz.build(["shell"])



@pytest.mark.unit
def test_fuzz_command_prints_one_json_object():
    import json
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-m", "nandlab.cli", "fuzz", "--target", "shell", "--runs", "500", "--seed", "3",
                        "--json"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["crashes"] == 0 and [t["target"] for t in d["targets"]] == ["shell"] and d["targets"][0]["inputs"] >= 500


@pytest.mark.unit
def test_fuzz_jobs_share_the_runs_and_report_progress(tmp_path, monkeypatch):
    """--jobs 2: two libFuzzer processes with seeds 5 and 6, each half the runs, one log each; the result
    adds their inputs; progress lines come while they run."""
    monkeypatch.setattr(fuzz, "PROGRESS_S", 0)
    lines = []
    res = fuzz.run("replay", runs=3001, seed=5, out=tmp_path, log=tmp_path / "r.log", jobs=2, progress=lines.append)
    assert res["crashes"] == 0 and res["jobs"] == 2 and res["inputs"] >= 3001, res
    assert "-seed=5" in res["command"] and "-seed=6" in res["command"] and res["command"].count("-runs=1501") == 2
    # each job stops at its share; a job that reloads the corpus its sibling grew counts those inputs too
    # ("#1518 RELOAD"), so it can end a little past 1501
    import re
    done = [re.findall(r"^Done (\d+) runs", (tmp_path / f"r.{i}.log").read_text(), re.M) for i in (0, 1)]
    assert all(len(d) == 1 and 1501 <= int(d[0]) < 3001 for d in done), done
    assert lines and all(line.startswith("fuzz replay: ") and "inputs of 3002" in line for line in lines)


@pytest.mark.unit
@pytest.mark.parametrize("args, message", [(["--jobs", "0"], "--jobs 0: takes 1..64"), (["--runs", "0"], "--runs 0"),
                                           (["--seed", "-1"], "--seed -1")])
def test_fuzz_arguments_refused_before_building(args, message):
    from nandlab.cli import check_command_line
    from nandlab.errors import NandLabError
    with pytest.raises(NandLabError, match=message):
        check_command_line(["fuzz", "--target", "replay", *args])
