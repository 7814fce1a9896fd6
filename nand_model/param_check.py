"""Rules of the ONFI parameter page checker: each field's range and its consistency with the page's
revision, its feature and optional-command bits and the other fields (docs/param_page_checker.md).

`check(page, data)` returns Diagnostics: errors for what ONFI or arithmetic makes impossible,
warnings for what is only unusual. Where the version that introduced a bit or field is not in the
public sources we had (ONFI 1.0-4.2 layouts as quoted by Linux and public decoders; the 5.x layout
from two public decoders), the boundary is marked "assumed" and only ever gives warnings.
"""

import struct

from nandlab.nand_model.param_page import FIELDS, V, Diagnostic, MPNFM_SIGNATURE
from nandlab.nand_model import param_page as P

KNOWN_REVISIONS = sum(1 << b for b in P.REVISIONS)

# Version (bit of the revision field) from which each feature / optional command bit is defined.
# Early boundaries are taken at the earliest plausible version so that only a clearly late use warns.
FEATURE_SINCE = {0: "1.0", 1: "1.0", 2: "1.0", 3: "1.0", 4: "1.0", 5: "2.0", 6: "2.0", 7: "2.1",
                 8: "2.1", 9: "2.3", 10: "3.0", 11: "3.0", 12: "3.0", 13: "4.0",
                 14: "4.1", 15: "4.1"}                                   # 14, 15: assumed.
COMMAND_SINCE = {0: "1.0", 1: "1.0", 2: "1.0", 3: "1.0", 4: "1.0", 5: "1.0", 6: "2.0", 7: "2.1",
                 8: "2.1", 9: "2.1", 10: "3.0", 11: "3.0", 12: "3.0", 13: "4.0"}
# Fields a revision introduced (reserved, so zero, before it) or dropped (5.x: EZ NAND, and the
# NV-DDR3 modes moved to bytes 116-117).
FIELD_SINCE = {"ext_param_page_length": "2.1", "param_page_count": "2.1", "jtg_primary_commands": "3.0",
               "training_commands": "4.1", "nvddr_timing_modes": "2.0", "nvddr_features": "2.0",
               "clk_pin_capacitance_typ": "2.0", "io_pin_capacitance_typ": "2.0",
               "input_pin_capacitance_typ": "2.0", "input_pin_capacitance_max": "2.0",
               "driver_strength_support": "2.0", "t_r_multiplane_us": "2.0", "t_adl_ns": "2.1",
               "ez_nand_support": "2.3", "t_r_ez_nand_us": "2.3", "nvddr2_timing_modes": "3.0",
               "nvddr2_features": "3.0", "nvddr2_warmup_cycles": "3.0", "nvddr3_timing_modes": "4.0",
               "nvddr2_timing_modes_hi": "4.0", "nvddr3_timing_modes_5x": "5.0",
               "nvlpddr4_timing_modes": "5.0"}
FIELD_UNTIL = {"ez_nand_support": "5.0", "t_r_ez_nand_us": "5.0", "nvddr3_timing_modes": "5.0",
               "nvddr2_timing_modes_hi": "5.0"}

# SDR tWHR minimum per timing mode (ns; REFERENCE.md): tCCS cannot be shorter than the fastest.
SDR_TWHR_NS = (120, 80, 80, 80, 80, 80)
ONFI_DEFAULT_TCCS_NS, ONFI_DEFAULT_TADL_NS = 500, 400
# JEP106 bank-1 codes and the names their parts give in bytes 32-43.
JEDEC_NAMES = {0x2C: ("MICRON",), 0xAD: ("HYNIX",), 0xEC: ("SAMSUNG",), 0x98: ("TOSHIBA", "KIOXIA"),
               0x89: ("INTEL",), 0x01: ("SPANSION", "CYPRESS", "AMD", "SKYHIGH"), 0xC2: ("MACRONIX", "MXIC"),
               0xEF: ("WINBOND",), 0x45: ("SANDISK", "WESTERN DIGITAL")}
EXT_SIGNATURE = b"EPPS"
EXT_SECTION_UNUSED, EXT_SECTION_MORE, EXT_SECTION_ECC = 0, 1, 2


def W(name):
    return FIELDS[name].where()


