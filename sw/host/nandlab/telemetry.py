"""Host side of the telemetry stream: frame decoding with loss accounting, and recordings.

The frame format is defined once, in nandlab.gateware.telemetry.frame. `Decoder` takes bytes in
pieces of any size (a TCP or UDP stream, a UART) and returns whole frames; it never raises on bad
input: a frame with a bad CRC or an impossible header is counted and the decoder looks for the next
sync word, gaps in the sequence numbers are counted, and frames dropped on chip are counted from
the frames' own `dropped` field.
"""

from dataclasses import dataclass, field

from nandlab.gateware.telemetry import frame as fmt

_HEADER_BYTES = sum(f.size for f in fmt.HEADER)
_PER_DIE_BYTES = sum(f.size for f in fmt.PER_DIE)


@dataclass
class Stats:
    frames     : int = 0      # good frames
    bad_crc    : int = 0      # frames whose CRC did not match
    bad_header : int = 0      # sync words followed by an impossible length / version / die count
    skipped    : int = 0      # bytes thrown away while looking for a sync word
    gaps       : int = 0      # frames missing between consecutive good frames (by seq)
    chip_dropped : int = 0    # of those, frames the chip reports it dropped
    first_seq  : int = None
    last_seq   : int = None

    @property
    def lost_in_transit(self):
        """Frames missing that the chip says it sent (lost, corrupt or late on the way)."""
        return max(self.gaps - self.chip_dropped, 0)


def parse(body):
    """{field: value} of a frame body (the bytes after the sync word, CRC included, already checked)."""
    out, off = {}, 0
    for name, size in fmt.fields(body[2]):
        out[name] = int.from_bytes(body[off:off + size], "little")
        off += size
    return out


class Decoder:
    def __init__(self):
        self.buf = bytearray()
        self.stats = Stats()
        self._last_dropped = None

    def feed(self, data):
        """Bytes in; the good frames completed by them out (as dicts, in order)."""
        self.buf += data
        out = []
        buf = self.buf
        while True:
            i = buf.find(fmt.SYNC)
            if i < 0:
                # Keep a last byte that may start a sync word.
                keep = 1 if buf[-1:] == fmt.SYNC[:1] else 0
                self.stats.skipped += len(buf) - keep
                del buf[:len(buf) - keep]
                break
            if i:
                self.stats.skipped += i
                del buf[:i]
            if len(buf) < len(fmt.SYNC) + 3:
                break
            length, version, dies = buf[2], buf[3], buf[4]
            if (version != fmt.VERSION or not 1 <= dies <= fmt.MAX_DIES
                    or length != _HEADER_BYTES + dies * _PER_DIE_BYTES + fmt.CRC_BYTES):
                self.stats.bad_header += 1
                self.stats.skipped += 1
                del buf[:1]                    # not a frame here: look for the next sync word
                continue
            total = len(fmt.SYNC) + length
            if len(buf) < total:
                break
            body = bytes(buf[2:total - fmt.CRC_BYTES])
            crc = int.from_bytes(buf[total - fmt.CRC_BYTES:total], "little")
            if fmt.crc16(body) != crc:
                self.stats.bad_crc += 1
                self.stats.skipped += 1
                del buf[:1]                    # resynchronise inside the bad frame
                continue
            del buf[:total]
            f = parse(body)
            self._account(f)
            out.append(f)
        return out

    def _account(self, f):
        s = self.stats
        s.frames += 1
        if s.last_seq is None:
            s.first_seq = f["seq"]
        else:
            missing = (f["seq"] - s.last_seq - 1) & 0xFFFFFFFF
            s.gaps += missing
            if self._last_dropped is not None:
                s.chip_dropped += min((f["dropped"] - self._last_dropped) & 0xFFFFFFFF, missing)
        s.last_seq = f["seq"]
        self._last_dropped = f["dropped"]
