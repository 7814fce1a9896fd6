"""Property-based fuzzing (Hypothesis) of what the host reads from outside (issue 19): telemetry frames,
recordings given to `plot`, csr.csv, parameter-page dumps and the CLI's argument values. Each input
either succeeds or raises the project's own error (NandLabError) with a message, never anything else.

`make test` runs a short budget of each (FAST); `make test-slow` the long run (LONG, marker `slow`:
100 000 inputs per parser). Failing examples are kept in build/hypothesis and tried first next time.
"""

import functools
import math
import string

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase

from nandlab import env
from nandlab.errors import NandLabError

_DB = DirectoryBasedExampleDatabase(str(env.BUILD_DIR / "hypothesis"))
_COMMON = dict(deadline=None, database=_DB, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                                   HealthCheck.filter_too_much])
FAST = settings(max_examples=300, **_COMMON)
LONG = settings(max_examples=100_000, **_COMMON)


def fuzz(strategy):
    """A property run twice: a short budget (marker unit, in make test) and the long run (marker slow),
    which counts the inputs it tried and fails below LONG's 100 000 (Hypothesis stops early when it runs
    out of distinct inputs; then the strategy is too narrow for the claim)."""
    def wrap(prop):
        fast = pytest.mark.unit(FAST(given(strategy)(prop)))
        calls = [0]

        @functools.wraps(prop)
        def counted(*args, **kw):
            calls[0] += 1
            return prop(*args, **kw)
        inner = LONG(given(strategy)(counted))

        def long():
            calls[0] = 0
            inner()
            print(f"{prop.__name__}: {calls[0]} inputs")
            assert calls[0] >= LONG.max_examples, f"{prop.__name__}: only {calls[0]} inputs were tried"
        long.__name__ = f"{prop.__name__}_long"
        return fast, pytest.mark.slow(long)
    return wrap


def own_error_or_success(fn, *args):
    """fn(*args) returns, or raises NandLabError with a message; anything else fails the test."""
    try:
        return fn(*args)
    except NandLabError as e:
        assert str(e).strip(), "a NandLabError without a message"
        return None


# Building blocks -------------------------------------------------------------------------------------

NUMBER_TEXT = st.one_of(
    st.integers(-2**70, 2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["", " ", "0", "-0", "1e308", "-1e308", "1e-320", "nan", "inf", "-inf", "0x10", "1_000", "+5",
                     "٣", "1,5", "0.5", "99999999999999999999999999"]),
    st.text(max_size=12),
)


def _chunks(data, cuts):
    """`data` cut at the positions `cuts` (mod its length): the pieces a link may deliver."""
    points = sorted({c % (len(data) + 1) for c in cuts})
    out, last = [], 0
    for p in points + [len(data)]:
        out.append(data[last:p])
        last = p
    return out


# Telemetry frames ------------------------------------------------------------------------------------

def _frames():
    from nandlab.gateware.telemetry import frame as fmt
    values = st.fixed_dictionaries({}, optional={name: st.integers(0, 2**48 - 1) for name, _ in fmt.fields(16)})

    def encode(dies_values):
        dies, vals = dies_values
        clipped = {k: v & ((1 << 8 * size) - 1) for k, v in vals.items() for name, size in fmt.fields(dies) if name == k}
        return fmt.encode(clipped, dies), dies
    return st.tuples(st.integers(1, fmt.MAX_DIES), values).map(encode)


_STREAM = st.tuples(
    st.lists(st.one_of(_frames().map(lambda f: ("frame", f[0])), st.binary(max_size=64).map(lambda b: ("junk", b))),
             max_size=8),
    st.lists(st.tuples(st.integers(0, 4000), st.integers(0, 7)), max_size=6),     # bit flips
    st.lists(st.integers(0, 4000), max_size=10),                                  # link chunk boundaries
)


def _decode_stream(case):
    from nandlab import telemetry
    parts, flips, cuts = case
    stream = bytearray(b"".join(p for _, p in parts))
    for pos, bit in flips:
        if stream:
            stream[pos % len(stream)] ^= 1 << bit
    whole = telemetry.Decoder()
    frames = whole.feed(bytes(stream))
    pieces = telemetry.Decoder()
    got = [f for chunk in _chunks(bytes(stream), cuts) for f in pieces.feed(chunk)]
    # The same frames however the link cut the stream; every frame usable as a recording row.
    assert got == frames and pieces.stats == whole.stats
    for f in frames:
        row = telemetry.frame_row(f, 100e6)
        assert all(math.isfinite(v) for v in row.values())
    if not flips and all(kind == "frame" for kind, _ in parts):
        assert len(frames) == len(parts) and whole.stats.bad_crc == whole.stats.bad_header == 0


