"""DCC with its firmware's time (policy dcc_fw, nandlab.dcc_fw): the firmware bench's models are the
harness's, a decision's CPU cycles become harness cycles as the clocks say, the CLI checks its option,
and (slow) on the harness each decision delays its operation by exactly the charged cycles, one
decision at a time."""

import json
import re
import subprocess
from pathlib import Path

import pytest

from nandlab import dcc, dcc_fw, env, experiment
from nandlab.gateware.power.channel import transfer_timing
from nandlab.nand_model.current import PhaseTables
from nandlab.nand_model.parts import get_part

PART = get_part("MTPM-MLC")
BENCH = env.FIRMWARE_DIR / "cmds_dcc.c"


def _bench_constants():
    text = BENCH.read_text()
    return int(re.search(r"#define BUS_CURRENT (\d+)u", text).group(1)), \
        int(re.search(r"#define PAGE_CYCLES (\d+)u", text).group(1))


def _header_models(text, gran):
    """The four models of one granularity in dcc_bench_models.h, read back from its arrays."""
    out = []
    for op in range(4):
        body = re.search(rf"bench_{gran}_{op}\[\] = \{{(.*?)\}};", text, re.S).group(1)
        out.append([(int(n), int(lv)) for n, lv in re.findall(r"\{(\d+), (\d+)\}", body)])
    return out


@pytest.mark.unit
def test_bench_models_are_the_harness_models():
    """`dcc bench` times dcc.c on the models the harness gives DCC (MTPM-MLC, 200 MHz, atomic by default,
    segment on request): its header is the generator's output, its arrays those models; the cap is less
    one NV-DDR 5 transfer, and a page transfer comes with each read and program."""
    header = (env.FIRMWARE_DIR / dcc_fw.BENCH_HEADER).read_text()
    assert header == dcc_fw.bench_models_header(), "regenerate sw/firmware/dcc_bench_models.h"
    for gran in ("atomic", "segment"):
        models = dcc.models(PhaseTables(PART, 200e6, 1), gran)
        assert _header_models(header, gran) == models
        assert max(len(m) for m in models) <= 320              # the firmware's DCC_MAX_PIECES
    assert "-DDCC_MAX_PIECES=320" in (env.FIRMWARE_DIR / "Makefile").read_text()
    bus, page = _bench_constants()
    t = transfer_timing(PART, "nvddr5", 200e6)
    assert (bus, page) == (t["i_bus"], t["t_in"])


@pytest.mark.unit
def test_cpu_cycles_become_harness_cycles():
    """A 100 MHz CPU's cycle is two of the 200 MHz harness's; time scale divides it as the array times."""
    assert dcc_fw.harness_cycles(1000, 200e6) == 2000
    assert dcc_fw.harness_cycles(1000, 200e6, 10) == 200
    assert dcc_fw.harness_cycles(1, 100e6, 40) == 1          # at least one cycle
    assert dcc_fw.harness_cycles(1001, 100e6, 10) == 101     # rounded up


