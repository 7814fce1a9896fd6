"""Token-ring fault injection (issue 19): lost, duplicated and corrupted packets between nodes are
detected, the ring recovers with TT tokens and one key, and the budget holds in every cycle
(gateware/power/faultbench.py, nandlab.ringfaults)."""

import pytest

from nandlab import ringfaults


def _assert_clean(s):
    assert ringfaults.check(s) == [], s
    assert all(v > 0 for v in s["injected_by_kind"].values()), s["injected_by_kind"]
    assert s["operations_done"] > 10 * s["injected"]          # the dies kept working
    assert s["max_summed_rt"] > 15                             # dies did run together


@pytest.mark.cocotb
def test_ring_faults_10k(tmp_path):
    """10,000 faults (2,500 per policy: PPM, MTPM, KMTPM atomic and sub-atomic; drop, duplicate, flip
    drawn evenly) on a 4-node ring at TT = 30 (half the dies' summed peak): every one detected (flips
    by the parity, duplicates by the sequence bit, drops by the audit) and recovered from; in every
    cycle the summed RTs <= TT, never more than TT tokens or one key; exactly TT and one key while
    running outside a fault's episode. About 6 M cycles, 40 s with the build."""
    s = ringfaults.run(10_000, seed=19, build_dir=tmp_path)
    _assert_clean(s)
    assert s["injected"] == 10_000
    # What finds what (documented in gateware/power/ring.py).
    assert s["detected_by_check"] == {"parity": s["injected_by_kind"]["flip"], "seq": s["injected_by_kind"]["dup"],
                                      "audit": s["injected_by_kind"]["drop"]}


@pytest.mark.cocotb
@pytest.mark.slow
def test_ring_faults_100k(tmp_path):
    s = ringfaults.run(100_000, seed=1919, build_dir=tmp_path)
    _assert_clean(s)
    assert s["injected"] == 100_000


@pytest.mark.cocotb
def test_ring_faults_unprotected_are_caught_by_the_checks(tmp_path):
    """Negative control: the same duplicates on the paper's packets (no sequence or parity bit) go
    unnoticed, the ring never recovers, and the bench's checks see tokens and keys multiply and the
    budget broken: the checks of the tests above can fail."""
    s = ringfaults.run(20, seed=3, build_dir=tmp_path, policies=["kmtpm_sub"], kinds=0b010, protect=False)
    assert s["detected"] == 0 and s["recoveries"] == 0
    assert s["token_or_key_excess_cycles"] > 0
    assert s["budget_violation_cycles"] > 0 and s["max_summed_rt"] > s["tt"]
    assert ringfaults.check(s) != []


def _read(v):
    """The value of a signal, or of a (nested) list of them, in Migen's simulator."""
    if isinstance(v, list):
        vals = []
        for x in v:
            vals.append((yield from _read(x)))
        return vals
    return (yield v)


