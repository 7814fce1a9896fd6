"""The CLI refuses bad input with one line naming the valid choices, never a traceback."""

import subprocess
import sys

import pytest

from nandlab.testing import run_cli as nandlab


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


@pytest.mark.unit
def test_load_without_bitstream_says_how_to_get_one(tmp_path):
    out = nandlab("load", "--target", "arty", "--bitstream", str(tmp_path / "none.bit"))
    assert out.returncode == 2
    assert "does not exist" in _one_line_error(out)


@pytest.mark.unit
def test_load_with_no_board_attached(tmp_path):
    # No Arty on this machine: OpenOCD finds no cable; we say so, exit non-zero, no traceback.
    bit = tmp_path / "fake.bit"
    bit.write_bytes(b"\x00" * 64)
    out = nandlab("load", "--target", "arty", "--bitstream", str(bit))
    assert out.returncode == 3
    err = [l for l in out.stderr.splitlines() if l.startswith("nandlab: error")]
    assert len(err) == 1 and "board attached" in err[0]
    assert "Traceback" not in out.stderr


@pytest.mark.unit
def test_load_names_missing_programmer(tmp_path):
    import os
    import sys
    from pathlib import Path
    bit = tmp_path / "fake.bit"
    bit.write_bytes(b"\x00" * 64)
    # A PATH with only the virtualenv: openFPGALoader is certainly absent.
    path_env = {**os.environ, "PATH": str(Path(sys.executable).parent)}
    out = nandlab("load", "--target", "colorlight_i5", "--bitstream", str(bit), env=path_env)
    assert out.returncode == 3
    assert "openFPGALoader not found" in _one_line_error(out) and "apt-get install" in out.stderr


@pytest.mark.unit
def test_commands_that_build_nothing_write_nothing(tmp_path):
    """Help, listings and refused options write no build directory (no tool wrappers either): only a
    command that builds (or runs a tool) creates it."""
    import os
    build = tmp_path / "build"
    environ = {**os.environ, "NANDLAB_BUILD_DIR": str(build)}
    for args in (["--help"], ["csr", "list", "--help"], ["plot", "--help"], ["bench", "interface", "--help"],
                 ["nand", "parts"], ["csr", "list"], ["experiment", "power", "--tg", "7"]):
        out = nandlab(*args, env=environ)
        assert "Traceback" not in out.stderr, (args, out.stderr)
        assert not build.exists(), f"'nandlab {' '.join(args)}' wrote {sorted(map(str, build.rglob('*')))}"
    # A tool flow asks for its tool: the YoWASP wrappers appear then.
    code = ("from nandlab import env\nenv.setup()\nassert not env.TOOLS_BIN.exists()\n"
            "assert env.which('yosys') == str(env.TOOLS_BIN / 'yosys')\n")
    out = subprocess.run([sys.executable, "-c", code], env=environ, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert (build / "tools" / "bin" / "sby").exists()


@pytest.mark.unit
@pytest.mark.parametrize("args, message", [
    (["--tg", "7"], "TG = 7 is out of range"),
    (["--alpha", "9"], "alpha = 9 is out of range"),
])
def test_sim_capture_refuses_bad_power_options_before_building(args, message, tmp_path):
    import os
    build = tmp_path / "build"
    out = nandlab("sim", "--workload", "10", *args, env={**os.environ, "NANDLAB_BUILD_DIR": str(build)})
    assert out.returncode != 0
    assert message in _one_line_error(out)
    assert not build.exists()


@pytest.mark.unit
def test_bad_sim_pgo_setting_refused_before_building(tmp_path):
    import os
    from nandlab.soc.targets.sim import sim_pgo
    build = tmp_path / "build"
    out = nandlab("sim", "--workload", "10", env={**os.environ, "NANDLAB_BUILD_DIR": str(build), "NANDLAB_SIM_PGO": "maybe"})
    assert out.returncode != 0 and "NANDLAB_SIM_PGO='maybe'" in _one_line_error(out)
    assert not build.exists()
    for value, on in (("", False), ("0", False), ("off", False), ("1", True), ("yes", True), ("ON", True)):
        os.environ["NANDLAB_SIM_PGO"] = value
        try:
            assert sim_pgo() is on, value
        finally:
            del os.environ["NANDLAB_SIM_PGO"]
    assert sim_pgo() is False                           # the default


@pytest.mark.unit
@pytest.mark.parametrize("args, message", [
    (("--dies", "20"), "die counts from 0 to 16"),
    (("--dies", "4,x"), "separated by commas"),
    (("--seconds", "0"), "positive number of wall seconds"),
])
def test_bench_sim_arguments_checked_before_any_build(args, message):
    out = nandlab("bench", "sim", *args)
    assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr
    assert "generating" not in out.stderr


@pytest.mark.unit
@pytest.mark.parametrize("page, code", [("MT29F8G08ABBCA3W.hex", 0), ("MT29F1G08ABBDA3W.hex", 2)])
def test_nand_info_takes_options_before_the_file(page, code):
    """`nand info --strict FILE` is `nand info FILE --strict` (it was refused: unrecognized arguments)."""
    from nandlab import env
    path = str(env.REPO / "nand_model" / "data" / page)
    before = nandlab("nand", "info", "--strict", path)
    after = nandlab("nand", "info", path, "--strict")
    assert "unrecognized" not in before.stderr
    assert before.returncode == code
    assert (before.returncode, before.stdout, before.stderr) == (after.returncode, after.stdout, after.stderr)


@pytest.mark.unit
def test_nand_takes_no_more_words_than_it_has_positionals():
    out = nandlab("nand", "info", "--strict", "a", "b", "c")
    assert out.returncode == 2
    assert "unrecognized arguments: c" in _one_line_error(out)
