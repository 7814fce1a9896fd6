"""ONFI parameter page: CRC, encoding, and a checking parser shared by the emulator, host and tests.

One module owns the 256-byte layout (ONFI 1.0-5.x, little-endian). The die emulator is configured
from a page this module writes or accepts; the host prints and checks chip pages with it; the
firmware's C parser mirrors its rules. Parsing follows what trusted stacks do (Linux
`nand_onfi_detect`): take the first copy with signature and CRC right, else a bitwise majority of
three copies whose CRC must then be right. The fields are then checked (`param_check.py`: ranges,
and consistency with the revision, the feature and command bits and each other). Every finding is
a `Diagnostic` naming the field and its byte offset; errors refuse the page, warnings accept it
(and refuse it with strict=True).
"""

import struct
from dataclasses import dataclass, field, fields

PAGE_SIZE  = 256
CRC_INIT   = 0x4F4E
CRC_POLY   = 0x8005
SIGNATURE  = b"ONFI"

# Revision bitmap (bytes 4-5): bit -> version.
# Bits 13 and 14 (5.1, 5.2) continue the sequence; public decoders stop at 5.0, so they are assumed.
REVISIONS = {1: "1.0", 2: "2.0", 3: "2.1", 4: "2.2", 5: "2.3", 6: "3.0", 7: "3.1", 8: "3.2",
             9: "4.0", 10: "4.1", 11: "4.2", 12: "5.0", 13: "5.1", 14: "5.2"}
V = {name: bit for bit, name in REVISIONS.items()}     # "2.1" -> 3: compare revisions by bit.

# Features supported (bytes 6-7).
FEATURES = {0: "16-bit data bus", 1: "multiple LUN operations", 2: "non-sequential page programming",
            3: "multi-plane program and erase", 4: "odd-to-even page copyback", 5: "NV-DDR",
            6: "multi-plane read", 7: "extended parameter page", 8: "program page register clear enhancement",
            9: "EZ NAND", 10: "NV-DDR2", 11: "volume addressing", 12: "external Vpp", 13: "NV-DDR3",
            14: "ZQ calibration", 15: "package electrical specification"}
FEATURES_5X = {**FEATURES, 9: "NV-LPDDR4"}      # ONFI 5.x dropped EZ NAND; bit 9 is NV-LPDDR4 there.
FEATURE_16BIT, FEATURE_MULTI_LUN, FEATURE_NONSEQ_PROGRAM, FEATURE_MULTIPLANE_PE = 0, 1, 2, 3
FEATURE_ODD_EVEN_COPYBACK, FEATURE_NVDDR, FEATURE_MULTIPLANE_READ, FEATURE_EXT_PAGE = 4, 5, 6, 7
FEATURE_PAGE_REG_CLEAR, FEATURE_EZ_NAND, FEATURE_NVLPDDR4, FEATURE_NVDDR2 = 8, 9, 9, 10
FEATURE_VOLUME, FEATURE_EXT_VPP, FEATURE_NVDDR3, FEATURE_ZQ = 11, 12, 13, 14

# Optional commands supported (bytes 8-9).
OPT_COMMANDS = {0: "program page cache", 1: "read cache", 2: "get/set features",
                3: "read status enhanced", 4: "copyback", 5: "read unique ID",
                6: "change read column enhanced", 7: "change row address", 8: "small data move",
                9: "reset LUN", 10: "volume select", 11: "ODT configure", 12: "LUN get/set features",
                13: "ZQ calibration"}
OPT_PROGRAM_CACHE, OPT_READ_CACHE, OPT_FEATURES, OPT_STATUS_ENHANCED = 0, 1, 2, 3
OPT_COPYBACK, OPT_VOLUME_SELECT, OPT_LUN_FEATURES, OPT_ZQ = 4, 10, 12, 13


class ParamPageError(ValueError):
    """The page cannot be used; the message names the field and byte offset of every problem."""


