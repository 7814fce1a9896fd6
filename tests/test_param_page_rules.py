"""Every rule of the parameter page checker, on pages made to break it (CRC recomputed): its name,
severity, field and byte offset; the rule list in the docs matches the code."""

import re
from pathlib import Path

import pytest

from nandlab.nand_model import param_check
from nandlab.nand_model import param_page as pp
from nandlab.nand_model import parts

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "nand_model" / "data"


def _cumulative(version):
    return (1 << (pp.V[version] + 1)) - 2


BASES = {
    "slc":   lambda: parts.NandLabSLC().param_page_values(),                         # ONFI 3.0, 2 planes, MPNFM
    "plain": lambda: parts.NandPart().param_page_values(),                           # 1 plane, no vendor block
    "mlc":   lambda: parts.MTPMPaperMLC().param_page_values(),
    "v10":   lambda: {**parts.NandPart(nvddr_modes=()).param_page_values(), "revision": 0x0002,
                      "param_page_count": 0, "t_adl_ns": 0},
    "v41":   lambda: {**parts.NandLabSLC().param_page_values(), "revision": _cumulative("4.1")},
    "v50":   lambda: {**parts.NandLabSLC().param_page_values(), "revision": _cumulative("5.0")},
    "real3": lambda: pp._decode(pp.read_file(DATA / "MT29F32G08ABCDBJ4.hex")),
}


def _diagnostics(base, changes, data=None):
    values = BASES[base]()
    values.update({k: (v(values) if callable(v) else v) for k, v in changes.items()})
    return pp.inspect(data or pp.encode(values, copies=3))


def _or(**bits):
    """A change that sets bits in a field of the base page."""
    return {name: (lambda v, name=name, b=b: v.get(name, 0) | b) for name, b in bits.items()}


def _clear(**bits):
    return {name: (lambda v, name=name, b=b: v.get(name, 0) & ~b) for name, b in bits.items()}


