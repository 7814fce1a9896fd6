"""The SoC's token rings over every channel (gateware/power/rings.py, docs/power_exchange.md "In the SoC"):
the power_topology option, its CSRs, and 2 channels x 2 dies with exchange nodes in the simulated SoC."""

import re

import pytest

from nandlab import env
from nandlab.csrmap import CSRMap
from nandlab.simulator import SimConsole, BridgeServer, prepare_run_dir, free_tcp_port

DIES, CHANNELS = 2, 2
NAND = dict(blocks=64, pages=32, power_topology="exchange")


def _regs(csv):
    return {line.split(",")[1] for line in csv.read_text().splitlines() if line.startswith("csr_register,")}


@pytest.mark.unit
def test_exchange_build_keeps_the_one_ring_names():
    """2 channels with exchange: the one-ring SoC's power_ring_* / power_monitor_* names, and the rings',
    the token sum's and the die peaks' registers; no packet protection (the exchange node forwards the
    paper's packet); the topology and the ring count are exported to the firmware."""
    from nandlab.soc.targets import sim
    out = env.BUILD_DIR / "test" / "sim_power_exchange"
    sim.generate_headers(out, dies=DIES, channels=CHANNELS, **NAND)
    regs = _regs(out / "csr.csv")
    assert {f"power_ring_{n}" for n in ("config", "table", "status", "node_sel", "node_state", "node_waited",
            "node_grants", "table_keep", "tokens", "cons_errors", "ring_sel", "ring_status", "ring_lent",
            "ring_borrowed")} <= regs, regs
    assert {f"power_monitor_{n}" for n in ("windows", "violations", "max", "pb", "die_sel", "die_peak", "die_oi",
            "die_clear")} <= regs, regs
    assert "power_ring_fault_ctl" not in regs
    constants = CSRMap.from_csv(out / "csr.csv").constants
    assert constants["nandlab_power_topology"] == "exchange" and int(constants["nandlab_power_rings"]) == 2


@pytest.mark.unit
def test_topology_option_checked_before_the_build():
    """Exchange with one channel, or an unknown topology, is refused by `nandlab sim` and the boards
    before anything is generated; a topology other than the default gets its own build directory."""
    from nandlab.errors import NandLabError
    from nandlab.soc.targets import sim, check_power_topology
    with pytest.raises(NandLabError, match="--power-topology exchange with --channels 1: power topology 'exchange' "
                                           "shares a budget between the rings of several channels"):
        check_power_topology("exchange", 1, option="--channels")
    with pytest.raises(ValueError, match="--power-topology ring: valid: single, per_channel, exchange"):
        sim.nand_options(power_topology="ring")
    assert sim.build_dir_name(DIES, CHANNELS, **NAND) == "sim2x2-64x32-exchange"
    assert sim.build_dir_name(DIES, CHANNELS, power_topology="per_channel") == "sim2x2"


@pytest.fixture(scope="module")
def soc(tmp_path_factory):
    """The simulated SoC of 2 channels x 2 dies with exchange nodes, booted, litex_server on its bridge."""
    from litex import RemoteClient
    from nandlab.soc.targets import sim
    build_dir = env.BUILD_DIR / sim.build_dir_name(DIES, CHANNELS, **NAND)
    gateware = sim.build_all(build_dir, dies=DIES, channels=CHANNELS, **NAND)
    tmp = tmp_path_factory.mktemp("soc_power")
    bridge = free_tcp_port()
    run_dir = prepare_run_dir(gateware, tmp / "run", bridge_port=bridge)
    with SimConsole(gateware, run_dir) as console:
        console.boot(timeout=120)
        with BridgeServer(bridge, log_path=tmp / "litex_server.log") as server:
            bus = RemoteClient(port=server.bind_port, csr_csv=str(build_dir / "csr.csv"))
            bus.open()
            try:
                yield console, bus
            finally:
                bus.close()


def _rings(out):
    """`power rings` -> (tokens, conservation errors, [(share, most in use, lent, borrowed)])."""
    m = re.search(r"rings: 2 \(exchange\), tokens (\d+), conservation errors (\d+)", out)
    assert m, out
    rings = [tuple(int(x) for x in r) for r in
             re.findall(r"ring \d: running, share (\d+), in use \d+, most in use (\d+), lent (\d+), borrowed (\d+)", out)]
    assert len(rings) == 2, out
    return int(m.group(1)), int(m.group(2)), rings


@pytest.mark.sim
@pytest.mark.slow
def test_exchange_shares_the_global_budget(soc):
    """KMTPM sub-atomic at TG 4 with programs through the FTL on both channels of 2 dies. At alpha 1
    (TT 15, home shares 8 and 7) a program's pre-charge needs all 15 tokens, more than a home share:
    refused (two rings each holding its share and waiting for more would wait for ever). At alpha 2
    (TT 30, home shares 15 and 15) the monitor, over all four dies, sees the dies of both channels overlap
    above one die's current and never more than the global budget, data transfers included (under the
    rings as the array phases are); the token sum is TT and never was anything else; a ring ran more tokens at once than its home share (a loan through the
    exchange, whose counters moved); the dies' peak registers show the program's pre-charge, and the
    adaptation step finds nothing to change in nominal dies."""
    from nandlab.control import PowerControl
    console, bus = soc
    out = console.command("power set kmtpm_sub tg 4 alpha 1", timeout=120)
    assert "error: the ring refused the configuration: a table RT above TT or above a ring's home share" in out, out
    out = console.command("power set kmtpm_sub tg 4 alpha 2", timeout=120)
    assert "power: kmtpm_sub, TG 4, alpha 2: TT = 30 tokens, budget 2 x I_max" in out, out
    tokens, cons, rings = _rings(console.command("power rings"))
    assert tokens == 30 and cons == 0 and [r[0] for r in rings] == [15, 15], rings
    console.command("power clear")
    console.command("power peaks clear")
    done = [bus.regs.nand_ctrl_completed.read(), bus.regs.nand_ctrl1_completed.read()]
    out = console.command("ftl format", timeout=900)
    assert "ftl formatted" in out, out
    out = console.command("ftl write 0 256 3", timeout=900)
    assert "ftl write: sectors 0..255" in out, out
    assert bus.regs.nand_ctrl_completed.read() > done[0] + 100 and bus.regs.nand_ctrl1_completed.read() > done[1] + 100
    power = PowerControl(bus)
    m = power.monitor()
    # The rings hold the dies' current within the budget, their data transfers included (each asks its die's
    # ring node for its tokens: gateware/power/xfer.py). Before transfers were under the ring: 23 windows
    # at 2 x I_max + 328 / 4096 (two pre-charges and a transfer's two bytes a cycle of BUS_CURRENT).
    assert m.windows > 1000 and m.pb == 2 * 4096 and 4096 < m.max <= 2 * 4096 and m.violations == 0, m
    tokens, cons, rings = _rings(console.command("power rings"))
    assert tokens == 30 and cons == 0, (tokens, cons)
    assert power.tokens() == (30, 0)
    assert [r["share"] for r in power.rings()] == [15, 15]
    assert max(most for _, most, _, _ in rings) > 15, rings          # a loan: a ring above its home share
    assert all(lent > 0 and borrowed > 0 for _, _, lent, borrowed in rings), rings
    # The dies' peaks (nominal dies): each die's largest current in a phase, the program's pre-charge
    # (P_A1, OI 0x11, I_max); the adaptation step changes nothing.
    peaks = power.die_peaks()
    assert all(3000 < cur <= 4096 and oi == 0x11 for cur, oi in peaks), peaks
    assert power.adapt(tg=4, alpha=2)[1] == []