class Diagnostic(str):
    """One finding, read as its text "<field> (bytes a-b): <what> [<name>]".

    `severity` is "error" (the page contradicts itself or ONFI: refused) or "warning" (unusual:
    accepted, refused with strict); `name` is the rule's stable name (docs/param_page_checker.md).
    """
    def __new__(cls, severity, name, where, text):
        self = super().__new__(cls, f"{where}: {text} [{name}]")
        self.severity, self.name, self.where, self.text = severity, name, where, text
        return self

    @property
    def is_error(self):
        return self.severity == "error"


@dataclass(frozen=True)
class Field:
    name   : str
    offset : int
    fmt    : str    # struct format: B, H, I, or Ns for byte strings.

    @property
    def size(self):
        return struct.calcsize("<" + self.fmt)

    def where(self):
        end = self.offset + self.size - 1
        return f"{self.name} (byte {self.offset})" if end == self.offset else f"{self.name} (bytes {self.offset}-{end})"


# The layout, in byte order. Reserved ranges are listed so they can be checked to be zero.
LAYOUT = [
    Field("signature",                0,   "4s"),
    Field("revision",                 4,   "H"),
    Field("features",                 6,   "H"),
    Field("optional_commands",        8,   "H"),
    Field("jtg_primary_commands",     10,  "B"),
    Field("training_commands",        11,  "B"),      # ONFI 4.1+ (reserved before).
    Field("ext_param_page_length",    12,  "H"),
    Field("param_page_count",         14,  "B"),
    Field("reserved_15",              15,  "17s"),
    Field("manufacturer",             32,  "12s"),
    Field("model",                    44,  "20s"),
    Field("jedec_id",                 64,  "B"),
    Field("date_code",                65,  "H"),
    Field("reserved_67",              67,  "13s"),
    Field("data_bytes_per_page",      80,  "I"),
    Field("spare_bytes_per_page",     84,  "H"),
    Field("obsolete_partial_data",    86,  "I"),
    Field("obsolete_partial_spare",   90,  "H"),
    Field("pages_per_block",          92,  "I"),
    Field("blocks_per_lun",           96,  "I"),
    Field("luns_per_ce",              100, "B"),
    Field("address_cycles",           101, "B"),
    Field("bits_per_cell",            102, "B"),
    Field("max_bad_blocks_per_lun",   103, "H"),
    Field("block_endurance",          105, "H"),
    Field("guaranteed_valid_blocks",  107, "B"),
    Field("guaranteed_endurance",     108, "H"),
    Field("programs_per_page",        110, "B"),
    Field("obsolete_partial_attr",    111, "B"),
    Field("ecc_bits",                 112, "B"),
    Field("plane_address_bits",       113, "B"),
    Field("multiplane_attributes",    114, "B"),
    Field("ez_nand_support",          115, "B"),      # 2.3-4.x; reserved in 5.x.
    Field("nvddr3_timing_modes_5x",   116, "H"),      # ONFI 5.x (reserved before).
    Field("nvlpddr4_timing_modes",    118, "I"),      # ONFI 5.x (reserved before).
    Field("reserved_122",             122, "6s"),
    Field("io_pin_capacitance_max",   128, "B"),
    Field("sdr_timing_modes",         129, "H"),
    Field("obsolete_cache_modes",     131, "H"),
    Field("t_prog_us",                133, "H"),
    Field("t_bers_us",                135, "H"),
    Field("t_r_us",                   137, "H"),
    Field("t_ccs_ns",                 139, "H"),
    Field("nvddr_timing_modes",       141, "B"),
    Field("nvddr2_timing_modes",      142, "B"),
    Field("nvddr_features",           143, "B"),
    Field("clk_pin_capacitance_typ",  144, "H"),
    Field("io_pin_capacitance_typ",   146, "H"),
    Field("input_pin_capacitance_typ",148, "H"),
    Field("input_pin_capacitance_max",150, "B"),
    Field("driver_strength_support",  151, "B"),
    Field("t_r_multiplane_us",        152, "H"),
    Field("t_adl_ns",                 154, "H"),
    Field("t_r_ez_nand_us",           156, "H"),
    Field("nvddr2_features",          158, "B"),
    Field("nvddr2_warmup_cycles",     159, "B"),
    Field("nvddr3_timing_modes",      160, "H"),      # ONFI 4.x.
    Field("nvddr2_timing_modes_hi",   162, "B"),      # ONFI 4.x: NV-DDR2 modes 8-15.
    Field("reserved_163",             163, "1s"),
    Field("vendor_revision",          164, "H"),
    Field("vendor_specific",          166, "88s"),
    Field("crc",                      254, "H"),
]
FIELDS = {f.name: f for f in LAYOUT}


