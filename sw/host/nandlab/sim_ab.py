"""Same-run A/B of simulator builds (issue 20): how fast each runs the same loads, and whether the firmware
says the same things on each.

    python -m nandlab.sim_ab [--loads idle,ftl] ROUNDS IDLE_S NAME=GATEWARE_DIR NAME=GATEWARE_DIR ...

Every build is booted, then SIGSTOPped; in each round every build in turn (the order reversed every other
round, the others stopped) runs the loads of `nandlab bench sim` (nandlab.bench.SIM_LOADS): the idle shell
for IDLE_S wall seconds, `ctl test 4` (after `ctl bringup`), `nand workload 2000 30` (after `ctl bringup`
and `ctl mode async 0`) and `ftl workload 1000 30 32 1` (after `ctl bringup` and `ftl format`); `--loads`
(their short names, comma-separated) runs only those. A rate is simulated cycles (the firmware's `time`) per processor second of the simulator (utime + stime: on a shared
machine far steadier than wall time) and per wall second. Prints each round, then per build the median
rates and their ratio to the first build's; every command's output must match the first build's (the
firmware's results and cycle counts; the exit status is 1 if any differs). The machine's other load
affects all builds alike only on average: use several rounds and read the per-round spread.

Builds need 8 dies (or any count the loads accept). The SIGHUP of a closing terminal is ignored: a stopped
child in an orphaned process group would otherwise end the run.
"""

import json
import os
import signal
import statistics
import sys
import time
from pathlib import Path

from nandlab.bench import SIM_LOADS, measure_load
from nandlab.errors import NandLabError
from nandlab.simulator import SimConsole, prepare_run_dir, free_tcp_port


def select_loads(names=None):
    """(short name, commands before it, measured command or None for the idle shell) of the loads named
    (comma-separated short names; every load when None)."""
    chosen = names.split(",") if names is not None else None
    known = [short for _, short, *_ in SIM_LOADS]
    if chosen is not None and (not chosen or any(n not in known for n in chosen)):
        raise ValueError(f"--loads {names}: comma-separated names of {','.join(known)}")
    return [(short, setup, command) for _, short, setup, command in SIM_LOADS if chosen is None or short in chosen]


def run_round(console, idle_s, outputs, loads):
    """The loads once on a running console; returns {load: (M cycles per CPU s, M cycles per wall s)}."""
    rates = {}
    for load, setup, command in loads:
        m = measure_load(console, setup, command, idle_s, outputs)
        if m["cpu_s"] is None:
            raise NandLabError(f"{load}: the simulator's processor time could not be read")
        rates[load] = (m["cycles"] / m["cpu_s"] / 1e6, m["cycles"] / m["wall_s"] / 1e6)
    return rates


def main(argv):
    try:
        argv, names = list(argv), None
        if argv and argv[0].startswith("--loads"):          # --loads NAMES or --loads=NAMES
            names = argv.pop(0).partition("=")[2] or (argv.pop(0) if argv else "")
        chosen = select_loads(names)
        rounds, idle_s = int(argv[0]), float(argv[1])
        builds = [a.split("=", 1) for a in argv[2:]]
        if rounds < 1 or not builds or any(len(b) != 2 or not Path(b[1]).is_dir() for b in builds):
            raise ValueError
    except (IndexError, ValueError) as e:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        if str(e).startswith("--loads"):
            print(e, file=sys.stderr)
        print("ROUNDS >= 1, IDLE_S seconds, and at least one NAME=GATEWARE_DIR of an existing build", file=sys.stderr)
        return 2
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    consoles = {}
    for name, gateware in builds:
        run_dir = prepare_run_dir(gateware, Path(gateware).parent / f"abrun-{name}", bridge_port=free_tcp_port())
        consoles[name] = console = SimConsole(gateware, run_dir)
        console.start()
        console.boot(timeout=600)
        os.kill(console.proc.pid, signal.SIGSTOP)
    rates = {name: {load: [] for load, *_ in chosen} for name, _ in builds}
    outputs = {name: [] for name, _ in builds}
    try:
        for r in range(rounds):
            for name, _ in (builds if r % 2 == 0 else builds[::-1]):
                pid = consoles[name].proc.pid
                os.kill(pid, signal.SIGCONT)
                for load, rate in run_round(consoles[name], idle_s, outputs[name], chosen).items():
                    rates[name][load].append(rate)
                os.kill(pid, signal.SIGSTOP)
                print(f"round {r} {name}: " + " ".join(f"{load} {v[-1][0]:.3f}/{v[-1][1]:.3f}"
                                                       for load, v in rates[name].items()), flush=True)
    except NandLabError as e:
        print(f"sim_ab: {name}, round {r}: {e}", file=sys.stderr)
        return 1
    finally:
        for console in consoles.values():
            os.kill(console.proc.pid, signal.SIGCONT)
            console.close()
    base = builds[0][0]
    print("median M cycles per CPU s (per wall s), ratio to", base)
    for name, _ in builds:
        cells = []
        for load, *_ in chosen:
            cpu = statistics.median(x[0] for x in rates[name][load])
            wall = statistics.median(x[1] for x in rates[name][load])
            cells.append(f"{load} {cpu:.3f} ({wall:.3f}) x{cpu / statistics.median(x[0] for x in rates[base][load]):.3f}")
        print(f"  {name}: " + "; ".join(cells))
    same = all(outputs[name] == outputs[base] for name, _ in builds)
    print("outputs identical:", same)
    for name, _ in builds:
        diff = next(((a, b) for a, b in zip(outputs[name], outputs[base]) if a != b), None)
        if diff:
            print(f"first difference, {name} vs {base}:\n{diff[0]}\n---\n{diff[1]}")
    Path(f"sim_ab-{int(time.time())}.json").write_text(json.dumps(dict(rates=rates, outputs=outputs)))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
