"""Trace parsers, mapping, synthetic generators and ring records of `nandlab replay` (sw/host/nandlab/trace.py)."""

import gzip
import json
import statistics

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase

from nandlab import env, trace as tr
from nandlab.errors import NandLabError
from nandlab.testing import run_cli as nandlab
from nandlab.trace import Mapper, Request, TraceError, TraceReader

# The public example lines of ../shared/REFERENCE.md "Trace formats".
EXAMPLES = {
    "mqsim": ("11413000 0 657728 16 1", (0, 0, 657728 * 512, 16 * 512, False)),
    "ssdsim": ("0 0 303567 7 0", (0, 0, 303567 * 512, 7 * 512, True)),
    "spc": ("0,303567,3584,w,0.000000", (0, 0, 303567 * 512, 3584, True)),
    "msr": ("128166372003061629,hm,0,Write,7014912,4096,26", (0, 0, 7014912, 4096, True)),
}


def _write(tmp_path, text, name="t.trace"):
    path = tmp_path / name
    path.write_text(text)
    return path


def _read(path, fmt, **kw):
    return list(TraceReader(path, fmt, **kw))


def _refused(tmp_path, fmt, text):
    path = _write(tmp_path, text)
    with pytest.raises(TraceError) as e:
        _read(path, fmt)
    return e.value, path


@pytest.mark.unit
@pytest.mark.parametrize("fmt", tr.FORMATS)
def test_public_example_parses(tmp_path, fmt):
    line, (t, dev, off, size, is_write) = EXAMPLES[fmt]
    reqs = _read(_write(tmp_path, line + "\n"), fmt)
    assert reqs == [Request(0, t, dev, off, size, is_write, 1)]


@pytest.mark.unit
def test_times_are_relative_and_in_ns(tmp_path):
    cases = {
        "mqsim": "1000 0 0 8 0\n1500 0 8 8 1\n",
        "ssdsim": "1000 0 0 8 0\n1500 0 8 8 1\n",
        "spc": "0,0,4096,w,1.000000\n0,8,4096,R,1.0000005\n",
        "msr": "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n"
               "128166372003061629,hm,0,Write,0,4096,26\n128166372003061634,hm,0,Read,4096,4096,26\n",
    }
    for fmt, text in cases.items():
        reqs = _read(_write(tmp_path, text, f"{fmt}.t"), fmt)
        assert [r.time_ns for r in reqs] == [0, 500], fmt
        assert [r.is_write for r in reqs] == [True, False], fmt
        assert reqs[1].offset == 4096 and reqs[1].index == 1


@pytest.mark.unit
def test_blank_comment_lines_and_crlf_are_allowed(tmp_path):
    path = _write(tmp_path, "# MQSim trace\n\n  \n1 0 0 8 0\r\n   # indented comment\n2 0 8 8 1")
    reader = TraceReader(path, "mqsim")
    assert [r.line for r in reader] == [4, 6]
    assert reader.ignored == 4 and reader.report()["skipped_total"] == 0


@pytest.mark.unit
def test_spc_extra_fields_are_ignored(tmp_path):
    reqs = _read(_write(tmp_path, "1,10,512,r,0.5,extra,more\n"), "spc")
    assert reqs[0].device == 1 and reqs[0].offset == 5120


