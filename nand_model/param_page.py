"""ONFI parameter page: CRC, encoding, and a checking parser shared by the emulator, host and tests.

One module owns the 256-byte layout (ONFI 1.0-4.x, little-endian). The die emulator is configured
from a page this module writes or accepts; the host prints and checks chip pages with it; the
firmware's C parser mirrors its rules. Parsing follows what trusted stacks do (Linux
`nand_onfi_detect`): take the first copy with signature and CRC right, else a bitwise majority of
three copies whose CRC must then be right. Every problem names the field and its byte offset;
errors refuse the page, warnings accept it.
"""

import struct
from dataclasses import dataclass, field, fields

PAGE_SIZE  = 256
CRC_INIT   = 0x4F4E
CRC_POLY   = 0x8005
SIGNATURE  = b"ONFI"

# Revision bitmap (bytes 4-5): bit -> version.
REVISIONS = {1: "1.0", 2: "2.0", 3: "2.1", 4: "2.2", 5: "2.3", 6: "3.0", 7: "3.1", 8: "3.2",
             9: "4.0", 10: "4.1", 11: "4.2", 12: "5.0"}

# Features supported (bytes 6-7).
FEATURES = {0: "16-bit data bus", 1: "multiple LUN operations", 2: "non-sequential page programming",
            3: "multi-plane program and erase", 4: "odd-to-even page copyback", 5: "NV-DDR",
            6: "multi-plane read", 7: "extended parameter page", 8: "program page register clear enhancement",
            9: "EZ NAND", 10: "NV-DDR2", 11: "volume addressing", 12: "external Vpp", 13: "NV-DDR3"}
FEATURE_16BIT, FEATURE_MULTI_LUN, FEATURE_MULTIPLANE_PE, FEATURE_NVDDR = 0, 1, 3, 5
FEATURE_MULTIPLANE_READ, FEATURE_EXT_PAGE, FEATURE_NVDDR2 = 6, 7, 10

# Optional commands supported (bytes 8-9).
OPT_COMMANDS = {0: "program page cache", 1: "read cache", 2: "get/set features",
                3: "read status enhanced", 4: "copyback", 5: "read unique ID",
                6: "change read column enhanced", 7: "change row address", 8: "small data move",
                9: "reset LUN", 10: "volume select", 11: "ODT configure", 12: "LUN get/set features",
                13: "ZQ calibration"}
OPT_PROGRAM_CACHE, OPT_READ_CACHE, OPT_FEATURES, OPT_STATUS_ENHANCED = 0, 1, 2, 3


class ParamPageError(ValueError):
    """The page cannot be used; the message names the field and byte offset."""


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
    Field("reserved_11",              11,  "1s"),
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
    Field("ez_nand_support",          115, "B"),
    Field("reserved_116",             116, "12s"),
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
    Field("reserved_160",             160, "4s"),
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
    warnings : list = field(default_factory=list)

    def __getattr__(self, name):
        try:
            return self.__dict__["values"][name]
        except KeyError:
            raise AttributeError(name) from None

    # Derived values ------------------------------------------------------------------------------
    @property
    def revision_name(self):
        bits = [b for b in REVISIONS if self.revision >> b & 1]
        return REVISIONS[max(bits)] if bits else "unknown"

    @property
    def row_address_cycles(self):
        return self.address_cycles & 0x0F

    @property
    def column_address_cycles(self):
        return self.address_cycles >> 4

    @property
    def feature_names(self):
        return _bits(self.features, FEATURES)

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
    def planes(self):
        return 1 << self.plane_address_bits

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


def select_copy(data):
    """(page bytes, copy index, notes) of the first good copy, else the 3-copy majority.

    Raises ParamPageError when neither yields a page with the right signature and CRC.
    """
    if len(data) < PAGE_SIZE:
        raise ParamPageError(f"parameter page data is {len(data)} bytes; one copy is {PAGE_SIZE}")
    copies = [data[i:i + PAGE_SIZE] for i in range(0, len(data) - PAGE_SIZE + 1, PAGE_SIZE)]
    notes = []
    for i, page in enumerate(copies):
        if _copy_ok(page):
            return page, i, notes
        stored = struct.unpack_from("<H", page, 254)[0]
        if page[:4] != SIGNATURE:
            notes.append(f"copy {i}: signature (bytes 0-3) is {bytes(page[:4])!r}, not b'ONFI'")
        else:
            notes.append(f"copy {i}: crc (bytes 254-255) is 0x{stored:04X}, computed 0x{crc16(page[:254]):04X}")
    if len(copies) >= 3:
        page = _majority(copies)
        if _copy_ok(page):
            notes.append("using the bitwise majority of copies 0-2")
            return page, -1, notes
        notes.append("the bitwise majority of copies 0-2 fails its CRC too")
    raise ParamPageError("no usable parameter page copy: " + "; ".join(notes))