class _Report:
    """Collects the Diagnostics of one page; `page` is the ParameterPage under check."""

    def __init__(self, page):
        self.page, self.found = page, []

    def error(self, name, field, text):
        self.found.append(Diagnostic("error", name, W(field) if field in FIELDS else field, text))

    def warn(self, name, field, text):
        self.found.append(Diagnostic("warning", name, W(field) if field in FIELDS else field, text))


def check(page, data=b""):
    """Diagnostics for a decoded ParameterPage; `data` (all bytes read) holds its extended page."""
    r = _Report(page)
    for rules in (_revision, _fields_by_revision, _copy_count, _reserved, _text, _features, _commands,
                  _organisation, _addressing, _planes, _endurance, _ecc, _array_timings,
                  _interface_modes, _electrical, _vendor):
        rules(r, page)
    _extended_page(r, page, data)
    _ecc_capacity(r, page)
    return r.found


# Revision ----------------------------------------------------------------------------------------

def _revision(r, p):
    rev, top = p.revision, p.top_revision
    if rev & 1:
        r.error("revision-reserved-bit", "revision", f"bit 0 is reserved and set (0x{rev:04X})")
    if not top:
        r.error("revision-none", "revision", f"no ONFI version bit set (0x{rev:04X})")
    unknown = rev & ~KNOWN_REVISIONS & ~1
    if unknown:
        r.warn("revision-unknown", "revision", f"unknown version bits 0x{unknown:04X}")
    cumulative = (1 << (top + 1)) - 2
    if top and rev & KNOWN_REVISIONS != cumulative:
        r.warn("revision-not-cumulative", "revision",
               f"claims ONFI {P.REVISIONS[top]} but not every earlier version (0x{rev:04X}; "
               f"0x{cumulative:04X} expected)")


def _fields_by_revision(r, p):
    top = p.top_revision
    if not top:
        return
    for name, since in FIELD_SINCE.items():
        value, until = p.values[name], FIELD_UNTIL.get(name)
        if value and top < V[since]:
            r.warn("field-before-revision", name, f"is 0x{value:X}, but ONFI defines it from {since} on "
                   f"and the page claims at most {p.revision_name}")
        elif value and until and top >= V[until]:
            r.warn("field-after-revision", name, f"is 0x{value:X}, but ONFI {until} and later no longer "
                   f"define it here (the page claims {p.revision_name})")


def _copy_count(r, p):
    count = p.param_page_count
    if p.top_revision >= V["2.1"] and count == 0:
        r.warn("copy-count-zero", "param_page_count", "zero (ONFI 2.1+ gives the number of copies, at least 3)")
    elif p.top_revision >= V["2.1"] and count < 3:
        r.warn("copy-count-low", "param_page_count", f"{count} copies; ONFI requires at least 3")


def _reserved(r, p):
    for f in P.LAYOUT:
        if not f.name.startswith("reserved"):
            continue
        raw = p.values[f.name]
        if f.name == "reserved_15" and p.top_revision >= V["5.0"]:
            raw = raw[1:]            # Byte 15: training commands (field 1) from ONFI 5.x on.
        if any(raw):
            r.warn("reserved-not-zero", f.name, "reserved bytes are not zero")


def _text(r, p):
    for name in ("manufacturer", "model"):
        raw = p.values[name]
        if not all(32 <= c < 127 for c in raw):
            r.warn("text-not-printable", name, f"not printable ASCII ({raw!r})")
        elif not raw.strip():
            r.warn("text-empty", name, "blank")
    jid = p.jedec_id
    if jid in (0x00, 0xFF):
        r.warn("jedec-id-missing", "jedec_id", f"0x{jid:02X} is no JEDEC manufacturer ID")
    elif bin(jid).count("1") % 2 == 0:
        r.warn("jedec-id-parity", "jedec_id", f"0x{jid:02X} has even parity; JEP106 codes have odd parity")
    names = JEDEC_NAMES.get(jid)
    text = p.text_manufacturer.upper()
    if names and text and not any(n in text for n in names):
        r.warn("jedec-id-manufacturer", "jedec_id",
               f"0x{jid:02X} is {names[0]}'s code but {W('manufacturer')} says '{p.text_manufacturer}'")


# Feature and optional command bits ---------------------------------------------------------------

def _late_bits(r, p, field, value, since, names):
    top = p.top_revision
    for bit in range(16):
        if not value >> bit & 1:
            continue
        if bit not in since:
            r.warn("bit-reserved", field, f"bit {bit} is reserved and set (0x{value:04X})")
        elif top and top < V[since[bit]]:
            r.warn("bit-before-revision", field, f"bit {bit} ({names.get(bit, '?')}) is set, but ONFI "
                   f"defines it from {since[bit]} on and the page claims at most {p.revision_name}")