# Every malformed case: (format, text, line, field, reason, fragment of the message).
MALFORMED = [
    ("mqsim", "1 0 0 8\n", 1, "fields", "field-count", "expected 5 fields"),
    ("mqsim", "1 0 0 8 1 7\n", 1, "fields", "field-count", "got 6"),
    ("msr", "1,hm,0,Read,0,4096\n", 1, "fields", "field-count", "expected 7 fields"),
    ("spc", "0,1,512,r\n", 1, "fields", "field-count", "at least 5"),
    ("mqsim", "1 0 0 8 1\n1 0 x 8 1\n", 2, "lba", "non-numeric", "'x'"),
    ("ssdsim", "1 0 0 8.5 1\n", 1, "size", "non-numeric", "'8.5'"),
    ("msr", "1.5,hm,0,Read,0,4096,3\n", 1, "timestamp", "non-numeric", "'1.5'"),
    ("mqsim", "1 0 0 ٣ 1\n", 1, "fields", "encoding", "not ASCII"),
    ("mqsim", "-5 0 0 8 1\n", 1, "time", "negative", "'-5'"),
    ("ssdsim", "5 0 -8 8 1\n", 1, "lsn", "negative", "'-8'"),
    ("spc", "0,1,-512,r,0\n", 1, "size", "negative", "'-512'"),
    ("msr", "1,hm,0,Read,-4096,4096,3\n", 1, "offset", "negative", "'-4096'"),
    ("mqsim", "1 0 0 8 2\n", 1, "type", "unknown-opcode", "'2'"),
    ("ssdsim", "1 0 0 8 r\n", 1, "op", "unknown-opcode", "'r'"),
    ("spc", "0,1,512,x,0\n", 1, "opcode", "unknown-opcode", "'x'"),
    ("msr", "1,hm,0,read,0,4096,3\n", 1, "type", "unknown-opcode", "'read'"),
    ("mqsim", "1 0 0 0 1\n", 1, "size", "zero-size", "zero"),
    ("msr", "1,hm,0,Read,0,0,3\n", 1, "size", "zero-size", "zero"),
    ("spc", f"0,1,{(1 << 30) + 1},r,0\n", 1, "size", "out-of-range", "above"),
    ("mqsim", f"1 0 {2**60} 8 1\n", 1, "lba", "out-of-range", "above"),
    ("mqsim", f"1 {2**32} 0 8 1\n", 1, "device", "out-of-range", "above"),
    ("mqsim", "1 0 " + "9" * 50 + " 8 1\n", 1, "lba", "out-of-range", "above"),
    ("mqsim", "5 0 0 8 1\n4 0 0 8 1\n", 2, "time", "time-backwards", "earlier"),
    ("spc", "0,1,512,r,0.5\n0,1,512,r,0.4\n", 2, "timestamp", "time-backwards", "'0.4'"),
    ("mqsim", "1 0 0 8 1\n2 0 0", 2, "fields", "truncated", "truncated last line"),
    ("msr", "1,hm,0,Read,0,4096,3\n2,hm,0,Re", 2, "fields", "truncated", "truncated last line"),
    ("mqsim", "1 0 0 8 1\n" + "7" * 5000 + "\n", 2, "fields", "too-long", "longer than"),
]


@pytest.mark.unit
@pytest.mark.parametrize("fmt,text,line,field,reason,fragment", MALFORMED,
                         ids=[f"{m[0]}-{m[4]}-{i}" for i, m in enumerate(MALFORMED)])
def test_malformed_line_is_refused_with_file_line_field(tmp_path, fmt, text, line, field, reason, fragment):
    err, path = _refused(tmp_path, fmt, text)
    assert (err.line, err.field, err.reason) == (line, field, reason)
    prefix = f"{path}:{line}: field {field}: " if field != "fields" else f"{path}:{line}: fields: "
    assert str(err).startswith(prefix), str(err)
    assert fragment is None or fragment in str(err)
    assert isinstance(err, NandLabError)


@pytest.mark.unit
def test_non_ascii_bytes_are_refused(tmp_path):
    path = tmp_path / "bin.trace"
    path.write_bytes(b"1 0 0 8 1\n\xff\xfe 0 0 8 1\n")
    with pytest.raises(TraceError, match=r"bin.trace:2: fields: not ASCII"):
        _read(path, "mqsim")


@pytest.mark.unit
def test_complete_last_line_without_newline_is_fine(tmp_path):
    assert len(_read(_write(tmp_path, "1 0 0 8 1\n2 0 8 8 0"), "mqsim")) == 2


