"""The power harness's channel (gateware/power/channel.py) against a Python model of bus serialisation.

The harness is built for two dies on one channel and run by a cocotb driver that records every
cycle's die states, array activity and bus owner (tests/tb/channel_tb.py). `reference` below is an
event model written from the channel's documented protocol, not from its gateware: a page moves for
`t` cycles after the die has had the bus for two cycles (the grant seen, OI presented and, in NPM,
granted at once); a released bus is free in the next cycle and given in the one after; the array
takes PhaseTables.cycles(op). Transfers start and end in the same cycles as the model's; a read's
data output comes after its array phases and a program's array phases after its data input; two
dies never move data on one bus at once.
"""

import json

import pytest

from nandlab import experiment
from nandlab.gateware.power.channel import transfer_timing, transfer_rts, OI_DIN, OI_DOUT, INTERFACES, \
    S_IDLE, S_XRUN
from nandlab.gateware.power.common import POLICIES
from nandlab.nand_model.current import PhaseTables
from nandlab.nand_model.parts import get_part
from nandlab.testing import run_cocotb, run_cli as nandlab

PART = get_part("MTPM-MLC")
TRACE = [(0, "read"), (1, "program_lsb"), (0, "program_msb"), (1, "read"), (0, "read"), (1, "read"),
         (1, "erase"), (0, "read")]
# Three dies asking at once (three programs at t = 0, reads ending together): the round robin's order.
TRACE3 = [(0, "program_lsb"), (1, "program_lsb"), (2, "program_lsb"), (0, "read"), (1, "read"), (2, "read"),
          (2, "read"), (1, "program_msb"), (0, "read"), (0, "read")]


@pytest.mark.unit
def test_transfer_timing_follows_the_interface():
    """A 16 KiB + spare page (18336 bytes) at NV-DDR mode 5 (200 MB/s) takes 91.68 us: 18336 cycles at
    200 MHz; the bus current is the die emulator's 0.04 I_max per byte per 10 ns, 0.08 I_max at
    200 MB/s, 2 tokens at TG 4 (1 at SDR mode 0's 10 MB/s)."""
    t = transfer_timing(PART, "nvddr5", 200e6)
    assert t["t_in"] == t["t_out"] == 18336 and t["rate_out"] == 200e6
    assert t["i_bus"] == 328                                   # ceil(0.08 x 4096)
    assert transfer_rts(t["i_bus"], 4) == {OI_DIN: 2, OI_DOUT: 2}
    s = transfer_timing(PART, "sdr0", 200e6)
    assert s["t_out"] == 18336 * 20 and s["rate_out"] == 10e6 and s["i_bus"] == 17
    assert transfer_rts(s["i_bus"], 4)[OI_DOUT] == 1
    assert transfer_timing(PART, "nvddr5", 100e6, time_scale=100)["t_in"] == 92      # 9168 / 100
    assert INTERFACES[5] == "nvddr5"


def reference(trace, dies, t_in, t_out, array):
    """Event model of one channel in NPM: {die: [(kind, start, end)]} with kind "in" / "out" (the
    cycles the page moves) and "array" (the cycles the array is busy); cycle 0 is the one in which
    every die takes its first operation. `array[op]`: the array's busy cycles."""
    queues = {d: [op for e, op in trace if e == d] for d in range(dies)}
    events = {d: [] for d in range(dies)}
    free_at = 0          # First cycle the bus is free.
    nxt = 0              # Round robin: the die searched first.
    # Per die: the cycle it next asks for the bus, or starts its array; what for.
    ready = {d: (0, None) for d in range(dies)}      # (cycle, op) at which the die takes its next operation

    def take(d, t):
        """The die takes its next operation in cycle t: returns (when it needs the bus, what for) or None."""
        if not queues[d]:
            return None
        op = queues[d].pop(0)
        if op.startswith("program"):
            return (t + 1, "in", op)             # In BUSW from the next cycle.
        return array_then(d, t + 1, op)          # APEND in the next cycle.

    def array_then(d, apend, op):
        start = apend + 1                        # Busy from the cycle after APEND.
        end = start + array[op] - 1
        events[d].append(("array", start, end))
        if op == "read":
            return (end + 2, "out", op)          # The array's end seen in end + 1, BUSW in end + 2.
        return ("take", end + 2)                 # Back to IDLE in end + 2, which takes the next one.

    want = {}                                    # die -> (cycle it asks from, kind, op)
    for d in range(dies):
        r = take(d, 0)
        while r is not None and r[0] == "take":
            r = take(d, r[1])
        if r is not None:
            want[d] = r
    while want:
        # The bus is given at the first cycle c >= free_at in which a die asks (a request seen in c
        # makes it the owner from c + 1).
        c = max(free_at, min(w[0] for w in want.values()))
        asking = [d for d, w in want.items() if w[0] <= c]
        order = [(nxt + k) % dies for k in range(dies)]
        d = next(x for x in order if x in asking)
        nxt = (d + 1) % dies
        _, kind, op = want.pop(d)
        g = c + 1                                # Grant seen; XREQ in g + 1; the page moves from g + 2.
        t = t_in if kind == "in" else t_out
        events[d].append((kind, g + 2, g + t + 1))
        free_at = g + t + 2                      # Released in its last cycle, free in the next.
        if kind == "in":
            r = array_then(d, g + t + 2, op)     # APEND in the cycle after the last.
        else:
            r = take(d, g + t + 2)               # IDLE, and it takes the next operation at once.
        while r is not None and r[0] == "take":
            r = take(d, r[1])
        if r is not None:
            want[d] = r
    return events