def _features(r, p):
    _late_bits(r, p, "features", p.features, FEATURE_SINCE,
               P.FEATURES_5X if p.top_revision >= V["5.0"] else P.FEATURES)
    has, cmd = p.has_feature, p.has_command
    if has(P.FEATURE_16BIT):
        r.warn("bus-16bit", "features", "16-bit data bus; nandlab drives 8-bit buses")
    if has(P.FEATURE_MULTI_LUN) and p.luns_per_ce == 1:
        r.warn("multi-lun-single-lun", "features", f"multiple LUN operations with one LUN ({W('luns_per_ce')})")
    if has(P.FEATURE_MULTI_LUN) and not cmd(P.OPT_STATUS_ENHANCED):
        r.warn("multi-lun-no-status-enhanced", "features", "multiple LUN operations without READ STATUS "
               f"ENHANCED in {W('optional_commands')} to poll each LUN")
    if has(P.FEATURE_ODD_EVEN_COPYBACK) and not cmd(P.OPT_COPYBACK):
        r.warn("copyback-no-command", "features", f"odd-to-even copyback without COPYBACK in {W('optional_commands')}")
    length = p.ext_param_page_length
    if has(P.FEATURE_EXT_PAGE) and length == 0:
        r.error("ext-page-length-zero", "ext_param_page_length",
                f"zero while {W('features')} announces an extended page")
    elif has(P.FEATURE_EXT_PAGE) and length < 3:
        r.error("ext-page-too-short", "ext_param_page_length", f"{length} x 16 bytes cannot hold the "
                "32-byte header and one 16-byte section")
    elif length and not has(P.FEATURE_EXT_PAGE):
        r.warn("ext-page-unannounced", "ext_param_page_length", f"{length} but {W('features')} announces no extended page")
    if has(P.FEATURE_PAGE_REG_CLEAR) and p.t_adl_ns == 0:
        r.warn("page-reg-clear-no-tadl", "t_adl_ns", f"zero while {W('features')} announces program page "
               "register clear enhancement, whose tADL this field gives")
    if p.top_revision < V["5.0"]:
        if has(P.FEATURE_EZ_NAND) and p.t_r_ez_nand_us == 0:
            r.warn("ez-nand-no-tr", "t_r_ez_nand_us", f"zero while {W('features')} announces EZ NAND")
        if p.ez_nand_support and not has(P.FEATURE_EZ_NAND):
            r.warn("ez-nand-unannounced", "ez_nand_support", f"0x{p.ez_nand_support:02X} but EZ NAND is not in {W('features')}")
    if has(P.FEATURE_VOLUME) != cmd(P.OPT_VOLUME_SELECT):
        r.warn("volume-select-mismatch", "features", "volume addressing and the VOLUME SELECT command "
               f"({W('optional_commands')}) come together; one is missing")
    if p.top_revision >= V["4.1"] and has(P.FEATURE_ZQ) != cmd(P.OPT_ZQ):
        r.warn("zq-mismatch", "features", f"ZQ calibration feature and command ({W('optional_commands')}) disagree")


def _commands(r, p):
    _late_bits(r, p, "optional_commands", p.optional_commands, COMMAND_SINCE, P.OPT_COMMANDS)
    if p.has_command(P.OPT_LUN_FEATURES) and not p.has_command(P.OPT_FEATURES):
        r.warn("lun-features-no-features", "optional_commands", "LUN GET/SET FEATURES without GET/SET FEATURES")
    attrs = p.multiplane_attributes
    if attrs & 0x04 and not p.has_command(P.OPT_PROGRAM_CACHE):
        r.warn("multiplane-cache-no-command", "multiplane_attributes",
               f"multi-plane program cache (bit 2) without PROGRAM CACHE in {W('optional_commands')}")
    if attrs & 0x10 and not p.has_command(P.OPT_READ_CACHE):
        r.warn("multiplane-cache-no-command", "multiplane_attributes",
               f"multi-plane read cache (bit 4) without READ CACHE in {W('optional_commands')}")
    if attrs & 0xC0:
        r.warn("bit-reserved", "multiplane_attributes", f"reserved bits 6-7 set (0x{attrs:02X})")
    jtg = p.jtg_primary_commands
    if jtg & 0xF0:
        r.warn("bit-reserved", "jtg_primary_commands", f"reserved bits 4-7 set (0x{jtg:02X})")
    if jtg & 0x0E and p.planes == 1:
        r.warn("jtg-multiplane-single-plane", "jtg_primary_commands",
               f"multi-plane commands (0x{jtg & 0x0E:02X}) on a single-plane LUN ({W('plane_address_bits')})")
    training = p.training_commands if p.top_revision >= V["4.1"] else 0
    if training & 0xE0:
        r.warn("bit-reserved", "training_commands", f"reserved bits 5-7 set (0x{training:02X})")
    if training and not (p.has_feature(P.FEATURE_NVDDR2) or p.has_feature(P.FEATURE_NVDDR3)):
        r.warn("training-without-ddr", "training_commands", "training commands without NV-DDR2/3")