@pytest.mark.unit
def test_skip_bad_counts_each_reason(tmp_path):
    text = ("1 0 0 8 1\n1 0 x 8 1\n1 0 0 0 1\n1 0 0 8 9\n-1 0 0 8 1\n0 0 0 8 1\n1 0 0 8\n"
            "3 0 16 8 0\n" + "7" * 5000 + "\n4 0 0")
    reader = TraceReader(_write(tmp_path, text), "mqsim", skip_bad=True)
    reqs = list(reader)
    assert [r.line for r in reqs] == [1, 8] and [r.index for r in reqs] == [0, 1]
    rep = reader.report()
    assert rep["skipped"] == {"field-count": 1, "negative": 1, "non-numeric": 1, "time-backwards": 1,
                              "too-long": 1, "truncated": 1, "unknown-opcode": 1, "zero-size": 1}
    assert rep["skipped_total"] == 8 and rep["requests"] == 2 and rep["lines"] == 10
    assert "t.trace:2: field lba" in reader.examples["non-numeric"]
    assert len(list(reader)) == 2 and reader.report()["skipped_total"] == 8   # a second pass counts afresh


@pytest.mark.unit
def test_skip_bad_first_good_request_is_time_zero(tmp_path):
    reqs = _read(_write(tmp_path, "x 0 0 8 1\n100 0 0 8 1\n250 0 0 8 1\n"), "mqsim", skip_bad=True)
    assert [r.time_ns for r in reqs] == [0, 150]


@pytest.mark.unit
def test_max_requests_stops_before_a_later_bad_line(tmp_path):
    # A large file whose only bad line is its last: max_requests must not read that far.
    path = tmp_path / "big.trace"
    with open(path, "w") as f:
        for i in range(200_000):
            f.write(f"{i} 0 {8 * i} 8 {i % 2}\n")
        f.write("this line is bad\n")
    with pytest.raises(TraceError, match="big.trace:200001"):
        _read(path, "mqsim")
    reader = TraceReader(path, "mqsim", max_requests=10)
    assert [r.index for r in reader] == list(range(10))
    assert reader.lines == 10


@pytest.mark.unit
def test_parser_is_a_stream(tmp_path):
    path = _write(tmp_path, "".join(f"{i} 0 0 8 1\n" for i in range(1000)) + "bad\n")
    reader = TraceReader(path, "mqsim")
    it = iter(reader)
    assert next(it).index == 0 and next(it).index == 1   # the bad line at the end is not read yet
    assert reader.requests == 2 and reader.lines == 2


@pytest.mark.unit
def test_gzip_trace_streams(tmp_path):
    path = tmp_path / "t.csv.gz"
    with gzip.open(path, "wt") as f:
        f.write("".join(f"{128166372003061629 + i},hm,0,{'Read' if i % 2 else 'Write'},{4096 * i},4096,5\n"
                        for i in range(100)))
    reqs = _read(path, "msr")
    assert len(reqs) == 100 and reqs[99].time_ns == 9900 and reqs[99].offset == 4096 * 99
    plain = tmp_path / "gz-without-suffix"
    plain.write_bytes(path.read_bytes())
    assert _read(plain, "msr") == reqs


@pytest.mark.unit
def test_damaged_gzip_and_missing_file_are_errors(tmp_path):
    path = tmp_path / "t.gz"
    path.write_bytes(gzip.compress(b"1 0 0 8 1\n" * 1000)[:40])
    with pytest.raises(TraceError, match="damaged compressed stream"):
        _read(path, "mqsim", skip_bad=True)
    with pytest.raises(TraceError, match="no such file"):
        _read(tmp_path / "absent", "mqsim")
    with pytest.raises(TraceError, match="format 'disksim'"):
        TraceReader(path, "disksim")


# Mapping -----------------------------------------------------------------------------------------------

def _req(i, off, size, dev=0, t=0, w=True):
    return Request(i, t, dev, off, size, w, i + 1)