def crc16(data, crc=CRC_INIT):
    """ONFI CRC-16: polynomial 0x8005, initial 0x4F4E, MSB first, no reflection, no final XOR."""
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ CRC_POLY) if crc & 0x8000 else (crc << 1)
            crc &= 0xFFFF
    return crc


def _bits(value, names):
    return [names.get(b, f"bit {b}") for b in range(16) if value >> b & 1]


@dataclass
class ParameterPage:
    """Decoded fields of one parameter page (names as in LAYOUT)."""
    values   : dict = field(default_factory=dict)
    copy     : int  = 0       # Which copy was used (-1: bitwise majority of three copies).
    warnings : list = field(default_factory=list)    # Diagnostics of severity "warning".
    errors   : list = field(default_factory=list)    # Empty on a page parse() returns.
    ext      : dict = None    # The extended parameter page (param_check.decode_ext), if in the data.

    def __getattr__(self, name):
        try:
            return self.__dict__["values"][name]
        except KeyError:
            raise AttributeError(name) from None

    # Derived values ------------------------------------------------------------------------------
    @property
    def top_revision(self):
        """Bit of the highest ONFI version the page claims (compare with V["2.1"] etc.), 0 if none."""
        bits = [b for b in REVISIONS if self.revision >> b & 1]
        return max(bits) if bits else 0

    @property
    def revision_name(self):
        return REVISIONS.get(self.top_revision, "unknown")

    @property
    def row_address_cycles(self):
        return self.address_cycles & 0x0F

    @property
    def column_address_cycles(self):
        return self.address_cycles >> 4

    @property
    def feature_names(self):
        return _bits(self.features, FEATURES_5X if self.top_revision >= V["5.0"] else FEATURES)

    @property
    def optional_command_names(self):
        return _bits(self.optional_commands, OPT_COMMANDS)

    @property
    def sdr_modes(self):
        return [m for m in range(6) if self.sdr_timing_modes >> m & 1]

    @property
    def nvddr_modes(self):
        return [m for m in range(6) if self.nvddr_timing_modes >> m & 1]

    @property
    def nvddr2_modes(self):
        return [m for m in range(16) if self.nvddr2_mode_bits >> m & 1]

    @property
    def nvddr2_mode_bits(self):
        """NV-DDR2 modes 0-7 (byte 142) and, from ONFI 4.0, 8-15 (byte 162)."""
        hi = self.nvddr2_timing_modes_hi if V["4.0"] <= self.top_revision < V["5.0"] else 0
        return self.nvddr2_timing_modes | hi << 8

    @property
    def nvddr3_mode_bits(self):
        """NV-DDR3 modes: bytes 160-161 in ONFI 4.x, 116-117 in 5.x."""
        if self.top_revision >= V["5.0"]:
            return self.nvddr3_timing_modes_5x
        return self.nvddr3_timing_modes if self.top_revision >= V["4.0"] else 0

    @property
    def planes(self):
        return 1 << (self.plane_address_bits & 0x0F)    # High nibble reserved.

    @property
    def diagnostics(self):
        return self.errors + self.warnings

    @property
    def ecc_requirement(self):
        """(bits correctable, per codeword bytes) from the page or its extended page; None if unknown."""
        if self.ecc_bits != 0xFF:
            return self.ecc_bits, 512
        ecc = (self.ext or {}).get("ecc")
        return (ecc["bits"], 1 << ecc["codeword_exp"]) if ecc and ecc["codeword_exp"] < 32 else None

    @property
    def mpnfm(self):
        """(small page bytes, small spare bytes, plane) when the page announces MPNFM, else None."""
        v = self.vendor_specific
        if v[:4] != MPNFM_SIGNATURE:
            return None
        return struct.unpack_from("<IHB", v, 4)

    @property
    def lun_bytes(self):
        return self.data_bytes_per_page * self.pages_per_block * self.blocks_per_lun

    def has_feature(self, bit):
        return bool(self.features >> bit & 1)

    def has_command(self, bit):
        return bool(self.optional_commands >> bit & 1)

    @property
    def text_manufacturer(self):
        return self.manufacturer.decode("ascii", errors="replace").strip()

    @property
    def text_model(self):
        return self.model.decode("ascii", errors="replace").strip()


