"""The dies' return path through a register of the bus mux (the ECPIX-5's `nand_return_registered`): the
mux alone (Migen simulation), and a channel controller behind it with its read / R/B# latency one higher
against the SoC's usual mux, the same descriptors on both (cocotb on Verilator, tests/tb/controller_return_tb.py)."""

import random

import pytest
from migen import run_simulation

from nandlab.gateware.common.top import NandLabPortedTop
from nandlab.gateware.onfi.common import NandBus, NandBusMux
from nandlab.gateware.onfi.sim_top import NandLabChannelSimTop
from nandlab.soc.targets.ecpix5 import ECC_DECODER
from nandlab.testing import run_cocotb, die_test_config

WAYS = 2
ECC = dict(data_bytes=512, t=8, m=13)
RETURN = ("dq_i", "dqs_i", "rb_n")


@pytest.mark.unit
def test_mux_registers_the_return_path_of_the_masters_named():
    """Master 1 (registered_return) sees the dies' DQ, DQS, R/B# of the cycle before (R/B# ready after
    reset), master 0 those of the cycle itself, whatever `select` says; an unknown master is refused."""
    masters, bus = [NandBus(targets=4), NandBus(targets=4)], NandBus(targets=4)
    mux = NandBusMux(masters, bus, registered=True, registered_return=(1,))
    rng = random.Random(3)
    seen = []

    def bench():
        assert (yield masters[1].rb_n) == 2**len(bus.rb_n) - 1 and (yield masters[0].rb_n) == 0   # At reset.
        prev = {n: 0 for n in RETURN}       # (Migen's simulator: the bus's levels written show after the edge.)
        for cycle in range(200):
            now = {n: rng.randrange(2**len(getattr(bus, n))) for n in RETURN}
            for n, v in now.items():
                yield getattr(bus, n).eq(v)
            yield mux.select.eq(rng.randrange(2))
            yield
            for n in RETURN:
                assert (yield getattr(masters[0], n)) == now[n], (cycle, n)
                assert (yield getattr(masters[1], n)) == prev[n], (cycle, n)
            seen.append(cycle)
            prev = now

    run_simulation(mux, bench())
    assert len(seen) == 200
    with pytest.raises(ValueError, match="registered_return"):
        NandBusMux(masters, bus, registered=True, registered_return=(2,))


class _PairTop(NandLabPortedTop):
    """Channels side by side in one top, each a NandLabChannelSimTop (2 ways, BCH through the ECPIX-5's
    smaller decoder) behind the bus mux `variants` gives it, its ports prefixed with the variant's name."""
    def __init__(self, **variants):
        NandLabPortedTop.__init__(self)
        for prefix, bus_mux in variants.items():
            sub = NandLabChannelSimTop(die_test_config(), ways=WAYS, ecc=ECC, shared_decoder=ECC_DECODER,
                                       bus_mux=bus_mux)
            setattr(self, prefix, sub)
            for name, p, out in sub.ports:
                self.port(f"{prefix}_{name}", p, out)


@pytest.mark.cocotb
@pytest.mark.slow       # (~200 s; make test keeps the mux's own test above)
def test_registered_return_path_gives_the_same_results(tmp_path):
    """Every command in async SDR 0/5, sync SDR 5, NV-DDR 0/5, ECC reads with none, some and too many
    read flips, a way stuck busy: the same completions, data, ECC counts and counters with the return
    path registered (the controller's latencies one higher) as without, and no die timing violation."""
    top = _PairTop(plain="registered", late="return")
    n = run_cocotb(top, top.ios, "nandlab_channel_return", "controller_return_tb", tmp_path,
                   extra_env={"NANDLAB_TB_WAYS": str(WAYS)})
    assert n == 1
