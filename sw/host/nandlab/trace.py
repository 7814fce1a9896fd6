"""I/O traces for `nandlab replay` (issue 16): streaming parsers, mapping onto the FTL, synthetic generators,
the firmware's request-ring record and summary statistics (`nandlab trace stats`). No SoC dependence.

Formats (../shared/REFERENCE.md "Trace formats"); every request becomes a `Request` with the time in ns
relative to the first good request, offset and size in bytes:

  mqsim   `time_ns device lba size type`, whitespace separated, LBA and size in 512 B sectors,
          type 0 = write, 1 = read (MQSim / DiskSim ASCII).
  ssdsim  `time_ns device lsn size op`, same syntax and units, op 1 = read, 0 = write.
  spc     `ASU,LBA,size_bytes,opcode,timestamp_s[,...]` (UMass SPC), LBA in 512 B sectors, opcode
          r/R/w/W, timestamp in seconds; fields after the fifth are ignored.
  msr     `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime` (MSR Cambridge), times in
          Windows FILETIME ticks (100 ns), Type Read/Write, offset and size in bytes; the device is
          DiskNumber. A header line starting with `Timestamp` is allowed on line 1.

Validation: every line is checked. Blank lines and lines whose first non-blank character is `#` are
skipped (counted in `TraceReader.ignored`). Refused, with `TraceError` naming `file:line: field NAME: what
(value)`: a wrong field count, a non-numeric or negative number, an unknown opcode, a size of zero or
above MAX_REQUEST_BYTES, a device above MAX_DEVICE, an address above MAX_OFFSET_BYTES, a time that goes
backwards (traces are sorted by arrival: equal times are fine, a decreasing one is an error, because a
replay dispatches in file order and could not honour it), a truncated last line (no newline at the end
of the file and too few fields), a line longer than MAX_LINE_BYTES and bytes that are not ASCII. With
`skip_bad=True` such lines are skipped and counted by reason (`TraceReader.skipped`, and the first
message of each reason in `TraceReader.examples`); the counts go into every report. A damaged gzip
stream or an unreadable file is always an error. Files starting with the gzip magic are decompressed
while streaming, whatever their name.

Mapping (`Mapper`, applied in this order, every choice and count in `Mapper.report()`):
device `merge` (the device number is ignored: all devices share one address space) or select N (other
devices' requests are dropped and counted); alignment to the FTL's sector (offset rounded down, end
rounded up; changed requests counted); LBA handling: `fold` (offset modulo the capacity; a request that
runs past the end wraps to 0 as a second piece), `dense` (distinct 4 KiB extents are given consecutive
places in first-seen order, so a sparse trace fits a small device; a request over extents placed apart
becomes one piece per contiguous run, counted as dense_split; an error when the trace touches more
than the capacity) or `none` (an error beyond the capacity); splitting of requests larger than the
largest request (FTL_MAX_SECTORS_BYTES = 1 MiB by default); time scaling: every arrival time is
multiplied by `time_scale` (0.5 = replayed twice as fast; 0 = every request at time 0, i.e. as fast as
possible / closed loop).

Request-ring record (what the host writes into SoC memory for the firmware), 16 bytes, little-endian,
RECORD_FORMAT = "<IIHBBI":

  offset 0  u32 time_us    arrival time in microseconds from the start of the replay (0 = closed loop)
  offset 4  u32 sector     first FTL sector (offset / sector_bytes)
  offset 8  u16 count      FTL sectors (>= 1; at most 65535)
  offset 10 u8  flags      bit 0: 1 = write, 0 = read; bits 1..7 zero (reserved)
  offset 11 u8  reserved   zero
  offset 12 u32 id         request id (the mapped request's index), echoed in completions

The firmware converts time_us to its timebase's cycles; the host never sends cycles, so the layout does
not depend on the SoC clock.
"""

import gzip
import json
import math
import random
import re
import struct
import zlib
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import NamedTuple

from nandlab.errors import NandLabError

