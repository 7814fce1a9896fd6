"""ONFI parameter page: CRC vectors, copy fallback, majority vote, named field errors, parts round trip."""

import struct

import pytest

from nandlab.nand_model import param_page as pp
from nandlab.nand_model import parts

from nandlab.testing import run_cli as nandlab

pytestmark = pytest.mark.unit


def _page(part=None, **changes):
    """One encoded copy of `part`'s page with fields changed (CRC recomputed)."""
    values = (part or parts.NandLabSLC()).param_page_values()
    values.update(changes)
    return pp.encode(values, copies=1)


def _corrupt(page, offset, mask=0x01):
    b = bytearray(page)
    b[offset] ^= mask
    return bytes(b)


# CRC: vectors from the ONFI specification as quoted in REFERENCE.md.
def test_crc_vectors():
    assert pp.crc16(bytes(254)) == 0x3EEE
    assert pp.crc16(b"ONFI" + bytes(250)) == 0x6917


def test_crc_is_stored_little_endian():
    page = _page()
    assert struct.unpack_from("<H", page, 254)[0] == pp.crc16(page[:254])


# What the checker finds in the database's pages: no error; these warnings, each a gap in parts.py
# (no JEDEC ID or endurance given; MLC parts announce 40 ECC bits per 512 bytes, more than their
# spare area can hold; MPNFM's 28 KiB page is not a power of two).
PART_WARNINGS = {
    "NL-SLC-2K":     {"jedec-id-missing", "block-endurance-missing"},
    "MTPM-MLC":      {"jedec-id-missing", "block-endurance-missing", "spare-too-small-for-ecc"},
    "DWSDW-MLC-64G": {"jedec-id-missing", "block-endurance-missing", "spare-too-small-for-ecc"},
    "MPNFM-28-4":    {"jedec-id-missing", "block-endurance-missing", "spare-too-small-for-ecc",
                      "page-size-not-pow2"},
    # 65536 + 4096 bytes need a third column address cycle.
    "SPNFM-64K":     {"jedec-id-missing", "block-endurance-missing", "spare-too-small-for-ecc",
                      "address-cycles-unusual"},
}
PART_WARNINGS.update({m: PART_WARNINGS["MTPM-MLC"] for m in ("DWSDW-MLC-32G", "DWSDW-MLC-16G", "DWSDW-MLC-2K", "MPNFM-32-4",
                                                            "SPNFM-2K", "SPNFM-4K", "SPNFM-8K", "SPNFM-16K", "SPNFM-32K")})


@pytest.mark.parametrize("name", list(parts.PARTS))
def test_parts_round_trip_through_their_page(name):
    part = parts.get_part(name)
    page = pp.parse(part.param_page())
    assert page.copy == 0 and page.errors == []
    assert {w.name for w in page.warnings} == PART_WARNINGS[name], page.warnings
    back = parts.NandPart.from_param_page(page)
    for attr in ("page_size", "spare_size", "pages_per_block", "blocks_per_lun", "luns_per_ce",
                 "planes", "bits_per_cell", "column_cycles", "row_cycles", "sdr_modes", "nvddr_modes"):
        assert getattr(back, attr) == getattr(part, attr), attr
    assert back.t_r == part.t_r and back.t_bers == part.t_bers
    assert back.model == part.model
    assert (back.small_page_size, back.small_spare_size) == (part.small_page_size, part.small_spare_size)


def test_every_database_part_passes_the_checker_scaled_too():
    """The emulators' pages (parts, and the scaled parts the simulator builds) have no error."""
    for name in parts.PARTS:
        for part in (parts.get_part(name), parts.get_part(name).scaled(blocks_per_lun=8, pages_per_block=16)):
            assert pp.inspect(part.param_page()).errors == [], name


def test_copy0_corrupt_copy1_good():
    good = _page()
    data = _corrupt(good, 100) + good + good
    page = pp.parse(data)
    assert page.copy == 1
    assert any("copy 0: crc" in w for w in page.warnings)


def test_copy_selection_uses_each_copys_own_crc():
    # Copies 0 and 1 differ (and each is self-consistent): copy 0 is selected, copy 1 is not
    # compared with copy 0's CRC (the old Linux bug).
    a = _page(blocks_per_lun=1024)
    b = _page(blocks_per_lun=2048)
    assert pp.select_copy(a + b + b)[1] == 0
    assert pp.parse(_corrupt(a, 5) + b + b).blocks_per_lun == 2048


