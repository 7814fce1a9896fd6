"""The CLI refuses bad input with one line naming the valid choices, never a traceback."""

import pytest

from helpers import nandlab


def _one_line_error(out):
    lines = [l for l in out.stderr.splitlines() if l.strip()]
    assert "Traceback" not in out.stderr
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("nandlab: error: ")
    return lines[0]


@pytest.mark.unit
def test_help_lists_every_command():
    out = nandlab("--help")
    assert out.returncode == 0
    for cmd in ("sim", "build", "load", "csr", "server", "bench"):
        assert f"    {cmd} " in out.stdout, cmd


@pytest.mark.unit
def test_build_help_lists_targets_and_board_options():
    out = nandlab("build", "--target", "arty", "--help")
    assert out.returncode == 0
    for target in ("sim", "arty", "colorlight_i5"):
        assert target in out.stdout
    assert "--variant" in out.stdout


@pytest.mark.unit
def test_unknown_target_names_valid_ones():
    out = nandlab("build", "--target", "de10nano")
    assert out.returncode == 2
    line = _one_line_error(out)
    assert "'de10nano'" in line and "sim, arty, colorlight_i5" in line


@pytest.mark.unit
def test_unknown_command_names_valid_ones():
    out = nandlab("frobnicate")
    assert out.returncode == 2
    line = _one_line_error(out)
    assert "'sim'" in line and "'build'" in line


@pytest.mark.unit
def test_unknown_option_is_one_line():
    out = nandlab("sim", "--turbo")
    assert out.returncode == 2
    assert "--turbo" in _one_line_error(out)


@pytest.mark.unit
def test_bad_board_option_value_names_choices():
    out = nandlab("build", "--target", "arty", "--variant", "a7-200")
    assert out.returncode == 2
    line = _one_line_error(out)
    assert "a7-35" in line and "a7-100" in line


@pytest.mark.unit
def test_load_sim_is_refused():
    out = nandlab("load", "--target", "sim")
    assert out.returncode == 2
    assert "arty, colorlight_i5" in _one_line_error(out)


@pytest.mark.unit
def test_build_without_target():
    out = nandlab("build")
    assert out.returncode == 2
    assert "--target" in _one_line_error(out)
