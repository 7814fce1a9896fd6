"""How `nandlab bench sim` and `python -m nandlab.sim_ab` measure one load on a running simulator
(nandlab.bench.measure_load), against a console whose clock and processor time are scripted."""

import pytest

from nandlab import bench, sim_ab
from nandlab.errors import NandLabError


class ScriptedConsole:
    """A console whose `time` advances 1000 cycles a command and whose simulator uses 0.5 CPU-s a command;
    `answers` maps a command to its output."""
    def __init__(self, answers=None, cpu=True):
        self.answers, self.cpu = answers or {}, cpu
        self.cycle, self.cpu_s, self.sent = 0, 10.0, []

    def command(self, line, timeout=None):
        self.sent.append(line)
        self.cycle += 1000
        self.cpu_s += 0.5
        if line == "time":
            return f"cycles: 0x{self.cycle:08x} (...)"
        return self.answers.get(line, f"{line}: done")

    def cpu_seconds(self):
        return self.cpu_s if self.cpu else None


def test_a_load_is_its_command_between_two_readings():
    c, outputs = ScriptedConsole(), []
    m = bench.measure_load(c, ("ctl bringup", "ftl format"), "ftl workload 10", 0, outputs)
    assert c.sent == ["ctl bringup", "ftl format", "time", "ftl workload 10", "time"]
    # From the first `time` to the second: the workload and the second `time` itself.
    assert m["cycles"] == 2000 and m["cpu_s"] == pytest.approx(1.0) and m["wall_s"] >= 0
    assert outputs == ["ctl bringup: done", "ftl format: done", "ftl workload 10: done"]


def test_the_idle_shell_is_measured_over_its_seconds():
    m = bench.measure_load(ScriptedConsole(), (), None, 0.05)
    assert m["cycles"] == 1000 and m["wall_s"] >= 0.05


@pytest.mark.parametrize("line, out", [("ctl bringup", "error: no die answers"),
                                       ("ftl workload 10", "1000 requests, 3 failed"),
                                       ("ftl workload 10", "2 sectors differ")])
def test_a_reported_failure_stops_the_load_naming_the_command(line, out):
    c = ScriptedConsole({line: out})
    with pytest.raises(NandLabError, match=line):
        bench.measure_load(c, ("ctl bringup",), "ftl workload 10", 0)
    assert c.sent[-1] == line


def test_a_clean_ftl_summary_is_not_a_failure():
    m = bench.measure_load(ScriptedConsole({"ftl workload 10": "1000 requests, 0 failed, 0 sectors differ"}),
                           (), "ftl workload 10", 0)
    assert m["cycles"] == 2000


def test_sim_ab_rates_are_millions_per_cpu_and_wall_second():
    (load, setup, command), = sim_ab.select_loads("ftl")
    rates = sim_ab.run_round(ScriptedConsole(), 0, [], [(load, setup, command)])
    cpu, wall = rates["ftl"]
    assert cpu == pytest.approx(2000 / 1.0 / 1e6) and wall > 0


def test_sim_ab_needs_the_simulators_processor_time():
    with pytest.raises(NandLabError, match="processor time"):
        sim_ab.run_round(ScriptedConsole(cpu=False), 0, [], sim_ab.select_loads("idle"))


def test_sim_ab_refuses_unknown_loads():
    with pytest.raises(ValueError, match="idle,ctl,nand,ftl"):
        sim_ab.select_loads("idle,fast")
