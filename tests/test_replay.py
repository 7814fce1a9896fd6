"""`nandlab replay` (issue 16): results decoding, statistics and argument checks on the host; a small
MQSim trace replayed through the FTL on the simulated SoC (checked reads, counts, determinism)."""

import csv
import json
import random
import struct
from pathlib import Path

import pytest

from nandlab import trace
from nandlab.cli import check_command_line
from nandlab.errors import NandLabError
from nandlab.replay import (COLUMNS, RESULT_BYTES, RESULT_FORMAT, analyze, decode_results, histogram, parse_kv,
                            percentile, plot_throughput, request_rows, throughput_series, write_csv, write_parquet)
from nandlab.testing import run_cli as nandlab


@pytest.mark.unit
def test_results_decode_little_endian():
    assert RESULT_BYTES == 20
    data = struct.pack(RESULT_FORMAT, 7, 120, 0xFFFFFFFF, -6, 5, 3, 9) + struct.pack(RESULT_FORMAT, 8, 0, 1, 0, 1, 0, 0)
    assert decode_results(data) == [(7, 120, 0xFFFFFFFF, -6, 5, 3, 9), (8, 0, 1, 0, 1, 0, 0)]
    assert data[:4] == b"\x07\0\0\0"
    with pytest.raises(NandLabError, match="whole number"):
        decode_results(data[:-1])


@pytest.mark.unit
def test_percentiles_nearest_rank_and_histogram():
    vals = list(range(1, 1001))
    assert percentile(vals, 50) == 500 and percentile(vals, 99) == 990 and percentile(vals, 99.9) == 999
    assert percentile([5], 99.9) == 5 and percentile([], 50) is None
    assert percentile([3, 1, 2], 100) == 3
    h = histogram([0.5, 1, 1.5, 3, 1000])
    assert h == [(0, 1, 1), (1, 2, 2), (2, 4, 1), (512, 1024, 1)]
    assert sum(c for _, _, c in histogram(vals)) == len(vals)


@pytest.mark.unit
def test_analyze_checks_ids_and_counts():
    recs = [trace.RingRecord(0, 0, 1, True, 0), trace.RingRecord(0, 1, 2, False, 1)]
    res = [(0, 0, 100, 0, 1, 0, 60), (1, 1, 300, 0, 0, 0, 200)]
    fw = parse_kv("junk\nreplay n=2 reads=1 writes=1 errors=0 mismatches=0 overlap_waits=0 cycles=1000 "
                  "ftl_host_reads=1 ftl_host_writes=1\n", "replay")
    stats, lat = analyze(recs, res, fw, 100_000_000, 4096)
    assert lat == [1.0, 3.0] and stats["counts"]["agree"] and stats["iops"] == pytest.approx(2 / 1e-5)
    assert stats["latency_us_read"]["p50"] == 3.0 and stats["latency_us_write"]["max"] == 1.0
    # The NAND's share of each latency, from the wait clock's cycles (100 MHz: 60 -> 0.6 us).
    assert stats["nand_wait_us_write"]["mean"] == 0.6 and stats["nand_wait_us_read"]["p50"] == 2.0
    fw["ftl_host_writes"] = 2
    assert not analyze(recs, res, fw, 100_000_000, 4096)[0]["counts"]["agree"]
    # Over MPNFM's layer the FTLs see more requests (fills, moves, merges), never fewer.
    assert analyze(recs, res, fw, 100_000_000, 4096, layered=True)[0]["counts"]["agree"]
    fw["ftl_host_writes"], fw["ftl_host_reads"] = 0, 1
    assert not analyze(recs, res, fw, 100_000_000, 4096, layered=True)[0]["counts"]["agree"]
    with pytest.raises(NandLabError, match="bridge lost data"):
        analyze(recs, [(0, 0, 0, 0, 0, 0, 0)] * 2, fw, 100_000_000, 4096)
    assert parse_kv("replay ring=0x40000010 capacity=4", "replay") == {"ring": 0x40000010, "capacity": 4}


