"""Telemetry: per-period summaries of the dies' currents, the budget and the ring, framed as bytes.

Every cycle the block adds each die's current and their sum into the period's sums and keeps the
maxima; at every window strobe of the time base it compares the window's largest summed current
with PB (as the current monitor does). After `decimation` windows (or MAX_PERIOD_CYCLES cycles) the
period closes: its values, the ring state and the dies' phases are loaded into a frame register
and sent byte by byte (frame.py: sync, fields, CRC-16) on `source`, an 8-bit stream with
`first`/`last`. A period that closes while the previous frame is still going out is counted in
`dropped` and its frame is not sent; `seq` counts both, so the host can tell on-chip drops from
bytes lost on the way. Transports take `source`: a TCP socket in simulation, UDP or a UART on boards.
"""

from functools import reduce
from operator import add
from types import SimpleNamespace

from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from nandlab.gateware.telemetry import frame as fmt


def _crc16_byte(crc, byte):
    """CRC-16/CCITT-FALSE of one more byte, as expressions (8 unrolled steps)."""
    c = [crc[i] for i in range(16)]
    for k in range(8):
        top = c[15] ^ byte[7 - k]
        c = [top] + c[:15]                     # shift left by one, feedback into bit 0
        c[5] = c[5] ^ top
        c[12] = c[12] ^ top
    return Cat(*c)