# nandlab vendor extension (vendor-specific bytes 166-253): MPNFM geometry.
MPNFM_SIGNATURE = b"NLMP"


def mpnfm_values(small_page, small_spare, plane):
    """Field values announcing a second, smaller page size for one plane (MPNFM)."""
    return {"vendor_revision": 1,
            "vendor_specific": MPNFM_SIGNATURE + struct.pack("<IHB", small_page, small_spare, plane)}


# Encoding -----------------------------------------------------------------------------------------

def encode(values, copies=3):
    """Bytes of `copies` identical parameter pages from field values (missing fields are zero).

    Text fields (manufacturer, model) are space padded; the CRC is computed here.
    """
    page = bytearray(PAGE_SIZE)
    for name, value in values.items():
        if name not in FIELDS:
            raise KeyError(f"unknown parameter page field '{name}'")
        if name == "crc":
            continue
        f = FIELDS[name]
        if f.fmt.endswith("s"):
            if isinstance(value, str):
                value = value.encode("ascii")
            pad = b" " if name in ("manufacturer", "model") else b"\0"
            if len(value) > f.size:
                raise ValueError(f"{f.where()}: '{value!r}' is longer than {f.size} bytes")
            value = value.ljust(f.size, pad)
        struct.pack_into("<" + f.fmt, page, f.offset, value)
    struct.pack_into("<H", page, 254, crc16(page[:254]))
    return bytes(page) * copies


# Parsing ------------------------------------------------------------------------------------------

def _decode(page):
    return {f.name: struct.unpack_from("<" + f.fmt, page, f.offset)[0] for f in LAYOUT}


def _copy_ok(page):
    return page[:4] == SIGNATURE and crc16(page[:254]) == struct.unpack_from("<H", page, 254)[0]


def _majority(copies):
    a, b, c = copies[:3]
    return bytes((x & y) | (x & z) | (y & z) for x, y, z in zip(a, b, c))


def _note(name, where, text):
    return Diagnostic("warning", name, where, text)


def _copies(data):
    return [data[i:i + PAGE_SIZE] for i in range(0, len(data) - PAGE_SIZE + 1, PAGE_SIZE)]


def select_copy(data):
    """(page bytes, copy index, notes) of the first good copy, else the 3-copy majority.

    `notes` are warning Diagnostics for the copies passed over. Raises ParamPageError when neither
    yields a page with the right signature and CRC.
    """
    if len(data) < PAGE_SIZE:
        raise ParamPageError(f"parameter page data is {len(data)} bytes; one copy is {PAGE_SIZE}")
    copies = _copies(data)
    notes = []
    for i, page in enumerate(copies):
        if _copy_ok(page):
            return page, i, notes
        stored = struct.unpack_from("<H", page, 254)[0]
        if page[:4] != SIGNATURE:
            notes.append(_note("copy-signature", f"copy {i}: signature (bytes 0-3)",
                               f"is {bytes(page[:4])!r}, not b'ONFI'"))
        else:
            notes.append(_note("copy-crc", f"copy {i}: crc (bytes 254-255)",
                               f"is 0x{stored:04X}, computed 0x{crc16(page[:254]):04X}"))
    if len(copies) >= 3:
        page = _majority(copies)
        if _copy_ok(page):
            notes.append(_note("copy-majority", "copies 0-2 (bytes 0-767)",
                               "no copy passes its CRC; using the bitwise majority of copies 0-2"))
            return page, -1, notes
        notes.append(_note("copy-majority", "copies 0-2 (bytes 0-767)",
                           "the bitwise majority of copies 0-2 fails its CRC too"))
    raise ParamPageError("no usable parameter page copy: " + "; ".join(notes))