test_fuzz_telemetry_stream, test_fuzz_telemetry_stream_long = fuzz(_STREAM)(_decode_stream)


def _decode_bytes(data):
    from nandlab import telemetry
    d = telemetry.Decoder()
    for f in d.feed(data):
        telemetry.frame_row(f, 100e6)


test_fuzz_telemetry_bytes, test_fuzz_telemetry_bytes_long = fuzz(st.binary(max_size=600))(_decode_bytes)


# Recordings given to plot ------------------------------------------------------------------------------

_COLUMNS = ["time_us", "total_max", "total_mean", "pb", "violations", "windows", "seq", "die0_mean", "die1_mean",
            "die07_mean", "die_mean", "dieX_mean", "die2_max", "", "x"]
_RECORDING = st.one_of(
    st.binary(max_size=400),
    st.tuples(
        st.lists(st.sampled_from(_COLUMNS), min_size=0, max_size=9),
        st.lists(st.lists(NUMBER_TEXT, max_size=10), max_size=6),
        st.sampled_from(["\n", "\r\n", "\r"]),
    ).map(lambda c: c[2].join(",".join(row) for row in [c[0]] + c[1]).encode("utf-8", "surrogatepass")),
    st.tuples(                                # well formed apart from the values
        st.lists(st.lists(NUMBER_TEXT, min_size=6, max_size=6), min_size=1, max_size=5),
    ).map(lambda c: ("time_us,total_max,total_mean,pb,violations,die0_mean\n"
                     + "\n".join(",".join(r) for r in c[0])).encode("utf-8", "surrogatepass")),
)


_VALUE = st.one_of(st.floats(-10, 1e6, allow_nan=False).map(repr), st.integers(0, 10**6).map(str),
                   st.sampled_from(["0", "1e-310", "9e14", "1e15", "2e15", "-1", "1e-300"]), NUMBER_TEXT)
_GOOD = st.one_of(st.floats(0.001, 1e6).map(repr), st.integers(1, 10**6).map(str))
_VALID_RECORDING = st.integers(0, 3).flatmap(lambda dies: st.tuples(
    st.just(["time_us", "total_max", "total_mean", "pb", "violations", "windows"]
            + [f"die{d}_{k}" for d in range(dies) for k in ("mean", "max")]),
    st.lists(st.lists(_GOOD, min_size=6 + 2 * dies,
                      max_size=6 + 2 * dies), min_size=1, max_size=8),
)).map(lambda c: "\n".join(",".join(r) for r in [c[0]] + c[1]).encode("utf-8", "surrogatepass"))

def _spoil(data, at, value):
    """One field of recording `data` replaced by `value`."""
    fields = data.split(b",")
    fields[at % len(fields)] = value.encode("utf-8", "surrogatepass")
    return b",".join(fields)


_RECORDING = st.one_of(_RECORDING, _VALID_RECORDING,
                       st.builds(_spoil, _VALID_RECORDING, st.integers(0, 200), _VALUE))


def _recording(data):
    from nandlab import plots
    cols = own_error_or_success(plots.parse_recording, data, "rec.csv")
    if cols is not None:
        d = own_error_or_success(plots.figure_data, cols)
        if d is not None:
            plots.summary(cols)


test_fuzz_recording, test_fuzz_recording_long = fuzz(_RECORDING)(_recording)


@pytest.mark.slow
@settings(max_examples=300, **_COMMON)
@given(_RECORDING)
def test_fuzz_plot_figures(tmp_path_factory, data):
    """The whole `plot` (figures drawn and written) on fewer inputs: matplotlib takes a second each."""
    from nandlab import plots
    path = tmp_path_factory.mktemp("plot") / "rec.csv"
    path.write_bytes(data)
    own_error_or_success(plots.plot_recording, path)


# csr.csv ------------------------------------------------------------------------------------------------

_FIELD = st.one_of(NUMBER_TEXT, st.sampled_from(["rw", "ro", "ctrl_scratch", "0xf0000000", "0xfffffffc", "1", "2",
                                                 "64", "65", "cached", "io"]), st.text(string.printable, max_size=8))
_CSR_CSV = st.one_of(
    st.text(max_size=300),
    st.lists(st.tuples(st.sampled_from(["csr_register", "csr_base", "constant", "memory_region", "#x", "other", ""]),
                       st.lists(_FIELD, max_size=5)), max_size=8)
      .map(lambda rows: "\n".join(",".join([k, *f]) for k, f in rows)),
)


