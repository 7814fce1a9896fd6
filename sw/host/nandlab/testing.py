"""Test helpers shared by every core's tests: Migen/LiteX module -> Verilog -> cocotb 2.x on Verilator.

Usage (in tests/):

    run_cocotb(dut, ios=[...], name="timebase", test_module="timebase_tb", build_dir=tmp_path)

`dut` is any Migen module; `ios` the signals that become top-level ports (a `sys_clk`/`sys_rst`
pair is added for the `sys` clock domain). The cocotb test module lives in tests/tb/.
"""

import sys
from pathlib import Path

from migen.fhdl.verilog import convert

from nandlab import env
# The tops' base lives with the gateware (gateware imports nothing host-side); tests take it from here.
from nandlab.gateware.common.top import NandLabPortedTop as PortedTop  # noqa: F401

TB_DIR = env.REPO / "tests" / "tb"


def to_verilog(dut, ios, name, out_dir):
    """Write `dut` as Verilog module `name` in `out_dir`; returns the file path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.v"
    output = convert(dut, ios=set(ios), name=name)
    # (not output.write(): it writes the memory files into the process's working directory as well)
    path.write_text(output.main_source)
    # Memory contents ($readmemh files) go beside the Verilog, where the simulator runs.
    for filename, content in output.data_files.items():
        (out_dir / filename).write_text(content)
    return path


def run_cocotb(dut, ios, name, test_module, build_dir, extra_env=None, waves=False, testcase=None,
               build_args=()):
    """Convert `dut`, build it with Verilator and run the cocotb tests of `test_module` (a name or a list
    of names). `extra_env` a list of environments: the tests run once in each, on the one build.

    Raises AssertionError when a test fails or when no test ran at all; returns the tests run.
    """
    env.setup()
    from cocotb_tools.runner import get_runner
    from cocotb_tools.check_results import get_results

    # The runner hands sys.path to the simulator's Python as PYTHONPATH.
    if str(TB_DIR) not in sys.path:
        sys.path.insert(0, str(TB_DIR))
    build_dir = Path(build_dir)
    verilog = to_verilog(dut, ios, name, build_dir)
    runner = get_runner("verilator")
    runner.build(
        sources      = [verilog],
        hdl_toplevel = name,
        build_dir    = build_dir,
        build_args   = ["-Wno-fatal", "-Wno-WIDTHEXPAND", "-Wno-WIDTHTRUNC", "-Wno-CASEINCOMPLETE", *build_args],
        waves        = waves,
        always       = True,
    )
    envs = extra_env if isinstance(extra_env, (list, tuple)) else [extra_env or {}]
    total = 0
    for i, run_env in enumerate(envs):
        if len(envs) > 1:
            run_env = {**run_env, "NANDLAB_TB_RUN": str(i)}     # (tests/tb/bus_trace.py names its files by it)
        results = runner.test(
            hdl_toplevel = name,
            test_module  = test_module,
            build_dir    = build_dir,
            test_dir     = build_dir,
            extra_env    = run_env,
            waves        = waves,
            testcase     = testcase,
        )
        num_tests, num_failed = get_results(results)
        assert num_tests > 0, f"no cocotb test ran from {test_module} ({run_env})"
        assert num_failed == 0, f"{num_failed} of {num_tests} cocotb tests failed in {test_module} ({run_env}; see {results})"
        total += num_tests
    return total


def run_cli(*args, timeout=1800, **kw):
    """Run `nandlab ARGS` as a user would (a new process); returns the CompletedProcess (text)."""
    import subprocess
    return subprocess.run([sys.executable, "-m", "nandlab.cli", *args], capture_output=True, text=True,
        timeout=timeout, cwd=env.REPO, **kw)


# An open-flow ECP5 build (yosys, nextpnr via YoWASP) on 2 shared cores: 10-20 min idle, past 30 min loaded.
ECP5_BUILD_TIMEOUT = 5400


def build_target(name, *extra, timeout=1800):
    """`nandlab build --target NAME`; the CLI serialises concurrent builds of one target."""
    return run_cli("build", "--target", name, *extra, timeout=timeout)


def die_test_config():
    """The die the die tests build and check (shared by pytest and the cocotb module): the
    default part's 2048 + 64 byte pages on 2 planes, MPNFM-capable (512 + 16 on plane 1), 8 blocks
    of 4 pages, SDW-NFM subplane registers (one block per subplane), a factory bad block (5),
    array times divided by 1000 so a test moves through many operations."""
    from nandlab.nand_model.parts import NandLabSLC
    from nandlab.nand_model.reference import DieConfig
    part = NandLabSLC().scaled(blocks_per_lun=8, pages_per_block=4)
    return DieConfig(part, time_scale=1000, bad_blocks=(5,), with_sdw=True)