@pytest.mark.unit
@pytest.mark.parametrize("open_loop", [False, True])
def test_request_table_csv_parquet_and_throughput_agree(tmp_path, open_loop):
    """The CSV and the Parquet file hold the same rows; completions are arrival (open loop) or submission
    (closed) + latency; the throughput bins add up to every byte moved and every request."""
    import pyarrow.parquet as pq
    rng = random.Random(5)
    recs, res = [], []
    for i in range(300):
        w = rng.random() < 0.4
        recs.append(trace.RingRecord(i * 10, rng.randrange(1000), rng.randrange(1, 9), w, i))
        res.append((i, i * 10 + rng.randrange(50), rng.randrange(100, 900_000), 0, int(w) | (2 if i % 7 == 0 else 0), 0,
                    rng.randrange(0, 100)))
    rows = list(request_rows(recs, res, 100_000_000, open_loop))
    r0 = rows[3]
    assert r0[COLUMNS.index("latency_us")] == pytest.approx(res[3][2] / 100)
    start = recs[3].time_us if open_loop else res[3][1]
    assert r0[COLUMNS.index("complete_us")] == pytest.approx(start + res[3][2] / 100)
    write_csv(tmp_path / "r.csv", rows)
    write_parquet(tmp_path / "r.parquet", rows)
    with open(tmp_path / "r.csv") as f:
        from_csv = list(csv.DictReader(f))
    table = pq.read_table(tmp_path / "r.parquet").to_pylist()
    assert len(from_csv) == len(table) == 300 and list(table[0]) == list(COLUMNS)
    for c, p in zip(from_csv, table):
        assert all(str(p[k]) == c[k] for k in COLUMNS), (c, p)
    assert sum(1 for p in table if p["overlap_wait"]) == len(range(0, 300, 7))
    series = throughput_series(rows, 4096, bins=40)
    assert len(series) == 40
    width = series[0]["width_us"]
    moved = sum((b["read_mb_s"] + b["write_mb_s"]) * width for b in series)
    assert moved == pytest.approx(sum(r.count for r in recs) * 4096)
    assert sum(b["write_mb_s"] * width for b in series) == pytest.approx(sum(r.count for r in recs if r.is_write) * 4096)
    assert sum(b["iops"] * width / 1e6 for b in series) == pytest.approx(300)
    plot_throughput(tmp_path / "t.png", series, "test")
    assert (tmp_path / "t.png").stat().st_size > 1000
    write_parquet(tmp_path / "empty.parquet", [])
    assert pq.read_table(tmp_path / "empty.parquet").num_rows == 0 and throughput_series([], 4096) == []


@pytest.mark.unit
def test_telemetry_is_put_on_the_replay_time_axis(tmp_path):
    """Frames through the real decoder: those before `telemetry restart` (the sequence starts again) are
    dropped; the recording's times are us from the replay's t0; the summary adds windows, violations and
    the peak against PB; the figures are written."""
    from nandlab import plots, telemetry
    from nandlab.gateware.telemetry import frame as fmt
    from nandlab.replay import TelemetryCapture, telemetry_outputs
    t0, dec, cap = 7_000_000, telemetry.Decoder(), TelemetryCapture()

    def frame(seq, ts, peak):
        vals = {"seq": seq, "timestamp": ts, "cycles": 1000, "windows": 25, "violations": int(peak > 4096),
                "pb": 4096, "total_sum": 2000 * 1000, "total_max": peak, "key": 0xFF,
                "die0_sum": 1000 * 1000, "die0_max": 1500, "die1_sum": 1000 * 1000, "die1_max": 1500}
        return fmt.encode(vals, 2)
    stream = frame(40, 100, 9999) + frame(41, 1100, 9999)                  # before the restart
    stream += b"".join(frame(k, t0 + 1000 * k, 3000 + 1600 * (k == 3)) for k in range(6))
    for f in dec.feed(stream):
        cap.on_frame(f)
    assert [f["seq"] for f in cap.frames] == list(range(6)) and cap.complete(6) and not cap.complete(7)
    summary, files = telemetry_outputs(cap.frames, t0, 100_000_000, tmp_path, "test, 2 dies")
    assert summary == {"frames": 6, "windows": 150, "violations": 1, "peak_x_pb": pytest.approx(4600 / 4096)}
    cols = plots.read_recording(files["telemetry"])
    assert cols["time_us"] == pytest.approx([10.0 * k for k in range(6)])     # 1000 cycles at 100 MHz
    assert all(Path(files[k]).stat().st_size > 1000 for k in ("current", "dies"))
    assert telemetry_outputs([], t0, 100_000_000, tmp_path / "..", "x")[0]["frames"] == 0