# Memory organisation -----------------------------------------------------------------------------

def _is_pow2(x):
    return x > 0 and x & (x - 1) == 0


def _organisation(r, p):
    page, spare = p.data_bytes_per_page, p.spare_bytes_per_page
    if page == 0:
        r.error("page-size-zero", "data_bytes_per_page", "zero")
    elif not _is_pow2(page) or page < 512:
        r.warn("page-size-not-pow2", "data_bytes_per_page", f"{page} is not a power of two >= 512")
    if spare == 0:
        r.warn("spare-zero", "spare_bytes_per_page", "zero (no room for ECC or bad-block markers)")
    elif page and spare >= page:
        r.error("spare-too-large", "spare_bytes_per_page", f"{spare} is not below the page size {page}")
    if p.pages_per_block == 0:
        r.error("pages-per-block-zero", "pages_per_block", "zero")
    elif not _is_pow2(p.pages_per_block):
        r.warn("pages-per-block-not-pow2", "pages_per_block", f"{p.pages_per_block} is not a power of two")
    if p.blocks_per_lun == 0:
        r.error("blocks-per-lun-zero", "blocks_per_lun", "zero")
    if p.luns_per_ce == 0:
        r.error("luns-zero", "luns_per_ce", "zero")
    if not 1 <= p.bits_per_cell <= 4:
        r.error("bits-per-cell-range", "bits_per_cell", f"{p.bits_per_cell} is outside 1..4")
    blocks, bad = p.blocks_per_lun, p.max_bad_blocks_per_lun
    if blocks and bad > blocks:
        r.error("bad-blocks-exceed", "max_bad_blocks_per_lun", f"{bad} exceeds blocks per LUN {blocks}")
    elif blocks and bad * 10 > blocks:
        r.warn("bad-blocks-many", "max_bad_blocks_per_lun", f"{bad} is over 10 % of the {blocks} blocks")
    good = p.guaranteed_valid_blocks
    if blocks and good > blocks:
        r.error("guaranteed-blocks-exceed", "guaranteed_valid_blocks", f"{good} exceeds blocks per LUN {blocks}")
    elif blocks and good + bad > blocks:
        r.warn("guaranteed-blocks-vs-bad", "guaranteed_valid_blocks", f"{good} guaranteed plus {bad} "
               f"possibly bad ({W('max_bad_blocks_per_lun')}) exceed the {blocks} blocks")
    _programs(r, p)