@pytest.mark.unit
def test_dcc_fw_option_is_checked():
    """--dcc-fw-cycles only with dcc_fw or dcc_fw_flat, at least 1; by default the cost measured for the
    model each uses (dcc_fw: --dcc-model's, segment by default; dcc_fw_flat: the flat, atomic, one) at each
    ratio, in the harness's cycles (200 MHz: two a CPU cycle); none measured for the operation model."""
    from nandlab.cli import check_command_line
    from nandlab.errors import NandLabError
    with pytest.raises(NandLabError, match="--dcc-fw-cycles: only with policy dcc_fw"):
        check_command_line(["experiment", "power", "--dcc-fw-cycles", "100"])
    with pytest.raises(NandLabError, match="--dcc-fw-cycles 0: must be 1 or more"):
        check_command_line(["experiment", "power", "--policies", "dcc_fw", "--dcc-fw-cycles", "0"])
    args = check_command_line(["experiment", "power", "--policies", "npm,dcc_fw,dcc_fw_flat", "--ratios", "0,100"])
    assert args.dcc_model == dcc.DEFAULT_GRANULARITY == "segment"
    assert args.dcc_fw_harness == {r: 2 * dcc_fw.DECISION_CPU_CYCLES["segment"][r] for r in (0, 100)}
    assert args.dcc_fw_flat_harness == {r: 2 * dcc_fw.DECISION_CPU_CYCLES["atomic"][r] for r in (0, 100)}
    args = check_command_line(["experiment", "power", "--policies", "dcc_fw", "--dcc-model", "atomic"])
    assert args.dcc_fw_harness == {r: 2 * c for r, c in dcc_fw.DECISION_CPU_CYCLES["atomic"].items()}
    with pytest.raises(NandLabError, match="policy dcc_fw: no measured decision cost of the operation model"):
        check_command_line(["experiment", "power", "--policies", "dcc_fw", "--dcc-model", "operation"])
    args = check_command_line(["experiment", "power", "--policies", "dcc_fw", "--dcc-model", "operation",
                               "--dcc-fw-cycles", "1000"])
    assert args.dcc_fw_harness == 2000


@pytest.mark.cocotb
@pytest.mark.slow           # a harness build
def test_each_decision_delays_its_operation(tmp_path):
    """A 2-die harness with one die busy, the budget never binding for one die (alpha 2; not 8: a 2-die
    monitor's 15-bit PB cannot hold 8 x 4096, NOTES.md): DCC starts each read as soon as it is asked for,
    so charging D cycles a decision delays each of the three reads by D: the run and the reads' latency
    are longer by exactly 3 D."""
    clock, d = 200e6, 5000
    chan = experiment.channel_config(PART, "nvddr5", clock, 20)
    table = experiment.experiment_table(PART, 4, 2, chan)
    exe, _ = experiment.build_native(PART, 2, clock, 20, 4, log=lambda *a: None, channel=chan)
    models = dcc.models(PhaseTables(PART, clock, 20), "atomic")
    trace = [(0, "read"), (0, "read"), (0, "read")]
    cycles = {}
    for pol in ("dcc", "dcc_fw"):
        spec = experiment.harness_spec(2, 4, 2, table, {0: trace}, [pol], models, (2 << 12) - chan["i_bus"],
                                       True, True, chan["i_bus"], dcc_fw_cycles=d)
        path = tmp_path / f"{pol}.json"
        path.write_text(json.dumps(spec))
        out = subprocess.run([str(exe), str(path), "0"], capture_output=True, text=True, check=True)
        cycles[pol] = json.loads(out.stdout)
    assert cycles["dcc"]["violations"] == cycles["dcc_fw"]["violations"] == 0
    assert cycles["dcc_fw"]["decisions"] == 3 and cycles["dcc_fw"]["decision_cycles"] == d
    # One die, three reads one after another: each waits for its decision.
    assert cycles["dcc_fw"]["cycles"] - cycles["dcc"]["cycles"] == 3 * d
    assert cycles["dcc_fw"]["read_cycles"] - cycles["dcc"]["read_cycles"] == 3 * d


