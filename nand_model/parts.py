"""NAND part database: geometry and timings as datasheets and papers give them (litedram modules style).

A part is a class with attributes in natural units (bytes, microseconds, nanoseconds); `cycles()`
converts a time to system clock cycles when the emulator or controller is instantiated. A part
can be written as an ONFI parameter page and built back from one (a real chip's page included),
so the emulator, the controller and the host always agree on one description.
"""

import math

from nandlab.nand_model import param_page as pp


def page_size_rule(t, page_size, base_page):
    """A program or erase time `t` of a `base_page` array carried to a `page_size` array by the MPNFM
    paper's rule: x 1.1 per doubling of the page (/ 1.1 per halving), rounded to a whole unit."""
    return round(t * 1.1 ** math.log2(page_size / base_page))


class NandPart:
    """Base class; subclasses override attributes. Instances may override any of them by keyword."""
    manufacturer     = "NANDLAB"
    model            = "GENERIC"
    jedec_id         = 0x00
    source           = "synthetic"     # Where the numbers come from.
    # Geometry.
    page_size        = 2048            # Data bytes per page.
    spare_size       = 64              # Spare (OOB) bytes per page.
    pages_per_block  = 64
    blocks_per_lun   = 1024
    luns_per_ce      = 1
    planes           = 1               # Power of two.
    bits_per_cell    = 1
    max_bad_blocks   = 20
    address_cycles   = None            # (column, row); None: the minimum the geometry needs.
    # MPNFM (two page sizes in one die): plane 1 is a cell array with smaller pages. Its tPROG and
    # tBERS are shorter by ~10 % per halving of the page (MPNFM paper, Fig. 4); tR is the same.
    small_page_size  = None
    small_spare_size = None
    # Array timings (us). MLC parts give LSB/MSB program times; t_prog is the maximum.
    t_r              = 25.0
    t_prog           = 200.0
    t_prog_lsb       = None
    t_prog_msb       = None
    t_bers           = 1500.0
    ispp_loops       = 10              # Program loops (execution + verify) per program.
    # Interface timings (ns), ONFI minima unless a part says otherwise.
    t_ccs            = 500
    t_adl            = 400
    t_whr            = 80
    t_wb             = 100
    t_rr             = 20
    sdr_modes        = (0, 1, 2, 3, 4, 5)
    nvddr_modes      = (0, 1, 2, 3, 4, 5)
    onfi_revision    = (1, 2, 3, 4, 5, 6)   # Revision bitmap bits: 1.0 .. 3.0.
    with_cache       = True            # READ CACHE / PROGRAM CACHE.

    def __init__(self, **overrides):
        for k, v in overrides.items():
            if not hasattr(type(self), k):
                raise AttributeError(f"{type(self).__name__} has no attribute '{k}'")
            setattr(self, k, v)

    # Derived -------------------------------------------------------------------------------------
    @property
    def name(self):
        return type(self).__name__ if self.model == NandPart.model else self.model

    @property
    def min_address_cycles(self):
        col_bits = (self.page_size + self.spare_size - 1).bit_length()
        row_bits = ((self.pages_per_block - 1).bit_length() + (self.blocks_per_lun - 1).bit_length()
                    + (self.luns_per_ce - 1).bit_length())
        return max(1, math.ceil(col_bits / 8)), max(1, math.ceil(row_bits / 8))

    @property
    def column_cycles(self):
        return (self.address_cycles or self.min_address_cycles)[0]

    @property
    def row_cycles(self):
        return (self.address_cycles or self.min_address_cycles)[1]

    @property
    def is_mpnfm(self):
        return self.small_page_size is not None

    @property
    def small_time_percent(self):
        """tPROG/tBERS of the small-page array as % of the large one's."""
        if not self.is_mpnfm:
            return 100
        return page_size_rule(100, self.small_page_size, self.page_size)

    @property
    def lun_bytes(self):
        return self.page_size * self.pages_per_block * self.blocks_per_lun

    @property
    def is_mlc(self):
        return self.bits_per_cell > 1

    @staticmethod
    def cycles(t_ns, sys_clk_freq):
        """Cycles of `sys_clk_freq` covering `t_ns` (rounded up: a minimum must be met)."""
        return max(1, math.ceil(t_ns * 1e-9 * sys_clk_freq - 1e-9))

    def scaled(self, blocks_per_lun=None, pages_per_block=None, luns_per_ce=None):
        """The same part with fewer blocks/pages (to fit block RAM) that still addresses like it:
        page size, spare, planes, timings and address cycles are kept."""
        part = type(self)(**{k: getattr(self, k) for k in _OVERRIDABLE if k in self.__dict__})
        part.address_cycles = (self.column_cycles, self.row_cycles)
        if blocks_per_lun is not None:
            if blocks_per_lun % self.planes:
                raise ValueError(f"{blocks_per_lun} blocks do not divide into {self.planes} planes")
            if blocks_per_lun < self.planes:
                raise ValueError(f"{blocks_per_lun} blocks: a LUN has at least one block in each of its "
                                 f"{self.planes} plane(s)")
            part.blocks_per_lun = blocks_per_lun
        if pages_per_block is not None:
            if pages_per_block < 1:
                raise ValueError(f"{pages_per_block} pages per block: a block takes 1 or more")
            part.pages_per_block = pages_per_block
        if luns_per_ce is not None:
            if luns_per_ce < 1:
                raise ValueError(f"{luns_per_ce} LUNs per CE: a CE takes 1 or more")
            part.luns_per_ce = luns_per_ce
        need, have = part.min_address_cycles[1], self.row_cycles
        if need > have:
            other = (part.pages_per_block - 1).bit_length() + (part.luns_per_ce - 1).bit_length()
            most = 1 << max(8 * have - other, 0)
            raise ValueError(f"{part.blocks_per_lun} blocks x {part.pages_per_block} pages x {part.luns_per_ce} LUN(s) "
                             f"need {need} row address cycles; {self.model} has {have} "
                             f"(at most {most} blocks of {part.pages_per_block} pages)")
        return part

    # ONFI parameter page -------------------------------------------------------------------------
    def param_page_values(self):
        features = 1 << pp.FEATURE_MULTI_LUN if self.luns_per_ce > 1 else 0
        if self.planes > 1:
            features |= 1 << pp.FEATURE_MULTIPLANE_PE | 1 << pp.FEATURE_MULTIPLANE_READ
        if self.nvddr_modes:
            features |= 1 << pp.FEATURE_NVDDR
        opt = 1 << pp.OPT_FEATURES | 1 << pp.OPT_STATUS_ENHANCED
        if self.with_cache:
            opt |= 1 << pp.OPT_PROGRAM_CACHE | 1 << pp.OPT_READ_CACHE
        return {
            "signature"              : pp.SIGNATURE,
            "revision"               : sum(1 << b for b in self.onfi_revision),
            "features"               : features,
            "optional_commands"      : opt,
            "param_page_count"       : 3,
            "manufacturer"           : self.manufacturer,
            "model"                  : self.model,
            "jedec_id"               : self.jedec_id,
            "data_bytes_per_page"    : self.page_size,
            "spare_bytes_per_page"   : self.spare_size,
            "pages_per_block"        : self.pages_per_block,
            "blocks_per_lun"         : self.blocks_per_lun,
            "luns_per_ce"            : self.luns_per_ce,
            "address_cycles"         : self.column_cycles << 4 | self.row_cycles,
            "bits_per_cell"          : self.bits_per_cell,
            "max_bad_blocks_per_lun" : min(self.max_bad_blocks, self.blocks_per_lun),
            "programs_per_page"      : 1,
            "ecc_bits"               : 8 if self.bits_per_cell == 1 else 40,
            "plane_address_bits"     : (self.planes - 1).bit_length(),
            "sdr_timing_modes"       : sum(1 << m for m in self.sdr_modes),
            "t_prog_us"              : math.ceil(self.t_prog),
            "t_bers_us"              : math.ceil(self.t_bers),
            "t_r_us"                 : math.ceil(self.t_r),
            "t_ccs_ns"               : self.t_ccs,
            "nvddr_timing_modes"     : sum(1 << m for m in self.nvddr_modes),
            "t_adl_ns"               : self.t_adl,
            **(pp.mpnfm_values(self.small_page_size, self.small_spare_size, 1) if self.is_mpnfm else {}),
        }

    def param_page(self, copies=3):
        return pp.encode(self.param_page_values(), copies=copies)

    @classmethod
    def from_param_page(cls, page, source="ONFI parameter page"):
        """A part from a parsed ParameterPage (or raw bytes, which are parsed and checked)."""
        if isinstance(page, (bytes, bytearray)):
            page = pp.parse(page)
        return cls(
            manufacturer    = page.text_manufacturer,
            model           = page.text_model or "UNKNOWN",
            jedec_id        = page.jedec_id,
            source          = source,
            page_size       = page.data_bytes_per_page,
            spare_size      = page.spare_bytes_per_page,
            pages_per_block = page.pages_per_block,
            blocks_per_lun  = page.blocks_per_lun,
            luns_per_ce     = page.luns_per_ce,
            planes          = page.planes,
            bits_per_cell   = page.bits_per_cell,
            max_bad_blocks  = page.max_bad_blocks_per_lun,
            address_cycles  = (page.column_address_cycles, page.row_address_cycles),
            t_r             = float(page.t_r_us),
            t_prog          = float(page.t_prog_us),
            t_bers          = float(page.t_bers_us),
            t_ccs           = pp.t_ccs_ns(page),
            t_adl           = pp.t_adl_ns(page),
            sdr_modes       = tuple(page.sdr_modes),
            nvddr_modes     = tuple(page.nvddr_modes),
            onfi_revision   = tuple(b for b in pp.REVISIONS if page.revision >> b & 1),
            with_cache      = page.has_command(pp.OPT_READ_CACHE) and page.has_command(pp.OPT_PROGRAM_CACHE),
            **({"small_page_size": page.mpnfm[0], "small_spare_size": page.mpnfm[1]} if page.mpnfm else {}),
        )

    def describe(self, sys_clk_freq=100e6):
        """Lines for humans: geometry, capacity, timings (and in cycles at sys_clk_freq)."""
        c = lambda ns: self.cycles(ns, sys_clk_freq)
        lines = [
            f"part            {self.manufacturer} {self.model} ({self.source})",
            f"page            {self.page_size} + {self.spare_size} bytes, {self.bits_per_cell} bit(s)/cell",
            f"block           {self.pages_per_block} pages ({self.page_size * self.pages_per_block // 1024} KiB)",
            f"LUN             {self.blocks_per_lun} blocks in {self.planes} plane(s), {self.luns_per_ce} LUN(s) per CE",
            f"capacity        {_size(self.lun_bytes)} per LUN, {_size(self.lun_bytes * self.luns_per_ce)} per CE",
            f"address cycles  {self.column_cycles} column + {self.row_cycles} row",
            f"tR              {self.t_r:g} us",
        ]
        if self.t_prog_lsb is not None:
            lines.append(f"tPROG           {self.t_prog_lsb:g} us LSB / {self.t_prog_msb:g} us MSB ({self.ispp_loops} ISPP loops)")
        else:
            lines.append(f"tPROG           {self.t_prog:g} us")
        if self.is_mpnfm:
            lines.append(f"MPNFM           plane 1 pages {self.small_page_size} + {self.small_spare_size} bytes, "
                         f"tPROG/tBERS {self.small_time_percent} % of plane 0's")
        lines += [
            f"tBERS           {self.t_bers:g} us",
            f"tCCS/tADL/tWHR  {self.t_ccs}/{self.t_adl}/{self.t_whr} ns = {c(self.t_ccs)}/{c(self.t_adl)}/{c(self.t_whr)} cycles at {sys_clk_freq / 1e6:g} MHz",
            f"tWB/tRR         {self.t_wb}/{self.t_rr} ns = {c(self.t_wb)}/{c(self.t_rr)} cycles",
            f"interfaces      SDR modes {_modes(self.sdr_modes)}; NV-DDR modes {_modes(self.nvddr_modes)}",
        ]
        return lines