@pytest.mark.unit
def test_device_select_and_merge():
    reqs = [_req(0, 0, 4096, dev=0), _req(1, 4096, 4096, dev=1), _req(2, 8192, 4096, dev=1)]
    m = Mapper(1 << 20, device=1)
    out = list(m(reqs))
    assert [r.source for r in out] == [1, 2] and [r.index for r in out] == [0, 1]
    assert m.report()["dropped_other_device"] == 1 and m.report()["device"] == "select 1"
    assert len(list(Mapper(1 << 20)(reqs))) == 3


@pytest.mark.unit
def test_alignment_rounds_offset_down_size_up():
    m = Mapper(1 << 20, sector_bytes=4096)
    out = list(m([_req(0, 512, 3584), _req(1, 4096, 4096), _req(2, 4000, 200)]))
    assert [(r.offset, r.size) for r in out] == [(0, 4096), (4096, 4096), (0, 8192)]
    assert m.report()["aligned"] == 2


@pytest.mark.unit
def test_fold_wraps_into_capacity():
    m = Mapper(64 * 1024, lba="fold")
    out = list(m([_req(0, 64 * 1024 + 8192, 4096), _req(1, 60 * 1024, 8192)]))
    assert [(r.offset, r.size) for r in out] == [(8192, 4096), (60 * 1024, 4096), (0, 4096)]
    rep = m.report()
    assert rep["folded"] == 1 and rep["wrapped"] == 1 and all(r.offset + r.size <= 64 * 1024 for r in out)


@pytest.mark.unit
def test_dense_remaps_in_first_seen_order_and_refuses_a_larger_footprint():
    m = Mapper(16 * 1024, lba="dense")
    out = list(m([_req(0, 10 << 30, 8192), _req(1, 5 << 20, 4096), _req(2, (10 << 30) + 4096, 4096)]))
    assert [(r.offset, r.size) for r in out] == [(0, 8192), (8192, 4096), (4096, 4096)]
    assert m.report()["dense_extents"] == 3
    # A request over extents placed apart is split into contiguous pieces.
    out = list(m([_req(3, (5 << 20) - 4096, 8192)]))
    assert [(r.offset, r.size) for r in out] == [(12288, 4096), (8192, 4096)]
    assert m.report()["dense_split"] == 1 and m.report()["split"] == 0
    with pytest.raises(TraceError, match="request 4 \\(line 5\\): the trace's footprint exceeds"):
        list(m([_req(4, 1 << 40, 4096)]))


@pytest.mark.unit
def test_none_mode_refuses_beyond_capacity():
    with pytest.raises(TraceError, match="beyond the capacity"):
        list(Mapper(1 << 20, lba="none")([_req(0, 1 << 20, 4096)]))


@pytest.mark.unit
def test_split_and_time_scale():
    m = Mapper(1 << 30, max_request_bytes=64 * 1024, time_scale=0.5)
    out = list(m([_req(0, 0, 200 * 1024, t=1000), _req(1, 0, 4096, t=3001)]))
    assert [r.size for r in out] == [65536, 65536, 65536, 8192, 4096]
    assert [r.time_ns for r in out] == [500] * 4 + [1500] and [r.source for r in out] == [0] * 4 + [1]
    assert m.report()["split"] == 1 and m.report()["requests_out"] == 5
    closed = list(Mapper(1 << 30, time_scale=0)([_req(0, 0, 4096, t=99), _req(1, 0, 4096, t=1 << 40)]))
    assert [r.time_ns for r in closed] == [0, 0]


@pytest.mark.unit
@pytest.mark.parametrize("kw", [dict(sector_bytes=3000), dict(capacity=1000), dict(max_request_bytes=5000),
                                dict(device="all"), dict(lba="sparse"), dict(time_scale=-1.0)])
def test_mapper_refuses_bad_settings(kw):
    args = dict(capacity=1 << 20)
    args.update(kw)
    with pytest.raises(TraceError):
        Mapper(**args)