def parse(data, strict=False):
    """Parse and check parameter page data (one or more 256-byte copies back to back).

    Returns a ParameterPage with `warnings`. Raises ParamPageError naming the field and byte
    offset when the page is unusable (or, with strict=True, when there is any warning).
    """
    page, index, notes = select_copy(bytes(data))
    pp = ParameterPage(values=_decode(page), copy=index, warnings=list(notes))
    errors = []
    _check(pp, errors, pp.warnings)
    if strict and pp.warnings and not errors:
        errors = pp.warnings
    if errors:
        raise ParamPageError("invalid parameter page: " + "; ".join(errors))
    return pp


def _is_pow2(x):
    return x > 0 and x & (x - 1) == 0


def _check(pp, errors, warnings):
    W = lambda name: FIELDS[name].where()
    # Revision.
    if pp.revision & 1:
        errors.append(f"{W('revision')}: bit 0 is reserved and set (0x{pp.revision:04X})")
    if not any(pp.revision >> b & 1 for b in REVISIONS):
        errors.append(f"{W('revision')}: no ONFI version bit set (0x{pp.revision:04X})")
    unknown = pp.revision & ~sum(1 << b for b in REVISIONS) & ~1
    if unknown:
        warnings.append(f"{W('revision')}: unknown version bits 0x{unknown:04X}")
    # Reserved ranges.
    for f in LAYOUT:
        if f.name.startswith("reserved"):
            raw = pp.values[f.name]
            if any(raw):
                warnings.append(f"{f.where()}: reserved bytes are not zero")
    # Text fields.
    for name in ("manufacturer", "model"):
        raw = pp.values[name]
        if not all(32 <= c < 127 for c in raw):
            warnings.append(f"{W(name)}: not printable ASCII ({raw!r})")
    # Memory organisation.
    if pp.data_bytes_per_page == 0:
        errors.append(f"{W('data_bytes_per_page')}: zero")
    elif not _is_pow2(pp.data_bytes_per_page) or pp.data_bytes_per_page < 512:
        warnings.append(f"{W('data_bytes_per_page')}: {pp.data_bytes_per_page} is not a power of two >= 512")
    if pp.spare_bytes_per_page == 0:
        warnings.append(f"{W('spare_bytes_per_page')}: zero (no room for ECC or bad-block markers)")
    elif pp.data_bytes_per_page and pp.spare_bytes_per_page >= pp.data_bytes_per_page:
        errors.append(f"{W('spare_bytes_per_page')}: {pp.spare_bytes_per_page} is not below the page size {pp.data_bytes_per_page}")
    if pp.pages_per_block == 0:
        errors.append(f"{W('pages_per_block')}: zero")
    elif not _is_pow2(pp.pages_per_block):
        warnings.append(f"{W('pages_per_block')}: {pp.pages_per_block} is not a power of two")
    if pp.blocks_per_lun == 0:
        errors.append(f"{W('blocks_per_lun')}: zero")
    if pp.luns_per_ce == 0:
        errors.append(f"{W('luns_per_ce')}: zero")
    if pp.bits_per_cell == 0 or pp.bits_per_cell > 4:
        errors.append(f"{W('bits_per_cell')}: {pp.bits_per_cell} is outside 1..4")
    if pp.blocks_per_lun and pp.max_bad_blocks_per_lun > pp.blocks_per_lun:
        errors.append(f"{W('max_bad_blocks_per_lun')}: {pp.max_bad_blocks_per_lun} exceeds blocks per LUN {pp.blocks_per_lun}")
    # Address cycles must reach every column and row.
    col, row = pp.column_address_cycles, pp.row_address_cycles
    if col == 0 or row == 0:
        errors.append(f"{W('address_cycles')}: 0x{pp.address_cycles:02X} gives {col} column and {row} row cycles")
    else:
        columns = pp.data_bytes_per_page + pp.spare_bytes_per_page
        if columns and (columns - 1) >> (8 * col):
            errors.append(f"{W('address_cycles')}: {col} column cycles cannot address {columns} bytes")
        if pp.pages_per_block and pp.blocks_per_lun and pp.luns_per_ce:
            row_bits = ((pp.pages_per_block - 1).bit_length() + (pp.blocks_per_lun - 1).bit_length()
                        + (pp.luns_per_ce - 1).bit_length())
            if row_bits > 8 * row:
                errors.append(f"{W('address_cycles')}: {row} row cycles ({8 * row} bits) cannot address "
                              f"{row_bits} bits of page, block and LUN")
    # Planes.
    if pp.has_feature(FEATURE_MULTIPLANE_PE) and pp.plane_address_bits == 0:
        warnings.append(f"{W('features')}: multi-plane program/erase is set but {W('plane_address_bits')} is zero")
    if pp.plane_address_bits and not (pp.has_feature(FEATURE_MULTIPLANE_PE) or pp.has_feature(FEATURE_MULTIPLANE_READ)):
        warnings.append(f"{W('plane_address_bits')}: {pp.plane_address_bits} but no multi-plane feature in {W('features')}")
    if pp.blocks_per_lun and pp.plane_address_bits and pp.blocks_per_lun % (1 << pp.plane_address_bits):
        errors.append(f"{W('plane_address_bits')}: {pp.planes} planes do not divide {pp.blocks_per_lun} blocks")
    # ECC / extended parameter page.
    if pp.ecc_bits == 0xFF and not pp.has_feature(FEATURE_EXT_PAGE):
        errors.append(f"{W('ecc_bits')}: 0xFF points to an extended parameter page that {W('features')} does not announce")
    if pp.has_feature(FEATURE_EXT_PAGE) and pp.ext_param_page_length == 0:
        errors.append(f"{W('ext_param_page_length')}: zero while {W('features')} announces an extended page")
    if pp.param_page_count == 0 and pp.revision >> 3:
        warnings.append(f"{W('param_page_count')}: zero (ONFI 2.1+ gives the number of copies, at least 3)")
    # Timing modes.
    if not pp.sdr_timing_modes & 1:
        errors.append(f"{W('sdr_timing_modes')}: SDR timing mode 0 is mandatory and not set (0x{pp.sdr_timing_modes:04X})")
    if pp.sdr_timing_modes >> 6:
        warnings.append(f"{W('sdr_timing_modes')}: reserved bits above mode 5 are set (0x{pp.sdr_timing_modes:04X})")
    if pp.has_feature(FEATURE_NVDDR) and pp.nvddr_timing_modes == 0:
        errors.append(f"{W('features')}: NV-DDR is announced but {W('nvddr_timing_modes')} lists no mode")
    if pp.nvddr_timing_modes and not pp.has_feature(FEATURE_NVDDR):
        warnings.append(f"{W('nvddr_timing_modes')}: 0x{pp.nvddr_timing_modes:02X} but NV-DDR is not in {W('features')}")
    if pp.nvddr_timing_modes >> 6:
        warnings.append(f"{W('nvddr_timing_modes')}: reserved bits above mode 5 are set (0x{pp.nvddr_timing_modes:02X})")
    if pp.has_feature(FEATURE_NVDDR2) and pp.nvddr2_timing_modes == 0:
        errors.append(f"{W('features')}: NV-DDR2 is announced but {W('nvddr2_timing_modes')} lists no mode")
    # Array timings.
    for name in ("t_prog_us", "t_bers_us", "t_r_us"):
        if pp.values[name] == 0:
            errors.append(f"{W(name)}: zero")
    if pp.t_r_us and pp.t_prog_us and pp.t_r_us > pp.t_prog_us:
        warnings.append(f"{W('t_r_us')}: tR {pp.t_r_us} us exceeds tPROG {pp.t_prog_us} us")
    if pp.t_prog_us and pp.t_bers_us and pp.t_prog_us > pp.t_bers_us:
        warnings.append(f"{W('t_prog_us')}: tPROG {pp.t_prog_us} us exceeds tBERS {pp.t_bers_us} us")
    if pp.t_ccs_ns == 0:
        warnings.append(f"{W('t_ccs_ns')}: zero; the ONFI default of 500 ns applies")
    if pp.t_adl_ns == 0 and pp.revision >> 3:
        warnings.append(f"{W('t_adl_ns')}: zero; the ONFI default of 400 ns applies")
    # nandlab's MPNFM extension must describe a smaller page on an existing plane.
    if pp.mpnfm:
        small, small_spare, plane = pp.mpnfm
        where = FIELDS["vendor_specific"].where()
        if not 0 < small < pp.data_bytes_per_page:
            errors.append(f"{where}: MPNFM small page {small} is not below the page size {pp.data_bytes_per_page}")
        if small_spare > pp.spare_bytes_per_page:
            errors.append(f"{where}: MPNFM small spare {small_spare} exceeds the spare size {pp.spare_bytes_per_page}")
        if plane >= pp.planes:
            errors.append(f"{where}: MPNFM plane {plane} does not exist ({pp.planes} planes)")
    # Interface width: the emulator and controller drive an 8-bit bus.
    if pp.has_feature(FEATURE_16BIT):
        warnings.append(f"{W('features')}: 16-bit data bus; nandlab drives 8-bit buses")


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
    raw = Path(path).read_bytes()
    if raw[:4] == SIGNATURE or b"\0" in raw[:256]:
        return raw
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        return raw
    return parse_hex(text, str(path))


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