_OVERRIDABLE = [k for k, v in vars(NandPart).items() if not k.startswith("_") and not callable(v)
                and not isinstance(v, (property, staticmethod, classmethod))]


def _size(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:g} {unit}"
        n /= 1024


def _modes(modes):
    return ",".join(str(m) for m in modes) if modes else "none"


# Parts ---------------------------------------------------------------------------------------------

class NandLabSLC(NandPart):
    """The emulator's default die: a 2 Gbit-class SLC geometry with ONFI interface minima; MPNFM
    capable (plane 1 can run with 512-byte pages)."""
    model           = "NL-SLC-2K"
    source          = "synthetic default; array times of a typical 2 KiB-page SLC die; 512 B MPNFM pages on plane 1"
    small_page_size  = 512
    small_spare_size = 16
    page_size       = 2048
    spare_size      = 64
    pages_per_block = 64
    blocks_per_lun  = 2048
    planes          = 2
    t_r             = 25.0
    t_prog          = 200.0
    t_bers          = 1500.0


class MTPMPaperMLC(NandPart):
    """The MLC die of the MTPM/KMTPM paper (Table IV); geometry is not given there."""
    model           = "MTPM-MLC"
    source          = "MTPM paper Table IV timings (tPROG 770/1022 us, tR 52 us, tBERS 7.4 ms); geometry assumed"
    bits_per_cell   = 2
    page_size       = 16384
    spare_size      = 1952
    pages_per_block = 512
    blocks_per_lun  = 2048
    planes          = 2
    t_r             = 52.0
    t_prog_lsb      = 770.0
    t_prog_msb      = 1022.0
    t_prog          = 1022.0
    t_bers          = 7400.0
    ispp_loops      = 10