E, W = "error", "warning"
CASES = [
    # (id, base, changes, severity, rule, where)
    ("revision bit 0",         "slc",  {"revision": 0x7F},                     E, "revision-reserved-bit", r"revision \(bytes 4-5\)"),
    ("no revision",            "slc",  {"revision": 0x8000},                   E, "revision-none", r"revision \(bytes 4-5\)"),
    ("unknown revision bit",   "slc",  {"revision": 0x807E},                   W, "revision-unknown", r"revision"),
    ("revision gaps",          "slc",  {"revision": 0x0040},                   W, "revision-not-cumulative", r"revision"),
    ("2.1 field in 1.0",       "v10",  {"param_page_count": 3},                W, "field-before-revision", r"param_page_count \(byte 14\)"),
    ("EZ NAND byte in 5.x",    "v50",  {"ez_nand_support": 1},                 W, "field-after-revision", r"ez_nand_support \(byte 115\)"),
    ("copy count zero",        "slc",  {"param_page_count": 0},                W, "copy-count-zero", r"param_page_count \(byte 14\)"),
    ("copy count low",         "slc",  {"param_page_count": 2},                W, "copy-count-low", r"param_page_count \(byte 14\)"),
    ("reserved 163",           "slc",  {"reserved_163": b"\x01"},              W, "reserved-not-zero", r"reserved_163 \(byte 163\)"),
    ("text control char",      "slc",  {"manufacturer": "NAND\x07LAB"},        W, "text-not-printable", r"manufacturer \(bytes 32-43\)"),
    ("text blank",             "slc",  {"model": ""},                          W, "text-empty", r"model \(bytes 44-63\)"),
    ("JEDEC id missing",       "slc",  {},                                     W, "jedec-id-missing", r"jedec_id \(byte 64\)"),
    ("JEDEC id parity",        "slc",  {"jedec_id": 0x03},                     W, "jedec-id-parity", r"jedec_id \(byte 64\)"),
    ("JEDEC id vs maker",      "slc",  {"jedec_id": 0x2C},                     W, "jedec-id-manufacturer", r"jedec_id \(byte 64\)"),
    ("reserved command bit",   "slc",  _or(optional_commands=0x4000),          W, "bit-reserved", r"optional_commands \(bytes 8-9\)"),
    ("4.0 feature in 3.0",     "slc",  _or(features=1 << 13),                  W, "bit-before-revision", r"features \(bytes 6-7\)"),
    ("3.0 command in 1.0",     "v10",  _or(optional_commands=1 << 10),         W, "bit-before-revision", r"optional_commands"),
    ("16-bit bus",             "slc",  _or(features=0x1),                      W, "bus-16bit", r"features \(bytes 6-7\)"),
    ("multi-LUN one LUN",      "slc",  _or(features=0x2),                      W, "multi-lun-single-lun", r"features"),
    ("multi-LUN no 78h",       "slc",  {"luns_per_ce": 2, **_or(features=0x2), **_clear(optional_commands=0x8)},
                                                                               W, "multi-lun-no-status-enhanced", r"features"),
    ("copyback no command",    "slc",  _or(features=0x10),                     W, "copyback-no-command", r"features"),
    ("ext page length zero",   "slc",  _or(features=0x80),                     E, "ext-page-length-zero", r"ext_param_page_length \(bytes 12-13\)"),
    ("ext page too short",     "slc",  {**_or(features=0x80), "ext_param_page_length": 2},
                                                                               E, "ext-page-too-short", r"ext_param_page_length"),
    ("ext length unannounced", "slc",  {"ext_param_page_length": 3},           W, "ext-page-unannounced", r"ext_param_page_length"),
    ("page reg clear no tADL", "slc",  {**_or(features=0x100), "t_adl_ns": 0}, W, "page-reg-clear-no-tadl", r"t_adl_ns \(bytes 154-155\)"),
    ("EZ NAND no tR",          "slc",  _or(features=0x200),                    W, "ez-nand-no-tr", r"t_r_ez_nand_us \(bytes 156-157\)"),
    ("EZ NAND byte alone",     "slc",  {"ez_nand_support": 1},                 W, "ez-nand-unannounced", r"ez_nand_support \(byte 115\)"),
    ("volume without select",  "slc",  _or(features=0x800),                    W, "volume-select-mismatch", r"features"),
    ("ZQ feature without cmd", "v41",  _or(features=1 << 14),                  W, "zq-mismatch", r"features"),
    ("LUN features alone",     "slc",  {"optional_commands": 0x100B},          W, "lun-features-no-features", r"optional_commands"),
    ("mp cache no command",    "slc",  {"multiplane_attributes": 0x04, "optional_commands": 0x0C},
                                                                               W, "multiplane-cache-no-command", r"multiplane_attributes \(byte 114\)"),
    ("mp attr reserved bits",  "slc",  {"multiplane_attributes": 0x80},        W, "bit-reserved", r"multiplane_attributes"),
    ("JTG reserved bits",      "slc",  {"jtg_primary_commands": 0x10},         W, "bit-reserved", r"jtg_primary_commands \(byte 10\)"),
    ("JTG multi-plane 1 plane", "plain", {"jtg_primary_commands": 0x02},       W, "jtg-multiplane-single-plane", r"jtg_primary_commands"),
    ("training without DDR",   "v41",  {"training_commands": 0x01},            W, "training-without-ddr", r"training_commands \(byte 11\)"),
    ("page size zero",         "slc",  {"data_bytes_per_page": 0},             E, "page-size-zero", r"data_bytes_per_page \(bytes 80-83\)"),
    ("page size odd",          "slc",  {"data_bytes_per_page": 3000},          W, "page-size-not-pow2", r"data_bytes_per_page"),
    ("spare zero",             "plain", {"spare_bytes_per_page": 0},           W, "spare-zero", r"spare_bytes_per_page \(bytes 84-85\)"),
    ("spare above page",       "slc",  {"spare_bytes_per_page": 4096},         E, "spare-too-large", r"spare_bytes_per_page"),
    ("pages per block zero",   "slc",  {"pages_per_block": 0},                 E, "pages-per-block-zero", r"pages_per_block \(bytes 92-95\)"),
    ("pages per block odd",    "slc",  {"pages_per_block": 96},                W, "pages-per-block-not-pow2", r"pages_per_block"),
    ("blocks zero",            "slc",  {"blocks_per_lun": 0},                  E, "blocks-per-lun-zero", r"blocks_per_lun \(bytes 96-99\)"),
    ("LUNs zero",              "slc",  {"luns_per_ce": 0},                     E, "luns-zero", r"luns_per_ce \(byte 100\)"),
    ("bits per cell 5",        "slc",  {"bits_per_cell": 5},                   E, "bits-per-cell-range", r"bits_per_cell \(byte 102\)"),
    ("bad blocks > blocks",    "slc",  {"max_bad_blocks_per_lun": 5000},       E, "bad-blocks-exceed", r"max_bad_blocks_per_lun \(bytes 103-104\)"),
    ("bad blocks > 10 %",      "slc",  {"max_bad_blocks_per_lun": 300},        W, "bad-blocks-many", r"max_bad_blocks_per_lun"),
    ("guaranteed > blocks",    "slc",  {"blocks_per_lun": 128, "guaranteed_valid_blocks": 200},
                                                                               E, "guaranteed-blocks-exceed", r"guaranteed_valid_blocks \(byte 107\)"),
    ("guaranteed + bad",       "slc",  {"blocks_per_lun": 200, "guaranteed_valid_blocks": 190},
                                                                               W, "guaranteed-blocks-vs-bad", r"guaranteed_valid_blocks"),
    ("no programs",            "slc",  {"programs_per_page": 0},               E, "programs-per-page-zero", r"programs_per_page \(byte 110\)"),
    ("partial program MLC",    "mlc",  {"programs_per_page": 4},               W, "partial-program-multilevel", r"programs_per_page"),
    ("partial page size",      "slc",  {"obsolete_partial_data": 8192},        W, "partial-page-size", r"obsolete_partial_data \(bytes 86-89\)"),
    ("partial page count",     "slc",  {"obsolete_partial_data": 512},         W, "partial-page-count", r"obsolete_partial_data"),
    ("partial page spare",     "slc",  {"obsolete_partial_data": 512, "programs_per_page": 4, "obsolete_partial_spare": 32},
                                                                               W, "partial-page-spare", r"obsolete_partial_spare \(bytes 90-91\)"),
    ("no column cycles",       "slc",  {"address_cycles": 0x03},               E, "address-cycles-zero", r"address_cycles \(byte 101\)"),
    ("column cycles short",    "slc",  {"address_cycles": 0x13},               E, "column-cycles-short", r"address_cycles"),
    ("row cycles short",       "slc",  {"address_cycles": 0x22},               E, "row-cycles-short", r"address_cycles"),
    ("address cycles unusual", "slc",  {"address_cycles": 0x33},               W, "address-cycles-unusual", r"address_cycles"),
    ("plane nibble reserved",  "slc",  {"plane_address_bits": 0x11},           W, "bit-reserved", r"plane_address_bits \(byte 113\)"),
    ("multi-plane no planes",  "plain", _or(features=0x8),                     W, "multiplane-no-planes", r"features"),
    ("planes unannounced",     "slc",  _clear(features=0x48),                  W, "planes-unannounced", r"plane_address_bits"),
    ("mp attributes 1 plane",  "plain", {"multiplane_attributes": 0x02},       W, "multiplane-attributes-unannounced", r"multiplane_attributes"),
    ("planes do not divide",   "slc",  {"plane_address_bits": 5, "blocks_per_lun": 48},
                                                                               E, "planes-divide-blocks", r"plane_address_bits"),
    ("mp tR on 1 plane",       "plain", {"t_r_multiplane_us": 30},             W, "multiplane-tr-single-plane", r"t_r_multiplane_us \(bytes 152-153\)"),
    ("mp tR below tR",         "slc",  {"t_r_multiplane_us": 10},              W, "multiplane-tr-short", r"t_r_multiplane_us"),
    ("endurance missing",      "slc",  {},                                     W, "block-endurance-missing", r"block_endurance \(bytes 105-106\)"),
    ("endurance 10^9",         "slc",  {"block_endurance": 0x0901},            W, "endurance-implausible", r"block_endurance"),
    ("MLC endurance 10^6",     "mlc",  {"block_endurance": 0x0601},            W, "endurance-high-for-cell", r"block_endurance"),
    ("guaranteed endurance",   "slc",  {"guaranteed_endurance": 0x0301},       W, "guaranteed-endurance-no-blocks", r"guaranteed_endurance \(bytes 108-109\)"),
    ("0xFF without ext page",  "slc",  {"ecc_bits": 0xFF},                     E, "ecc-ext-unannounced", r"ecc_bits \(byte 112\)"),
    ("no ECC",                 "slc",  {"ecc_bits": 0},                        W, "ecc-none", r"ecc_bits"),
    ("MLC ECC 1 bit",          "mlc",  {"ecc_bits": 1},                        W, "ecc-low-for-cell", r"ecc_bits"),
    ("ECC beyond spare",       "slc",  {"ecc_bits": 20},                       W, "spare-too-small-for-ecc", r"spare_bytes_per_page"),
    ("tR zero",                "slc",  {"t_r_us": 0},                          E, "array-time-zero", r"t_r_us \(bytes 137-138\)"),
    ("tBERS zero",             "slc",  {"t_bers_us": 0},                       E, "array-time-zero", r"t_bers_us \(bytes 135-136\)"),
    ("tR above tPROG",         "slc",  {"t_r_us": 300},                        W, "tr-above-tprog", r"t_r_us"),
    ("tPROG above tBERS",      "slc",  {"t_prog_us": 2000},                    W, "tprog-above-tbers", r"t_prog_us \(bytes 133-134\)"),
    ("tBERS 100 us",           "slc",  {"t_bers_us": 100, "t_prog_us": 90},    W, "tbers-implausible", r"t_bers_us"),
    ("tPROG 30 ms",            "slc",  {"t_prog_us": 30000, "t_bers_us": 40000}, W, "tprog-implausible", r"t_prog_us"),
    ("tR 3 ms",                "slc",  {"t_r_us": 3000, "t_prog_us": 5000, "t_bers_us": 9000},
                                                                               W, "tr-implausible", r"t_r_us"),
    ("SDR mode 0 missing",     "slc",  {"sdr_timing_modes": 0x3E},             E, "sdr-mode0-missing", r"sdr_timing_modes \(bytes 129-130\)"),
    ("SDR reserved modes",     "slc",  {"sdr_timing_modes": 0x7F},             W, "modes-reserved", r"sdr_timing_modes"),
    ("SDR mode gap",           "slc",  {"sdr_timing_modes": 0x2F},             W, "modes-gaps", r"sdr_timing_modes"),
    ("cache modes not SDR",    "slc",  {"sdr_timing_modes": 0x07, "obsolete_cache_modes": 0x0F},
                                                                               W, "cache-modes-not-sdr", r"obsolete_cache_modes \(bytes 131-132\)"),
    ("cache modes no command", "slc",  {"obsolete_cache_modes": 0x01, "optional_commands": 0x0C},
                                                                               W, "cache-modes-no-command", r"obsolete_cache_modes"),
    ("tCCS zero",              "slc",  {"t_ccs_ns": 0},                        W, "tccs-zero", r"t_ccs_ns \(bytes 139-140\)"),
    ("tCCS above 500",         "slc",  {"t_ccs_ns": 600},                      W, "tccs-above-default", r"t_ccs_ns"),
    ("tCCS below tWHR",        "slc",  {"t_ccs_ns": 50},                       W, "tccs-below-twhr", r"t_ccs_ns"),
    ("tADL zero in 3.0",       "slc",  {"t_adl_ns": 0},                        W, "tadl-zero", r"t_adl_ns \(bytes 154-155\)"),
    ("tADL above 400",         "slc",  {"t_adl_ns": 500},                      W, "tadl-above-default", r"t_adl_ns"),
    ("NV-DDR without modes",   "slc",  {"nvddr_timing_modes": 0},              E, "interface-no-modes", r"features \(bytes 6-7\)"),
    ("NV-DDR2 without modes",  "slc",  _or(features=1 << 10),                  E, "interface-no-modes", r"features"),
    ("NV-DDR3 without modes",  "v41",  _or(features=1 << 13),                  E, "interface-no-modes", r"features"),
    ("NV-LPDDR4 no modes",     "v50",  _or(features=1 << 9),                   E, "interface-no-modes", r"features"),
    ("NV-DDR modes alone",     "slc",  _clear(features=0x20),                  W, "interface-modes-unannounced", r"nvddr_timing_modes \(byte 141\)"),
    ("NV-DDR3 modes alone 4.x", "v41", {"nvddr3_timing_modes": 0x1},           W, "interface-modes-unannounced", r"nvddr3_timing_modes \(bytes 160-161\)"),
    ("NV-DDR3 modes alone 5.x", "v50", {"nvddr3_timing_modes_5x": 0x1},        W, "interface-modes-unannounced", r"nvddr3_timing_modes_5x \(bytes 116-117\)"),
    ("NV-DDR no SET FEATURES", "slc",  {"optional_commands": 0x0B},            W, "interface-no-set-features", r"features"),
    ("NV-DDR mode 0 missing",  "slc",  {"nvddr_timing_modes": 0x3E},           W, "nvddr-mode0-missing", r"nvddr_timing_modes"),
    ("NV-DDR reserved modes",  "slc",  {"nvddr_timing_modes": 0x7F},           W, "modes-reserved", r"nvddr_timing_modes"),
    ("DDR2 features alone",    "slc",  {"nvddr2_features": 0x01},              W, "ddr23-fields-unannounced", r"nvddr2_features \(byte 158\)"),
    ("DDR features alone",     "plain", {"nvddr_features": 0x01, "nvddr_timing_modes": 0, **_clear(features=0x20)},
                                                                               W, "ddr-fields-unannounced", r"nvddr_features \(byte 143\)"),
    ("capacitance typ > max",  "slc",  {"io_pin_capacitance_max": 5, "io_pin_capacitance_typ": 60},
                                                                               W, "capacitance-typ-above-max", r"io_pin_capacitance_typ \(bytes 146-147\)"),
    ("driver strength bits",   "slc",  {"driver_strength_support": 0x08},      W, "bit-reserved", r"driver_strength_support \(byte 151\)"),
    ("driver strength alone",  "slc",  {"driver_strength_support": 0x02},      W, "driver-strength-unannounced", r"driver_strength_support"),
    ("vendor data, no rev",    "plain", {"vendor_specific": b"\x01"},          W, "vendor-revision-missing", r"vendor_revision \(bytes 164-165\)"),
    ("MPNFM page",             "slc",  pp.mpnfm_values(4096, 16, 1),           E, "mpnfm-page", r"vendor_specific \(bytes 166-253\)"),
    ("MPNFM spare",            "slc",  pp.mpnfm_values(512, 100, 1),           E, "mpnfm-spare", r"vendor_specific"),
    ("MPNFM plane",            "slc",  pp.mpnfm_values(512, 16, 2),            E, "mpnfm-plane", r"vendor_specific"),
    ("ext page not in data",   "real3", {},                                    W, "ext-page-absent", r"ecc_bits \(byte 112\)"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_rule(case):
    _, base, changes, severity, name, where = case
    page = _diagnostics(base, changes)
    hits = [d for d in page.diagnostics if d.name == name and d.severity == severity]
    assert hits, [str(d) for d in page.diagnostics]
    assert any(re.match(where, d) for d in hits), hits
    if severity == W:
        assert page.errors == [], page.errors          # A warning alone never refuses a page.


# The extended parameter page (after the three copies of MT29F32G08ABCDBJ4's page).
def _ext(**changes):
    raw = bytearray(pp.read_file(DATA / "MT29F32G08ABCDBJ4-ext.hex"))
    for offset, value in changes.get("bytes", {}).items():
        raw[offset] = value
    if changes.get("fix_crc", True):
        raw[0:2] = pp.crc16(bytes(raw[2:])).to_bytes(2, "little")
    return bytes(raw)


def _with_ext(*copies):
    return pp.read_file(DATA / "MT29F32G08ABCDBJ4.hex") * 3 + b"".join(copies)


EXT_CASES = [
    ("bad CRC, copy 1 used",   (_ext(bytes={32: 25}, fix_crc=False), _ext()), W, "ext-page-copy"),
    ("no good copy",           (_ext(bytes={2: 0x58}),) * 3,                   E, "ext-page-unusable"),
    ("no ECC section",         (_ext(bytes={16: 0, 17: 0}),),                  E, "ext-page-no-ecc"),
    ("codeword exponent 0",    (_ext(bytes={33: 0}),),                         E, "ext-ecc-codeword"),
    ("codeword above page",    (_ext(bytes={33: 15}),),                        E, "ext-ecc-codeword"),
    ("codeword 256 bytes",     (_ext(bytes={33: 8}),),                         W, "ext-ecc-codeword-small"),
    ("section past the end",   (_ext(bytes={17: 2}),),                         E, "ext-sections-overflow"),
    ("unknown section type",   (_ext(bytes={18: 9, 19: 0}),),                  W, "ext-section-unknown"),
    ("unused section length",  (_ext(bytes={18: 0, 19: 1}),),                  W, "ext-section-unused-length"),
    ("ECC bits zero",          (_ext(bytes={32: 0}),),                         W, "ecc-none"),
    ("ext bad blocks",         (_ext(bytes={35: 0x40}),),                      E, "bad-blocks-exceed"),
    ("ext endurance 10^9",     (_ext(bytes={37: 9}),),                         W, "endurance-implausible"),
    ("ECC beyond spare",       (_ext(bytes={32: 60}),),                        W, "spare-too-small-for-ecc"),
]


@pytest.mark.parametrize("case", EXT_CASES, ids=[c[0] for c in EXT_CASES])
def test_extended_page_rule(case):
    _, copies, severity, name = case
    page = pp.inspect(_with_ext(*copies))
    hits = [d for d in page.diagnostics if d.name == name and d.severity == severity]
    assert hits, [str(d) for d in page.diagnostics]
    assert all("extended" in d or re.match(r"\w+ \((byte|bytes) \d", d) for d in hits)


def test_copy_rules_are_named():
    good = pp.read_file(DATA / "MT29F8G08ABBCA3W.hex")
    bad_crc = good[:100] + bytes([good[100] ^ 1]) + good[101:]
    bad_sig = b"ONFX" + good[4:]
    assert [w.name for w in pp.parse(bad_crc + good).warnings] == ["copy-crc"]
    assert [w.name for w in pp.parse(bad_sig + good).warnings] == ["copy-signature"]
    names = [w.name for w in pp.parse(bad_crc + bad_sig + good[:50] + bytes([good[50] ^ 4]) + good[51:]).warnings]
    assert names == ["copy-crc", "copy-signature", "copy-crc", "copy-majority"]


def _rule_names(source):
    return set(re.findall(r'(?:r\.(?:error|warn)|Diagnostic\("(?:error|warning)",|_note)\(?\s*"([a-z0-9-]+)"', source))


def test_every_rule_is_tested_and_documented():
    code = _rule_names((REPO / "nand_model" / "param_check.py").read_text()) | \
        _rule_names((REPO / "nand_model" / "param_page.py").read_text())
    tested = {c[4] for c in CASES} | {c[3] for c in EXT_CASES} | \
        {"copy-crc", "copy-signature", "copy-majority", "copies-differ"}     # test_copy_rules, test_param_page.py
    assert code - tested == set(), "rules without a test"
    doc = (REPO / "docs" / "param_page_checker.md").read_text()
    documented = set(re.findall(r"^\| `([a-z0-9-]+)` \|", doc, re.M))
    assert documented == code, (documented - code, code - documented)


def test_check_accepts_any_decoded_page_without_crashing():
    """The checker itself copes with every value a field can hold (extremes of each field)."""
    base = BASES["slc"]()
    for f in pp.LAYOUT:
        if f.name in ("signature", "crc"):
            continue
        for value in ((b"\xff" * f.size, b"\x00" * f.size) if f.fmt.endswith("s")
                      else (0, (1 << (8 * f.size)) - 1, 1)):
            page = pp.inspect(pp.encode({**base, f.name: value}, copies=1))
            assert all(isinstance(d, pp.Diagnostic) for d in page.diagnostics)
    assert param_check.decode_ext(b"", pp.inspect(pp.encode(base, copies=1))) is None
