"""The simulated SoC without emulated dies (`bench sim`'s 0-die point): it builds, boots and says it has no ring."""

import pytest

from nandlab import env
from nandlab.simulator import SimConsole, prepare_run_dir, free_tcp_port

pytestmark = pytest.mark.sim


def test_soc_without_dies_builds_and_boots(tmp_path):
    """Without dies the SoC has no token ring, so the generated headers name no power topology: the
    firmware built against them must still compile (it did not since the ring topologies came in) and
    its power commands must refuse rather than read CSRs that are not there."""
    from nandlab.soc.targets import sim as simtarget
    build_dir = env.BUILD_DIR / simtarget.build_dir_name(dies=0)
    gateware = simtarget.build_all(build_dir, dies=0)
    csr = (build_dir / "csr.csv").read_text()
    assert "csr_base,power_ring," not in csr and "csr_base,nand_die0," not in csr    # the SoC under test has neither
    run_dir = prepare_run_dir(gateware, tmp_path / "run", bridge_port=free_tcp_port())
    with SimConsole(gateware, run_dir) as console:
        console.boot(timeout=120)
        assert "no power ring" in console.command("power rings", timeout=60)
        assert "sys_clk: 100000000 Hz" in console.command("version", timeout=60)