class DWSDWPaperMLC(NandPart):
    """The 64 GB MLC NFM of the DW/SDW-NFM paper (Table II, 1 way); spare size is not given there."""
    model           = "DWSDW-MLC-64G"
    source          = "DW/SDW-NFM paper Table II (8 KiB pages, 512 pages/block, 2 planes, tR 45 us, tPROG 700 us, tBERS 3.5 ms); spare assumed"
    bits_per_cell   = 2
    page_size       = 8192
    spare_size      = 448
    pages_per_block = 512
    blocks_per_lun  = 16384
    planes          = 2
    t_r             = 45.0
    t_prog          = 700.0
    t_bers          = 3500.0


class MPNFMPaper(MTPMPaperMLC):
    """The MPNFM paper's 28/4 KB example: two cell arrays with 28 KiB and 4 KiB pages in one die
    (array times of the MTPM paper's MLC die)."""
    model            = "MPNFM-28-4"
    source           = "MPNFM paper Section III-A (28/4 KB pages, ~10 % tPROG/tBERS per doubling); MLC times of the MTPM paper; spare and block counts assumed"
    bits_per_cell    = 2
    page_size        = 28672
    spare_size       = 1792
    small_page_size  = 4096
    small_spare_size = 256
    pages_per_block  = 256


class DWSDWPaperMLC32G(DWSDWPaperMLC):
    """The DW/SDW-NFM paper's NFM of its 2-way configuration (Table II: 256 pages per block)."""
    model           = "DWSDW-MLC-32G"
    source          = "DW/SDW-NFM paper Table II, 2 ways (256 pages/block; the rest as DWSDW-MLC-64G); spare assumed"
    pages_per_block = 256


