"""NAND image files of the simulated dies, and the control port of the simulator's NAND arrays.

The arrays of the simulated dies live in the `nandstore` litex_sim module (sw/sim/modules/nandstore,
whose header comment defines the format): an image holds every die's pages that are not erased,
after a 64-byte header with the magic, the format version and the geometry. The module saves and
loads images on request (`NandStore`), or loads one before the first cycle (`nandlab sim
--nand-image FILE`); this module reads their headers and pages on the host, to check an image
before a simulation starts and in the tests.
"""

import socket
import struct
from pathlib import Path
from typing import NamedTuple

from nandlab.errors import NandLabError

MAGIC    = b"NLNANDIM"
VERSION  = 1
HEADER   = struct.Struct("<8s8IQ16x")             # 64 bytes
RECORD   = struct.Struct("<II")                  # die, page index (block x pages per block + page)
DEFAULT_PORT = 1237                              # Control port of an interactive `nandlab sim`.


class Geometry(NamedTuple):
    dies: int
    blocks: int
    pages: int
    page_size: int
    spare_size: int

    @property
    def page_words(self):
        return (self.page_size + self.spare_size + 3) // 4

    def describe(self):
        return (f"{self.dies} dies x {self.blocks} blocks x {self.pages} pages x "
                f"({self.page_size} + {self.spare_size}) B")


_FIELDS = ("dies", "blocks per die", "pages per block", "page data bytes", "spare bytes")


class ImageHeader(NamedTuple):
    geometry: Geometry
    record_bytes: int        # Page bytes stored per record (the page's 32-bit words).
    records: int             # Pages stored.


def read_header(path):
    """The header of image `path`, checked (magic, version, size against its records)."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            data = f.read(HEADER.size)
        size = path.stat().st_size
    except OSError as e:
        raise NandLabError(f"cannot read {path}: {e.strerror}") from None
    if len(data) < 16 or data[:8] != MAGIC:
        raise NandLabError(f"{path} is not a nandlab NAND image (no {MAGIC.decode()} header)")
    version = struct.unpack_from("<I", data, 8)[0]
    if version != VERSION:
        raise NandLabError(f"{path}: image format version {version}, this nandlab reads version {VERSION}")
    if len(data) < HEADER.size:
        raise NandLabError(f"{path}: truncated header")
    _, _, header_bytes, *geometry, record_bytes, records = HEADER.unpack(data)
    geometry = Geometry(*geometry)
    if header_bytes != HEADER.size or record_bytes != 4 * geometry.page_words \
            or size != HEADER.size + records * (RECORD.size + record_bytes):
        raise NandLabError(f"{path}: {records} page records do not match the file's size (truncated or damaged)")
    return ImageHeader(geometry, record_bytes, records)


def check_geometry(path, geometry):
    """Image `path` is one of a device of `geometry` (a Geometry); else NandLabError naming what differs."""
    header = read_header(path)
    diff = [f"{name} {theirs} (the simulator's: {ours})"
            for name, theirs, ours in zip(_FIELDS, header.geometry, geometry) if theirs != ours]
    if diff:
        raise NandLabError(f"{path} has another geometry: {', '.join(diff)}")
    return header


def read_pages(path):
    """{(die, block, page): the page's bytes (data, spare, padding to a word)} of image `path`."""
    header = read_header(path)
    g, pages = header.geometry, {}
    with open(path, "rb") as f:
        f.seek(HEADER.size)
        for _ in range(header.records):
            die, index = RECORD.unpack(f.read(RECORD.size))
            pages[die, index // g.pages, index % g.pages] = f.read(header.record_bytes)
    return pages


class NandStore:
    """The control port of a running simulator's NAND arrays: save and load images, usage."""
    def __init__(self, port=DEFAULT_PORT, host="127.0.0.1", timeout=120):
        self.address, self.timeout = (host, port), timeout

    def request(self, line):
        """One request; returns the module's answer after "ok " (NandLabError with its error)."""
        try:
            with socket.create_connection(self.address, timeout=self.timeout) as s:
                s.sendall(line.encode() + b"\n")
                answer = b""
                while not answer.endswith(b"\n"):
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    answer += chunk
        except ConnectionRefusedError:
            raise NandLabError(f"no simulator NAND control port at {self.address[0]}:{self.address[1]}; start "
                               f"'nandlab sim' (interactive: port {DEFAULT_PORT}, --nand-port) first") from None
        except OSError as e:
            raise NandLabError(f"NAND control port {self.address[0]}:{self.address[1]}: {e}") from None
        answer = answer.decode(errors="replace").strip()
        if answer.startswith("ok"):
            return answer[3:]
        raise NandLabError(answer[len("error: "):] if answer.startswith("error: ") else
                           f"no answer from the NAND control port ({answer!r})")

    def save(self, path):
        """Save every die's array to image `path` (absolute on the way: the simulator runs elsewhere)."""
        path = Path(path).resolve()
        if not path.parent.is_dir():
            raise NandLabError(f"cannot save to {path}: {path.parent} is not a directory")
        return self.request(f"save {_line(path)}")

    def load(self, path):
        """Replace every die's array by image `path`'s (the module checks the geometry)."""
        path = Path(path).resolve()
        read_header(path)
        return self.request(f"load {_line(path)}")

    def stats(self):
        return self.request("stats")


def _line(path):
    text = str(path)
    if "\n" in text or "\r" in text:
        raise NandLabError(f"{text!r}: a path with a line break cannot be sent to the simulator")
    return text