@pytest.mark.unit
def test_parse_then_map_end_to_end(tmp_path):
    path = _write(tmp_path, "0 0 7 9 0\n1000 1 8 8 1\n2000 0 4194304 8 0\n")
    m = Mapper(1 << 20, device="merge", lba="fold")
    out = list(m(TraceReader(path, "mqsim")))
    assert [(r.offset, r.size, r.line) for r in out] == [(0, 8192, 1), (4096, 4096, 2), (0, 4096, 3)]


# Synthetic traces ---------------------------------------------------------------------------------------

@pytest.mark.unit
def test_synth_is_deterministic_per_seed():
    a = list(tr.synth(500, 0.3, [(4096, 1), (16384, 1)], 0.5, 1000.0, 1 << 26, seed=7))
    b = list(tr.synth(500, 0.3, [(4096, 1), (16384, 1)], 0.5, 1000.0, 1 << 26, seed=7))
    c = list(tr.synth(500, 0.3, [(4096, 1), (16384, 1)], 0.5, 1000.0, 1 << 26, seed=8))
    assert a == b and a != c
    assert list(tr.preset("dwsdw-MSN", n=200, seed=3)) == list(tr.preset("dwsdw-MSN", n=200, seed=3))


@pytest.mark.unit
def test_synth_statistics_match_the_parameters():
    n = 20000
    s = tr.summarize(tr.synth(n, 0.3, [(4096, 3), (65536, 1)], 0.25, 5000.0, 1 << 30, seed=1))
    assert s["requests"] == n
    assert abs(s["read_ratio"] - 0.3) < 0.02
    assert abs(s["mean_size_bytes"] - (3 * 4096 + 65536) / 4) / ((3 * 4096 + 65536) / 4) < 0.05
    assert s["median_size_bytes"] == 4096
    assert abs(s["arrival_rate_per_s"] - 5000) / 5000 < 0.05
    # Sequential requests continue their own kind's stream: follows the previous request only when the
    # previous one was of the same kind, so the share is about (1 - random) * P(same kind as the last).
    same = 0.3 ** 2 + 0.7 ** 2
    assert abs(s["sequential_ratio"] - 0.75 * same) < 0.03
    assert s["footprint_bytes"] <= 1 << 30


@pytest.mark.unit
@pytest.mark.parametrize("name", list(tr.MTPM_MIXES))
def test_mtpm_mixes(name):
    s = tr.summarize(tr.preset(name, seed=2))
    want = tr.MTPM_MIXES[name]
    assert s["requests"] == 5000 and abs(s["read_ratio"] - want) < 0.03
    assert s["mean_size_bytes"] == 4096 and s["duration_s"] == 0


@pytest.mark.unit
@pytest.mark.parametrize("name", sorted(tr.DWSDW_TABLE3))
def test_dwsdw_presets_follow_table3(name):
    rr, rlen, wlen, rrand, wrand = tr.DWSDW_TABLE3[name]
    reqs = list(tr.preset(f"dwsdw-{name}", n=20000, seed=5))
    reads = [r for r in reqs if not r.is_write]
    writes = [r for r in reqs if r.is_write]
    assert abs(len(reads) / len(reqs) - rr / 100) < 0.02
    for part, mean in ((reads, rlen), (writes, wlen)):
        if len(part) > 500:
            assert abs(statistics.mean(r.size for r in part) / 512 - mean) / mean < 0.05


@pytest.mark.unit
@pytest.mark.parametrize("name", sorted(tr.MPNFM_TABLE2))
def test_mpnfm_presets_follow_table2(name):
    wr, wlen, _ = tr.MPNFM_TABLE2[name]
    reqs = list(tr.preset(f"mpnfm-{name}", n=20000, seed=5))
    writes = [r for r in reqs if r.is_write]
    assert abs(len(writes) / len(reqs) - wr / 100) < 0.02
    assert abs(statistics.mean(r.size for r in writes) / 512 - wlen) / wlen < 0.05


