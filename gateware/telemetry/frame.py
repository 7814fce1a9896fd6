"""Telemetry frame format: the one definition the gateware (telemetry.py) builds frames from and the
host (nandlab.telemetry) decodes them with. `nandlab telemetry format` prints it as a table.

A frame covers one period of `decimation` windows of the time base (40 ns each by default) and is
sent as bytes, little-endian, on any byte link (TCP in simulation, UDP or UART on boards):

    sync (A5 5A) | length | fields ... | crc16

`length` counts the bytes after the sync word, itself and the CRC included, so a reader can find
the end of a frame of any die count. The CRC is CRC-16/CCITT-FALSE (polynomial 0x1021, initial
value 0xFFFF, no reflection; "123456789" gives 0x29B1) over the bytes from `length` to the last
field. Currents are in units of I_max / 4096, as the die emulator and the current monitor count.

`seq` counts every frame the block produced, sent or not; `dropped` counts those the link could not
take (on chip). A gap in `seq` that `dropped` does not explain was lost on the way to the host.
"""

from dataclasses import dataclass

SYNC = b"\xa5\x5a"
VERSION = 1
MAX_DIES = 16
CRC_BYTES = 2
# A period ends early at this many cycles, so that the per-die sums (32 bits, currents of 14 bits)
# cannot overflow whatever window and decimation are set.
MAX_PERIOD_CYCLES = 1 << 18


@dataclass(frozen=True)
class Field:
    name  : str
    size  : int          # bytes
    doc   : str
    per_die : bool = False


HEADER = [
    Field("length",     1, "bytes after the sync word (this byte and the CRC included)"),
    Field("version",    1, f"frame format version ({VERSION})"),
    Field("dies",       1, "dies in the frame (N)"),
    Field("flags",      1, "bit 0: a window of the period was above PB; bit 1: the ring runs a "
                           "configuration; bits 4-6: its policy (nandlab.gateware.power.ring.MODES)"),
    Field("seq",        4, "frame number (every frame produced, sent or dropped)"),
    Field("timestamp",  6, "time base cycle count at the end of the period"),
    Field("cycles",     4, "cycles in the period (means are sums / cycles)"),
    Field("windows",    2, "windows in the period"),
    Field("violations", 2, "windows of the period whose summed current was above PB"),
    Field("pb",         4, "power budget (alpha x I_max) in force"),
    Field("total_sum",  6, "summed current of all dies, added over the period's cycles"),
    Field("total_max",  4, "largest summed current of a cycle in the period (the monitor's window sample)"),
    Field("dropped",    4, "frames dropped on chip so far (the link was busy)"),
    Field("key",        1, "ring node holding the key (0xFF: in flight or none)"),
    Field("waiting",    2, "bit k: die k waits for OE (tokens) at the end of the period"),
]
PER_DIE = [
    Field("sum", 4, "the die's current added over the period's cycles", True),
    Field("max", 2, "the die's largest current in the period", True),
    Field("oi",  1, "the die's operation phase (OI) at the end of the period, 0 when idle", True),
    Field("ht",  1, "tokens the die's ring node holds (HT) at the end of the period", True),
    Field("ut",  1, "tokens in use by the die (UT) at the end of the period", True),
]


def fields(dies):
    """[(name, size)] in order after the sync word, CRC excluded; per-die fields as `die3_sum`."""
    if not 1 <= dies <= MAX_DIES:
        raise ValueError(f"telemetry frames carry 1..{MAX_DIES} dies, not {dies}")
    out = [(f.name, f.size) for f in HEADER]
    for d in range(dies):
        out += [(f"die{d}_{f.name}", f.size) for f in PER_DIE]
    return out


def frame_length(dies):
    """Bytes on the link per frame, sync word and CRC included."""
    return len(SYNC) + sum(s for _, s in fields(dies)) + CRC_BYTES


def default_decimation(dies, window_cycles, link_bytes_per_cycle, margin=1.25):
    """Windows per frame for a link of `link_bytes_per_cycle`: the smallest power of two whose period
    fits a frame with `margin` to spare."""
    need = frame_length(dies) * margin / link_bytes_per_cycle / max(window_cycles, 1)
    dec = 1
    while dec < need:
        dec *= 2
    if dec * window_cycles > MAX_PERIOD_CYCLES:
        raise ValueError(f"telemetry: a frame every {dec} windows of {window_cycles} cycles is over the "
                         f"{MAX_PERIOD_CYCLES}-cycle period limit; the link is too slow")
    return dec


def _crc16_bits(crc):
    """Eight steps of CRC-16/CCITT-FALSE on a register whose top byte holds the next data byte."""
    for _ in range(8):
        crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else (crc << 1)
        crc &= 0xFFFF
    return crc


_CRC16_TABLE = [_crc16_bits(b << 8) for b in range(256)]


def crc16(data, crc=0xFFFF):
    """CRC-16/CCITT-FALSE (a byte at a time through a table of the bitwise steps: the host decodes
    whole streams with it)."""
    table = _CRC16_TABLE
    for b in data:
        crc = ((crc << 8) & 0xFFFF) ^ table[(crc >> 8) ^ b]
    return crc


def encode(values, dies):
    """A frame's bytes from {field: value} (`length`, `version` and `dies` filled in)."""
    body = bytearray()
    length = frame_length(dies) - len(SYNC)
    for name, size in fields(dies):
        v = {"length": length, "version": VERSION, "dies": dies}.get(name, values.get(name, 0))
        body += int(v).to_bytes(size, "little")
    return SYNC + bytes(body) + crc16(body).to_bytes(2, "little")


def format_table():
    """The format as a Markdown table (docs and `nandlab telemetry format`)."""
    lines = ["| offset | bytes | field | meaning |", "|---|---|---|---|", "| 0 | 2 | sync | A5 5A |"]
    off = 2
    for f in HEADER:
        lines.append(f"| {off} | {f.size} | {f.name} | {f.doc} |")
        off += f.size
    per = sum(f.size for f in PER_DIE)
    for f in PER_DIE:
        lines.append(f"| {off} + {per} k | {f.size} | die k: {f.name} | {f.doc} |")
        off += f.size
    lines.append(f"| {off - per} + {per} N | 2 | crc | CRC-16/CCITT-FALSE of the bytes from `length` on |")
    return "\n".join(lines)