class DWSDWPaperMLC16G(DWSDWPaperMLC):
    """The DW/SDW-NFM paper's NFM of its 4-way configuration (Table II: 128 pages per block)."""
    model           = "DWSDW-MLC-16G"
    source          = "DW/SDW-NFM paper Table II, 4 ways (128 pages/block; the rest as DWSDW-MLC-64G); spare assumed"
    pages_per_block = 128


class DWSDWBoardMLC(DWSDWPaperMLC):
    """The DW/SDW-NFM paper's part for boards: its array times, MLC LSB/MSB pages and 2 planes, with
    2 KiB pages so that a die's 8 subplane page registers fit a board's block RAM."""
    model           = "DWSDW-MLC-2K"
    source          = ("DW/SDW-NFM paper Table II times (tR 45 us, tPROG 700 us, tBERS 3.5 ms), MLC, 2 planes, "
                       "512 pages/block; pages shrunk from 8 KiB + 448 B to 2 KiB + 64 B and no cache commands, "
                       "for board block RAM (16 registers x 8.6 KiB per die do not fit it; 8 of 2.1 KiB do)")
    page_size       = 2048
    spare_size      = 64
    with_cache      = False


# The MPNFM paper's experiments (Section V): a 32 KB + 4 KB MPNFM against single-page-size NFMs of 2 to
# 64 KB, all 4 GB. Its rule: tR does not depend on the page size, tPROG and tBERS grow about 10 % per
# doubling of the page; the design is around the large page. Assumed where it is silent: the 32 KB
# page's times are the MTPM paper's MLC die's (the paper cites an unnamed Micron datasheet), 128 pages
# per block for every part (it implies a constant count), spare = page / 16, one LUN of 4 GiB.
MPNFM_PAPER_BASE_PAGE = 32768
MPNFM_PAPER_CAPACITY  = 4 << 30
MPNFM_PAPER_PAGES     = 128