def test_copies_that_pass_their_crc_but_differ_are_an_error():
    a = _page(blocks_per_lun=1024)
    b = _page(blocks_per_lun=2048)
    with pytest.raises(pp.ParamPageError, match=r"blocks_per_lun \(bytes 96-99\): copy 1 passes its CRC "
                       r"but differs from copy 0 here \(byte 352 of the data\) \[copies-differ\]"):
        pp.parse(a + b + a)
    assert [d.name for d in pp.inspect(a + b + b).errors] == ["copies-differ", "copies-differ"]


def test_majority_vote_when_every_copy_is_bad():
    good = _page()
    data = _corrupt(good, 10) + _corrupt(good, 90, 0x80) + _corrupt(good, 200)
    page = pp.parse(data)
    assert page.copy == -1
    assert page.data_bytes_per_page == 2048
    assert any("majority" in w for w in page.warnings)


def test_majority_cannot_fix_two_copies_wrong_in_one_bit():
    good = _page()
    data = _corrupt(good, 96) + _corrupt(good, 96) + _corrupt(good, 3)
    with pytest.raises(pp.ParamPageError, match="majority of copies 0-2 fails its CRC"):
        pp.parse(data)


def test_signature_error_is_named():
    bad = b"ONFX" + _page()[4:]
    with pytest.raises(pp.ParamPageError, match=r"signature \(bytes 0-3\)"):
        pp.parse(bad)


def test_short_data_is_refused():
    with pytest.raises(pp.ParamPageError, match="one copy is 256"):
        pp.parse(_page()[:100])


@pytest.mark.parametrize("changes, message", [
    ({"pages_per_block": 0},                  r"pages_per_block \(bytes 92-95\): zero"),
    ({"data_bytes_per_page": 0},              r"data_bytes_per_page \(bytes 80-83\): zero"),
    ({"luns_per_ce": 0},                      r"luns_per_ce \(byte 100\): zero"),
    ({"bits_per_cell": 0},                    r"bits_per_cell \(byte 102\): 0 is outside 1..4"),
    ({"address_cycles": 0x12},                r"address_cycles \(byte 101\): 1 column cycles cannot address 2112 bytes"),
    ({"address_cycles": 0x21},                r"address_cycles \(byte 101\): 1 row cycles"),
    ({"spare_bytes_per_page": 4096},          r"spare_bytes_per_page \(bytes 84-85\)"),
    ({"sdr_timing_modes": 0x3E},              r"sdr_timing_modes \(bytes 129-130\): SDR timing mode 0 is mandatory"),
    ({"nvddr_timing_modes": 0},               r"features \(bytes 6-7\): NV-DDR is announced"),
    ({"ecc_bits": 0xFF},                      r"ecc_bits \(byte 112\): 0xFF points to an extended parameter page"),
    ({"revision": 0x0001},                    r"revision \(bytes 4-5\)"),
    ({"t_r_us": 0},                           r"t_r_us \(bytes 137-138\): zero"),
    ({"max_bad_blocks_per_lun": 5000},        r"max_bad_blocks_per_lun \(bytes 103-104\)"),
    ({"plane_address_bits": 5, "blocks_per_lun": 48}, r"plane_address_bits \(byte 113\): 32 planes do not divide 48"),
])
def test_field_errors_name_field_and_offset(changes, message):
    with pytest.raises(pp.ParamPageError, match=message):
        pp.parse(_page(**changes) * 3)


@pytest.mark.parametrize("changes, message", [
    (pp.mpnfm_values(4096, 16, 1),            r"vendor_specific \(bytes 166-253\): MPNFM small page 4096 is not below"),
    (pp.mpnfm_values(512, 16, 2),             r"vendor_specific \(bytes 166-253\): MPNFM plane 2 does not exist"),
])
def test_mpnfm_extension_errors(changes, message):
    with pytest.raises(pp.ParamPageError, match=message):
        pp.parse(_page(parts.NandLabSLC(page_size=2048 if "4096" not in message else 4096), **changes) * 3)


@pytest.mark.parametrize("changes, message", [
    ({"reserved_15": b"\x01"},                r"reserved_15 \(bytes 15-31\): reserved bytes are not zero"),
    ({"param_page_count": 0},                 r"param_page_count \(byte 14\): zero"),
    ({"pages_per_block": 96},                 r"pages_per_block \(bytes 92-95\): 96 is not a power of two"),
    ({"t_ccs_ns": 0},                         r"t_ccs_ns \(bytes 139-140\): zero; the ONFI default of 500 ns"),
    ({"features": 0x0021},                    r"features \(bytes 6-7\): 16-bit data bus"),
    ({"model": "BAD\x01NAME"},                r"model \(bytes 44-63\): not printable"),
])
def test_suspicious_values_are_accepted_with_named_warnings(changes, message):
    page = pp.parse(_page(**changes) * 3)
    assert any(__import__("re").search(message, w) for w in page.warnings), page.warnings
    with pytest.raises(pp.ParamPageError, match=message):
        pp.parse(_page(**changes) * 3, strict=True)