_IDENT = st.from_regex(r"[a-z_][a-z0-9_]{0,12}", fullmatch=True)
_REGISTER = st.builds(lambda name, addr, words, rw: f"csr_register,{name},{addr:#x},{words},{rw}", _IDENT,
                      st.integers(0, 2**32 - 1).map(lambda a: a & ~3), st.integers(0, 66),
                      st.sampled_from(["rw", "ro"]))
_CSR_CSV = st.one_of(_CSR_CSV, st.lists(st.one_of(_REGISTER, _REGISTER, st.text(max_size=30)), max_size=10)
                     .map("\n".join))


def _csr_map(text):
    from nandlab.csrmap import CSRMap
    m = own_error_or_success(CSRMap.parse, text, "csr.csv")
    if m is not None:
        table = m.c_table()
        for r in m:
            assert m[r.name] == r and f'"{r.name}"' in table
        own_error_or_success(m.__getitem__, "no such csr")


test_fuzz_csr_csv, test_fuzz_csr_csv_long = fuzz(_CSR_CSV)(_csr_map)


# Parameter-page dumps (nand info) -----------------------------------------------------------------------

_HEXLINE = st.one_of(
    st.builds(lambda off, data, asc: f"{off:08x}: " + " ".join(data[i:i + 2].hex() for i in range(0, len(data), 2))
              + "  " + asc, st.integers(0, 2**32), st.binary(max_size=16), st.text(max_size=16)),
    st.builds(lambda off, data, asc: f"{off:08x}  " + " ".join(f"{b:02x}" for b in data) + f"  |{asc}|",
              st.integers(0, 2**32), st.binary(max_size=16), st.text(max_size=16)),
    st.sampled_from(["*", "", "# comment", "00000100", "0x4f, 0x4e", "4f4e4649"]),
    st.text(max_size=40),
)


def _format_dump(data, style, squeeze):
    """`data` as xxd or hexdump -C would print it (hexdump -C squeezing repeated lines into '*')."""
    lines, last = [], None
    for i in range(0, len(data), 16):
        row = data[i:i + 16]
        if squeeze and row == last and len(row) == 16:
            if lines[-1] != "*":
                lines.append("*")
            continue
        last = row
        if style == "xxd":
            lines.append(f"{i:08x}: " + " ".join(row[j:j + 2].hex() for j in range(0, len(row), 2)) + "  "
                         + "".join(chr(b) if 32 <= b < 127 else "." for b in row))
        else:
            lines.append(f"{i:08x}  " + " ".join(f"{b:02x}" for b in row).ljust(48) + " |"
                         + "".join(chr(b) if 32 <= b < 127 else "." for b in row) + "|")
    if style == "hexdump":
        lines.append(f"{len(data):08x}")
    return lines


_HEXLINES = st.one_of(
    st.lists(_HEXLINE, max_size=10),
    st.builds(_format_dump, st.one_of(st.binary(max_size=200), st.binary(max_size=4).map(lambda b: b * 40)),
              st.sampled_from(["xxd", "hexdump"]), st.booleans()),
)


def _dump(lines):
    from nandlab.dumps import parse_dump
    own_error_or_success(parse_dump, "\n".join(lines), "page.txt", 1 << 16)


test_fuzz_dump, test_fuzz_dump_long = fuzz(_HEXLINES)(_dump)


# CLI argument values --------------------------------------------------------------------------------------

_PARSER = []


def _parser():
    if not _PARSER:
        from nandlab import cli
        _PARSER.append(cli.make_parser())
    return _PARSER[0]


def _subparser(command, nested=None):
    sub = _parser()._subparsers._group_actions[0].choices[command]
    if nested is not None and sub._subparsers is not None:
        sub = sub._subparsers._group_actions[0].choices.get(nested, sub)
    return sub


def _options(command, nested=None):
    """(option strings, takes a value, choices) of a command's subparser (a nested one's, e.g. `ftl
    torture`, when `nested` names it; help and version left out)."""
    out = []
    for a in _subparser(command, nested)._actions:
        if not a.option_strings or "-h" in a.option_strings or "--help" in a.option_strings:
            continue
        out.append((a.option_strings[-1], a.nargs != 0, list(a.choices or [])))
    return out


# Every command of the CLI (a test below checks that none is missing).
_COMMANDS = ["sim", "build", "load", "csr", "server", "nand", "report", "experiment", "monitor", "plot", "bench",
             "replay", "ftl", "fuzz", "profile", "ecc", "trace", "reproduce", "scheduler", "worker", "bringup"]