@pytest.mark.unit
@pytest.mark.parametrize("args, message", [
    (["--qd", "33"], "--qd 33: takes 0 (open loop) .. 32"),
    (["--qd", "-1"], "--qd -1"),
    (["--time-scale", "-1"], "--time-scale -1.0: a finite number >= 0"),
    (["--time-scale", "nan"], "--time-scale nan"),
    (["--dies", "0"], "--dies 0: takes 1..16"),
    (["--max-requests", "0"], "--max-requests 0: at least 1"),
    (["--target", "arty"], "--target and --build-dir name the build of a running SoC: give its --server too"),
    (["--server", "99999"], "--server 99999 is not a port number"),
    (["--server", "host:x"], "--server host:x: expected HOST:PORT"),
    (["--server", "1234", "--target", "nope"], "unknown target 'nope'"),
    (["--server", "1234", "--blocks", "16"], "--blocks: a running SoC's dies are what they were built as"),
])
def test_bad_arguments_are_refused_before_any_build(tmp_path, args, message):
    t = tmp_path / "t.mqsim"
    t.write_text("0 0 0 8 0\n")
    with pytest.raises(NandLabError, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        check_command_line(["replay", str(t), "--format", "mqsim", *args])
    with pytest.raises(NandLabError, match="no such file"):
        check_command_line(["replay", str(tmp_path / "none"), "--format", "mqsim"])
    with pytest.raises(NandLabError, match="synth preset"):
        check_command_line(["replay", "R42", "--format", "synth"])
    out = nandlab("replay", str(t), "--format", "mqsim", *args)
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert out.stderr.count("\n") == 1 and message.split(":")[0] in out.stderr, out.stderr


@pytest.mark.unit
def test_arguments_are_the_command_lines(tmp_path):
    """replay.arguments parses and checks through `nandlab replay`'s own parser: the same namespace as the
    command line, the same refusals."""
    from nandlab import replay
    t = tmp_path / "t.mqsim"
    t.write_text("0 0 0 8 0\n")
    args = replay.arguments(t, format="mqsim", qd=8, nand_sdw=True, mpnfm=False, arch=None, out=tmp_path / "o")
    assert vars(args) == vars(check_command_line(["replay", str(t), "--format", "mqsim", "--qd", "8", "--nand-sdw",
                                                  "--out", str(tmp_path / "o")]))
    assert args.command == "replay" and args.nand_sdw and not args.mpnfm and args.arch is None and args.dies == 4
    with pytest.raises(NandLabError, match="--qd 33"):
        replay.arguments(t, format="mqsim", qd=33)
    with pytest.raises(NandLabError, match="unrecognized arguments: --no-such"):
        replay.arguments(t, format="mqsim", no_such=1)


class FakeSim:
    """replay.sessions' simulator faked (build, boot, run, as-booted image): what each was asked, and the
    stats every run returns. `stamp`: the builds write it as their inputs' stamp (None: no stamp)."""
    def __init__(self, monkeypatch, build_root, stamp="inputs-1"):
        import contextlib
        import threading
        from nandlab import env, replay
        from nandlab.soc.targets import sim as simtarget
        self.built, self.boots, self.runs, self.fresh, self.stamp = [], [], [], [], stamp
        ops = {"exploitation_pages": 0.5, "exploitation_operations": 0.25, "program": {"by_pages": {1: 3, 2: 4}},
               "read": {"by_pages": {}}}
        lat = {"mean": 100.0, "p50": 90.0, "p99": 200.0}
        self.stats = {"read_bytes": 1000, "write_bytes": 1000, "requests": 10, "writes": 5, "soc_seconds": 0.001,
                      "iops": 1e4, "die_operations": ops, "latency_us_all": lat, "latency_us_write": lat, "errors": 0,
                      "mismatches": 0}
        self.fw = {"ftl_nand_programs": 4, "ftl_rmw_reads": 2, "ftl_nand_erases": 1, "fc_sectors": 3}
        monkeypatch.setattr(env, "BUILD_DIR", build_root)
        monkeypatch.setattr(simtarget, "build_dir_name", lambda dies, **nand: f"fake-{dies}-{nand['part']}")
        # Every build in the calling thread, before any session boots (LiteX builds are not thread-safe: the
        # embedded cluster's sessions are threads); the sessions are handed the built directories.
        monkeypatch.setattr(simtarget, "build_all", self.build_all)

        @contextlib.contextmanager
        def booted(gateware, build_dir, run_name):
            self.boots.append((build_dir.name, run_name))
            yield "console", "bus"
        self.main_thread = lambda: threading.current_thread() is threading.main_thread()
        monkeypatch.setattr(replay, "booted", booted)
        monkeypatch.setattr(replay, "run_checked", self.run_checked)
        monkeypatch.setattr(replay, "as_booted", self.as_booted)
        monkeypatch.setattr(replay, "PARALLEL_BUILDS", False)        # (the processes would not see the patches)

    def build_all(self, build_dir, dies, **nand):
        self.built.append((build_dir.name, dies, self.main_thread(), len(self.boots)))
        build_dir.mkdir(parents=True, exist_ok=True)
        if self.stamp:
            (build_dir / ".nandlab-inputs").write_text(self.stamp)
        return build_dir / "gateware"

    def run_checked(self, args, console, bus, what):
        self.runs.append((Path(args.out), args.dies, what))
        return self.stats, self.fw, {"ftl_span": 4}, 1.5

    def as_booted(self, console, bus, image=None):
        self.fresh.append(image)    # every run starts from the SoC as booted: an image saved first, then loaded
        return image or f"image{len(self.fresh)}"

    def summary(self):
        return {"stats": self.stats, "firmware": self.fw, "ring": {"ftl_span": 4}, "wall_seconds": 1.5}


def study_groups(paper):
    import importlib
    mod = importlib.import_module(f"nandlab.{paper}")
    if paper == "planes":
        groups = [[mod.Point(1, "CNFM", "MSN"), mod.Point(1, "DW-NFM", "MSN")], [mod.Point(2, "CNFM", "MSN")]]
    else:
        groups = [[mod.Point("MPNFM 32+4 KB", "MSR"), mod.Point("SPNFM 32 KB", "MSR")], [mod.Point("SPNFM 2 KB", "MSR")]]
    return mod, groups


@pytest.mark.unit
@pytest.mark.parametrize("paper", ["planes", "mpnfm"])
def test_sessions_build_boot_and_run_each_group_once(tmp_path, monkeypatch, paper):
    """replay.sessions with the simulator faked: one build and boot per group (the first run's dies and
    options), every run with its study's arguments in its own directory, results and progress lines the
    study's (nandlab.planes, nandlab.mpnfm)."""
    from nandlab import replay
    sim = FakeSim(monkeypatch, tmp_path / "build", stamp=None)
    mod, groups = study_groups(paper)
    lines = []
    results = replay.sessions(mod.STUDY, groups, 20, 1, tmp_path, jobs=2, log=lines.append)
    points = [p for g in groups for p in g]
    assert set(results) == set(points)
    for p in points:
        assert results[p] == mod.result_of(p, sim.summary())
    assert sorted(sim.runs) == sorted((tmp_path / mod.run_name(p), mod.run_args(p, 20, 1, tmp_path / "x").dies,
                                       f"{mod.STUDY.name} run {tuple(p)}") for p in points)
    built, boots = sim.built, sim.boots
    assert len(built) == 2 and {b for b, _ in boots} == {b[0] for b in built} and built[0][0] != built[1][0]
    assert [(main, booted) for _, _, main, booted in built] == [(True, 0), (True, 0)]
    # Sessions of one build may run at once: each boots in its own run directory, named by its first run.
    sessions = replay.balanced(groups, mod.STUDY.cost, 2)
    assert sorted(r for _, r in boots) == sorted(f"{mod.STUDY.boot}-{mod.run_name(c[0])}" for c in sessions)
    assert len({r for _, r in boots}) == len(boots) == len(sessions) > len(groups)
    assert len(sim.fresh) == len(points) and sim.fresh.count(None) == len(sessions)
    assert sorted(ln.split("]")[0] for ln in lines) == [f"{mod.STUDY.name}: [{i}/3" for i in (1, 2, 3)]
    assert all(ln.endswith(" s)") for ln in lines)
    assert all(any(f"] {mod.progress(p, results[p])} (" in ln for ln in lines) for p in points)
    assert not list(tmp_path.rglob(replay.RESULT_FILE))       # (no inputs stamp: nothing kept)


@pytest.mark.unit
@pytest.mark.parametrize("paper", ["planes", "mpnfm"])
def test_a_study_resumes_where_it_stopped(tmp_path, monkeypatch, paper):
    """The same command again reuses every run kept under the same simulator inputs and arguments (no boot,
    no run, the same results), runs again what was lost (a result file cut short) and everything when the
    simulator's inputs changed or the runs' arguments did (another request count)."""
    from nandlab import replay
    sim = FakeSim(monkeypatch, tmp_path / "build")
    mod, groups = study_groups(paper)
    points = [p for g in groups for p in g]
    first = replay.sessions(mod.STUDY, groups, 20, 1, tmp_path, jobs=1)
    assert len(sim.runs) == 3 and len(list(tmp_path.rglob(replay.RESULT_FILE))) == 3
    sim.runs.clear(), sim.boots.clear()
    lines = []
    again = replay.sessions(mod.STUDY, groups, 20, 1, tmp_path, jobs=1, log=lines.append)
    assert again == first
    if paper == "planes":
        assert again[points[0]]["program_by_pages"] == {1: 3, 2: 4}                     # (int keys kept)
    assert sim.runs == [] and sim.boots == [] and len(lines) == 3 and all("kept from an earlier run" in ln for ln in lines)
    (tmp_path / mod.run_name(points[1]) / replay.RESULT_FILE).write_bytes(b"\x80\x04")    # cut short
    replay.sessions(mod.STUDY, groups, 20, 1, tmp_path, jobs=1)
    assert [r[0].name for r in sim.runs] == [mod.run_name(points[1])] and len(sim.boots) == 1
    sim.runs.clear()
    replay.sessions(mod.STUDY, groups, 21, 1, tmp_path, jobs=1)                       # other arguments
    assert len(sim.runs) == 3
    sim.runs.clear()
    sim.stamp = "inputs-2"                                                             # other sources
    replay.sessions(mod.STUDY, groups, 21, 1, tmp_path, jobs=1)
    assert len(sim.runs) == 3


def test_sessions_are_balanced_over_the_workers():
    """A group of runs costing more than a quarter of a worker's share is cut into consecutive pieces; every
    run is in exactly one session, in its group's order, and no session mixes builds; the costliest session
    comes first (it starts first)."""
    from nandlab import replay
    groups = [list(range(0, 13)), list(range(100, 106)), list(range(200, 206))]
    cost = lambda p: 3 if p < 100 else 4 if p < 200 else 6
    chunks = replay.balanced(groups, cost, jobs=2)
    assert sorted(p for c in chunks for p in c) == sorted(p for g in groups for p in g)
    assert all(any(c == g[g.index(c[0]):g.index(c[0]) + len(c)] for g in groups if c[0] in g) for c in chunks)
    costs = [sum(map(cost, c)) for c in chunks]
    assert costs == sorted(costs, reverse=True) and len(chunks) > len(groups)
    share = sum(costs) / 2 / 4
    assert max(costs) <= 1.5 * share, costs
    # Two workers taking the sessions in this order (each the next when free) end within a session of each other.
    ends = [0, 0]
    for c in costs:
        ends[ends.index(min(ends))] += c
    assert abs(ends[0] - ends[1]) <= max(costs)
    assert replay.balanced([[1, 2, 3]], None, jobs=2) == [[1], [2], [3]]   # 1 each: a quarter share of 3 / 8
    # a quarter share of 10 / 8: the group of 8 in 6 pieces (of 2), the group of 2 in 2; ties keep their order
    assert replay.balanced([[1, 2], [3, 4, 5, 6, 7, 8, 9, 10]], None, jobs=2) == [[3, 4], [5, 6], [7, 8], [9, 10],
                                                                                 [1], [2]]
    # one worker: the groups whole (a boot per build), the costliest first
    assert replay.balanced([[1, 2], [3, 4, 5]], None, jobs=1) == [[3, 4, 5], [1, 2]]


def small_mqsim_trace(path, n=200, seed=16):
    """n MQSim requests (time_ns device lba size type): sizes 1-16 sectors of 512 B, mixed reads and
    writes (writes first so that reads find data), mostly within 256 KiB so that many overlap."""
    rng, t, lines = random.Random(seed), 0, []
    for i in range(n):
        t += rng.randrange(0, 20000)
        lba = rng.randrange(0, 512) if rng.random() < 0.7 else rng.randrange(0, 1 << 20)
        lines.append(f"{t} 0 {lba} {rng.randrange(1, 17)} {0 if i < 20 or rng.random() < 0.5 else 1}")
    path.write_text("\n".join(lines) + "\n")
    return path


SMALL_N = 120          # requests of the small trace the SoC replays (make test's share of its time)


def _replay(tmp_path, name, *extra):
    t = small_mqsim_trace(tmp_path / "small.mqsim", n=SMALL_N)
    out_dir = tmp_path / name
    out = nandlab("replay", str(t), "--format", "mqsim", "--qd", "8", "--out", str(out_dir), "--json", *extra,
                  timeout=3600)
    assert out.returncode == 0, out.stderr[-3000:]
    s = json.loads(out.stdout)
    with open(out_dir / "requests.csv") as f:
        rows = [(r["id"], r["op"], r["submit_us"], r["latency_cycles"], r["result"]) for r in csv.DictReader(f)]
    return s, rows, out_dir


@pytest.mark.sim
def test_replay_small_mqsim_trace_on_the_soc(tmp_path):
    """The replay through the multi-plane scheduler (queue 32) on DW-NFM dies (the no-scheduler path:
    tests/test_sim_soc.py::test_streamed_replay_on_a_running_soc)."""
    s, rows, out_dir = _replay(tmp_path, "a", "--sched", "32", "--arch", "DW-NFM")
    st = s["stats"]
    assert st["requests"] == SMALL_N and st["reads"] and st["writes"]
    assert st["errors"] == 0 and st["mismatches"] == 0 and st["failed_requests"] == 0
    assert st["counts"]["agree"] and st["counts"]["ftl_host_reads"] == st["reads"]
    assert st["counts"]["ftl_host_writes"] == st["writes"]
    assert st["overlap_waits"] > 0                         # the trace overlaps on purpose
    assert s["mapping"]["requests_out"] == SMALL_N and s["read"]["requests"] == SMALL_N
    assert len(rows) == SMALL_N and all(r[4] == "0" for r in rows)
    assert (out_dir / "latency_cdf.png").stat().st_size > 1000 and (out_dir / "throughput.png").stat().st_size > 1000
    import pyarrow.parquet as pq
    assert pq.read_table(out_dir / "requests.parquet").column("latency_cycles").to_pylist() == [int(r[3]) for r in rows]
    moved = sum((b["read_mb_s"] + b["write_mb_s"]) * b["width_us"] for b in s["throughput_over_time"])
    assert moved == pytest.approx(st["read_bytes"] + st["write_bytes"])
    # Telemetry over the replay: every frame of the run arrived, on the requests' time axis (0 = the
    # replay's start; the capture starts a little before it, at `telemetry restart`, and covers it).
    tel = s["telemetry"]
    assert tel["frames"] > 0 and tel["windows"] > 0 and (out_dir / "telemetry_current.png").exists()
    from nandlab import plots
    rec = plots.read_recording(out_dir / "telemetry.csv")
    times, period = rec["time_us"], max(rec["period_us"])
    assert len(times) == tel["frames"] and times[0] <= 0 < st["soc_seconds"] * 1e6 <= times[-1] + 2 * period
    assert st["latency_us_all"]["p50"] <= st["latency_us_all"]["p99"] <= st["latency_us_all"]["max"]
    # What the dies counted over the run is what the FTL says it issued, page for page; the scheduler
    # paired some of it into 2-plane operations (the dies count those, not the firmware).
    dies, fw = st["die_operations"], s["firmware"]
    assert dies["dies"] == 4 and s["replay"]["sched"] == 32 and s["replay"]["arch"] == "DW-NFM"
    ftl = {"program": fw["ftl_nand_programs"] + fw["ftl_meta_programs"], "read": fw["ftl_nand_reads"],
           "erase": fw["ftl_nand_erases"]}
    for op, n in ftl.items():
        by = dies[op]["by_pages"]                            # (JSON: page counts as strings)
        assert dies[op]["pages"] == n and set(by) <= {"1", "2"}, (op, dies[op], fw)
    assert dies["program"]["by_pages"]["2"] > 0 and dies["exploitation_pages"] > 0, dies
    sched = fw["sched"]
    multi = sum(dies[op]["by_pages"]["2"] for op in ftl)
    assert sched["sched_decisions"] > 0 and sched["sched_groups_2"] >= multi and sched["port_groups"] >= multi
    assert 0 < sched["sched_mean_cycles"] <= sched["sched_max_cycles"]
    run = sched["run"]                                   # the measured run's share of the counters
    assert 0 < run["sched_decisions"] < sched["sched_decisions"] and run["sched_groups_2"] >= multi
    assert 0 < run["sched_mean_cycles"] <= sched["sched_max_cycles"]


@pytest.mark.sim
@pytest.mark.slow
def test_replay_rerun_gives_identical_results(tmp_path):
    """The simulation is deterministic: a second replay of the same trace on a fresh SoC gives every
    request the same submission time and latency, to the SoC cycle, and the firmware the same counts. Not
    `t0`, the SoC time the replay started: the host's commands reach the SoC at cycles its own scheduling
    decides (two runs on main differed by 730 k cycles)."""
    s1, rows1, _ = _replay(tmp_path, "a")
    s2, rows2, _ = _replay(tmp_path, "b")
    assert rows1 == rows2
    assert s1["firmware"]["t0"] != 0 and s2["firmware"]["t0"] != 0
    assert {**s1["firmware"], "t0": 0} == {**s2["firmware"], "t0": 0}


@pytest.mark.sim
def test_firmware_refuses_bad_records_up_front(tmp_path):
    """`ftl replay run` checks every record before it replays any: the first bad one is named (index,
    id, why) and nothing runs. Also `ftl workload` (its pattern functions are shared with the replay)
    still reads back what it wrote."""
    from nandlab.simulator import SimConsole, prepare_run_dir, command_failed
    from nandlab.testing import build_target
    from nandlab import env
    assert build_target("sim").returncode == 0
    gateware = env.BUILD_DIR / "sim" / "gateware"
    with SimConsole(gateware, prepare_run_dir(gateware, tmp_path / "run")) as c:
        c.boot(timeout=300)
        assert "error" in c.command("ftl replay ring") and "no FTL mounted" in c.command("ftl replay ring")
        assert not command_failed(c.command("ftl format", timeout=1800))
        out = c.command("ftl workload 500 30 8", timeout=1800)
        assert not command_failed(out) and "0 sectors differ" in out, out
        ring = parse_kv(c.command("ftl replay ring"), "replay")
        assert ring["capacity"] == 65536 and ring["record_bytes"] == 16 and ring["result_bytes"] == RESULT_BYTES
        good = (0, 5, 1 | 1 << 16, 100)                                    # a write of sector 5, id 100
        cases = [((0, 0, 0, 7), "record 1 (id 7, sectors 0 + 0): count 0"),
                 ((0, ring["sectors"] - 1, 2, 8), "beyond the FTL's capacity"),
                 ((0, 0, 17, 9), "larger than a slot's buffer"),
                 ((0, 0, 1 | 2 << 16, 10), "reserved flag bits")]
        for words, message in cases:
            for i, w in enumerate(good + words):
                assert c.command(f"mw {ring['ring'] + 4 * i:#x} {w:#x}") == ""
            out = c.command("ftl replay run 2 1")
            assert command_failed(out) and message in out and "replay n=" not in out, out
        for i, w in enumerate(good):
            c.command(f"mw {ring['ring'] + 4 * i:#x} {w:#x}")
        out = c.command("ftl replay run 1 1")
        fw = parse_kv(out, "replay")
        assert fw["writes"] == 1 and fw["ftl_host_writes"] == 1 and fw["mismatches"] == 0, out
        for bad in ("ftl replay run 0 1", "ftl replay run 1 33", f"ftl replay run {ring['capacity'] + 1} 1",
                    "ftl replay run 1 0 1000001", "ftl replay bogus", "ftl replay run 1 1 1000 kept",
                    "ftl replay run 1 1 1000 keep more"):
            assert command_failed(c.command(bad)), bad
        # Streaming: each record is checked when it is taken; a bad one stops the run there, named, after
        # what came before it ran (here: record 0, a write of sector 5, then record 1 with count 0).
        for i, w in enumerate(good + (0, 0, 0, 7)):
            c.command(f"mw {ring['ring'] + 4 * i:#x} {w:#x}")
        c.command(f"mw {ring['stream']:#x} 2")                               # produced = 2
        out = c.command("ftl replay stream 2 1 2")
        assert command_failed(out) and "record 1 (id 7, sectors 0 + 0): count 0" in out, out
        fw = parse_kv(out, "replay")
        assert fw["n"] == 1 and fw["writes"] == 1 and fw["window"] == 2, out
        for bad in ("ftl replay stream 1 1 0", f"ftl replay stream 1 1 {ring['capacity'] + 1}", "ftl replay stream 1 1"):
            assert command_failed(c.command(bad)), bad
        for i, w in enumerate(good):
            c.command(f"mw {ring['ring'] + 4 * i:#x} {w:#x}")
        assert parse_kv(c.command("ftl replay run 1 1"), "replay")["writes"] == 1
        # keep: continues the previous run's versions; a read of sector 5 checks the write above.
        for i, w in enumerate((0, 5, 1, 101)):                             # a read of sector 5, id 101
            c.command(f"mw {ring['ring'] + 4 * i:#x} {w:#x}")
        fw = parse_kv(c.command("ftl replay run 1 1 1000 keep"), "replay")
        assert fw["reads"] == 1 and fw["mismatches"] == 0
        out = c.command("ftl replay run 1 1")                              # fresh: sector 5 expected unwritten
        assert "mismatch: ftl replay: request 101, sector 5 (write version 0)" in out and "mismatches=1" in out, out
        # Any FTL command outside the replay makes the versions stale: keep is refused until a fresh run.
        assert not command_failed(c.command("ftl write 5 1"))
        out = c.command("ftl replay run 1 1 1000 keep")
        assert command_failed(out) and "'keep' needs an earlier run" in out, out


@pytest.mark.sim
@pytest.mark.slow
def test_preconditioned_replay_reads_what_the_preconditioning_wrote(tmp_path):
    """--precondition steady on an 8 MiB device (4 dies x 16 blocks): every sector written once, then
    the capacity again in random sectors; garbage collection ran (erases, moves); a read-only trace
    afterwards finds every sector it reads as the preconditioning left it (0 mismatches: the versions
    were kept), and its counters are its own."""
    rng, t, lines = random.Random(3), 0, []
    for i in range(100):
        t += rng.randrange(0, 20000)
        lines.append(f"{t} 0 {rng.randrange(0, 8000) * 8} 8 1")                  # 4 KiB reads only
    trace = tmp_path / "reads.mqsim"
    trace.write_text("\n".join(lines) + "\n")
    out = nandlab("replay", str(trace), "--format", "mqsim", "--blocks", "16", "--precondition", "steady",
                  "--out", str(tmp_path / "out"), "--json", timeout=5400)
    assert out.returncode == 0, out.stderr[-3000:]
    s = json.loads(out.stdout)
    pre = s["mapping"]["precondition"]
    sectors = pre["capacity_sectors"]
    assert pre["mode"] == "steady" and pre["errors"] == pre["mismatches"] == 0
    assert pre["write_sectors"] == 2 * sectors                      # fill + 1 x capacity of single sectors
    assert pre["requests"] == -(-sectors // 16) + sectors and pre["n"] == pre["requests"]
    assert pre["ftl_nand_erases"] > 0 and pre["ftl_gc_moves"] > 0    # a used device: GC ran
    st = s["stats"]
    assert st["reads"] == 100 and st["writes"] == 0 and st["mismatches"] == 0 and st["errors"] == 0
    assert s["firmware"]["ftl_host_writes"] == 0 and s["firmware"]["n"] == 100
    assert s["replay"]["precondition"] == "steady" and s["replay"]["blocks"] == 16


@pytest.mark.sim
@pytest.mark.slow
def test_a_run_does_not_depend_on_the_runs_before_it():
    """A sweep's run gives the same numbers, to the SoC cycle, whether it is a session's first run or comes
    after other runs on the same simulator (replay.as_booted: the arrays as booted and a reset of the SoC
    between runs), so results do not depend on how a sweep is cut into sessions. Without it `ftl format`
    kept the earlier runs' sequence numbers and dirty blocks and the CPU its caches: DW-NFM at 4 ways
    gave 7.91 MB/s after CNFM's runs and 7.48 as a session's first run."""
    from nandlab import planes
    from nandlab.planes import Point
    alone = planes.run_points([Point(4, "DW-NFM", "Financial1")], n=100, seed=1)
    after = planes.run_points([Point(4, "CNFM", "Financial1"), Point(4, "CNFM", "TPC_E"),
                               Point(4, "DW-NFM", "Financial1")], n=100, seed=1, jobs=1)
    keys = ("soc_seconds", "mb_s", "exploitation_pages", "program_by_pages", "read_by_pages", "sched_mean_cycles",
            "sched_decisions", "latency_us_p50", "latency_us_p99", "requests")
    assert after[1]["workload"] == "TPC_E" and after[1]["soc_seconds"] != alone[0]["soc_seconds"]
    assert {k: after[2][k] for k in keys} == {k: alone[0][k] for k in keys}
    assert alone[0]["requests"] >= 100 and alone[0]["mismatches"] == 0