def test_hex_dump_formats(tmp_path):
    data = _page() * 3
    plain = " ".join(f"{b:02x}" for b in data)
    xxd = "\n".join(f"{i:08x}: " + " ".join(f"{b:02x}" for b in data[i:i + 16]) for i in range(0, len(data), 16))
    canonical = "\n".join(f"{i:08x}  " + " ".join(f"{b:02x}" for b in data[i:i + 16]) + "  |................|"
                          for i in range(0, len(data), 16))
    for n, text in enumerate((plain, xxd, canonical)):
        p = tmp_path / f"page{n}.txt"
        p.write_text(text)
        assert pp.read_file(p) == data, n
    bad = tmp_path / "bad.txt"
    bad.write_text(xxd.replace("4f 4e", "4f zz", 1))
    with pytest.raises(pp.ParamPageError, match=r"bad.txt:1: 'zz' is not hex"):
        pp.read_file(bad)


def test_scaled_part_addresses_like_the_real_one():
    full = parts.DWSDWPaperMLC()
    small = full.scaled(blocks_per_lun=8, pages_per_block=16)
    assert (small.column_cycles, small.row_cycles) == (full.column_cycles, full.row_cycles)
    assert small.page_size == full.page_size and small.planes == full.planes
    with pytest.raises(ValueError, match="do not divide into 2 planes"):
        full.scaled(blocks_per_lun=7)


def test_cycles_round_up():
    assert parts.NandPart.cycles(80, 100e6) == 8
    assert parts.NandPart.cycles(85, 100e6) == 9
    assert parts.NandPart.cycles(1, 100e6) == 1


def test_cli_info_and_refusal(tmp_path):
    good = tmp_path / "good.bin"
    good.write_bytes(_corrupt(_page(), 20) + _page() * 2)
    out = nandlab("nand", "info", str(good))
    assert out.returncode == 0, out.stderr
    assert "copy 1 used" in out.stdout and "2048 + 64 bytes" in out.stdout
    bad = tmp_path / "bad.bin"
    bad.write_bytes(_page(pages_per_block=0) * 3)
    out = nandlab("nand", "info", str(bad))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "pages_per_block (bytes 92-95): zero" in out.stderr
    out = nandlab("nand", "info", "--part", "NOPE")
    assert out.returncode == 2 and "known parts: NL-SLC-2K" in out.stderr



def test_cli_info_prints_named_warnings_and_strict_refuses(tmp_path):
    hynix = DATA / "H27U2G8F2CTR-BC.hex"
    out = nandlab("nand", "info", str(hynix))
    assert out.returncode == 0, out.stderr
    assert "warning: t_bers_us (bytes 135-136): 10 us: a block erase takes milliseconds [tbers-implausible]" in out.stderr
    out = nandlab("nand", "info", str(hynix), "--strict")     # (--strict before FILE works too: cli.LATE_POSITIONALS)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "2 warning(s) (strict)" in out.stderr and "[tprog-above-tbers]" in out.stderr
    out = nandlab("nand", "info", str(DATA / "MT29F8G08ABBCA3W.hex"), "--strict")
    assert out.returncode == 0, out.stderr


@pytest.mark.parametrize("content", [b"4f 4e zz\n", b"\xff\xfe garbage", b"", b"ONFI" + bytes(300)])
def test_cli_info_never_shows_a_traceback(tmp_path, content):
    f = tmp_path / "page.bin"
    f.write_bytes(content)
    out = nandlab("nand", "info", str(f))
    assert out.returncode == 2 and "Traceback" not in out.stderr and out.stderr.startswith("nandlab: error:"), out.stderr


def test_cli_info_spi_nand_page_lists_every_error():
    out = nandlab("nand", "info", str(DATA / "W25N01GV.hex"))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "3 error(s)" in out.stderr
    for name in ("revision-none", "address-cycles-zero", "sdr-mode0-missing", "ecc-none", "tccs-zero"):
        assert f"[{name}]" in out.stderr, out.stderr

# Real chips' pages (nand_model/data; each file's header and its README give the source: Xilinx QEMU
# hw/block/nand.c, qemu-atheros hw/mips/mips_ar71xx.c, the Annapurna Labs U-Boot NAND simulation,
# UMSATS cdh-tsat's W25N driver test).
DATA = __import__("pathlib").Path(__file__).resolve().parents[1] / "nand_model" / "data"