@pytest.mark.cocotb
def test_flat_policies_are_dcc_with_the_flat_model(tmp_path):
    """One run gives DCC flat beside DCC segments: dcc_flat is, counter for counter, dcc run with the
    atomic model; dcc (the segment model by default) and dcc_flat keep the budget (the model checked
    against the dies every cycle); dcc_fw_flat is charged the decision cycles it is given and keeps the
    budget too, its model checked every cycle as well (against what DCC reserved for each operation,
    test_check_dcc_with_firmware_time)."""
    assert dcc.DEFAULT_GRANULARITY == "segment"
    kw = dict(n_ops=160, ratios=[0, 50], time_scale=20, log=lambda *a: None, jobs=2)
    res, _ = experiment.run(policies=["npm", "dcc_flat", "dcc"], workdir=tmp_path / "both", check_dcc=True, **kw)
    flat, _ = experiment.run(policies=["npm", "dcc"], dcc_granularity="atomic", workdir=tmp_path / "flat",
                             check_dcc=True, **kw)
    fw, _ = experiment.run(policies=["npm", "dcc_fw_flat"], workdir=tmp_path / "fw", dcc_fw_flat_cycles={0: 300, 50: 200},
                           check_dcc=True, **kw)
    by = {(r["policy"], r["ratio"]): r for r in res + fw}
    ref = {(r["policy"], r["ratio"]): r for r in flat}
    for ratio in (0, 50):
        same = {k: v for k, v in by[("dcc_flat", ratio)].items() if k != "policy"}
        assert same == {k: v for k, v in ref[("dcc", ratio)].items() if k != "policy"}
        for p in ("dcc_flat", "dcc", "dcc_fw_flat"):
            assert by[(p, ratio)]["violations"] == 0 and by[(p, ratio)]["ops"] == by[("npm", ratio)]["ops"]
        assert by[("dcc_fw_flat", ratio)]["decision_cycles"] == {0: 300, 50: 200}[ratio]
        assert by[("dcc_fw_flat", ratio)]["cycles"] > by[("dcc_flat", ratio)]["cycles"]
        assert by[("dcc", ratio)]["cycles"] != by[("dcc_flat", ratio)]["cycles"]      # another model


@pytest.mark.cocotb
def test_check_dcc_with_firmware_time(tmp_path):
    """--check-dcc with DCC charged its firmware's time: a decision taken ahead of the clock (the CPU busy
    until then) clears the scheduler's staircase of the operations over by that time, which still run in
    the cycles the check looks at; the check sums what DCC reserved for each operation from the models
    (harness_main.cpp's DccReserved), so dcc_fw and dcc_fw_flat keep it. Models planted below the dies'
    current (every level halved) are still caught."""
    clock, scale = 200e6, 20
    chan = experiment.channel_config(PART, "nvddr5", clock, scale)
    table = experiment.experiment_table(PART, 4, 4, chan)
    trace = experiment.synthetic_trace(200, 50, 4, seed=1)
    exe, _ = experiment.build_native(PART, 4, clock, scale, experiment._depth({50: trace}, 4), log=lambda *a: None,
                                     channel=chan)
    tables = PhaseTables(PART, clock, scale)
    models, flat = dcc.models(tables, "segment"), dcc.models(tables, "atomic")
    cycles = {p: dcc_fw.harness_cycles(dcc_fw.DECISION_CPU_CYCLES[g][50], clock, scale)
              for p, g in (("dcc_fw", "segment"), ("dcc_fw_flat", "atomic"))}

    def run(models, name):
        spec = experiment.harness_spec(4, 4, 4, table, {50: trace}, ["dcc_fw", "dcc_fw_flat"], models,
                                       (4 << 12) - chan["i_bus"], True, True, chan["i_bus"],
                                       dcc_fw_cycles=cycles["dcc_fw"], flat_models=flat,
                                       dcc_fw_flat_cycles=cycles["dcc_fw_flat"])
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(spec))
        return subprocess.run([str(exe), str(path), "0", "1"], capture_output=True, text=True)

    out = run(models, "honest")
    assert out.returncode == 0, out.stderr[-500:]
    res = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert [r["policy"] for r in res] == ["dcc_fw", "dcc_fw_flat"]
    for r in res:
        assert r["violations"] == 0 and r["ops"] == 200 and r["decision_cycles"] == cycles[r["policy"]]
    halved = [[(n, lv // 2) for n, lv in m] for m in models]
    out = run(halved, "planted")
    assert out.returncode != 0 and "DCC model below the dies' current" in out.stderr, out.stderr[-500:]
