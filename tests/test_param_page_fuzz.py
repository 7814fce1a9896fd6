"""Property-based fuzzing (Hypothesis) of the parameter page parser and the page file reader.

Inputs are mutations of the real pages in nand_model/data and of the part database's pages (fields
set to edge values, bytes flipped or replaced, CRC recomputed most of the time), assembled into
1-4 copies (sometimes different, sometimes corrupt) with extended page copies and truncations; and
random bytes or hex text for the file reader. Each input must be accepted, or refused with
ParamPageError and a message; anything else (another exception, an accepted page with an error, a
strict parse that disagrees with the warnings) fails. `make test` runs a short, derandomised budget;
`make test-slow` runs LONG inputs per parser with a random seed.
"""

import os
import re
import time
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from nandlab.nand_model import param_page as pp
from nandlab.nand_model import parts

DATA = Path(__file__).resolve().parents[1] / "nand_model" / "data"
SHORT = int(os.environ.get("NANDLAB_FUZZ_SHORT", "500"))
LONG = int(os.environ.get("NANDLAB_FUZZ_LONG", "100000"))

SEEDS = [pp.read_file(f) for f in sorted(DATA.glob("*.hex")) if not f.stem.endswith("-ext")] + \
        [parts.get_part(name).param_page(copies=1) for name in parts.PARTS]
EXT = pp.read_file(DATA / "MT29F32G08ABCDBJ4-ext.hex")
FIELDS = [f for f in pp.LAYOUT if f.name not in ("signature", "crc")]
WHERE = re.compile(r"[\w ,:-]+ \((byte|bytes) \d+(-\d+)?\)|copy \d+: |copies 0-2 |extended parameter page")


def _fix_crc(page):
    page[254:256] = pp.crc16(bytes(page[:254])).to_bytes(2, "little")


@st.composite
def _edge(draw, f):
    if f.fmt.endswith("s"):
        return draw(st.sampled_from([b"\0" * f.size, b"\xff" * f.size, b" " * f.size])) \
            if draw(st.booleans()) else draw(st.binary(min_size=f.size, max_size=f.size))
    top = (1 << (8 * f.size)) - 1
    return draw(st.sampled_from([0, 1, 2, 3, top, top >> 1, 0xFF]) | st.integers(0, top))


@st.composite
def mutated_page(draw):
    """One 256-byte copy: a real or database page with a few fields or bytes changed."""
    page = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 6))):
        how = draw(st.integers(0, 3))
        if how <= 1:
            f = draw(st.sampled_from(FIELDS))
            value = draw(_edge(f))
            page[f.offset:f.offset + f.size] = value if isinstance(value, bytes) else value.to_bytes(f.size, "little")
        elif how == 2:
            page[draw(st.integers(0, 255))] ^= 1 << draw(st.integers(0, 7))
        else:
            page[draw(st.integers(0, 255))] = draw(st.integers(0, 255))
    if draw(st.integers(0, 9)):
        _fix_crc(page)
    return bytes(page)


@st.composite
def ext_copy(draw):
    ext = bytearray(EXT + bytes(draw(st.sampled_from([0, 16, 32]))))
    for _ in range(draw(st.integers(0, 4))):
        ext[draw(st.integers(0, len(ext) - 1))] = draw(st.integers(0, 255))
    if draw(st.integers(0, 4)):
        ext[0:2] = pp.crc16(bytes(ext[2:])).to_bytes(2, "little")
    return bytes(ext)


@st.composite
def page_data(draw):
    """What a chip (or a file) gives: copies, then maybe extended page copies, maybe cut short."""
    first = draw(mutated_page())
    copies = [first if draw(st.integers(0, 3)) else draw(mutated_page())
              for _ in range(draw(st.integers(1, 4)))]
    data = b"".join(copies)
    if draw(st.integers(0, 2)) == 0:
        data += b"".join(draw(st.lists(ext_copy(), min_size=1, max_size=3)))
    if draw(st.integers(0, 9)) == 0:
        data = data[:draw(st.integers(0, len(data)))]
    return data


def _page_property(data, tally):
    try:
        page = pp.parse(data)
    except pp.ParamPageError as e:
        assert str(e).strip()
        tally["refused"] += 1
        return
    tally["accepted"] += 1
    assert page.errors == []
    assert all(isinstance(w, pp.Diagnostic) and w.severity == "warning" and WHERE.match(w) for w in page.warnings), \
        page.warnings
    if page.warnings:
        with pytest.raises(pp.ParamPageError):
            pp.parse(data, strict=True)
    # What `nand info` does with an accepted page must work too.
    page.feature_names, page.optional_command_names, page.ecc_requirement, page.revision_name
    part = parts.NandPart.from_param_page(page)
    assert part.describe()


def _file_property(raw, tally):
    try:
        data = pp.decode_file(raw, "fuzz")
    except pp.ParamPageError as e:
        assert str(e).startswith("fuzz:")
        tally["refused"] += 1
        return
    assert isinstance(data, bytes)
    tally["read"] += 1
    try:
        pp.parse(data)
    except pp.ParamPageError:
        pass


HEX_TEXT = st.text(alphabet="0123456789abcdefABCDEFxX :|#,\n\t-g", max_size=400)
FILE_BYTES = st.one_of(
    HEX_TEXT.map(lambda t: t.encode()),
    st.builds(lambda data: "\n".join(f"{i:08x}: " + " ".join(f"{b:02x}" for b in data[i:i + 16])
                                     for i in range(0, len(data), 16)).encode(), page_data()),
    st.binary(max_size=600),
)


def _run(prop, strategy, n, tally, derandomize):
    @settings(max_examples=n, deadline=None, database=None, derandomize=derandomize,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def run(x):
        tally["inputs"] += 1
        prop(x, tally)
    start = time.monotonic()
    run()
    return time.monotonic() - start


@pytest.mark.unit
def test_fuzz_parse_short():
    tally = Counter()
    _run(_page_property, page_data(), SHORT, tally, True)
    assert tally["inputs"] >= SHORT and tally["accepted"] and tally["refused"], tally


@pytest.mark.unit
def test_fuzz_file_reader_short():
    tally = Counter()
    _run(_file_property, FILE_BYTES, SHORT, tally, True)
    assert tally["inputs"] >= SHORT and tally["read"] and tally["refused"], tally


@pytest.mark.slow
@pytest.mark.parametrize("which", ["parse", "file_reader"])
def test_fuzz_long(which, capsys):
    tally = Counter()
    prop, strategy = {"parse": (_page_property, page_data()), "file_reader": (_file_property, FILE_BYTES)}[which]
    seconds = _run(prop, strategy, LONG, tally, False)
    with capsys.disabled():
        print(f"\nfuzz {which}: {dict(tally)} in {seconds:.0f} s")
    assert tally["inputs"] >= LONG, tally