@pytest.mark.unit
def test_mean_sectors_and_unknown_preset():
    assert tr.mean_sectors(4.5) == [(2048, 0.5), (2560, 0.5)]
    assert tr.mean_sectors(8) == [(4096, 1.0)]
    with pytest.raises(TraceError, match="synth preset 'R33'"):
        tr.preset("R33")


# Ring records -------------------------------------------------------------------------------------------

@pytest.mark.unit
def test_ring_record_round_trip():
    reqs = list(Mapper(1 << 30, time_scale=1.0)(tr.preset("dwsdw-Financial1", n=300, seed=1, rate=2000.0)))
    data = tr.encode_records(reqs)
    assert len(data) == 16 * len(reqs) and tr.RECORD_BYTES == 16
    back = tr.decode_records(data)
    assert [(b.time_us, b.sector * 4096, b.count * 4096, b.is_write, b.request_id) for b in back] == \
        [(r.time_ns // 1000, r.offset, r.size, r.is_write, r.index) for r in reqs]


@pytest.mark.unit
def test_ring_record_layout_is_fixed():
    rec = tr.encode_record(Request(0x01020304, 5_000_000, 0, 7 * 4096, 3 * 4096, True, 0))
    assert rec == bytes.fromhex("88130000" "07000000" "0300" "01" "00" "04030201")


@pytest.mark.unit
def test_ring_record_refuses_what_does_not_fit():
    with pytest.raises(TraceError, match="not whole sectors"):
        tr.encode_record(Request(0, 0, 0, 512, 4096, True, 0))
    with pytest.raises(TraceError, match="count 65536"):
        tr.encode_record(Request(0, 0, 0, 0, 65536 * 4096, True, 0))
    with pytest.raises(TraceError, match="flags"):
        tr.decode_record(bytes(10) + b"\x02" + bytes(5))
    with pytest.raises(TraceError, match="expected 16"):
        tr.decode_record(bytes(15))


# Statistics and the CLI ---------------------------------------------------------------------------------

@pytest.mark.unit
def test_summarize_small_trace(tmp_path):
    path = _write(tmp_path, "0 0 0 8 0\n1000000 0 8 8 0\n2000000 0 100 16 1\n")
    s = tr.summarize(TraceReader(path, "mqsim"))
    assert s["requests"] == 3 and s["reads"] == 1 and s["read_ratio"] == pytest.approx(1 / 3)
    assert s["median_size_bytes"] == 4096 and s["mean_size_bytes"] == pytest.approx(16384 / 3)
    assert s["duration_s"] == pytest.approx(0.002) and s["arrival_rate_per_s"] == pytest.approx(1000)
    assert s["footprint_bytes"] == 5 * 4096 and s["sequential_ratio"] == 0.5
    assert tr.summarize([])["requests"] == 0


@pytest.mark.unit
def test_cli_trace_stats_table_and_json(tmp_path):
    path = _write(tmp_path, "0 0 0 8 0\nbad\n1000 0 8 8 1\n")
    out = nandlab("trace", "stats", str(path), "--format", "mqsim", "--skip-bad", "--json")
    assert out.returncode == 0, out.stderr
    obj = json.loads(out.stdout)
    assert obj["stats"]["requests"] == 2 and obj["read"]["skipped"] == {"field-count": 1}
    out = nandlab("trace", "stats", str(path), "--format", "mqsim", "--max-requests", "1")
    assert out.returncode == 0 and "requests" in out.stdout
    out = nandlab("trace", "stats", str(path), "--format", "mqsim")
    assert out.returncode == 2 and f"{path}:2: fields: expected 5" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.unit
@pytest.mark.parametrize("argv,fragment", [
    (["--format", "mqsim", "--max-requests", "0"], "--max-requests 0"),
    (["--format", "disksim"], "invalid choice"),
    (["--format", "synth"], "synth preset"),
    ([], "--format"),
])
def test_cli_trace_stats_checks_arguments_first(tmp_path, argv, fragment):
    from nandlab.cli import check_command_line
    trace = "absent-file" if "synth" not in argv else "R7"
    with pytest.raises(NandLabError, match=fragment.replace("-", "\\-")):
        check_command_line(["trace", "stats", trace] + argv)
    with pytest.raises(NandLabError, match="absent-file: no such file"):
        check_command_line(["trace", "stats", str(tmp_path / "absent-file"), "--format", "msr"])
    with pytest.raises(NandLabError, match="not a regular file"):
        check_command_line(["trace", "stats", str(tmp_path), "--format", "msr"])
    assert check_command_line(["trace", "stats", "R50", "--format", "synth"]).trace == "R50"


# Property: random lines either parse or raise TraceError ------------------------------------------------

_DB = DirectoryBasedExampleDatabase(str(env.BUILD_DIR / "hypothesis"))

_FIELD = st.one_of(st.integers(-2**70, 2**70).map(str), st.sampled_from(
    ["", "0", "1", "r", "W", "Read", "Write", "1.5", "-0", "nan", "1e3", "٣", "hm", "0x10", " ", "\t"]),
    st.text(max_size=8))


_LINES = dict(fmt=st.sampled_from(tr.FORMATS), fields=st.lists(_FIELD, max_size=9), sep=st.sampled_from([" ", ",", "\t"]),
              newline=st.booleans(), raw=st.binary(max_size=40))
_LINE_SETTINGS = dict(deadline=None, database=_DB, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                          HealthCheck.too_slow])


def _line_parses_or_is_refused(path, fmt, fields, sep, newline, raw):
    path.write_bytes(sep.join(fields).encode("utf-8", "surrogatepass") + (b"\n" if newline else b"") + raw)
    try:
        for r in TraceReader(path, fmt):
            assert r.size > 0 and r.offset >= 0 and r.time_ns >= 0
    except TraceError as e:
        assert str(e).startswith(f"{path}:")


@pytest.mark.unit
@settings(max_examples=300, **_LINE_SETTINGS)
@given(**_LINES)
def test_random_lines_parse_or_raise_trace_error(tmp_path, fmt, fields, sep, newline, raw):
    _line_parses_or_is_refused(tmp_path / "fuzz.trace", fmt, fields, sep, newline, raw)


_LONG_LINES = [0]


@settings(max_examples=100_000, **_LINE_SETTINGS)
@given(**_LINES)
def _random_lines_long(path, fmt, fields, sep, newline, raw):
    _LONG_LINES[0] += 1
    _line_parses_or_is_refused(path, fmt, fields, sep, newline, raw)


@pytest.mark.slow
def test_random_lines_parse_or_raise_trace_error_long(tmp_path):
    """The long run (make test-slow): 100 000 random lines, counted."""
    _LONG_LINES[0] = 0
    _random_lines_long(tmp_path / "fuzz.trace")
    print(f"trace lines: {_LONG_LINES[0]} inputs")
    assert _LONG_LINES[0] >= 100_000, f"only {_LONG_LINES[0]} lines were tried"


_WORD = st.one_of(st.sampled_from(["stats", "--format", "mqsim", "spc", "synth", "R50", "dwsdw-MSN", "--json",
                                   "--skip-bad", "--max-requests", "--seed", "0", "-1", "5", "x", ""]),
                  st.text(max_size=6))


@pytest.mark.unit
@settings(max_examples=200, deadline=None, database=_DB)
@given(words=st.lists(_WORD, max_size=7))
def test_random_trace_command_lines_are_checked_or_refused(words):
    from nandlab.cli import check_command_line
    try:
        args = check_command_line(["trace"] + words)
    except NandLabError as e:
        assert str(e).strip()
    else:
        assert args.command == "trace" and args.format in tr.FORMATS + ("synth",)