_BOARDS = st.sampled_from(["arty", "colorlight_i5"])
# What each command needs to get past argparse (most of the time), so that the values reach the checks.
_BASE = {
    "sim": st.just(["--non-interactive"]),
    "build": st.one_of(_BOARDS.map(lambda b: ["--target", b, "--no-compile"]), st.just(["--target", "sim"]),
                       st.just([])),
    "load": _BOARDS.map(lambda b: ["--target", b]),
    "csr": st.tuples(st.sampled_from(["list", "read", "write"]), st.sampled_from([[], ["ctrl_scratch"],
                     ["ctrl_scratch", "0x12"], ["nope", "x"]])).map(lambda t: [t[0], *t[1]]),
    "server": st.one_of(st.just([]), _BOARDS.map(lambda b: ["--target", b])),
    "nand": st.tuples(st.sampled_from(["info", "page", "parts", "image"]),
                      st.sampled_from([[], ["save", "x.img"], ["load"], ["f.bin"]])).map(lambda t: [t[0], *t[1]]),
    "report": st.sampled_from(["die", "ring", "fit", "controller"]).map(lambda w: [w]),
    "experiment": st.sampled_from(["power", "ring-faults"]).map(lambda w: [w]),
    "monitor": st.sampled_from([["--tcp"], ["--udp"], ["--serial"], []]),
    "plot": st.just(["/nonexistent/rec.csv"]),
    "bench": st.sampled_from(["sim", "ecp5", "soc"]).map(lambda w: [w]),
    "replay": st.sampled_from([["R50", "--format", "synth"], ["/nonexistent.mqsim", "--format", "mqsim"],
                               ["README.md", "--format", "spc"]]),
    "ftl": st.sampled_from([["torture"], ["experiment"], ["cuts"], ["remote", "stats"], []]),
    "fuzz": st.sampled_from([[], ["--target", "shell"], ["--target", "ftl"], ["/nonexistent-input"]]),
    "profile": st.sampled_from([["--run", "ftl stats"], []]),
    "ecc": st.just(["torture"]),
    "trace": st.sampled_from([["R50", "--format", "synth"], ["/nonexistent.msr", "--format", "msr"],
                              ["README.md", "--format", "mqsim"]]),
    "reproduce": st.sampled_from([["mtpm"], ["all"], ["dwsdw"], []]),
    "scheduler": st.just([]),
    "worker": st.sampled_from([["tcp://127.0.0.1:8786"], []]),
    "bringup": st.sampled_from(["sim", "arty", "colorlight_i5", "ecpix5"]).map(lambda t: ["--target", t]),
}
_BOARD_OPTIONS = ["--nand-dies", "--nand-blocks", "--nand-pages", "--nand-channels", "--nand-ecc", "--nand-storage",
                  "--sys-clk-freq", "--eth-ip", "--telemetry-ip", "--bridge", "--variant"]
VALUE = st.one_of(
    st.integers(-3, 20).map(str),
    st.sampled_from([0, 1, 2, 4, 8, 16, 17, 64, 100, 101, 1024, 2048, 65535, 65536, 2**31, 2**32, 10**6]).map(str),
    st.sampled_from(["192.168.1.50", "10.0.0.1", "0.0.0.0", "255.255.255.255", "224.1.1.1", "1.2.3", "::1",
                     "127.0.0.1:1236", ":0", "host:99999", "0,4,8", ",", "0,25", "npm,dcc", "foo", "25,x"]),
    NUMBER_TEXT,
)


@st.composite
def _argv(draw):
    command = draw(st.sampled_from(_COMMANDS))
    argv = [command] + draw(_BASE[command])
    if command in ("monitor", "worker") and len(argv) == 1 + (command == "monitor"):
        argv.append(draw(VALUE))
    options = _options(command, argv[1] if command == "ftl" and len(argv) > 1 else None)
    for opt, takes_value, choices in draw(st.lists(st.sampled_from(options), max_size=5)) if options else []:
        argv.append(opt)
        if takes_value:
            argv.append(draw(st.sampled_from(choices).map(str) if choices and draw(st.booleans()) else VALUE))
    if command in ("build", "load") and "--target" in argv:
        for opt in draw(st.lists(st.sampled_from(_BOARD_OPTIONS), max_size=4)):
            argv += [opt, draw(VALUE)]
    return argv


def _command_line(argv):
    from nandlab import cli
    if any(a in ("--help", "-h", "--version") for a in argv):
        return
    own_error_or_success(cli.check_command_line, argv, _parser())


test_fuzz_cli_arguments, test_fuzz_cli_arguments_long = fuzz(_argv())(_command_line)


@pytest.mark.unit
def test_cli_fuzz_covers_every_command():
    """A new command joins the argument fuzz: the list above names every one the parser has."""
    assert sorted(_parser()._subparsers._group_actions[0].choices) == sorted(_COMMANDS) == sorted(_BASE)