SECTOR = 512                    # the traces' sector (MQSim, SSDSim, SPC LBAs)
FTL_SECTOR_BYTES = 4096         # sw/firmware/ftl default logical sector
FTL_MAX_SECTORS_BYTES = 1 << 20  # sw/firmware/ftl/ftl.h: one request moves at most 1 MiB
EXTENT_BYTES = 4096             # granule of the dense remap and of footprints
MAX_REQUEST_BYTES = 1 << 30     # a larger size in a trace is taken for corruption
MAX_DEVICE = 2**32 - 1
MAX_OFFSET_BYTES = 2**60
MAX_TIME_NS = 100 * (2**63 - 1)  # absolute times: the range of a Windows FILETIME
MAX_LINE_BYTES = 4096
FORMATS = ("mqsim", "ssdsim", "spc", "msr")


class TraceError(NandLabError):
    """A trace line (or file) the parser refuses; `reason` is the key it is counted under with skip_bad."""
    def __init__(self, message, reason="error", path=None, line=None, field=None, value=None):
        super().__init__(message)
        self.reason, self.path, self.line, self.field, self.value = reason, path, line, field, value


class Request(NamedTuple):
    index: int          # position in the stream (0-based, after skipped lines / after mapping)
    time_ns: int        # arrival, relative to the first request
    device: int
    offset: int         # bytes
    size: int           # bytes
    is_write: bool
    line: int           # source line in the trace file (0 for synthetic requests)
    source: int = -1    # mapped requests: index of the parsed request they come from


class _Bad(Exception):
    """One line's fault, before the file name and line number are known."""
    def __init__(self, reason, field, what, value):
        super().__init__(what)
        self.reason, self.field, self.what, self.value = reason, field, what, value


# Fields -----------------------------------------------------------------------------------------------

_UINT = re.compile(r"[0-9]+", re.ASCII)
_UDEC = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)", re.ASCII)
_NEG = re.compile(r"-(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)", re.ASCII)


def _uint(field, text, hi):
    if not _UINT.fullmatch(text):
        if _NEG.fullmatch(text):
            raise _Bad("negative", field, "negative", text)
        raise _Bad("non-numeric", field, "not a non-negative integer", text)
    if len(text.lstrip("0")) > 30 or int(text) > hi:
        raise _Bad("out-of-range", field, f"above {hi}", text)
    return int(text)


def _time(field, text, ns_per_unit):
    """A non-negative decimal time in the unit given (ns per unit), as integer ns (rounded)."""
    if not _UDEC.fullmatch(text):
        if _NEG.fullmatch(text):
            raise _Bad("negative", field, "negative", text)
        raise _Bad("non-numeric", field, "not a non-negative number", text)
    if len(text.split(".")[0].lstrip("0")) > 30:
        raise _Bad("out-of-range", field, "too large", text)
    ns = int((Decimal(text) * ns_per_unit).to_integral_value())
    if ns > MAX_TIME_NS:
        raise _Bad("out-of-range", field, f"above {MAX_TIME_NS} ns", text)
    return ns


