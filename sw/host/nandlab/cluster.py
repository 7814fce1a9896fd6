"""Sweeps on Dask distributed (DESIGN.md, decision 11).

Every run of a sweep (policy x read ratio x TG x alpha ...) is an independent simulation: one
process of a verilated harness on one job of a spec. `client()` gives the Dask client the runs go
to: an embedded cluster in this process by default (nothing to set up; `jobs` runs at a time), or
an existing cluster when a scheduler address is given (`--scheduler tcp://HOST:PORT` or
$NANDLAB_SCHEDULER). Workers of an existing cluster run in a nandlab environment (`nandlab worker
tcp://HOST:PORT`, or `dask worker` with nandlab installed).

A task carries the harness's sources (Verilog, C++ main, DCC scheduler) and their digest, not a
path: a worker on another machine builds the harness once per digest into its own cache
(`<build dir>/harness-cache/<digest>`), a worker on this machine uses the build already made here.
Results are data (the harness's JSON), never files on the worker, so they are the same wherever they
ran. ($NANDLAB_WORKER_OWN_BUILDS=1 makes a worker build into its cache even where the submitter's build
is visible, as a worker on another machine does; the tests use it.) A worker lost mid-run has its tasks rescheduled by the scheduler (Dask's allowed-failures).
"""

import fcntl
import json
import os
import subprocess
import tempfile
import uuid
from contextlib import contextmanager
from pathlib import Path

from nandlab.errors import NandLabError

SCHEDULER_ENV = "NANDLAB_SCHEDULER"


def scheduler_address(given=None):
    """The scheduler to use: `given`, else $NANDLAB_SCHEDULER, else None (the embedded cluster).
    An address is checked for form here, before anything is built."""
    address = given if given is not None else os.environ.get(SCHEDULER_ENV) or None
    if address is None:
        return None
    what = "--scheduler" if given is not None else f"${SCHEDULER_ENV}"
    if "://" not in address:
        raise NandLabError(f"{what} '{address}': give the scheduler's address as tcp://HOST:PORT "
                           f"(printed by 'dask scheduler')")
    proto, rest = address.split("://", 1)
    if proto not in ("tcp", "tls", "ws", "wss"):
        raise NandLabError(f"{what} '{address}': protocol '{proto}' is not one of tcp, tls, ws, wss")
    host, _, port = rest.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise NandLabError(f"{what} '{address}': expected tcp://HOST:PORT with a port in 1..65535")
    return address


@contextmanager
def client(address=None, jobs=1, timeout=20):
    """A Dask client: connected to `address` (an existing cluster), or to a cluster embedded in this
    process with `jobs` runs at a time."""
    import logging
    from distributed import Client, LocalCluster
    # Dask's own INFO lines (cluster start and stop) would interleave with the progress lines.
    for name in ("distributed", "distributed.scheduler", "distributed.core", "distributed.worker"):
        logging.getLogger(name).setLevel(logging.WARNING)
    if address is None:
        cluster = LocalCluster(processes=False, n_workers=1, threads_per_worker=max(1, jobs),
                               dashboard_address=None)
        try:
            with Client(cluster) as c:
                yield c
        finally:
            cluster.close()
        return
    try:
        c = Client(address, timeout=timeout)
    except (OSError, TimeoutError) as e:
        raise NandLabError(f"cannot reach the Dask scheduler at {address} within {timeout} s ({e}); start one "
                           f"with 'dask scheduler' and workers with 'nandlab worker {address}'") from None
    try:
        if not c.scheduler_info().get("workers"):
            c.wait_for_workers(1, timeout=timeout)
    except TimeoutError:
        c.close()
        raise NandLabError(f"the Dask scheduler at {address} has no workers (none joined within {timeout} s); "
                           f"start them with 'nandlab worker {address}'") from None
    try:
        yield c
    finally:
        c.close()


