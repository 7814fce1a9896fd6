"""Host side of the telemetry stream: frame decoding with loss accounting, and recordings.

The frame format is defined once, in nandlab.gateware.telemetry.frame. `Decoder` takes bytes in
pieces of any size (a TCP or UDP stream, a UART) and returns whole frames; it never raises on bad
input: a frame with a bad CRC or an impossible header is counted and the decoder looks for the next
sync word, gaps in the sequence numbers are counted, and frames dropped on chip are counted from
the frames' own `dropped` field.
"""

from dataclasses import dataclass

from nandlab.gateware.telemetry import frame as fmt
from nandlab.nand_model.current import I_FRAC_BITS

I_UNIT = 1 << I_FRAC_BITS      # Frame currents and budgets: I_max / I_UNIT.

_HEADER_BYTES = sum(f.size for f in fmt.HEADER)
_PER_DIE_BYTES = sum(f.size for f in fmt.PER_DIE)


@dataclass
class Stats:
    frames     : int = 0      # good frames
    bad_crc    : int = 0      # frames whose CRC did not match
    bad_header : int = 0      # sync words followed by an impossible length / version / die count
    skipped    : int = 0      # bytes thrown away while looking for a sync word
    gaps       : int = 0      # frames missing between consecutive good frames (by seq)
    restarts   : int = 0      # the sequence started again from 0 (a new capture)
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
        elif f["seq"] <= s.last_seq:
            s.restarts += 1                    # counters cleared on chip: a new capture
        else:
            missing = (f["seq"] - s.last_seq - 1) & 0xFFFFFFFF
            s.gaps += missing
            if self._last_dropped is not None:
                s.chip_dropped += min((f["dropped"] - self._last_dropped) & 0xFFFFFFFF, missing)
        s.last_seq = f["seq"]
        self._last_dropped = f["dropped"]


# Live link and recording ---------------------------------------------------------------------------

RECORD_COLUMNS = ["seq", "time_us", "period_us", "windows", "violations", "pb", "total_mean", "total_max",
                  "dropped", "key", "waiting", "mode", "ring_running"]
PER_DIE_COLUMNS = ["mean", "max", "oi", "ht", "ut"]


def frame_row(f, clock_hz):
    """A frame as one record: currents in I_max, times in microseconds."""
    cyc = max(f["cycles"], 1)
    row = {
        "seq": f["seq"], "time_us": f["timestamp"] * 1e6 / clock_hz, "period_us": cyc * 1e6 / clock_hz,
        "windows": f["windows"], "violations": f["violations"], "pb": f["pb"] / I_UNIT,
        "total_mean": f["total_sum"] / cyc / I_UNIT, "total_max": f["total_max"] / I_UNIT, "dropped": f["dropped"],
        "key": f["key"] if f["key"] != 0xFF else -1, "waiting": f["waiting"], "mode": (f["flags"] >> 4) & 7,
        "ring_running": (f["flags"] >> 1) & 1,
    }
    for d in range(f["dies"]):
        row[f"die{d}_mean"] = f[f"die{d}_sum"] / cyc / I_UNIT
        row[f"die{d}_max"] = f[f"die{d}_max"] / I_UNIT
        row[f"die{d}_oi"] = f[f"die{d}_oi"]
        row[f"die{d}_ht"] = f[f"die{d}_ht"]
        row[f"die{d}_ut"] = f[f"die{d}_ut"]
    return row


class CsvRecorder:
    """Frames to a CSV file (pandas: `pd.read_csv`), one row per frame, flushed as it goes so the
    file is usable if the run dies; `close()` is safe to call twice."""
    def __init__(self, path, clock_hz):
        self.path, self.clock_hz = path, clock_hz
        self.f = open(path, "w", newline="")
        self.writer = None
        self.rows = 0

    def add(self, frame):
        import csv
        row = frame_row(frame, self.clock_hz)
        if self.writer is None:
            self.writer = csv.DictWriter(self.f, fieldnames=list(row))
            self.writer.writeheader()
        self.writer.writerow(row)
        self.rows += 1
        if self.rows % 256 == 0:
            self.f.flush()

    def close(self):
        if self.f and not self.f.closed:
            self.f.close()


class TcpReceiver:
    """Reads the telemetry socket in a thread, decodes, hands frames to `on_frame`; reconnects after a
    disconnect (counted) until `stop()`."""
    def __init__(self, port, on_frame, host="127.0.0.1", log=None):
        import threading
        self.addr = (host, port)
        self.on_frame = on_frame
        self.log = log or (lambda *_: None)
        self.decoder = Decoder()
        self.bytes = 0
        self.connects = 0
        self.disconnects = 0
        self._stop = threading.Event()
        self._connected = threading.Event()        # set once connected, or when the link cannot be had
        self.error = None                          # why not (a NandLabError), set before _connected
        self._thread = threading.Thread(target=self._run, daemon=True)

    def link(self):
        """The link, as error messages name it."""
        return f"telemetry server on {self.addr[0]}:{self.addr[1]}"

    def state(self):
        """The link as a few words, for status lines."""
        if self._stop.is_set():
            return "stopped"
        if not self._connected.is_set():
            return "connecting"
        return f"up ({self.connects} connection(s), {self.disconnects} disconnect(s))"

    def start(self, wait=30.0):
        """Start; returns once connected, raises at once when the link cannot be had (a port nobody may
        bind, a device that is not there), or after `wait` seconds without it."""
        from nandlab.errors import NandLabError
        self._thread.start()
        if not self._connected.wait(wait):
            self.stop()
            raise NandLabError(f"no {self.link()} within {wait:g} s")
        if self.error is not None:
            self.stop()
            raise self.error
        return self

    def _fail(self, error):
        """The link cannot be had: `start()` raises `error`."""
        self.error = error
        self._connected.set()

    def _run(self):
        import socket
        import time
        while not self._stop.is_set():
            try:
                s = socket.create_connection(self.addr, timeout=1.0)
            except OSError:
                time.sleep(0.1)
                continue
            self.connects += 1
            self._connected.set()
            s.settimeout(0.2)
            with s:
                while not self._stop.is_set():
                    try:
                        data = s.recv(65536)
                    except socket.timeout:
                        continue
                    except OSError:
                        data = b""
                    if not data:
                        self.disconnects += 1
                        self.log("telemetry link closed; reconnecting")
                        break
                    self._take(data)

    def _take(self, data):
        self.bytes += len(data)
        for f in self.decoder.feed(data):
            self.on_frame(f)

    def stop(self, drain=0.0):
        """Stop reading (after `drain` seconds more, to take what is still in flight)."""
        import time
        if drain:
            time.sleep(drain)
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)


