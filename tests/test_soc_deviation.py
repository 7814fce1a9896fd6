"""Issue 18 b in the SoC: dies whose current deviates from the waveform the token tables are compiled
from (`nand_deviation`, `nandlab sim --nand-deviation`), seen by the per-die peak registers and corrected
by the firmware's `power adapt` (sw/firmware/power_adapt.c), against the host's rule
(nandlab.deviation, the power harness's)."""

import re

import pytest

from nandlab import env
from nandlab.simulator import SimConsole, prepare_run_dir, free_tcp_port

DIES = 4
NAND = dict(blocks=64, pages=32, deviation="60@1")
WORKLOAD_US = 20000
MAX_STEPS = 30


@pytest.mark.unit
def test_deviated_die_plays_its_own_waveform():
    """The deviated die's sequencer plays every phase at 160 % of the nominal current; the other die and
    the token tables stay nominal; the build gets a directory of its own."""
    from nandlab.soc.targets import sim
    from nandlab.nand_model.current import ACC_FRAC
    soc = sim.NandLabSimSoC(nand_dies=DIES, with_bridge=False, **{f"nand_{k}": v for k, v in
                                                                  sim.nand_options(**NAND).items()})
    soc.finalize()
    dies = [soc.nand_die0, soc.nand_die1]
    assert [d.config.current_deviation for d in dies] == [(0, 0), (60, 0)]
    top = lambda die: max(i0 >> ACC_FRAC for ph in die.seq.tables.ops["program_lsb"][0] if ph.oi == 0x11
                          for _, i0, _ in ph.segments)
    assert top(dies[0]) == 4096 and top(dies[1]) == 4096 * 160 // 100, (top(dies[0]), top(dies[1]))
    assert dies[0].seq.tables is dies[0].tables
    assert sim.build_dir_name(DIES, **NAND) == "sim-64x32-dev60at1"


@pytest.mark.unit
def test_deviation_option_checked_before_the_build():
    """A deviation that deviates nothing is refused by the sim target's options (the CLI's and the
    boards' refusals before any build are in tests/test_bad_input.py)."""
    from nandlab.soc.targets import sim
    with pytest.raises(ValueError, match=r"--nand-deviation '0': deviates nothing"):
        sim.nand_options(deviation="0")


@pytest.mark.unit
def test_firmware_adapt_table_is_the_host_rule(tmp_path):
    """The generated table `power adapt` runs on: each array phase's nominal peak and the phases a raise
    of it raises, rebuilt from the C rows, equal nandlab.deviation's (the harness's and the host's
    PowerControl.adapt rule)."""
    from nandlab import deviation, tokens
    from nandlab.firmware import adapt_table
    from nandlab.nand_model.current import PhaseTables
    from nandlab.nand_model.parts import get_part
    part = get_part("NL-SLC-2K")
    text = "\n".join(adapt_table(part, 100e6, 1))
    rows = [(int(a, 16), int(b), int(c)) for a, b, c in re.findall(r"\{0x([0-9a-f]+), (\d+), (\d+)\}", text)]
    table = tokens.compile_tables(part, tg=4, alpha=2)
    spec = deviation.spec_part(PhaseTables(part, 100e6, 1), table, adaptive=True)
    peaks = deviation.nominal_peaks(PhaseTables(part, 100e6, 1))
    assert {oi: peak for oi, _, peak in rows} == peaks
    for oi, prefix in ((p[0], p[1:]) for p in spec["prefix"]):
        chain, k = [], next(i for i, r in enumerate(rows) if r[0] == oi)
        while k != 0xff:
            chain.insert(0, rows[k][0])
            k = rows[k][1]
        assert chain == prefix, (hex(oi), chain, prefix)
    assert f"#define NANDLAB_ADAPT_PHASES {len(rows)}" in text and len(rows) == len(spec["limit"])