def _programs(r, p):
    nop = p.programs_per_page
    if nop == 0:
        r.error("programs-per-page-zero", "programs_per_page", "zero: a page could not be programmed at all")
    elif nop > 1 and p.bits_per_cell > 1:
        r.warn("partial-program-multilevel", "programs_per_page",
               f"{nop} partial programs on a {p.bits_per_cell}-bit cell (multi-level pages are programmed once)")
    part, part_spare, page = p.obsolete_partial_data, p.obsolete_partial_spare, p.data_bytes_per_page
    if part and page:
        if part > page or page % part:
            r.warn("partial-page-size", "obsolete_partial_data", f"{part}-byte partial pages do not divide the {page}-byte page")
        elif page // part > max(nop, 1):
            r.warn("partial-page-count", "obsolete_partial_data", f"{page // part} partial pages but "
                   f"{nop} programs per page ({W('programs_per_page')})")
        elif part_spare * (page // part) > p.spare_bytes_per_page:
            r.warn("partial-page-spare", "obsolete_partial_spare", f"{page // part} x {part_spare} bytes "
                   f"exceed the {p.spare_bytes_per_page}-byte spare area")


def _addressing(r, p):
    col, row = p.column_address_cycles, p.row_address_cycles
    if col == 0 or row == 0:
        r.error("address-cycles-zero", "address_cycles", f"0x{p.address_cycles:02X} gives {col} column and {row} row cycles")
        return
    if col > 2 or row > 4:
        r.warn("address-cycles-unusual", "address_cycles", f"{col} column and {row} row cycles (ONFI parts use 1-2 and 2-4)")
    columns = p.data_bytes_per_page + p.spare_bytes_per_page
    if columns and (columns - 1) >> (8 * col):
        r.error("column-cycles-short", "address_cycles", f"{col} column cycles cannot address {columns} bytes")
    if p.pages_per_block and p.blocks_per_lun and p.luns_per_ce:
        row_bits = ((p.pages_per_block - 1).bit_length() + (p.blocks_per_lun - 1).bit_length()
                    + (p.luns_per_ce - 1).bit_length())
        if row_bits > 8 * row:
            r.error("row-cycles-short", "address_cycles", f"{row} row cycles ({8 * row} bits) cannot address "
                    f"{row_bits} bits of page, block and LUN")


def _planes(r, p):
    bits = p.plane_address_bits
    if bits & 0xF0:
        r.warn("bit-reserved", "plane_address_bits", f"reserved high nibble set (0x{bits:02X})")
    multi = p.has_feature(P.FEATURE_MULTIPLANE_PE) or p.has_feature(P.FEATURE_MULTIPLANE_READ)
    if p.has_feature(P.FEATURE_MULTIPLANE_PE) and p.planes == 1:
        r.warn("multiplane-no-planes", "features", f"multi-plane program/erase is set but {W('plane_address_bits')} is zero")
    if p.planes > 1 and not multi:
        r.warn("planes-unannounced", "plane_address_bits", f"{bits & 0x0F} but no multi-plane feature in {W('features')}")
    if p.planes == 1 and p.multiplane_attributes and not multi:
        r.warn("multiplane-attributes-unannounced", "multiplane_attributes",
               f"0x{p.multiplane_attributes:02X} on a single-plane LUN")
    if p.blocks_per_lun and p.planes > 1 and p.blocks_per_lun % p.planes:
        r.error("planes-divide-blocks", "plane_address_bits", f"{p.planes} planes do not divide {p.blocks_per_lun} blocks")
    if p.t_r_multiplane_us and p.planes == 1:
        r.warn("multiplane-tr-single-plane", "t_r_multiplane_us", f"{p.t_r_multiplane_us} us on a single-plane LUN")
    elif p.t_r_multiplane_us and p.t_r_us and p.t_r_multiplane_us < p.t_r_us:
        r.warn("multiplane-tr-short", "t_r_multiplane_us", f"{p.t_r_multiplane_us} us is below the single-plane tR of {p.t_r_us} us")


def _endurance_value(r, field, raw, bits_per_cell):
    value, exp = raw & 0xFF, raw >> 8
    cycles = value * 10 ** min(exp, 20)
    if exp > 7:
        r.warn("endurance-implausible", field, f"{value} x 10^{exp} cycles")
    elif bits_per_cell > 1 and cycles > 100_000:
        r.warn("endurance-high-for-cell", field, f"{cycles} cycles for a {bits_per_cell}-bit cell")
    return cycles


def _endurance(r, p):
    if p.block_endurance & 0xFF == 0:
        r.warn("block-endurance-missing", "block_endurance", f"no endurance given (0x{p.block_endurance:04X})")
    else:
        _endurance_value(r, "block_endurance", p.block_endurance, p.bits_per_cell)
    if p.guaranteed_endurance:
        _endurance_value(r, "guaranteed_endurance", p.guaranteed_endurance, p.bits_per_cell)
        if p.guaranteed_valid_blocks == 0:
            r.warn("guaranteed-endurance-no-blocks", "guaranteed_endurance",
                   f"given while {W('guaranteed_valid_blocks')} is zero")


# ECC ---------------------------------------------------------------------------------------------

def _ecc(r, p):
    ecc = p.ecc_bits
    if ecc == 0xFF:
        if not p.has_feature(P.FEATURE_EXT_PAGE):
            r.error("ecc-ext-unannounced", "ecc_bits", f"0xFF points to an extended parameter page that "
                    f"{W('features')} does not announce")
        return
    if ecc == 0:
        r.warn("ecc-none", "ecc_bits", "zero: no ECC requirement given")
    elif p.bits_per_cell > 1 and ecc < 4 * (p.bits_per_cell - 1):
        r.warn("ecc-low-for-cell", "ecc_bits", f"{ecc} bits per 512 bytes for a {p.bits_per_cell}-bit cell")


def _ecc_capacity(r, p):
    """BCH parity for the requirement (page or extended page) must fit the spare area."""
    req = p.ecc_requirement
    page, spare = p.data_bytes_per_page, p.spare_bytes_per_page
    if not req or not req[0] or not page or spare >= page:
        return
    bits, cw = req
    if cw > page:
        return                       # Named by the extended page rules.
    m = (cw * 8).bit_length()        # BCH over GF(2^m) covers cw bytes plus parity.
    need = page // cw * -(-bits * m // 8)
    where = "ecc_bits" if p.ecc_bits != 0xFF else "extended page ECC section"
    if need + 2 > spare:
        r.warn("spare-too-small-for-ecc", "spare_bytes_per_page",
               f"{spare} bytes; BCH for {bits} bits per {cw} bytes ({where}) needs {need} parity bytes "
               f"for the {page}-byte page plus 2 for the bad-block marker")


# Timings -----------------------------------------------------------------------------------------

def _modes(r, name, bits, width, label):
    if bits >> width:
        r.warn("modes-reserved", name, f"reserved bits above mode {width - 1} are set (0x{bits:X})")
    bits &= (1 << width) - 1
    if bits and bits & (bits + 1):
        r.warn("modes-gaps", name, f"{label} modes 0x{bits:X} skip a mode below the fastest")


def _array_timings(r, p):
    for name in ("t_prog_us", "t_bers_us", "t_r_us"):
        if p.values[name] == 0:
            r.error("array-time-zero", name, "zero")
    t_r, t_prog, t_bers = p.t_r_us, p.t_prog_us, p.t_bers_us
    if t_r and t_prog and t_r > t_prog:
        r.warn("tr-above-tprog", "t_r_us", f"tR {t_r} us exceeds tPROG {t_prog} us")
    if t_prog and t_bers and t_prog > t_bers:
        r.warn("tprog-above-tbers", "t_prog_us", f"tPROG {t_prog} us exceeds tBERS {t_bers} us")
    if t_bers and t_bers < 500:
        r.warn("tbers-implausible", "t_bers_us", f"{t_bers} us: a block erase takes milliseconds")
    if t_prog > 20_000:
        r.warn("tprog-implausible", "t_prog_us", f"{t_prog} us")
    if t_r > 2_000:
        r.warn("tr-implausible", "t_r_us", f"{t_r} us")
    sdr = p.sdr_timing_modes
    if not sdr & 1:
        r.error("sdr-mode0-missing", "sdr_timing_modes", f"SDR timing mode 0 is mandatory and not set (0x{sdr:04X})")
    _modes(r, "sdr_timing_modes", sdr, 6, "SDR")
    cache = p.obsolete_cache_modes
    if cache and cache & ~sdr:
        r.warn("cache-modes-not-sdr", "obsolete_cache_modes", f"0x{cache:04X} lists modes {W('sdr_timing_modes')} does not")
    if cache and not p.has_command(P.OPT_PROGRAM_CACHE):
        r.warn("cache-modes-no-command", "obsolete_cache_modes", f"0x{cache:04X} without PROGRAM CACHE")
    tccs, fastest = p.t_ccs_ns, max(p.sdr_modes, default=0)
    if tccs == 0:
        r.warn("tccs-zero", "t_ccs_ns", f"zero; the ONFI default of {ONFI_DEFAULT_TCCS_NS} ns applies")
    elif tccs > ONFI_DEFAULT_TCCS_NS:
        r.warn("tccs-above-default", "t_ccs_ns", f"{tccs} ns exceeds the {ONFI_DEFAULT_TCCS_NS} ns hosts use "
               "before they have read the page")
    elif tccs < SDR_TWHR_NS[fastest]:
        r.warn("tccs-below-twhr", "t_ccs_ns", f"{tccs} ns is below tWHR ({SDR_TWHR_NS[fastest]} ns) of SDR "
               f"mode {fastest}, which it must cover")
    if p.t_adl_ns == 0 and p.top_revision >= V["2.1"]:
        r.warn("tadl-zero", "t_adl_ns", f"zero; the ONFI default of {ONFI_DEFAULT_TADL_NS} ns applies")
    elif p.t_adl_ns > ONFI_DEFAULT_TADL_NS:
        r.warn("tadl-above-default", "t_adl_ns", f"{p.t_adl_ns} ns exceeds the {ONFI_DEFAULT_TADL_NS} ns default")


def _interface(r, p, feature, label, field, bits, width):
    """An interface's feature bit against its timing mode field."""
    announced = p.has_feature(feature)
    if announced and not bits:
        r.error("interface-no-modes", "features", f"{label} is announced but {W(field)} lists no mode")
    elif bits and not announced:
        r.warn("interface-modes-unannounced", field, f"0x{bits:X} but {label} is not in {W('features')}")
    if bits:
        _modes(r, field, bits, width, label)
    if announced and not p.has_command(P.OPT_FEATURES):
        r.warn("interface-no-set-features", "features", f"{label} without GET/SET FEATURES "
               f"({W('optional_commands')}) to select it")


def _interface_modes(r, p):
    top = p.top_revision
    _interface(r, p, P.FEATURE_NVDDR, "NV-DDR", "nvddr_timing_modes", p.nvddr_timing_modes, 6)
    # A later interface's bit in an earlier revision is only a reserved bit (_late_bits).
    if top >= V["3.0"]:
        _interface(r, p, P.FEATURE_NVDDR2, "NV-DDR2", "nvddr2_timing_modes", p.nvddr2_mode_bits,
                   11 if top >= V["4.0"] else 8)
    if top >= V["4.0"]:
        field = "nvddr3_timing_modes_5x" if top >= V["5.0"] else "nvddr3_timing_modes"
        _interface(r, p, P.FEATURE_NVDDR3, "NV-DDR3", field, p.nvddr3_mode_bits, 11)
    if top >= V["5.0"]:
        _interface(r, p, P.FEATURE_NVLPDDR4, "NV-LPDDR4", "nvlpddr4_timing_modes", p.nvlpddr4_timing_modes, 32)
    if p.nvddr_timing_modes and not p.nvddr_timing_modes & 1:
        r.warn("nvddr-mode0-missing", "nvddr_timing_modes", f"NV-DDR mode 0 not listed (0x{p.nvddr_timing_modes:02X})")
    ddr23 = p.has_feature(P.FEATURE_NVDDR2) or p.has_feature(P.FEATURE_NVDDR3)
    for name in ("nvddr2_features", "nvddr2_warmup_cycles"):
        if p.values[name] and not ddr23:
            r.warn("ddr23-fields-unannounced", name, f"0x{p.values[name]:02X} without NV-DDR2/3 in {W('features')}")
    if p.nvddr_features and not (p.has_feature(P.FEATURE_NVDDR) or p.has_feature(P.FEATURE_NVDDR2)):
        r.warn("ddr-fields-unannounced", "nvddr_features", f"0x{p.nvddr_features:02X} without NV-DDR/NV-DDR2")


def _electrical(r, p):
    for typ, mx in (("io_pin_capacitance_typ", "io_pin_capacitance_max"),
                    ("input_pin_capacitance_typ", "input_pin_capacitance_max")):
        if p.values[typ] and p.values[mx] and p.values[typ] > 10 * p.values[mx]:
            r.warn("capacitance-typ-above-max", typ, f"{p.values[typ] / 10:g} pF typical exceeds the "
                   f"{p.values[mx]} pF maximum ({W(mx)})")
    drive = p.driver_strength_support
    if drive & 0xF8:
        r.warn("bit-reserved", "driver_strength_support", f"reserved bits 3-7 set (0x{drive:02X})")
    if drive & 0x06 and not drive & 1:
        r.warn("driver-strength-unannounced", "driver_strength_support",
               f"strengths listed (0x{drive:02X}) but bit 0 (settings supported) clear")


def _vendor(r, p):
    if any(p.vendor_specific) and p.vendor_revision == 0:
        r.warn("vendor-revision-missing", "vendor_revision", f"zero while {W('vendor_specific')} holds data")
    if p.vendor_specific[:4] != MPNFM_SIGNATURE:
        return
    small, small_spare, plane = struct.unpack_from("<IHB", p.vendor_specific, 4)
    where = "vendor_specific"
    if not 0 < small < p.data_bytes_per_page:
        r.error("mpnfm-page", where, f"MPNFM small page {small} is not below the page size {p.data_bytes_per_page}")
    if small_spare > p.spare_bytes_per_page:
        r.error("mpnfm-spare", where, f"MPNFM small spare {small_spare} exceeds the spare size {p.spare_bytes_per_page}")
    if plane >= p.planes:
        r.error("mpnfm-plane", where, f"MPNFM plane {plane} does not exist ({p.planes} planes)")


# Extended parameter page -------------------------------------------------------------------------

def _ext_ok(chunk):
    return chunk[2:6] == EXT_SIGNATURE and P.crc16(chunk[2:]) == struct.unpack_from("<H", chunk, 0)[0]


def _extended_page(r, p, data):
    """Find, check and decode the extended page (after the parameter page copies) into p.ext."""
    length = p.ext_param_page_length * 16
    if not p.has_feature(P.FEATURE_EXT_PAGE) or length < 48:
        return
    start = (p.param_page_count or 3) * P.PAGE_SIZE
    where = f"extended parameter page (bytes {start}-{start + length - 1})"
    if len(data) <= start:
        if p.ecc_bits == 0xFF:
            r.warn("ext-page-absent", "ecc_bits", f"the ECC requirement is in the {where}, which the data "
                   "does not include")
        return
    copies = [data[i:i + length] for i in range(start, len(data) - length + 1, length)]
    good = next((k for k, c in enumerate(copies) if _ext_ok(c)), None)
    if good is None:
        r.error("ext-page-unusable", where, f"no copy of {length} bytes has signature {EXT_SIGNATURE!r} "
                f"and a matching CRC ({len(copies)} copies in the data)")
        return
    if good:
        r.warn("ext-page-copy", where, f"copies 0-{good - 1} fail their signature or CRC; copy {good} used")
    p.ext = _ext_sections(r, p, copies[good], where)
    if p.ecc_bits == 0xFF and not p.ext["ecc"]:
        r.error("ext-page-no-ecc", "ecc_bits", f"0xFF but the {where} has no ECC section")


def _ext_sections(r, p, ext, where):
    sections, pos, ecc = [], 32, None
    for i in range(8):
        kind, size = ext[16 + 2 * i], ext[17 + 2 * i]
        body = ext[pos:pos + 16 * size]
        if kind == EXT_SECTION_UNUSED:
            if size:
                r.warn("ext-section-unused-length", where, f"section {i} is unused (type 0) but {size} x 16 bytes long")
            continue
        sections.append((kind, size))
        if pos + 16 * size > len(ext):
            r.error("ext-sections-overflow", where, f"section {i} ends at byte {pos + 16 * size}, past the "
                    f"{len(ext)}-byte page ({W('ext_param_page_length')})")
            break
        if kind == EXT_SECTION_ECC and size and ecc is None:
            ecc = _ext_ecc(r, p, body, f"{where}, ECC section {i}")
        elif kind not in (EXT_SECTION_MORE, EXT_SECTION_ECC):
            r.warn("ext-section-unknown", where, f"section {i} has unknown type {kind}")
        pos += 16 * size
    return {"sections": sections, "ecc": ecc}


def _ext_ecc(r, p, body, where):
    bits, exp, bad, endurance = body[0], body[1], *struct.unpack_from("<HH", body, 2)
    ecc = {"bits": bits, "codeword_exp": exp, "bad_blocks": bad, "endurance": endurance}
    if exp == 0:
        r.error("ext-ecc-codeword", where, "codeword size exponent is 0")
    elif exp >= 32 or (p.data_bytes_per_page and 1 << exp > p.data_bytes_per_page):
        r.error("ext-ecc-codeword", where, f"codeword of 2^{exp} bytes exceeds the {p.data_bytes_per_page}-byte page")
    elif exp < 9:
        r.warn("ext-ecc-codeword-small", where, f"codeword of {1 << exp} bytes (ONFI codewords are 512 bytes or more)")
    if bits == 0:
        r.warn("ecc-none", where, "zero ECC bits")
    if p.blocks_per_lun and bad > p.blocks_per_lun:
        r.error("bad-blocks-exceed", where, f"{bad} bad blocks exceed blocks per LUN {p.blocks_per_lun}")
    if endurance:
        _endurance_value(r, where, endurance, p.bits_per_cell)
    return ecc


def decode_ext(data, page):
    """The extended page of `data` as check() decodes it (p.ext), or None."""
    _extended_page(_Report(page), page, data)
    return page.ext