def digest_of(sources):
    """The digest of a build's sources ({file name: text, "cflags": ...})."""
    import hashlib
    h = hashlib.sha256()
    for name in sorted(sources):
        h.update(name.encode() + b"\0" + sources[name].encode() + b"\0")
    return h.hexdigest()


EXE = "Vnandlab_harness"


def built(workdir, digest):
    """The harness executable in `workdir` when it was built from sources of `digest`, else None."""
    exe, stamp = Path(workdir) / "obj_dir" / EXE, Path(workdir) / "obj_dir" / "digest"
    return exe if exe.exists() and stamp.exists() and stamp.read_text() == digest else None


def build(sources, workdir, log=print):
    """The harness executable of `sources` in `workdir` (obj_dir/Vnandlab_harness), verilated once per
    digest: a stamp records the digest of the build, a lock keeps concurrent builders of one
    directory (several tasks, several processes) from building it twice."""
    from nandlab import env
    workdir = Path(workdir)
    digest = digest_of(sources)
    exe, stamp = workdir / "obj_dir" / EXE, workdir / "obj_dir" / "digest"
    if built(workdir, digest):
        return exe
    workdir.mkdir(parents=True, exist_ok=True)
    with open(workdir / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if built(workdir, digest):
            return exe
        src = workdir / "src"
        src.mkdir(exist_ok=True)
        for name, text in sources.items():
            if name != "cflags":
                (src / name).write_text(text)
        env.setup()
        log("verilating the harness (C++ main) ...")
        verilog = [n for n in sources if n.endswith(".v")]
        cmd = [env.which("verilator"), "--cc", "--exe", "--build", "-O3", "--x-assign", "fast", "--x-initial", "fast",
               "-Wno-fatal", "-Wno-WIDTHEXPAND", "-Wno-WIDTHTRUNC", "-Wno-CASEINCOMPLETE", "-Wno-lint", "-Wno-style",
               "-CFLAGS", f"-O2 -I{src} {sources['cflags']}", "-j", "2", "--Mdir", str(workdir / "obj_dir"),
               "--top-module", "nandlab_harness"] + [str(src / n) for n in verilog] + [str(src / "main.cpp"),
                                                                                       str(src / "dcc.c")]
        out = subprocess.run(cmd, cwd=src, capture_output=True, text=True)
        if out.returncode != 0:
            raise NandLabError(f"verilator failed building the harness:\n{(out.stdout + out.stderr)[-3000:]}")
        stamp.write_text(digest)
    return exe


def harness_job(sources, digest, spec_text, job, local_dir=None):
    """One run on a worker: job `job` of the spec `spec_text` on the harness of `sources`. Uses the
    build in `local_dir` when it is there with this digest (a worker on the submitting machine),
    else builds into the worker's cache. Returns {"result": the harness's JSON, "stats": its skip
    statistics or None}."""
    from nandlab import env
    exe = None
    if local_dir is not None and not os.environ.get("NANDLAB_WORKER_OWN_BUILDS"):
        exe = built(local_dir, digest)
    if exe is None:
        exe = build(sources, env.BUILD_DIR / "harness-cache" / digest[:16], log=lambda *_: None)
    with tempfile.NamedTemporaryFile("w", prefix="nandlab-spec", suffix=".json") as f:
        f.write(spec_text)
        f.flush()
        out = subprocess.run([str(exe), f.name, str(job)], capture_output=True, text=True)
    if out.returncode != 0:
        raise NandLabError(f"the harness failed on job {job}: {out.stderr.strip()[-500:]}")
    try:
        stats = json.loads(out.stderr) if out.stderr.strip() else None
    except ValueError:
        stats = None
    return {"result": json.loads(out.stdout), "stats": stats}


# Simulated-SoC sessions (nandlab.replay.sessions) ---------------------------------------------------

def sim_sessions(session, groups, args, jobs=1, scheduler=None, log=print):
    """`session(group, *args, log=...)` for every group of runs, each a Dask task: one simulated SoC built
    (once per build options, in the worker's build directory) and booted, its runs one after another; a
    session returns {point: result}. On the embedded cluster (`jobs` sessions at once, threads of this
    process) the sessions' progress lines come through `log` as they run, numbered; on an existing cluster
    (`scheduler`) a worker builds its own simulator and a line is printed as each session completes.
    Returns every session's results merged."""
    import threading
    from distributed import as_completed
    total = sum(len(g) for g in groups)
    done, lock = [0], threading.Lock()

    def progress(msg):
        with lock:
            done[0] += 1
            log(msg.replace("[*]", f"[{done[0]}/{total}]", 1))

    results = {}
    token = uuid.uuid4().hex
    _PROGRESS[token] = progress
    try:
        with client(scheduler, max(1, min(jobs, len(groups)))) as c:
            remote = scheduler is not None
            futures = {c.submit(_in_session, session, g, args, token, pure=False): g for g in groups}
            for f in as_completed(futures):
                results.update(f.result())
                if remote:
                    with lock:
                        done[0] += len(futures[f])
                    log(f"[{done[0]}/{total}] a session of {len(futures[f])} runs done on the cluster")
    finally:
        del _PROGRESS[token]
    return results


# Progress callables of this process's sim_sessions calls, by token: a task carries the token (a callable
# does not serialise), a task run in this process finds its caller's, one on another machine finds none.
_PROGRESS = {}


def _in_session(session, group, args, token):
    return session(group, *args, log=_PROGRESS.get(token))


# `nandlab scheduler` / `nandlab worker`: Dask's own commands, run in nandlab's environment ---------

def add_parser(sub):
    s = sub.add_parser("scheduler", help="Start a Dask scheduler for sweeps spread over machines.",
        description="Runs Dask's scheduler (dask scheduler) from nandlab's environment. Start workers on any "
        "machine with nandlab installed ('nandlab worker tcp://HOST:PORT'), then give the address to a sweep "
        "(--scheduler tcp://HOST:PORT, or $NANDLAB_SCHEDULER).")
    s.add_argument("--port", type=int, default=8786, help="Port to listen on (default 8786).")
    s.add_argument("--host", default=None, help="Address to listen on (default: every interface).")
    w = sub.add_parser("worker", help="Start a Dask worker for sweeps (joins a 'nandlab scheduler').",
        description="Runs Dask's worker (dask worker) from nandlab's environment, so that its tasks can "
        "verilate and run the harness. A worker on another machine builds each harness once per source digest "
        "into <build dir>/harness-cache.")
    w.add_argument("address", help="The scheduler, tcp://HOST:PORT.")
    w.add_argument("--nthreads", type=int, default=os.cpu_count() or 1,
        help="Simulations this worker runs at once (default: the number of CPUs).")
    w.add_argument("--name", default=None, help="The worker's name on the scheduler (default: Dask's).")


def check_args(args):
    if args.command == "scheduler":
        if not 0 <= args.port < 65536:
            raise NandLabError(f"--port {args.port}: must be 0..65535")
    else:
        scheduler_address(args.address)
        if args.nthreads < 1:
            raise NandLabError(f"--nthreads {args.nthreads}: must be 1 or more")


def cmd(args):
    """Run Dask's scheduler or worker in the foreground until interrupted."""
    import sys
    check_args(args)
    if args.command == "scheduler":
        cmd = [sys.executable, "-m", "distributed.cli.dask_scheduler", "--port", str(args.port),
               "--dashboard-address", ":0"]
        if args.host:
            cmd += ["--host", args.host]
    else:
        cmd = [sys.executable, "-m", "distributed.cli.dask_worker", args.address, "--nthreads", str(args.nthreads),
               "--nworkers", "1", "--no-dashboard"]
        if args.name:
            cmd += ["--name", args.name]
    proc = subprocess.Popen(cmd)
    try:
        return proc.wait()
    except BaseException:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        raise