def _copy_disagreements(data, page, index):
    """Errors for copies that pass their own CRC yet differ from the one used (ONFI: all equal)."""
    out = []
    for i, other in enumerate(_copies(data)):
        if i == index or not _copy_ok(other) or other == page:
            continue
        f = next(f for f in LAYOUT if other[f.offset:f.offset + f.size] != page[f.offset:f.offset + f.size])
        used = "the majority" if index < 0 else f"copy {index}"
        out.append(Diagnostic("error", "copies-differ", f.where(),
                              f"copy {i} passes its CRC but differs from {used} here "
                              f"(byte {i * PAGE_SIZE + f.offset} of the data)"))
    return out


def parse(data, strict=False):
    """Parse and check parameter page data (one or more 256-byte copies back to back, optionally
    followed by the extended parameter page copies).

    Returns a ParameterPage with `warnings` (Diagnostics). Raises ParamPageError listing every
    Diagnostic, field and byte offset, when the page is unusable (or, with strict=True, when it
    has any warning).
    """
    pp = inspect(data)
    if pp.errors or (strict and pp.warnings):
        raise ParamPageError(refusal(pp))
    return pp


def inspect(data):
    """The ParameterPage with all its `errors` and `warnings`, refused or not (for reports and
    tests); raises ParamPageError only when no copy is usable at all."""
    from nandlab.nand_model import param_check
    data = bytes(data)
    page, index, notes = select_copy(data)
    pp = ParameterPage(values=_decode(page), copy=index)
    found = notes + _copy_disagreements(data, page, index) + param_check.check(pp, data)
    pp.errors = [d for d in found if d.is_error]
    pp.warnings = [d for d in found if not d.is_error]
    return pp


def refusal(pp):
    """The message of a refused page: its errors, then its warnings, one per line."""
    what = f"{len(pp.errors)} error(s)" if pp.errors else f"{len(pp.warnings)} warning(s) (strict)"
    lines = [f"error: {d}" for d in pp.errors] + [f"warning: {d}" for d in pp.warnings]
    return f"invalid parameter page, {what}:\n  " + "\n  ".join(lines)


def t_ccs_ns(pp):
    """tCCS to use: the page's value, or the ONFI default when it gives none."""
    return pp.t_ccs_ns or 500


def t_adl_ns(pp):
    return pp.t_adl_ns or 400


# Reading files ------------------------------------------------------------------------------------

def read_file(path):
    """Bytes of a parameter page file: raw binary, or hex text (hexdump -C, xxd, or plain hex bytes).

    Hex text errors name the line.
    """
    from pathlib import Path
    return decode_file(Path(path).read_bytes(), str(path))


def decode_file(raw, name="<data>"):
    """Bytes of a parameter page file's contents (`read_file` without the reading)."""
    if raw[:4] == SIGNATURE or b"\0" in raw[:256]:
        return raw
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        return raw
    return parse_hex(text, name)


def parse_hex(text, name="<text>"):
    out = bytearray()
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0]
        if "|" in line:                       # hexdump -C: drop the ASCII column.
            line = line.split("|", 1)[0]
        tokens = line.replace(",", " ").split()
        if tokens and tokens[0].endswith(":"):
            tokens = tokens[1:]               # xxd / hexdump offset column.
        elif tokens and len(tokens[0]) == 8 and len(tokens) > 1 and all(len(t) <= 4 for t in tokens[1:]):
            tokens = tokens[1:]               # hexdump -C offset without a colon.
        for t in tokens:
            t = t[2:] if t.lower().startswith("0x") else t
            if len(t) % 2 or not t:
                raise ParamPageError(f"{name}:{lineno}: '{t}' is not a hex byte sequence")
            try:
                out += bytes.fromhex(t)
            except ValueError:
                raise ParamPageError(f"{name}:{lineno}: '{t}' is not hex") from None
    return bytes(out)
