"""Bytes from a file that is binary or a hex dump (xxd, hexdump -C, plain hex): what `nandlab nand info` reads.

Dumps are read line by line in the format the line has: `xxd` (offset and colon, hex groups, then the
ASCII column after two spaces), `hexdump -C` (offset, bytes, the ASCII column between bars, `*` for
repeated lines and the end offset alone on the last line), or plain hex bytes (`4f 4e`, `0x4f, 0x4e`,
`4f4e4649`, `#` comments). An offset makes the bytes land where it says, so `*` lines (hexdump -C,
xxd -a) are filled in and a dump with a gap or an overlap is refused. Every problem raises NandLabError
naming the file and the line.
"""

import re
from pathlib import Path

from nandlab.errors import NandLabError

_XXD      = re.compile(r"^([0-9a-fA-F]+):(?: (.*))?$")
_HEXDUMP  = re.compile(r"^([0-9a-fA-F]{7,16})(?:\s+(.*))?$")
_HEX      = re.compile(r"^[0-9a-fA-F]+$")
_BYTES    = re.compile(r"^([0-9a-fA-F]{2}\s+)*[0-9a-fA-F]{2}$")
FORMATS   = "a binary file, an xxd or 'hexdump -C' dump, or hex bytes"
LIMIT     = 1 << 20                  # bytes: far more than any parameter page file


def read_bytes(path, binary_magic=b"", limit=LIMIT):
    """The bytes `path` holds: as they are when the file is binary (a NUL byte, text that is not ASCII,
    or `binary_magic` at its start), else decoded from a hex dump; at most `limit` bytes either way."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            raw = f.read(limit + 1)
    except OSError as e:
        raise NandLabError(f"cannot read {path}: {e.strerror or e}") from None
    if len(raw) > limit:
        raise NandLabError(f"{path} is larger than {limit} bytes: not a file this command reads")
    if (binary_magic and raw.startswith(binary_magic)) or b"\0" in raw:
        return raw
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        return raw
    return parse_dump(text, str(path), limit)


def parse_dump(text, name="<text>", limit=LIMIT):
    """Bytes of hex dump `text` (any of the formats above, one per line), at most `limit` of them."""
    dump = _Dump(name, limit)
    for lineno, line in enumerate(text.splitlines(), 1):
        dump.line(lineno, line)
    return dump.finish()


class _Dump:
    def __init__(self, name, limit):
        self.name, self.limit = name, limit
        self.out = bytearray()
        self.base = None              # offset of the first byte, from the first offset column
        self.last = b""               # the last line's bytes (what a `*` line repeats)
        self.repeat = False           # a `*` line is pending: fill up to the next offset

    def error(self, lineno, message):
        raise NandLabError(f"{self.name}, line {lineno}: {message} (expected {FORMATS})")

    def line(self, lineno, line):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            return
        if stripped == "*":
            if not self.last:
                self.error(lineno, "'*' (repeat the line above) with no line above")
            self.repeat = True
            return
        m = _XXD.match(stripped)
        if m:
            # xxd: the hex groups end where two spaces start the ASCII column.
            self.place(lineno, int(m.group(1), 16), self.hex_tokens(lineno, (m.group(2) or "").split("  ")[0]))
            return
        m = _HEXDUMP.match(stripped)
        # hexdump -C: offset, bytes, |ASCII|; its last line is the end offset alone.
        if m and ("|" in line or (m.group(2) is None and self.base is not None)
                  or (m.group(2) is not None and _BYTES.match(m.group(2).split("|")[0].strip()))):
            rest = (m.group(2) or "").split("|", 1)[0]
            self.place(lineno, int(m.group(1), 16), self.hex_tokens(lineno, rest))
            return
        self.place(lineno, None, self.hex_tokens(lineno, line.split("#", 1)[0]))

    def hex_tokens(self, lineno, text):
        out = bytearray()
        for t in text.replace(",", " ").split():
            h = t[2:] if t[:2].lower() == "0x" else t
            if not _HEX.match(h):
                self.error(lineno, f"'{_short(t)}' is not hex")
            if len(h) % 2:
                self.error(lineno, f"'{_short(t)}' is not a whole number of bytes (an odd count of hex digits)")
            out += bytes.fromhex(h)
        return bytes(out)

    def place(self, lineno, offset, data):
        """Append `data`, found at `offset` (None: a line without an offset goes right after the last)."""
        if offset is not None:
            if self.base is None:
                self.base = offset - len(self.out)
            where = offset - self.base
            if where > self.limit:
                self.error(lineno, f"offset 0x{offset:x} is beyond {self.limit} bytes")
            if self.repeat:
                while len(self.out) < where:
                    self.out += self.last[:where - len(self.out)]
                self.repeat = False
            if where != len(self.out):
                self.error(lineno, f"offset 0x{offset:x} does not follow the line above "
                                   f"(it ended at 0x{self.base + len(self.out):x})")
        elif self.repeat:
            self.error(lineno, "a '*' line must be followed by an offset")
        self.out += data
        if len(self.out) > self.limit:
            self.error(lineno, f"the dump holds more than {self.limit} bytes")
        if data:
            self.last = data

    def finish(self):
        if self.repeat:
            raise NandLabError(f"{self.name}: the dump ends with '*' and no end offset")
        return bytes(self.out)


def _short(text, n=24):
    return text if len(text) <= n else text[:n] + "..."