class HostRule:
    """The host's adaptation rule (nandlab.deviation.spec_part, as PowerControl.adapt applies it) with the
    RTs every node holds, from the compiled tables: the writes it makes for a die's (current, OI)."""
    def __init__(self, tg, alpha, dies, part="NL-SLC-2K"):
        from nandlab import deviation, tokens
        from nandlab.nand_model.current import PhaseTables
        from nandlab.nand_model.parts import get_part
        table = tokens.compile_tables(get_part(part), tg=tg, alpha=alpha)
        spec = deviation.spec_part(PhaseTables(get_part(part), 100e6, 1), table, adaptive=True)
        self.limit, self.den, self.tt = dict(map(tuple, spec["limit"])), spec["den"], table.tt
        self.prefix = {p[0]: p[1:] for p in spec["prefix"]}
        self.rts = {d: dict(table.rt) for d in range(dies)}

    def step(self, die, current, oi):
        rts = self.rts[die]
        if current <= max(self.limit[oi], rts[oi] * 4096 // self.den):
            return []
        need = min(self.tt, -(-current * self.den // 4096))
        out = [(die, p, rts[p], need) for p in self.prefix[oi] if rts[p] < need]
        rts.update({p: need for _, p, _, _ in out})
        return out


def _monitor(out):
    m = re.search(r"monitor: windows (\d+), violations (\d+), max [\d.]+ x I_max \((\d+)/4096\)", out)
    assert m, out
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


@pytest.fixture(scope="module")
def console(tmp_path_factory):
    """The simulated SoC of 4 dies, die 1 drawing 60 % more current than its tables are compiled for."""
    from nandlab.soc.targets import sim
    build_dir = env.BUILD_DIR / sim.build_dir_name(DIES, **NAND)
    gateware = sim.build_all(build_dir, dies=DIES, **NAND)
    run_dir = prepare_run_dir(gateware, tmp_path_factory.mktemp("soc_deviation") / "run",
                              bridge_port=free_tcp_port())
    with SimConsole(gateware, run_dir) as c:
        c.boot(timeout=120)
        yield c


@pytest.mark.sim
@pytest.mark.slow
def test_power_adapt_follows_the_deviated_die(console):
    """KMTPM sub-atomic, TG 4, alpha 2 (TT 30; budget 2 x I_max), the dies' mixed workload (erases,
    programs, reads overlapping on all 4). With the compiled tables die 1 (+60 %) draws 1.6 x I_max in
    its pre-charge, and beside another die's phases the monitor sees the budget exceeded (nominal dies:
    never, at most 1.922 x I_max). Adaptation steps, a workload between them, until one finds nothing:
    each flags die 1 only (the nominal dies never draw more than their RTs pay for), at its worst
    phase first (the pre-charge, RT 15 -> 24), and writes exactly what the host's rule computes from
    the same current and OI. The same workload then stays within the budget."""
    c = console
    out = c.command("power set kmtpm_sub tg 4 alpha 2", timeout=120)
    assert "TT = 30 tokens, budget 2 x I_max" in out, out
    assert "power adapt: 0 die(s) above their tables, 0 table write(s)" in c.command("power adapt")
    c.command("power clear")
    c.command("power peaks clear")
    c.command(f"nand workload {WORKLOAD_US} 30", timeout=900)
    _, v_static, top_static = _monitor(c.command("power"))
    # (how often depends on the CPU's timing of the bit-bang workload: 477 and 179 windows in two firmware
    # layouts; nominal dies: 0, at most 1.922 x I_max)
    assert v_static > 50 and top_static > 2 * 4096, (v_static, top_static)
    rule, steps = HostRule(tg=4, alpha=2, dies=DIES), []
    for _ in range(MAX_STEPS):
        out = c.command("power adapt")
        if "power adapt: 0 die(s) above their tables, 0 table write(s)" in out:
            break
        seen = [(int(d), int(cur), int(oi, 16)) for d, cur, oi in
                re.findall(r"die (\d+): (\d+) / 4096 x I_max in OI 0x([0-9a-f]+), its table covers", out)]
        writes = [(int(d), int(oi, 16), int(a), int(b)) for d, oi, a, b in
                  re.findall(r"die (\d+): OI 0x([0-9a-f]+) RT (\d+) -> (\d+)", out)]
        assert [d for d, _, _ in seen] == [1], out                 # die 1 alone, once a step
        assert writes == [w for s in seen for w in rule.step(*s)] and writes, out
        steps.append(writes)
        c.command(f"nand workload {WORKLOAD_US // 2} 30", timeout=900)
    assert steps[0] == [(1, 0x11, 15, 24)], steps               # ceil(1.6 x 15): the pre-charge first
    c.command("power clear")
    c.command(f"nand workload {WORKLOAD_US} 30", timeout=900)
    _, v_adapted, top_adapted = _monitor(c.command("power"))
    print(f"deviation 60@1, 4 dies: static {v_static} violations, max {top_static}/4096; after {len(steps)} steps "
          f"{steps}: {v_adapted} violations, max {top_adapted}/4096")
    assert len(steps) < MAX_STEPS, steps
    assert v_adapted == 0 and top_adapted <= 2 * 4096, (v_static, v_adapted, top_static, top_adapted)