REAL = {
    # file: (maker, Gbit, page, spare, pages/block, blocks/LUN, planes, column/row cycles, tR us, revision)
    "MT29F1G08ABBDA3W":  ("MICRON", 1,  2048, 64, 64, 1024, 1, (2, 2), 25, "1.0"),
    "MT29F2G08ABBEAHC":  ("MICRON", 2,  2048, 64, 64, 2048, 2, (2, 3), 25, "1.0"),
    "MT29F32G08ABCDBJ4": ("MICRON", 32, 16384, 1216, 256, 1048, 2, (2, 3), 45, "3.0"),
    "MT29F8G08ABBCA3W":  ("MICRON", 8,  4096, 224, 64, 4096, 2, (2, 3), 25, "1.0"),
    "H27U2G8F2CTR-BC":   ("HYNIX",  2,  2048, 64, 64, 2048, 2, (2, 3), 25, "1.0"),
}
# The checker's findings on them (all accepted): oddities of the pages as published.
REAL_WARNINGS = {
    "MT29F1G08ABBDA3W":  {"bus-16bit", "partial-page-size"},     # x8 part with the x16 bit; 8192-byte partial page
    "MT29F2G08ABBEAHC":  {"planes-unannounced"},                 # plane bits without a multi-plane feature
    "MT29F32G08ABCDBJ4": {"ext-page-absent"},                    # its ECC requirement is in the extended page
    "MT29F8G08ABBCA3W":  set(),
    "H27U2G8F2CTR-BC":   {"tprog-above-tbers", "tbers-implausible"},   # tBERS given as 10 us
}


def _real(name):
    return pp.read_file(DATA / f"{name}.hex")


def _full_mt29f32g():
    """MT29F32G08ABCDBJ4 as the chip sends it: three parameter pages, three extended pages."""
    return _real("MT29F32G08ABCDBJ4") * 3 + _real("MT29F32G08ABCDBJ4-ext") * 3


@pytest.mark.parametrize("name", list(REAL))
def test_real_chip_pages(name):
    page = pp.parse(_real(name))
    maker, gbit, size, spare, ppb, bpl, planes, cycles, t_r, rev = REAL[name]
    assert page.text_manufacturer == maker and page.text_model == name
    assert (page.data_bytes_per_page, page.spare_bytes_per_page) == (size, spare)
    assert (page.pages_per_block, page.blocks_per_lun, page.planes) == (ppb, bpl, planes)
    assert (page.column_address_cycles, page.row_address_cycles) == cycles
    assert page.t_r_us == t_r and page.revision_name == rev
    assert page.lun_bytes * page.luns_per_ce * 8 >= gbit * 2**30
    assert {w.name for w in page.warnings} == REAL_WARNINGS[name], page.warnings
    part = parts.NandPart.from_param_page(page)
    assert part.page_size == size and part.planes == planes


def test_real_page_copy_fallback():
    good = _real("MT29F32G08ABCDBJ4")
    page = pp.parse(_corrupt(good, 81, 0x40) + good + good)
    assert page.copy == 1 and page.data_bytes_per_page == 16384


def test_real_page_oddities_are_named_warnings():
    page = pp.parse(_real("MT29F1G08ABBDA3W"))
    assert any("16-bit data bus" in w for w in page.warnings)
    page = pp.parse(_real("MT29F2G08ABBEAHC"))
    assert any("plane_address_bits (byte 113)" in w for w in page.warnings)
    # ONFI 1.0 pages have no copy count: not a warning there.
    assert not any("param_page_count" in w for w in page.warnings)


def test_real_page_with_its_extended_page_is_clean_even_strict():
    page = pp.parse(_full_mt29f32g(), strict=True)
    assert page.ecc_bits == 0xFF and page.ecc_requirement == (24, 1024)
    assert page.ext["sections"] == [(2, 1)]
    assert page.ext["ecc"] == {"bits": 24, "codeword_exp": 10, "bad_blocks": 100, "endurance": 0x0305}


def test_real_spi_nand_page_is_refused_naming_each_error():
    with pytest.raises(pp.ParamPageError) as e:
        pp.parse(_real("W25N01GV"))
    text = str(e.value)
    for expected in (r"revision \(bytes 4-5\): no ONFI version bit set \(0x0000\) \[revision-none\]",
                     r"address_cycles \(byte 101\): 0x00 gives 0 column and 0 row cycles",
                     r"sdr_timing_modes \(bytes 129-130\): SDR timing mode 0 is mandatory"):
        assert __import__("re").search(expected, text), text
    assert {d.name for d in pp.inspect(_real("W25N01GV")).errors} == \
        {"revision-none", "address-cycles-zero", "sdr-mode0-missing"}


def test_encode_reproduces_a_decoded_page():
    for name in REAL:
        raw = _real(name)
        assert pp.encode(pp._decode(raw), copies=1) == raw, name