class MPNFMPaper32(MTPMPaperMLC):
    """The MPNFM paper's experimental part: 32 KiB pages on plane 0, 4 KiB pages on plane 1 (Section V);
    array times of the MTPM paper's MLC die for the large page (assumed)."""
    model            = "MPNFM-32-4"
    source           = ("MPNFM paper Section V (32/4 KB, 4 GB); large-page times of the MTPM paper's MLC die, "
                        "128 pages/block and spare = page / 16 assumed")
    page_size        = MPNFM_PAPER_BASE_PAGE
    spare_size       = MPNFM_PAPER_BASE_PAGE // 16
    small_page_size  = 4096
    small_spare_size = 4096 // 16
    pages_per_block  = MPNFM_PAPER_PAGES
    blocks_per_lun   = MPNFM_PAPER_CAPACITY // (MPNFM_PAPER_BASE_PAGE * MPNFM_PAPER_PAGES)


def _spnfm(kib):
    page = kib * 1024
    base = MTPMPaperMLC
    attrs = dict(
        __doc__=f"A single-page-size NFM of {kib} KiB pages for the MPNFM paper's comparison (Section V).",
        model=f"SPNFM-{kib}K",
        source=(f"MPNFM paper Section V ({kib} KB SPNFM, 4 GB; tPROG/tBERS x 1.1 per doubling from the 32 KB "
                "page, tR constant); 32 KB times of the MTPM paper's MLC die, 128 pages/block and spare = "
                "page / 16 assumed"),
        page_size=page, spare_size=page // 16, pages_per_block=MPNFM_PAPER_PAGES,
        blocks_per_lun=MPNFM_PAPER_CAPACITY // (page * MPNFM_PAPER_PAGES),
        # (whole microseconds, as a parameter page states them)
        **{t: float(page_size_rule(getattr(base, t), page, MPNFM_PAPER_BASE_PAGE))
           for t in ("t_prog_lsb", "t_prog_msb", "t_prog", "t_bers")})
    return type(f"SPNFMPaper{kib}K", (base,), attrs)


SPNFM_PAPER_KIB = (2, 4, 8, 16, 32, 64)
SPNFM_PAPER = {kib: _spnfm(kib) for kib in SPNFM_PAPER_KIB}

PARTS = {cls.model: cls for cls in (NandLabSLC, MTPMPaperMLC, DWSDWPaperMLC, DWSDWPaperMLC32G, DWSDWPaperMLC16G,
                                    DWSDWBoardMLC,
                                    MPNFMPaper, MPNFMPaper32, *SPNFM_PAPER.values())}
DEFAULT_PART = NandLabSLC.model


def get_part(name):
    """The part called `name` (case-insensitive: csr.csv lowercases constants)."""
    for model, cls in PARTS.items():
        if model.lower() == str(name).lower():
            return cls()
    raise KeyError(f"unknown part '{name}'; known parts: {', '.join(PARTS)}")
