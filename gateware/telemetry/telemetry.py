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

        # Period accumulators.
        pcyc     = Signal(32)
        pwin     = Signal(16)
        viol     = Signal(16)
        win_max  = Signal(len(total))
        tot_sum  = Signal(48)
        tot_max  = Signal(len(total))
        die_sum  = [Signal(32, name=f"die_sum{i}") for i in range(n)]
        die_max  = [Signal(cw, name=f"die_max{i}") for i in range(n)]

        # This cycle included.
        win_sample = Signal(len(total))
        self.comb += win_sample.eq(Mux(total > win_max, total, win_max))
        over = Signal()
        self.comb += over.eq(strobe & (win_sample > pb))
        dec = Signal(16)
        self.comb += dec.eq(Mux(self.decimation == 0, 1, self.decimation))
        running  = Signal(reset=1)
        stop_req = Signal()
        self.comb += self.counting.eq(self.enable & running & ~self.restart)
        close = Signal()
        busy  = Signal()
        # The last frame of a capture waits for the link (a window at a time): it is never dropped.
        self.comb += close.eq(self.counting & ((strobe & ((pwin + 1 >= dec) | (stop_req & ~busy))) |
                                               (pcyc + 1 >= fmt.MAX_PERIOD_CYCLES)))
        self.sync += [
            If(self.stop, stop_req.eq(1)),
            If(close & stop_req, running.eq(0), stop_req.eq(0)),
            If(self.restart, running.eq(1), stop_req.eq(0)),
        ]

        n_tot_sum = Signal(48)
        n_tot_max = Signal(len(total))
        n_viol    = Signal(16)
        n_die_sum = [Signal(32, name=f"n_die_sum{i}") for i in range(n)]
        n_die_max = [Signal(cw, name=f"n_die_max{i}") for i in range(n)]
        self.comb += [
            n_tot_sum.eq(tot_sum + total),
            n_tot_max.eq(Mux(total > tot_max, total, tot_max)),
            n_viol.eq(viol + over),
            *[n_die_sum[i].eq(die_sum[i] + c) for i, c in enumerate(currents)],
            *[n_die_max[i].eq(Mux(c > die_max[i], c, die_max[i])) for i, c in enumerate(currents)],
        ]

        # Ring and die state at the end of the period.
        key = Signal(8, reset=0xff)
        flags = Signal(8)
        if ring is not None:
            holder = 0xff
            for i in reversed(range(n)):
                holder = Mux(ring.nodes[i].key, i, holder)
            self.comb += key.eq(holder)
            ht = [ring.nodes[i].ht for i in range(n)]
            ut = [ring.nodes[i].ut for i in range(n)]
            self.comb += flags.eq(Cat((viol != 0) | over, ring.running, 0, 0, ring.mode[:3]))
        else:
            self.comb += key.eq(0xff)
            ht = ut = [0] * n
            self.comb += flags.eq(Cat((viol != 0) | over))
        ois = ois or [0] * n
        wait_bits = Signal(16)
        self.comb += wait_bits.eq(Cat(*(waiting or [0] * n)))

        values = {
            "length": self.frame_bytes - len(fmt.SYNC), "version": fmt.VERSION, "dies": n, "flags": flags,
            "seq": self.seq, "timestamp": timestamp, "cycles": pcyc + 1, "windows": pwin + strobe,
            "violations": n_viol, "pb": pb, "total_sum": n_tot_sum, "total_max": n_tot_max,
            "dropped": self.dropped, "key": key, "waiting": wait_bits,
        }
        for i in range(n):
            values.update({f"die{i}_sum": n_die_sum[i], f"die{i}_max": n_die_max[i], f"die{i}_oi": ois[i],
                           f"die{i}_ht": ht[i], f"die{i}_ut": ut[i]})
        parts = []
        for name, size in fields:
            v = Signal(8 * size, name=f"f_{name}")
            self.comb += v.eq(values[name])
            parts.append(v)
        body_bits = 8 * sum(s for _, s in fields)

        # Serializer: sync, body (shifted out of the frame register), CRC.
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

        # Accumulators.
        self.sync += [
            If(close | ~self.counting,
                pcyc.eq(0), pwin.eq(0), viol.eq(0), win_max.eq(0), tot_sum.eq(0), tot_max.eq(0),
                *[s.eq(0) for s in die_sum], *[m.eq(0) for m in die_max],
            ).Else(
                pcyc.eq(pcyc + 1),
                tot_sum.eq(n_tot_sum), tot_max.eq(n_tot_max), viol.eq(n_viol),
                *[die_sum[i].eq(n_die_sum[i]) for i in range(n)],
                *[die_max[i].eq(n_die_max[i]) for i in range(n)],
                If(strobe,
                    pwin.eq(pwin + 1), win_max.eq(0),
                ).Else(
                    win_max.eq(win_sample),
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
        self._decimation = CSRStorage(16, reset=self.decimation.reset.value,
            description="Windows of the time base per frame (0 acts as 1).")
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
            self.decimation.eq(self._decimation.storage),
            self._seq.status.eq(self.seq),
            self._sent.status.eq(self.sent),
            self._dropped.status.eq(self.dropped),
        ]
