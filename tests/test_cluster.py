"""Sweeps on Dask (nandlab.cluster): a scheduler and two workers started on this machine give the same
CSV as the embedded cluster, a worker killed mid-sweep loses no result, a worker that builds the
harness itself from the task's sources (as one on another machine would) gets the same numbers, and
bad scheduler addresses are refused before anything is built."""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from nandlab import cluster, env
from nandlab.errors import NandLabError
from nandlab.testing import run_cli as nandlab

SWEEP = ["experiment", "power", "--ops", "160", "--ratios", "0,50", "--policies", "npm,dcc,kmtpm_sub",
         "--time-scale", "20", "--sweep", "alpha"]


@pytest.mark.unit
@pytest.mark.parametrize("address, message", [
    ("localhost:8786", "give the scheduler's address as tcp://HOST:PORT"),
    ("udp://localhost:8786", "protocol 'udp' is not one of"),
    ("tcp://localhost", "expected tcp://HOST:PORT"),
    ("tcp://localhost:99999", "port in 1..65535"),
    ("tcp://:8786", "expected tcp://HOST:PORT"),
])
def test_bad_scheduler_addresses_are_refused(address, message):
    with pytest.raises(NandLabError, match=message):
        cluster.scheduler_address(address)
    r = nandlab(*SWEEP, "--scheduler", address)
    assert r.returncode == 2 and message.split(" '")[0] in r.stderr and "Traceback" not in r.stderr


@pytest.mark.unit
def test_scheduler_from_the_environment(monkeypatch):
    monkeypatch.setenv(cluster.SCHEDULER_ENV, "tcp://10.0.0.1:8786")
    assert cluster.scheduler_address() == "tcp://10.0.0.1:8786"
    assert cluster.scheduler_address("tcp://h:1") == "tcp://h:1"       # the option wins
    monkeypatch.setenv(cluster.SCHEDULER_ENV, "nonsense")
    with pytest.raises(NandLabError, match=r"\$NANDLAB_SCHEDULER 'nonsense'"):
        cluster.scheduler_address()


@pytest.mark.unit
def test_unreachable_scheduler_is_a_clear_error():
    """Nothing listens there: an error naming the address and what to start, within the timeout."""
    port = _free_port()
    t0 = time.monotonic()
    with pytest.raises(NandLabError, match=f"cannot reach the Dask scheduler at tcp://127.0.0.1:{port}"):
        with cluster.client(f"tcp://127.0.0.1:{port}", timeout=3):
            pass
    assert time.monotonic() - t0 < 30


def _free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(cmd, log, **kw):
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, **kw)


@pytest.mark.cocotb
def test_two_workers_give_the_local_csv_and_survive_a_lost_worker(tmp_path):
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    logs = tmp_path / "logs"
    logs.mkdir()
    procs = []
    try:
        procs.append(_start([sys.executable, "-m", "nandlab.cli", "scheduler", "--port", str(port),
                             "--host", "127.0.0.1"], open(logs / "scheduler.log", "w")))
        # Worker 2 builds its own harness from the tasks' sources into its own build directory, as a
        # worker on another machine would.
        own = dict(os.environ, NANDLAB_WORKER_OWN_BUILDS="1", NANDLAB_BUILD_DIR=str(env.BUILD_DIR / "test-worker2"))
        for i, extra in ((1, {}), (2, own)):
            procs.append(_start([sys.executable, "-m", "nandlab.cli", "worker", address, "--nthreads", "1",
                                 "--name", f"w{i}"], open(logs / f"worker{i}.log", "w"), env=extra or None))

        local = nandlab(*SWEEP, "--csv", str(tmp_path / "local.csv"), "--jobs", "2")
        assert local.returncode == 0, local.stderr[-2000:]

        remote = nandlab(*SWEEP, "--csv", str(tmp_path / "remote.csv"), "--scheduler", address)
        assert remote.returncode == 0, remote.stderr[-2000:] + (logs / "worker2.log").read_text()[-2000:]
        assert f"the Dask cluster at {address}" in remote.stderr
        local_csv = (tmp_path / "local.csv").read_text()
        assert (tmp_path / "remote.csv").read_text() == local_csv
        assert local_csv.count("\n") == 1 + 5 * 3 * 2          # header + alpha 4..8 x 3 policies x 2 ratios
        assert (env.BUILD_DIR / "test-worker2" / "harness-cache").is_dir()   # worker 2 built its own

        # Kill worker 1 once the sweep is under way: the scheduler gives its tasks to worker 2.
        out = tmp_path / "lost.csv"
        proc = subprocess.Popen([sys.executable, "-m", "nandlab.cli"] + SWEEP + ["--csv", str(out), "--scheduler",
                                address], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines = []

        def read():
            for line in proc.stderr:
                lines.append(line)
        reader = threading.Thread(target=read)
        reader.start()
        deadline = time.monotonic() + 600
        while not any("[1/30]" in line for line in lines) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        os.killpg(procs[1].pid, signal.SIGKILL)
        proc.wait(timeout=1800)
        reader.join()
        assert proc.returncode == 0, "".join(lines)[-2000:]
        assert out.read_text() == local_csv
        assert any("[30/30]" in line for line in lines)
        time.sleep(1)
        removed = [line for line in (logs / "scheduler.log").read_text().splitlines() if "Remove worker" in line]
        assert any("w1" in line for line in removed), (logs / "scheduler.log").read_text()[-3000:]
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)


def _toy_session(group, scale, log=None):
    """A stand-in for a simulator session (nandlab.replay._session): its runs' results, a progress line each."""
    if "bad" in group:
        raise NandLabError("run 'bad' read back wrong data")
    out = {}
    for p in group:
        out[p] = p * scale
        if log:
            log(f"toy: [*] run {p}")
    return out


@pytest.mark.unit
def test_sim_sessions_merge_every_sessions_results_and_number_the_runs():
    lines = []
    results = cluster.sim_sessions(_toy_session, [[1, 2], [3], [4, 5, 6]], (10,), jobs=2, log=lines.append)
    assert results == {1: 10, 2: 20, 3: 30, 4: 40, 5: 50, 6: 60}
    assert sorted(int(ln.split("[")[1].split("/")[0]) for ln in lines) == [1, 2, 3, 4, 5, 6]
    assert all(ln.split("]")[0].endswith("/6") for ln in lines)
    with pytest.raises(NandLabError, match="read back wrong"):
        cluster.sim_sessions(_toy_session, [[1], ["bad"]], (10,), jobs=2, log=lines.append)