def _size(field, text, unit):
    n = _uint(field, text, MAX_REQUEST_BYTES // unit)
    if n == 0:
        raise _Bad("zero-size", field, "zero", text)
    return n * unit


def _offset(field, text, unit):
    return _uint(field, text, MAX_OFFSET_BYTES // unit) * unit


def _choice(field, text, table):
    if text not in table:
        raise _Bad("unknown-opcode", field, f"unknown (takes {', '.join(table)})", text)
    return table[text]


# Formats: (separator, field names, fields required exactly (or at least, for extra ones), line parser)
# The line parser returns (time_ns, device, offset, size, is_write).

def _disksim(names, ops):
    def parse(f):
        t = _time(names[0], f[0], 1)
        dev = _uint(names[1], f[1], MAX_DEVICE)
        off = _offset(names[2], f[2], SECTOR)
        size = _size(names[3], f[3], SECTOR)
        return t, dev, off, size, _choice(names[4], f[4], ops)
    return parse


_MQSIM_NAMES = ("time", "device", "lba", "size", "type")
_SSDSIM_NAMES = ("time", "device", "lsn", "size", "op")
_SPC_NAMES = ("asu", "lba", "size", "opcode", "timestamp")
_MSR_NAMES = ("timestamp", "hostname", "disk", "type", "offset", "size", "response_time")


def _spc(f):
    dev = _uint("asu", f[0], MAX_DEVICE)
    off = _offset("lba", f[1], SECTOR)
    size = _size("size", f[2], 1)
    is_write = _choice("opcode", f[3], {"r": False, "R": False, "w": True, "W": True})
    return _time("timestamp", f[4], 10**9), dev, off, size, is_write


def _msr(f):
    t = _uint("timestamp", f[0], MAX_TIME_NS // 100) * 100
    if not f[1]:
        raise _Bad("non-numeric", "hostname", "empty", f[1])
    dev = _uint("disk", f[2], MAX_DEVICE)
    is_write = _choice("type", f[3], {"Read": False, "Write": True})
    off = _offset("offset", f[4], 1)
    size = _size("size", f[5], 1)
    _uint("response_time", f[6], 2**63 - 1)
    return t, dev, off, size, is_write


# name: (separator (None = whitespace), field names, extra fields allowed, parser)
_SPECS = {
    "mqsim": (None, _MQSIM_NAMES, False, _disksim(_MQSIM_NAMES, {"0": True, "1": False})),
    "ssdsim": (None, _SSDSIM_NAMES, False, _disksim(_SSDSIM_NAMES, {"0": True, "1": False})),
    "spc": (",", _SPC_NAMES, True, _spc),
    "msr": (",", _MSR_NAMES, False, _msr),
}


# Reading ------------------------------------------------------------------------------------------------

def _open(path):
    """A binary stream of the file, decompressed when it starts with the gzip magic."""
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        raise TraceError(f"{path}: no such file", reason="file", path=path) from None
    except OSError as e:
        raise TraceError(f"{path}: cannot read ({e.strerror or e})", reason="file", path=path) from None
    if f.read(2) == b"\x1f\x8b":
        f.close()
        return gzip.open(path, "rb")
    f.seek(0)
    return f


def _raw_lines(f, path):
    """(line number, bytes, ended by a newline) for each line; a line over MAX_LINE_BYTES is yielded as
    None (and its rest skipped, without holding it)."""
    lineno = 0
    try:
        while True:
            raw = f.readline(MAX_LINE_BYTES + 1)
            if not raw:
                return
            lineno += 1
            if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                while True:
                    rest = f.readline(1 << 16)
                    if not rest or rest.endswith(b"\n"):
                        break
                yield lineno, None, True
                continue
            yield lineno, raw, raw.endswith(b"\n")
    except (OSError, EOFError, zlib.error) as e:
        raise TraceError(f"{path}:{lineno + 1}: damaged compressed stream ({e})", reason="file", path=path,
                         line=lineno + 1) from None


class TraceReader:
    """Iterates a trace file's requests (streaming: one line at a time). After (or during) the iteration
    `lines`, `ignored`, `skipped` (Counter by reason) and `examples` (reason -> first message) tell what
    was read. `max_requests` stops after that many good requests, reading no further."""

    def __init__(self, path, fmt, skip_bad=False, max_requests=None):
        if fmt not in _SPECS:
            raise TraceError(f"format {fmt!r}: takes {', '.join(FORMATS)}", reason="format")
        if max_requests is not None and max_requests < 1:
            raise TraceError(f"max_requests {max_requests}: at least 1", reason="argument")
        self.path, self.fmt, self.skip_bad, self.max_requests = str(path), fmt, skip_bad, max_requests
        self.lines = self.ignored = self.requests = 0
        self.skipped = Counter()
        self.examples = {}

    def _error(self, lineno, bad):
        if bad.field is None:
            where = "fields"
            msg = f"{self.path}:{lineno}: fields: {bad.what}"
        else:
            where = bad.field
            msg = f"{self.path}:{lineno}: field {bad.field}: {bad.what} ({bad.value!r})"
        return TraceError(msg, reason=bad.reason, path=self.path, line=lineno, field=where, value=bad.value)

    def __iter__(self):
        sep, names, extra, parse = _SPECS[self.fmt]
        base = last = None
        self.lines = self.ignored = self.requests = 0   # a second iteration reads the file again
        self.skipped, self.examples = Counter(), {}
        with _open(self.path) as f:
            for lineno, raw, ended in _raw_lines(f, self.path):
                self.lines = lineno
                try:
                    fields = self._fields(raw, ended, lineno, sep, names, extra)
                    if fields is None:
                        self.ignored += 1
                        continue
                    t, dev, off, size, is_write = parse(fields)
                    if last is not None and t < last:
                        tf = 4 if self.fmt == "spc" else 0
                        raise _Bad("time-backwards", names[tf], "earlier than the previous request", fields[tf])
                except _Bad as bad:
                    err = self._error(lineno, bad)
                    if not self.skip_bad:
                        raise err from None
                    self.skipped[bad.reason] += 1
                    self.examples.setdefault(bad.reason, str(err))
                    continue
                base = t if base is None else base
                last = t
                req = Request(self.requests, t - base, dev, off, size, is_write, lineno)
                self.requests += 1   # counted before the yield: a consumer that stops here has it
                yield req
                if self.max_requests is not None and self.requests >= self.max_requests:
                    return

    def _fields(self, raw, ended, lineno, sep, names, extra):
        if raw is None:
            raise _Bad("too-long", None, f"line longer than {MAX_LINE_BYTES} bytes", None)
        try:
            text = raw.decode("ascii")
        except UnicodeDecodeError:
            raise _Bad("encoding", None, "not ASCII text", None) from None
        text = text.rstrip("\r\n")
        stripped = text.strip()
        if not stripped or stripped.startswith("#"):
            return None
        if self.fmt == "msr" and lineno == 1 and stripped.lower().startswith("timestamp"):
            return None
        fields = stripped.split() if sep is None else [x.strip() for x in stripped.split(sep)]
        n = len(names)
        if len(fields) < n and not ended:
            raise _Bad("truncated", None, f"truncated last line (no newline at the end of the file, "
                       f"{len(fields)} of {n} fields: {' '.join(names)}) ({stripped!r})", stripped)
        if len(fields) < n or (len(fields) > n and not extra):
            want = f"at least {n}" if extra else f"{n}"
            raise _Bad("field-count", None, f"expected {want} fields ({' '.join(names)}), got {len(fields)} "
                       f"({stripped!r})", stripped)
        return fields

    def report(self):
        """What was read: lines, requests, ignored (blank/comment/header) and skipped lines by reason."""
        return {"file": self.path, "format": self.fmt, "lines": self.lines, "requests": self.requests,
                "ignored_lines": self.ignored, "skipped": dict(sorted(self.skipped.items())),
                "skipped_total": sum(self.skipped.values()), "skip_bad": self.skip_bad,
                "max_requests": self.max_requests}


def read_trace(path, fmt, skip_bad=False, max_requests=None):
    """A TraceReader (iterate it for the requests; its report() afterwards)."""
    return TraceReader(path, fmt, skip_bad=skip_bad, max_requests=max_requests)


# Mapping ------------------------------------------------------------------------------------------------

class Mapper:
    """Maps parsed requests onto a device of `capacity` bytes with `sector_bytes` sectors (see the module
    docstring for the steps). Call it on an iterable of requests; it yields the mapped ones."""

    def __init__(self, capacity, sector_bytes=FTL_SECTOR_BYTES, device="merge", lba="fold",
                 max_request_bytes=FTL_MAX_SECTORS_BYTES, time_scale=1.0):
        if sector_bytes < 1 or EXTENT_BYTES % sector_bytes:
            raise TraceError(f"sector size {sector_bytes}: must divide {EXTENT_BYTES}", reason="argument")
        if capacity < sector_bytes or capacity % sector_bytes:
            raise TraceError(f"capacity {capacity}: a positive multiple of the sector ({sector_bytes} B)",
                             reason="argument")
        if lba == "dense" and capacity % EXTENT_BYTES:
            raise TraceError(f"capacity {capacity}: the dense remap needs a multiple of {EXTENT_BYTES} B",
                             reason="argument")
        if max_request_bytes < sector_bytes or max_request_bytes % sector_bytes:
            raise TraceError(f"largest request {max_request_bytes}: a positive multiple of the sector "
                             f"({sector_bytes} B)", reason="argument")
        if device != "merge" and not (isinstance(device, int) and device >= 0):
            raise TraceError(f"device {device!r}: 'merge' or a device number", reason="argument")
        if lba not in ("fold", "dense", "none"):
            raise TraceError(f"lba mode {lba!r}: takes fold, dense, none", reason="argument")
        if not (time_scale >= 0 and math.isfinite(time_scale)):
            raise TraceError(f"time scale {time_scale}: a finite number >= 0", reason="argument")
        self.capacity, self.sector, self.device, self.lba = capacity, sector_bytes, device, lba
        self.max_request, self.time_scale = max_request_bytes, time_scale
        self.counts = Counter()
        self.extents = {}

    def report(self):
        c = self.counts
        out = {"device": "merge" if self.device == "merge" else f"select {self.device}", "lba": self.lba,
               "capacity_bytes": self.capacity, "sector_bytes": self.sector,
               "max_request_bytes": self.max_request, "time_scale": self.time_scale,
               "closed_loop": self.time_scale == 0,
               "requests_in": c["in"], "requests_out": c["out"], "dropped_other_device": c["dropped"],
               "aligned": c["aligned"], "split": c["split"], "folded": c["folded"], "wrapped": c["wrapped"]}
        if self.lba == "dense":
            out["dense_extents"] = len(self.extents)
            out["dense_split"] = c["dense_split"]
            out["dense_footprint_bytes"] = len(self.extents) * EXTENT_BYTES
        return out

    def _where(self, r):
        return f"request {r.index}" + (f" (line {r.line})" if r.line else "")

    def _place(self, r, start, end):
        """(offset, size) pieces of the aligned byte range [start, end) on the device."""
        cap = self.capacity
        if self.lba == "none":
            if end > cap:
                raise TraceError(f"{self._where(r)}: ends at byte {end}, beyond the capacity {cap} "
                                 "(fold or dense would map it)", reason="capacity")
            return [(start, end - start)]
        if self.lba == "fold":
            pos, left, pieces = start % cap, end - start, []
            if start >= cap:
                self.counts["folded"] += 1
            while left:
                n = min(left, cap - pos)
                pieces.append((pos, n))
                left -= n
                pos = 0
            if len(pieces) > 1:
                self.counts["wrapped"] += 1
            return pieces
        pieces = []
        for e in range(start // EXTENT_BYTES, -(-end // EXTENT_BYTES)):
            if e not in self.extents:
                if (len(self.extents) + 1) * EXTENT_BYTES > cap:
                    raise TraceError(f"{self._where(r)}: the trace's footprint exceeds the capacity {cap} B "
                                     f"({len(self.extents)} extents of {EXTENT_BYTES} B already placed; "
                                     "dense remap)", reason="capacity")
                self.extents[e] = len(self.extents)
            lo = max(start, e * EXTENT_BYTES) - e * EXTENT_BYTES + self.extents[e] * EXTENT_BYTES
            hi = min(end, (e + 1) * EXTENT_BYTES) - e * EXTENT_BYTES + self.extents[e] * EXTENT_BYTES
            if pieces and pieces[-1][0] + pieces[-1][1] == lo:
                pieces[-1] = (pieces[-1][0], hi - pieces[-1][0])
            else:
                pieces.append((lo, hi - lo))
        if len(pieces) > 1:
            self.counts["dense_split"] += 1
        return pieces

    def __call__(self, requests):
        out = 0
        for r in requests:
            self.counts["in"] += 1
            if self.device != "merge" and r.device != self.device:
                self.counts["dropped"] += 1
                continue
            start = r.offset // self.sector * self.sector
            end = -(-(r.offset + r.size) // self.sector) * self.sector
            if (start, end) != (r.offset, r.offset + r.size):
                self.counts["aligned"] += 1
            placed, pieces = self._place(r, start, end), []
            for off, size in placed:
                pieces += [(o, min(self.max_request, off + size - o)) for o in range(off, off + size, self.max_request)]
            if len(pieces) > len(placed):
                self.counts["split"] += 1
            t = round(r.time_ns * self.time_scale)
            for off, size in pieces:
                yield Request(out, t, r.device, off, size, r.is_write, r.line, r.index)
                out += 1
                self.counts["out"] += 1


# Synthetic traces ---------------------------------------------------------------------------------------

def _sizes(spec):
    """[(size_bytes, weight)] from an int (fixed size) or a list of (size, weight)."""
    if isinstance(spec, int):
        spec = [(spec, 1)]
    spec = [(int(s), float(w)) for s, w in spec]
    if not spec or any(s < 1 or s > MAX_REQUEST_BYTES or w < 0 for s, w in spec) or sum(w for _, w in spec) <= 0:
        raise TraceError(f"sizes {spec!r}: sizes 1..{MAX_REQUEST_BYTES} B with non-negative weights, "
                         "not all zero", reason="argument")
    return spec


def mean_sectors(mean, sector=SECTOR):
    """Sizes whose mean is `mean` sectors: the two neighbouring whole sector counts, weighted (4.5 -> half
    4, half 5 sectors). The papers' tables give only the mean."""
    lo = max(1, math.floor(mean))
    frac = mean - lo if mean > lo else 0.0
    return [(lo * sector, 1 - frac), ((lo + 1) * sector, frac)] if frac else [(lo * sector, 1.0)]


def synth(n, read_ratio=0.5, sizes=4096, random_ratio=1.0, rate=0.0, footprint=1 << 30, seed=1,
          write_sizes=None, write_random_ratio=None, align=SECTOR):
    """`n` seeded, deterministic requests: a read with probability `read_ratio`; sizes from `sizes` (an int
    or [(size, weight)]; `write_sizes` for writes if given); a request is random (uniform over the
    footprint, aligned to `align`) with probability `random_ratio` (`write_random_ratio` for writes), else
    sequential (it starts where the previous request of its kind ended, wrapping at the footprint);
    arrivals are Poisson at `rate` requests/s (0: all at time 0, closed loop)."""
    if not 0 <= read_ratio <= 1 or not 0 <= random_ratio <= 1 or (
            write_random_ratio is not None and not 0 <= write_random_ratio <= 1):
        raise TraceError("read and random ratios take 0..1", reason="argument")
    if rate < 0 or n < 0:
        raise TraceError("rate and count must not be negative", reason="argument")
    rsizes = _sizes(sizes)
    wsizes = _sizes(write_sizes) if write_sizes is not None else rsizes
    wrand = random_ratio if write_random_ratio is None else write_random_ratio
    if footprint < max(s for s, _ in rsizes + wsizes) or footprint % align:
        raise TraceError(f"footprint {footprint}: at least the largest size, a multiple of {align}",
                         reason="argument")
    rng = random.Random(seed)
    t, nxt = 0.0, {False: 0, True: 0}
    for i in range(n):
        is_write = rng.random() >= read_ratio
        table = wsizes if is_write else rsizes
        size = rng.choices([s for s, _ in table], [w for _, w in table])[0]
        if rng.random() < (wrand if is_write else random_ratio):
            off = rng.randrange(0, (footprint - size) // align + 1) * align
        else:
            off = nxt[is_write] if nxt[is_write] + size <= footprint else 0
        nxt[is_write] = off + size
        if rate > 0 and i:
            t += rng.expovariate(rate)
        yield Request(i, round(t * 1e9), 0, off, size, is_write, 0)


# MTPM (mtpm-kmtpm-token-power-management, Sec. IV-A): synthetic traces of 5000 operations, the read ratio
# from 0 % to 100 % in steps of 25 % (R0, R25, R50, R75, R100), issued as a burst. The paper is silent on
# request sizes and addresses: we assume one flash-page operation per request = one FTL sector (4 KiB),
# at random addresses, all at time 0 (closed loop). Its "one erase every 500 programs" has no host request:
# erases come from the FTL's garbage collection.
MTPM_MIXES = {f"R{r}": r / 100 for r in (0, 25, 50, 75, 100)}

# DW/SDW (plane-level-parallelism-dw-sdw-nfm, Table III): read ratio %, mean request length in sectors
# (read, write), random ratio % (read, write). Arrival rates are not given: closed loop by default.
DWSDW_TABLE3 = {
    "Financial1": (23.2, 4.5, 7.5, 94.3, 86.6),
    "Financial2": (82.3, 4.6, 5.8, 94.3, 87.8),
    "MSN": (70.0, 19.5, 21.2, 0.0, 17.6),
    "MSR": (11.9, 47.4, 14.5, 53.3, 72.4),
    "TPC_C": (62.9, 16.2, 18.3, 0.1, 0.1),
    "TPC_E": (90.4, 16.0, 24.1, 0.0, 3.9),
}

# MPNFM (multiple-page-size-nfm, Table II): write ratio %, mean write length in sectors, random write
# ratio %. Reads are not described: we assume reads like writes (same size and randomness).
MPNFM_TABLE2 = {
    "Financial1": (77, 9.5, 87),
    "Financial2": (18, 7.9, 88),
    "Exchange": (79, 15.2, 67),
    "MSR": (88, 25.8, 72),
    "TPC-E": (10, 25.6, 4),
    "MSN": (30, 22.3, 18),
    "G-Purpose1": (74, 30.0, 74),
    "G-Purpose2": (5, 431.2, 18),
}


def presets():
    """Every preset name: R0..R100, dwsdw-<trace>, mpnfm-<trace>."""
    return list(MTPM_MIXES) + [f"dwsdw-{k}" for k in DWSDW_TABLE3] + [f"mpnfm-{k}" for k in MPNFM_TABLE2]


def preset(name, n=None, seed=1, footprint=1 << 30, rate=0.0):
    """The requests of a named preset (see presets()); `n` defaults to 5000 (the MTPM paper's length)."""
    n = 5000 if n is None else n
    if name in MTPM_MIXES:
        return synth(n, MTPM_MIXES[name], FTL_SECTOR_BYTES, 1.0, rate, footprint, seed, align=FTL_SECTOR_BYTES)
    kind, _, trace = name.partition("-")
    if kind == "dwsdw" and trace in DWSDW_TABLE3:
        rr, rlen, wlen, rrand, wrand = DWSDW_TABLE3[trace]
        return synth(n, rr / 100, mean_sectors(rlen), rrand / 100, rate, footprint, seed,
                     write_sizes=mean_sectors(wlen), write_random_ratio=wrand / 100)
    if kind == "mpnfm" and trace in MPNFM_TABLE2:
        wr, wlen, wrand = MPNFM_TABLE2[trace]
        return synth(n, 1 - wr / 100, mean_sectors(wlen), wrand / 100, rate, footprint, seed)
    raise TraceError(f"synth preset {name!r}: takes {', '.join(presets())}", reason="argument")


# Request-ring records -----------------------------------------------------------------------------------

RECORD_FORMAT = "<IIHBBI"
RECORD_BYTES = struct.calcsize(RECORD_FORMAT)
FLAG_WRITE = 1


class RingRecord(NamedTuple):
    time_us: int
    sector: int
    count: int
    is_write: bool
    request_id: int


def encode_record(r, sector_bytes=FTL_SECTOR_BYTES):
    """The 16-byte ring record of a mapped request (aligned to `sector_bytes`)."""
    if r.offset % sector_bytes or r.size % sector_bytes or r.size == 0:
        raise TraceError(f"request {r.index}: offset {r.offset} / size {r.size} not whole sectors of "
                         f"{sector_bytes} B (map it first)", reason="record")
    fields = (("time_us", r.time_ns // 1000, 2**32 - 1), ("sector", r.offset // sector_bytes, 2**32 - 1),
              ("count", r.size // sector_bytes, 2**16 - 1), ("id", r.index, 2**32 - 1))
    for name, v, hi in fields:
        if not 0 <= v <= hi:
            raise TraceError(f"request {r.index}: {name} {v} does not fit the ring record (0..{hi})",
                             reason="record")
    return struct.pack(RECORD_FORMAT, fields[0][1], fields[1][1], fields[2][1],
                       FLAG_WRITE if r.is_write else 0, 0, fields[3][1])


def decode_record(data):
    if len(data) != RECORD_BYTES:
        raise TraceError(f"ring record: {len(data)} bytes, expected {RECORD_BYTES}", reason="record")
    time_us, sector, count, flags, reserved, rid = struct.unpack(RECORD_FORMAT, data)
    if flags & ~FLAG_WRITE or reserved or count == 0:
        raise TraceError(f"ring record {rid}: flags {flags:#x}, reserved {reserved:#x}, count {count}",
                         reason="record")
    return RingRecord(time_us, sector, count, bool(flags & FLAG_WRITE), rid)


def encode_records(requests, sector_bytes=FTL_SECTOR_BYTES):
    return b"".join(encode_record(r, sector_bytes) for r in requests)


def decode_records(data):
    if len(data) % RECORD_BYTES:
        raise TraceError(f"ring: {len(data)} bytes is not a whole number of records", reason="record")
    return [decode_record(data[i:i + RECORD_BYTES]) for i in range(0, len(data), RECORD_BYTES)]


# Statistics ---------------------------------------------------------------------------------------------

def summarize(requests):
    """Summary of a request stream (consumed once): counts, read ratio, sizes, footprint (distinct 4 KiB
    extents touched; the set of extents is held in memory), duration, arrival rate, sequential share
    (requests starting where the previous one ended)."""
    n = reads = seq = 0
    rbytes = wbytes = 0
    sizes = Counter()
    extents = set()
    first = last = None
    prev_end = None
    for r in requests:
        n += 1
        if r.is_write:
            wbytes += r.size
        else:
            reads += 1
            rbytes += r.size
        sizes[r.size] += 1
        extents.update(range(r.offset // EXTENT_BYTES, -(-(r.offset + r.size) // EXTENT_BYTES)))
        first = r.time_ns if first is None else first
        last = r.time_ns
        seq += prev_end == r.offset
        prev_end = r.offset + r.size
    duration = (last - first) / 1e9 if n else 0.0
    return {"requests": n, "reads": reads, "writes": n - reads, "read_ratio": reads / n if n else None,
            "bytes_read": rbytes, "bytes_written": wbytes,
            "mean_size_bytes": (rbytes + wbytes) / n if n else None, "median_size_bytes": _median(sizes, n),
            "footprint_bytes": len(extents) * EXTENT_BYTES, "duration_s": duration,
            "arrival_rate_per_s": (n - 1) / duration if duration > 0 else None,
            "sequential_ratio": seq / (n - 1) if n > 1 else None}


def _median(counter, n):
    if not n:
        return None
    picks, seen = ((n - 1) // 2, n // 2), 0
    vals = []
    for size in sorted(counter):
        lo, seen = seen, seen + counter[size]
        vals += [size for p in picks if lo <= p < seen]
    return sum(vals) / 2


# CLI: nandlab trace stats -------------------------------------------------------------------------------

def add_parser(sub):
    p = sub.add_parser("trace", help="I/O traces for replay: statistics of a trace file or a synthetic preset.",
                       description="Reads a trace (mqsim, ssdsim, spc, msr; gzip-compressed too) line by line, "
                       "checking every line, or generates a synthetic preset (--format synth, TRACE = the "
                       "preset's name: " + ", ".join(presets()) + ").")
    tsub = p.add_subparsers(dest="trace_command", metavar="ACTION", required=True, parser_class=type(p))
    s = tsub.add_parser("stats", help="Summary statistics of a trace: requests, read ratio, sizes, footprint, "
                        "duration, arrival rate.")
    s.add_argument("trace", metavar="TRACE", help="Trace file, or a synth preset's name.")
    s.add_argument("--format", required=True, choices=FORMATS + ("synth",), help="Trace format.")
    s.add_argument("--json", action="store_true", help="One JSON object instead of the table.")
    s.add_argument("--skip-bad", action="store_true", help="Skip malformed lines and count them by reason.")
    s.add_argument("--max-requests", type=int, metavar="N", help="Read only the first N requests.")
    s.add_argument("--seed", type=int, default=1, help="Seed of a synth preset (default 1).")


def check_args(args):
    if args.max_requests is not None and args.max_requests < 1:
        raise NandLabError(f"--max-requests {args.max_requests}: at least 1")
    if args.format == "synth":
        if args.trace not in presets():
            raise NandLabError(f"synth preset {args.trace!r}: takes {', '.join(presets())}")
    else:
        path = Path(args.trace)
        if not path.exists():
            raise NandLabError(f"{args.trace}: no such file")
        if not path.is_file():
            raise NandLabError(f"{args.trace}: not a regular file")


def cmd_trace(args):
    check_args(args)
    if args.format == "synth":
        reqs = preset(args.trace, n=args.max_requests, seed=args.seed)
        report = {"preset": args.trace, "seed": args.seed, "requests": args.max_requests or 5000}
    else:
        reader = TraceReader(args.trace, args.format, skip_bad=args.skip_bad, max_requests=args.max_requests)
        reqs = reader
    stats = summarize(reqs)
    if args.format != "synth":
        report = reader.report()
    out = {"stats": stats, "read": report}
    if args.json:
        print(json.dumps(out, indent=None, sort_keys=True))
        return 0
    rows = [(k, _fmt(v)) for k, v in stats.items()]
    rows += [("skipped " + k, str(v)) for k, v in report.get("skipped", {}).items()]
    if "ignored_lines" in report:
        rows.append(("ignored lines", str(report["ignored_lines"])))
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    return 0


def _fmt(v):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)
