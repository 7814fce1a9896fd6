"""The firmware's C parameter-page code (sw/firmware/onfi.c) on the host against the Python parser
(nand_model/param_page.py), on the real pages in nand_model/data and on corrupted variants whose CRC
was recomputed."""

import json
import subprocess

import pytest

from nandlab import env, fuzz
from nandlab.nand_model import param_page as pp

PAGES = sorted(p for p in (env.REPO / "nand_model" / "data").glob("*.hex") if "-ext" not in p.name)


@pytest.fixture(scope="module")
def decode():
    exe = fuzz.build(["onfi-decode"], out=env.BUILD_DIR / "onfi-host")["onfi-decode"]

    def run(data):
        r = subprocess.run([str(exe)], input=bytes(data), capture_output=True)
        assert r.returncode in (0, 1), r.stderr
        return json.loads(r.stdout)
    return run


def _with_crc(page):
    page = bytearray(page)
    page[254:256] = pp.crc16(bytes(page[:254])).to_bytes(2, "little")
    return page


def _python(page):
    p = pp.ParameterPage(values=pp._decode(bytes(page)))
    return {"page_bytes": p.data_bytes_per_page, "spare_bytes": p.spare_bytes_per_page,
            "pages_per_block": p.pages_per_block, "blocks_per_lun": p.blocks_per_lun, "luns": p.luns_per_ce,
            "bits_per_cell": p.bits_per_cell, "planes": p.planes, "row_cycles": p.row_address_cycles,
            "column_cycles": p.column_address_cycles}


@pytest.mark.unit
@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.stem)
def test_c_decoder_agrees_with_the_python_parser(decode, path):
    raw = pp.read_file(path)
    page = raw[:256]
    got = decode(page)
    if page[:4] != pp.SIGNATURE:
        assert got["copy"] == -2      # (the SPI NAND page: no ONFI signature)
        return
    assert got["copy"] == 0
    assert {k: got[k] for k in _python(page)} == _python(page)


@pytest.mark.unit
@pytest.mark.parametrize("byte113, planes", [(0x01, 2), (0x21, 2), (0xF0, 1), (0x13, 8), (0x0F, 1 << 15)])
def test_plane_count_is_bits_3_0_of_byte_113(decode, byte113, planes):
    """ONFI byte 113: bits 3:0 the plane (interleaved) address bits, bits 7:4 reserved. The firmware took
    the whole byte (0x21: 1 << 33, undefined; 0x08 and up truncated to 0 planes)."""
    page = bytearray(pp.read_file(env.REPO / "nand_model" / "data" / "MT29F2G08ABBEAHC.hex")[:256])
    page[113] = byte113
    page = _with_crc(page)
    got = decode(page)
    assert got["copy"] == 0
    assert got["planes"] == planes == _python(page)["planes"]


@pytest.mark.unit
def test_three_copies_majority_and_fallback(decode):
    page = bytes(pp.read_file(env.REPO / "nand_model" / "data" / "MT29F8G08ABBCA3W.hex")[:256])
    broken = bytearray(page)
    broken[80] ^= 0xFF
    assert decode(bytes(broken) + page + page)["copy"] == 1
    # Every copy broken in a different byte: the bitwise majority is the page.
    a, b, c = bytearray(page), bytearray(page), bytearray(page)
    a[10] ^= 1
    b[20] ^= 2
    c[30] ^= 4
    got = decode(bytes(a + b + c))
    assert got["copy"] == -1 and got["page_bytes"] == _python(page)["page_bytes"]