def _twin_benches(policy, cycles, seed, tx_ahead=True):
    """Two fault benches side by side in Migen's simulator, the same seed and configuration (protected
    packets, drop / duplicate / flip injected), one with the paper's sender (the packet bit multiplexed from
    the send registers) and one with `tx_ahead` (the SoC's: the bit from a register loaded a cycle early).
    Counts the cycles in which any node differs in what it holds, grants or sends (its tx_data compared
    while tx_valid), in gateware (a comparator per node, a counter): the simulator only clocks it."""
    from functools import reduce
    from operator import or_
    from migen import Module, Signal, If, run_simulation
    from nandlab.gateware.power.common import POLICIES
    from nandlab.gateware.power.faultbench import RingFaultBench

    obs = ("tx_valid", "ht", "ut", "key", "tx_tokens", "tx_key", "grant", "oe", "in_atomic",
           "rx_bad_parity", "rx_bad_seq")

    class Top(Module):
        def __init__(self):
            self.benches = a, b = [RingFaultBench(4), RingFaultBench(4, tx_ahead=tx_ahead)]
            self.submodules += a, b
            self.differ, self.sent = Signal(32), Signal(32)
            diff = reduce(or_, [(getattr(p, s) != getattr(q, s)) | (p.tx_valid & (p.tx_data != q.tx_data))
                                for p, q in zip(a.ring.nodes, b.ring.nodes) for s in obs])
            valid = reduce(or_, [p.tx_valid for p in a.ring.nodes])
            self.sync += [If(diff, self.differ.eq(self.differ + 1)), If(valid, self.sent.eq(self.sent + 1))]

    top = Top()
    out = {}

    def gen():
        for b in top.benches:
            r = b.ring
            yield from (sig.eq(v) for sig, v in ((b.target, 10_000), (b.kinds, 7), (b.seed, seed), (b.load, 1),
                        (r.req_mode, POLICIES.index(policy)), (r.req_tg, 4), (r.req_alpha, ringfaults.ALPHA),
                        (r.req_protect, 1), (r.apply, 1)))
        yield
        for b in top.benches:
            yield b.load.eq(0)
            yield b.ring.apply.eq(0)
        for _ in range(60):
            yield
        for b in top.benches:
            yield b.go.eq(1)
        for _ in range(cycles):
            yield
        a, b = top.benches
        sigs = dict(differ=top.differ, sent=top.sent, running=a.ring.running, protect=a.ring.protect,
                    ops=[a.ops_done, b.ops_done], faults=[a.faults, b.faults], injected=a.ring.injected,
                    detected=[a.ring.detected, b.ring.detected])
        for name, v in sigs.items():
            out[name] = yield from _read(v)

    run_simulation(top, gen())
    return out


@pytest.mark.unit
@pytest.mark.parametrize("policy", [pytest.param(p, marks=[pytest.mark.slow] if p != "kmtpm_sub" else [])
                                    for p in ringfaults.POLICIES])
def test_registered_sender_is_cycle_identical(policy):
    """The SoC's ring nodes send each packet bit from a register loaded a cycle early (`tx_ahead`,
    gateware/power/ringpacket.py, for board timing): every node holds, grants and sends the same in every
    cycle as with the paper's sender, through injected faults and their recoveries (the protected
    packets' sequence and parity bits come from the same register). KMTPM sub-atomic in make test (6000
    cycles, about 3 CPU-minutes of Migen simulation), the other policies in make test-slow."""
    s = _twin_benches(policy, 6_000, seed=43)
    assert s["running"] and s["protect"], s
    assert s["differ"] == 0, s
    assert s["sent"] > 4_000, s                          # packets moved: the comparison saw real bits
    assert s["faults"][0] == s["faults"][1] >= 8, s      # faults were injected and recovered from
    assert all(n > 0 for n in s["injected"]), s          # drops, duplicates and flips
    assert s["detected"][0] == s["detected"][1] and s["ops"][0] == s["ops"][1] > 100, s


@pytest.mark.unit
@pytest.mark.parametrize("args, message", [
    (["--faults", "0"], "--faults 0: must be 1 or more"),
    (["--seed", "-1"], "--seed -1: must be in 0..2^31-1"),
    (["--alpha", "4"], "ring-faults needs alpha < 4"),
    (["--alpha", "0"], "alpha = 0 is out of range"),
    (["--policies", "npm"], "--policies: npm: choose from"),
    (["--policies", ","], "--policies: none given"),
])
def test_ring_faults_cli_refuses_before_building(args, message):
    from nandlab.cli import check_command_line
    from nandlab.errors import NandLabError
    with pytest.raises(NandLabError, match=message.replace("^", r"\^").replace("+", r"\+")):
        check_command_line(["experiment", "ring-faults", *args])


@pytest.mark.unit
def test_ring_faults_cli_defaults():
    from nandlab.cli import check_command_line
    args = check_command_line(["experiment", "ring-faults"])
    assert (args.faults, args.alpha) == (10_000, ringfaults.ALPHA)
    args = check_command_line(["experiment", "power"])
    assert args.alpha == 4 and args.policies.split(",")[0] == "npm"