def recorded(log, dies):
    """{die: [(kind, start, end)]} from the driver's per-cycle log, cycle 0 the first takes."""
    t0 = next(k for k, (st, _, _) in enumerate(log) if any(s != S_IDLE for s in st)) - 1
    events = {d: [] for d in range(dies)}
    for d in range(dies):
        for k in range(t0, len(log)):
            st, busy = log[k][0][d], log[k][1][d]
            prev_st, prev_busy = log[k - 1][0][d], log[k - 1][1][d]
            if st == S_XRUN and prev_st != S_XRUN:
                start = k
            if st != S_XRUN and prev_st == S_XRUN:
                events[d].append(("xfer", start - t0, k - 1 - t0))
            if busy and not prev_busy:
                astart = k
            if not busy and prev_busy:
                events[d].append(("array", astart - t0, k - 1 - t0))
    return events


def _run(tmp_path, policy, trace, time_scale=100, interface="nvddr5", dies=2):
    sys_clk = 100e6
    chan = experiment.channel_config(PART, interface, sys_clk, time_scale)
    table = experiment.experiment_table(PART, 4, 1, chan)
    traces = {50: trace}
    spec = experiment.harness_spec(dies, 4, 1, table, traces, [policy])
    spec["channels"] = 1
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    top = experiment.HarnessTop(PART, dies, sys_clk, time_scale, 8, channel=chan)
    run_cocotb(top, top.ios, "nandlab_harness", "channel_tb", tmp_path,
               extra_env={"NANDLAB_EXPERIMENT": str(tmp_path / "spec.json"),
                          "NANDLAB_EXPERIMENT_RESULTS": str(tmp_path / "log.json")},
               build_args=["-O3", "--x-assign", "fast", "--x-initial", "fast", "-CFLAGS", "-O2"])
    return json.loads((tmp_path / "log.json").read_text()), chan, PhaseTables(PART, sys_clk, time_scale)


def _check_serialised(log):
    """Two dies never move data on one bus at once, and only the bus's owner moves data."""
    for st, _, buses in log:
        moving = [d for d, s in enumerate(st) if s == S_XRUN]
        assert len(moving) <= 1, (st, buses)
        for d in moving:
            assert buses[0] == [1, d], (st, buses)


@pytest.mark.cocotb
# 3 dies (round robin of three at once): make test-slow, as the whole suite must stay near 30 minutes.
@pytest.mark.parametrize("dies, trace", [(2, TRACE), pytest.param(3, TRACE3, marks=pytest.mark.slow)], ids=["2dies", "3dies"])
def test_channel_matches_the_reference_model(tmp_path, dies, trace):
    """NPM (no token waits): every transfer and array run of the trace in the model's cycles."""
    res, chan, tables = _run(tmp_path, "npm", trace, dies=dies)
    array = {op: tables.cycles(op) for op in ("read", "program_lsb", "program_msb", "erase")}
    want = reference(trace, dies, chan["t_in"], chan["t_out"], array)
    got = recorded(res["log"], dies)
    for d in range(dies):
        # The model names transfers "in" / "out"; the log sees a transfer ("xfer").
        assert [(("xfer" if k != "array" else k), a, b) for k, a, b in want[d]] == got[d], (d, want[d], got[d])
    # Reads' data output after their array phases, programs' array phases after their data input.
    for d in range(dies):
        ops = [op for e, op in trace if e == d]
        kinds = [k for k, _, _ in want[d]]
        expect = []
        for op in ops:
            expect += {"read": ["array", "out"], "erase": ["array"]}.get(op, ["in", "array"])
        assert kinds == expect
        ends = [(a, b) for _, a, b in want[d]]
        assert all(b1 < a2 for (_, b1), (a2, _) in zip(ends, ends[1:]))
    _check_serialised(res["log"])
    assert res["ops"] == len(trace)
    # No lock-step: the dies' first array runs start at different cycles (programs queue for the bus).
    starts = [next(a for k, a, _ in got[d] if k == "array") for d in range(dies)]
    assert len(set(starts)) == dies


@pytest.mark.cocotb
@pytest.mark.slow       # (~140 s; the bus arbiter is the one test_channel_matches_the_reference_model checks)
def test_channel_under_kmtpm_sub(tmp_path):
    """KMTPM-S at alpha 1 (tokens for one die at I_max): transfers wait for tokens as array phases do,
    still one at a time on the bus and in each operation's order, every operation done, no violation."""
    res, chan, _ = _run(tmp_path, "kmtpm_sub", TRACE)
    _check_serialised(res["log"])
    got = recorded(res["log"], 2)
    for d in range(2):
        ops = [op for e, op in TRACE if e == d]
        expect = []
        for op in ops:
            expect += {"read": ["array", "xfer"], "erase": ["array"]}.get(op, ["xfer", "array"])
        assert [k for k, _, _ in got[d]] == expect
    assert res["ops"] == len(TRACE) and res["violations"] == 0


@pytest.mark.unit
def test_channel_options():
    """--interface is checked before anything is built; --no-channel and --din-free are options."""
    out = nandlab("experiment", "power", "--interface", "ddr9")
    assert out.returncode != 0 and "ddr9" in out.stderr
    out = nandlab("experiment", "power", "--no-channel", "--din-free", "--tg", "7")
    assert out.returncode != 0 and "TG = 7 is out of range" in out.stderr and "unrecognized" not in out.stderr