class TelemetryCore(LiteXModule):
    def __init__(self, currents, strobe, timestamp, pb, ois=None, waiting=None, ring=None, decimation=64):
        """`currents`: per-die current signals; `strobe`/`timestamp`: the time base; `pb`: the budget;
        `ois`/`waiting`: per-die OI and waiting-for-OE signals; `ring`: the PowerRing (key, HT, UT,
        policy), or None."""
        n = len(currents)
        fields = fmt.fields(n)                 # Checks the die count.
        self.frame_bytes = fmt.frame_length(n)
        self.enable     = Signal(reset=1)
        self.decimation = Signal(16, reset=decimation)    # Windows per frame (0 acts as 1).
        self.clear      = Signal()             # Pulse: zero seq, sent and dropped.
        # Captures: `restart` zeroes the counters and starts a new first period in this cycle; `stop`
        # ends the capture at the next window strobe with a last (possibly short) frame. `counting` is
        # high while periods accumulate (the SoC gates the current monitor with it, one cycle later,
        # so that both count the same windows).
        self.restart    = Signal()
        self.stop       = Signal()
        self.counting   = Signal()
        self.source     = stream.Endpoint([("data", 8)])
        self.seq        = Signal(32)           # Frames produced.
        self.sent       = Signal(32)           # Frames sent (counted as they start).
        self.dropped    = Signal(32)           # Frames produced while the link was busy.

        # # #

        cw = len(currents[0])
        total = Signal(cw + max(n - 1, 1).bit_length())
        self.comb += total.eq(reduce(add, currents))
        p = self._period(currents, total, strobe, pb)
        values = self._frame_values(p, n, strobe, timestamp, pb, ois, waiting, ring)
        parts = []
        for name, size in fields:
            v = Signal(8 * size, name=f"f_{name}")
            self.comb += v.eq(values[name])
            parts.append(v)
        self._serializer(parts, 8 * sum(s for _, s in fields), p.close, p.busy)
        self._accumulate(p, strobe)

    def _period(self, currents, total, strobe, pb):
        """The period's accumulators (registered), their values with this cycle included (n_*), and
        when the period closes (`close`: its frame is produced)."""
        n, cw = len(currents), len(currents[0])
        p = SimpleNamespace(currents=currents)
        p.pcyc     = Signal(32)
        p.pwin     = Signal(16)
        p.viol     = Signal(16)
        p.win_max  = Signal(len(total))
        p.tot_sum  = Signal(48)
        p.tot_max  = Signal(len(total))
        p.die_sum  = [Signal(32, name=f"die_sum{i}") for i in range(n)]
        p.die_max  = [Signal(cw, name=f"die_max{i}") for i in range(n)]

        # This cycle included.
        p.win_sample = win_sample = Signal(len(total))
        self.comb += win_sample.eq(Mux(total > p.win_max, total, p.win_max))
        p.over = over = Signal()
        self.comb += over.eq(strobe & (win_sample > pb))
        dec = Signal(16)
        self.comb += dec.eq(Mux(self.decimation == 0, 1, self.decimation))
        running  = Signal(reset=1)
        stop_req = Signal()
        self.comb += self.counting.eq(self.enable & running & ~self.restart)
        p.close = close = Signal()
        p.busy  = busy  = Signal()
        # The last frame of a capture waits for the link (a window at a time): it is never dropped.
        self.comb += close.eq(self.counting & ((strobe & ((p.pwin + 1 >= dec) | (stop_req & ~busy))) |
                                               (p.pcyc + 1 >= fmt.MAX_PERIOD_CYCLES)))
        self.sync += [
            If(self.stop, stop_req.eq(1)),
            If(close & stop_req, running.eq(0), stop_req.eq(0)),
            If(self.restart, running.eq(1), stop_req.eq(0)),
        ]

        p.n_tot_sum = Signal(48)
        p.n_tot_max = Signal(len(total))
        p.n_viol    = Signal(16)
        p.n_die_sum = [Signal(32, name=f"n_die_sum{i}") for i in range(n)]
        p.n_die_max = [Signal(cw, name=f"n_die_max{i}") for i in range(n)]
        self.comb += [
            p.n_tot_sum.eq(p.tot_sum + total),
            p.n_tot_max.eq(Mux(total > p.tot_max, total, p.tot_max)),
            p.n_viol.eq(p.viol + over),
            *[p.n_die_sum[i].eq(p.die_sum[i] + c) for i, c in enumerate(currents)],
            *[p.n_die_max[i].eq(Mux(c > p.die_max[i], c, p.die_max[i])) for i, c in enumerate(currents)],
        ]
        return p

    def _frame_values(self, p, n, strobe, timestamp, pb, ois, waiting, ring):
        """Every frame field's value at the end of the period: the period's, the ring's, the dies'."""
        key = Signal(8, reset=0xff)
        flags = Signal(8)
        if ring is not None:
            holder = 0xff
            for i in reversed(range(n)):
                holder = Mux(ring.nodes[i].key, i, holder)
            self.comb += key.eq(holder)
            ht = [ring.nodes[i].ht for i in range(n)]
            ut = [ring.nodes[i].ut for i in range(n)]
            self.comb += flags.eq(Cat((p.viol != 0) | p.over, ring.running, 0, 0, ring.mode[:3]))
        else:
            self.comb += key.eq(0xff)
            ht = ut = [0] * n
            self.comb += flags.eq(Cat((p.viol != 0) | p.over))
        ois = ois or [0] * n
        wait_bits = Signal(16)
        self.comb += wait_bits.eq(Cat(*(waiting or [0] * n)))

        values = {
            "length": self.frame_bytes - len(fmt.SYNC), "version": fmt.VERSION, "dies": n, "flags": flags,
            "seq": self.seq, "timestamp": timestamp, "cycles": p.pcyc + 1, "windows": p.pwin + strobe,
            "violations": p.n_viol, "pb": pb, "total_sum": p.n_tot_sum, "total_max": p.n_tot_max,
            "dropped": self.dropped, "key": key, "waiting": wait_bits,
        }
        for i in range(n):
            values.update({f"die{i}_sum": p.n_die_sum[i], f"die{i}_max": p.n_die_max[i], f"die{i}_oi": ois[i],
                           f"die{i}_ht": ht[i], f"die{i}_ut": ut[i]})
        return values

    def _serializer(self, parts, body_bits, close, busy):
        """Sync, body (shifted out of the frame register loaded when the period closes), CRC."""
        shreg = Signal(body_bits)
        idx   = Signal(max=self.frame_bytes + 1)
        crc   = Signal(16)
        body_end = len(fmt.SYNC) + body_bits // 8
        data = Signal(8)
        self.comb += [
            If(idx == 0, data.eq(fmt.SYNC[0])
            ).Elif(idx == 1, data.eq(fmt.SYNC[1])
            ).Elif(idx < body_end, data.eq(shreg[:8])
            ).Elif(idx == body_end, data.eq(crc[:8])
            ).Else(data.eq(crc[8:])),
            self.source.valid.eq(busy),
            self.source.data.eq(data),
            self.source.first.eq(idx == 0),
            self.source.last.eq(idx == self.frame_bytes - 1),
        ]
        accept = Signal()
        self.comb += accept.eq(self.source.valid & self.source.ready)
        self.sync += [
            If(accept,
                If((idx >= len(fmt.SYNC)) & (idx < body_end),
                    shreg.eq(shreg[8:]),
                    crc.eq(_crc16_byte(crc, shreg[:8])),
                ),
                If(idx == self.frame_bytes - 1,
                    busy.eq(0), idx.eq(0),
                ).Else(
                    idx.eq(idx + 1),
                ),
            ),
            If(close,
                self.seq.eq(self.seq + 1),
                If(busy,
                    self.dropped.eq(self.dropped + 1),
                ).Else(
                    busy.eq(1), idx.eq(0), crc.eq(0xffff), shreg.eq(Cat(*parts)), self.sent.eq(self.sent + 1),
                ),
            ),
        ]

    def _accumulate(self, p, strobe):
        """The period's accumulators: restart when it closes (or nothing is counted), else take this cycle."""
        n = len(p.currents)
        self.sync += [
            If(p.close | ~self.counting,
                p.pcyc.eq(0), p.pwin.eq(0), p.viol.eq(0), p.win_max.eq(0), p.tot_sum.eq(0), p.tot_max.eq(0),
                *[s.eq(0) for s in p.die_sum], *[m.eq(0) for m in p.die_max],
            ).Else(
                p.pcyc.eq(p.pcyc + 1),
                p.tot_sum.eq(p.n_tot_sum), p.tot_max.eq(p.n_tot_max), p.viol.eq(p.n_viol),
                *[p.die_sum[i].eq(p.n_die_sum[i]) for i in range(n)],
                *[p.die_max[i].eq(p.n_die_max[i]) for i in range(n)],
                If(strobe,
                    p.pwin.eq(p.pwin + 1), p.win_max.eq(0),
                ).Else(
                    p.win_max.eq(p.win_sample),
                ),
            ),
            If(self.clear | self.restart,
                self.seq.eq(0), self.sent.eq(0), self.dropped.eq(0),
            ),
        ]

    def add_csr(self):
        from litex.soc.interconnect.csr import CSRStorage, CSRStatus, CSRField
        self._control = CSRStorage(fields=[
            CSRField("enable", size=1, reset=1, description="Produce frames."),
            CSRField("clear", size=1, offset=1, pulse=True, description="Zero seq, sent and dropped."),
            CSRField("restart", size=1, offset=2, pulse=True,
                description="Start a capture: zero the counters, a new first period from now, and clear the "
                            "current monitor so that both count the same windows."),
            CSRField("stop", size=1, offset=3, pulse=True,
                description="End the capture at the next window with a last frame; the monitor stops with it."),
        ], description="Telemetry control.")
        self._status = CSRStatus(fields=[
            CSRField("counting", size=1, description="Periods accumulate (enabled and not stopped)."),
        ], description="Telemetry state.")
        self._decimation = CSRStorage(fields=[
            CSRField("windows", size=len(self.decimation), reset=self.decimation.reset.value,
                     description="Windows of the time base per frame (0 acts as 1)."),
        ], description="Frame rate.")
        self._frame_bytes = CSRStatus(8, reset=self.frame_bytes, description="Bytes per frame on the link.")
        self._seq = CSRStatus(32, description="Frames produced (sent or dropped).")
        self._sent = CSRStatus(32, description="Frames sent.")
        self._dropped = CSRStatus(32, description="Frames dropped: the link was still busy with the last one.")
        self.comb += [
            self.enable.eq(self._control.fields.enable),
            self.clear.eq(self._control.fields.clear),
            self.restart.eq(self._control.fields.restart),
            self.stop.eq(self._control.fields.stop),
            self._status.fields.counting.eq(self.counting),
            self.decimation.eq(self._decimation.fields.windows),
            self._seq.status.eq(self.seq),
            self._sent.status.eq(self.sent),
            self._dropped.status.eq(self.dropped),
        ]