class VcdRecorder:
    """Frames to a VCD file (GTKWave, Surfer): total and per-die mean and peak current in I_max as
    real signals, the budget, the violation flag, the key holder and the dies' phases (OI), one
    change per frame at the frame's timestamp (1 ns timescale)."""
    def __init__(self, path, clock_hz, dies):
        from vcd import VCDWriter
        self.f = open(path, "w")
        self.clock_hz = clock_hz
        self.w = VCDWriter(self.f, timescale="1 ns", date="nandlab telemetry")
        reg = self.w.register_var
        self.vars = {
            "total_mean": reg("nandlab", "total_mean", "real"), "total_max": reg("nandlab", "total_max", "real"),
            "pb": reg("nandlab", "pb", "real"), "violation": reg("nandlab", "violation", "wire", size=1),
            "key": reg("nandlab.ring", "key_holder", "integer", size=8),
        }
        for d in range(dies):
            self.vars[f"die{d}_mean"] = reg(f"nandlab.die{d}", "mean", "real")
            self.vars[f"die{d}_max"] = reg(f"nandlab.die{d}", "max", "real")
            self.vars[f"die{d}_oi"] = reg(f"nandlab.die{d}", "oi", "wire", size=8)
            self.vars[f"die{d}_ht"] = reg(f"nandlab.ring.node{d}", "ht", "integer", size=8)
        self.dies = dies
        self.last_t = -1

    def add(self, frame):
        row = frame_row(frame, self.clock_hz)
        t = int(frame["timestamp"] * 1e9 / self.clock_hz)
        if t <= self.last_t:                   # a restarted capture: keep time monotonic
            return
        self.last_t = t
        ch = self.w.change
        ch(self.vars["total_mean"], t, row["total_mean"])
        ch(self.vars["total_max"], t, row["total_max"])
        ch(self.vars["pb"], t, row["pb"])
        ch(self.vars["violation"], t, int(frame["violations"] > 0))
        ch(self.vars["key"], t, frame["key"])
        for d in range(min(self.dies, frame["dies"])):
            ch(self.vars[f"die{d}_mean"], t, row[f"die{d}_mean"])
            ch(self.vars[f"die{d}_max"], t, row[f"die{d}_max"])
            ch(self.vars[f"die{d}_oi"], t, frame[f"die{d}_oi"])
            ch(self.vars[f"die{d}_ht"], t, frame[f"die{d}_ht"])

    def close(self):
        if self.f and not self.f.closed:
            self.w.close()
            self.f.close()


class UdpReceiver(TcpReceiver):
    """The same for a board's UDP stream (frames arrive eight to a datagram): binds `port` on all
    interfaces and decodes whatever arrives."""
    def __init__(self, port, on_frame, host="0.0.0.0", log=None):
        TcpReceiver.__init__(self, port, on_frame, host=host, log=log)

    def link(self):
        return f"UDP socket on port {self.addr[1]}"

    def _run(self):
        import socket
        from nandlab.errors import NandLabError
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            s.bind(self.addr)
        except (OSError, OverflowError) as e:
            s.close()
            self._fail(NandLabError(f"cannot listen on UDP {self.addr[0]}:{self.addr[1]}: {getattr(e, 'strerror', None) or e}"))
            return
        s.settimeout(0.2)
        self.connects += 1
        self._connected.set()
        with s:
            while not self._stop.is_set():
                try:
                    data = s.recv(65536)
                except socket.timeout:
                    continue
                self._take(data)


class SerialReceiver(TcpReceiver):
    """The same for the UART fallback (boards without Ethernet): reads `port` at `baud` (pyserial)."""
    def __init__(self, port, on_frame, baud=3_000_000, log=None):
        TcpReceiver.__init__(self, 0, on_frame, log=log)
        self.device, self.baud = port, baud

    def link(self):
        return f"telemetry UART {self.device}"

    def _run(self):
        import serial
        from nandlab.errors import MissingToolError
        try:
            dev = serial.Serial(self.device, self.baud, timeout=0.2)
        except (serial.SerialException, OSError, ValueError) as e:
            self._fail(MissingToolError(f"cannot open the telemetry UART {self.device}: {e}; is the board attached?"))
            return
        self.connects += 1
        self._connected.set()
        with dev:
            while not self._stop.is_set():
                try:
                    data = dev.read(4096)
                except serial.SerialException as e:
                    self.disconnects += 1
                    self.log(f"{self.device}: {e}")
                    return
                self._take(data)
