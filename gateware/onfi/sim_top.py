"""A channel for simulation: the controller, `ways` emulated dies and a buffer memory.

Used by the controller's cocotb tests and by `nandlab bench interface`. The buffer memory is the
controller's DMA target (a Wishbone slave, `dw` bits wide, one access every two cycles, optionally
with random wait states for back-pressure: `mem_stall` about one cycle in four, `mem_slow` seven in eight,
slower than any bus mode) and has a second port for the testbench (`mem_*`).
`rb_stuck` holds chosen ways' R/B# low (a die that never becomes ready); `arch` sets every die's
plane architecture; `flip_row` / `flip_count` inject bit flips into reads of a row on every die,
`flip_rate` random flips into every read (the die's LFSR; positions from the die reference model).
`read_latency` delays what the dies drive on DQ/DQS by that many cycles on its way to the controller
(built with the same `read_latency`), as a pin PHY does; `rb_latency` delays R/B# likewise (a pin PHY:
its output register and R/B# synchroniser), and the controller is built with `ctl_rb_latency` (default:
the same). `timings` goes to the controller (tests build one with wrong waits to see the dies flag it).
`dout_late_max` > 0 adds the port `dout_late`: what the dies drive on DQ/DQS reaches the controller that
many phases (0 .. dout_late_max) later still, as from a chip whose tDQSCK is that late (`dqs_late_ns` goes
to the controller).
`bus_mux`: the controller reaches the dies through the SoC's `NandBusMux` instead of directly: "registered"
(its levels a cycle late, as in every SoC), "return" (and what the dies drive back through a register, as on
the ECPIX-5); the controller is then built with `read_latency` and its R/B# latency 1 or 2 higher.
"""

from migen import *

from litex.soc.interconnect import wishbone

from nandlab.gateware.onfi.common import NandBus, NandBusMux, NandChannel
from nandlab.gateware.onfi.controller import NandLabChannelController
from nandlab.nand_model.die import NandLabDie, TIMING_CHECKS
from nandlab.gateware.common.top import NandLabPortedTop


class _BufferMemory(Module):
    def __init__(self, bus, words, stall, slow):
        dw = len(bus.dat_w)
        self.mem = mem = Memory(dw, words)
        port = mem.get_port(write_capable=True, we_granularity=8)
        self.tb = mem.get_port(write_capable=True)
        self.specials += mem, port, self.tb
        lfsr = Signal(16, reset=0xACE1)
        self.sync += lfsr.eq(Cat(lfsr[1:], lfsr[0] ^ lfsr[2] ^ lfsr[3] ^ lfsr[5]))
        wait = Signal()
        self.comb += wait.eq(stall & lfsr[0] & lfsr[3] | slow & (lfsr[:3] != 0))
        self.comb += [
            port.adr.eq(bus.adr),
            port.dat_w.eq(bus.dat_w),
            bus.dat_r.eq(port.dat_r),
        ]
        self.sync += [
            bus.ack.eq(0),
            If(bus.cyc & bus.stb & ~bus.ack & ~wait, bus.ack.eq(1)),
        ]
        self.comb += port.we.eq(Replicate(bus.cyc & bus.stb & bus.we & ~bus.ack & ~wait, dw // 8) & bus.sel)


class NandLabChannelSimTop(NandLabPortedTop):
    def __init__(self, config, ways=4, dw=64, mem_bytes=64 * 1024, sys_clk_freq=100e6, ecc=None, read_latency=0,
                 rb_latency=0, ctl_rb_latency=None, timings=None, dout_late_max=0, dqs_late_ns=None,
                 shared_decoder=None, bus_mux=None):
        """`shared_decoder`: the controller's ECC decodes through a port of a NandLabSharedBchDecoder built
        with these options (its only client; e.g. the ECPIX-5's smaller decoder) instead of its own."""
        NandLabPortedTop.__init__(self)
        self.config = config
        self.bus = bus = NandBus(targets=ways)
        self.dies = dies = [NandLabDie(config) for _ in range(ways)]
        for i, die in enumerate(dies):
            setattr(self, f"die{i}", die)
        dbus = [d.bus for d in dies]
        self.channel = NandChannel(bus, dbus)
        mux_latency = {None: 0, "registered": 1, "return": 2}
        if bus_mux not in mux_latency:
            raise ValueError(f"bus_mux {bus_mux!r} unknown; valid: None, registered, return")
        if bus_mux:
            # The controller's side of the mux stands for the channel from here on.
            dies_bus, bus = bus, NandBus(targets=ways)
            self.mux = NandBusMux([bus], dies_bus, registered=True,
                                  registered_return=(0,) if bus_mux == "return" else ())
        rb_stuck = Signal(ways)
        # R/B# seen by the controller: a stuck way reads busy.
        ctl_bus = NandBus(targets=ways)
        self.comb += [
            bus.ce_n.eq(ctl_bus.ce_n), bus.cle.eq(ctl_bus.cle), bus.ale.eq(ctl_bus.ale),
            bus.we_n.eq(ctl_bus.we_n), bus.re_n.eq(ctl_bus.re_n), bus.wp_n.eq(ctl_bus.wp_n),
            bus.dq_o.eq(ctl_bus.dq_o), bus.dq_oe.eq(ctl_bus.dq_oe), bus.dqs_o.eq(ctl_bus.dqs_o),
            bus.dqs_oe.eq(ctl_bus.dqs_oe),
        ]
        rb = bus.rb_n & ~rb_stuck
        for k in range(rb_latency):
            rb_d = Signal(ways, name=f"rb_n_d{k}", reset=2**ways - 1)
            self.sync += rb_d.eq(rb)
            rb = rb_d
        self.comb += ctl_bus.rb_n.eq(rb)
        dq_i, dqs_i = bus.dq_i, bus.dqs_i
        if dout_late_max:
            dq_i, dqs_i = self._late_phases(dq_i, dqs_i, dout_late_max)
        for k in range(read_latency):
            dq_d, dqs_d = Signal(len(dq_i), name=f"dq_i_d{k}"), Signal(len(dqs_i), name=f"dqs_i_d{k}")
            self.sync += dq_d.eq(dq_i), dqs_d.eq(dqs_i)
            dq_i, dqs_i = dq_d, dqs_d
        self.comb += ctl_bus.dq_i.eq(dq_i), ctl_bus.dqs_i.eq(dqs_i)
        wb = wishbone.Interface(data_width=dw, adr_width=32 - (dw // 8 - 1).bit_length())
        decoder = None
        if shared_decoder is not None:
            from nandlab.gateware.ecc.shared import NandLabSharedBchDecoder
            self.shared_decoder = NandLabSharedBchDecoder(ecc, **shared_decoder)
            decoder = self.shared_decoder.port()
        self.ctl = ctl = NandLabChannelController(ctl_bus, wb, sys_clk_freq, config.part, ecc=ecc, ecc_decoder=decoder,
                                                  read_latency=read_latency + mux_latency[bus_mux], timings=timings,
                                                  dqs_late_ns=dqs_late_ns, rb_latency=mux_latency[bus_mux]
                                                  + (rb_latency if ctl_rb_latency is None else ctl_rb_latency))
        stall, slow = Signal(), Signal()
        words = mem_bytes // (dw // 8)
        self.buf = buf = _BufferMemory(wb, words, stall, slow)

        port = self.port
        for name in ("submit", "d_op", "d_way", "d_tag", "d_rsvd", "d_row", "d_col", "d_len", "d_addr", "d_param",
                     "cpl_pop", "timing_mode", "ways_online", "page_bytes", "page_bits", "blocks", "timeout",
                     "data_bytes", "dma_base", "dma_limit"):
            port(name, getattr(ctl, name), False)
        for name in ("submit_ready", "cpl_valid", "cpl_tag", "cpl_way", "cpl_result", "cpl_status", "busy_cycles",
                     "data_cycles", "bytes_in", "bytes_out", "completed", "in_flight", "cpl_ecc", "ecc_fixed",
                     "overflow_lost"):
            port(name, getattr(ctl, name), True)
        port("bus_interface", ctl.interface, False)     # ("interface" is a SystemVerilog keyword)
        port("rb_stuck", rb_stuck, False)
        port("mem_stall", stall, False)
        port("mem_slow", slow, False)
        port("mem_adr", buf.tb.adr, False)
        port("mem_we", buf.tb.we, False)
        port("mem_dat_w", buf.tb.dat_w, False)
        port("mem_dat_r", buf.tb.dat_r, True)
        shift = port("time_scale_shift", Signal(5), False)
        # The channel as the controller drives and sees it, packed (tests/tb/bus_trace.py).
        port("bus_trace", Cat(*[getattr(ctl_bus, n) for n in ("ce_n", "cle", "ale", "we_n", "re_n", "wp_n", "dq_o",
            "dq_oe", "dqs_o", "dqs_oe", "dq_i", "dqs_i", "rb_n")], *[d.busy for d in dies]), True)
        for i, die in enumerate(dies):
            self.comb += die.oe.eq(1), die.time_scale_shift.eq(shift)
            for n in TIMING_CHECKS:
                port(f"die{i}_viol_{n}", die.violations[n], True)
            port(f"die{i}_interface", die.data_interface, True)
            port(f"die{i}_timing_mode", die.timing_mode, True)
            port(f"die{i}_busy", die.busy, True)
        # Plane architecture of every die (ARCH_CNFM / ARCH_DW / ARCH_SDW; multi-plane tests).
        arch = port("arch", Signal(2), False)
        for die in dies:
            self.comb += die.arch.eq(arch)
        # Flip injection on every die (ECC tests).
        flip_row, flip_count, flip_rate = Signal(24), Signal(len(dies[0].flip_count)), Signal(16)
        port("flip_row", flip_row, False)
        port("flip_count", flip_count, False)
        port("flip_rate", flip_rate, False)
        for die in dies:
            self.comb += die.flip_row.eq(flip_row), die.flip_count.eq(flip_count), die.flip_rate.eq(flip_rate)

    def _late_phases(self, dq_i, dqs_i, late_max):
        """(dq, dqs) `dout_late` phases (a port, 0 .. late_max) later than `dq_i` / `dqs_i` (a byte and a
        DQS level per phase, phase 0 in the low bits)."""
        late = self.port("dout_late", Signal(bits_for(late_max)), False)
        # hist[j]: the phases of j cycles ago (per phase: DQ, then DQS).
        hist = [[Cat(dq_i[8 * p:8 * p + 8], dqs_i[p]) for p in range(2)]]
        for j in range(1, (late_max + 1) // 2 + 1):
            prev = [Signal(9, name=f"late_d{j}_{p}") for p in range(2)]
            self.sync += [prev[p].eq(hist[-1][p]) for p in range(2)]
            hist.append(prev)
        out = [Signal(9, name=f"late_out{p}") for p in range(2)]
        # Phase p of this cycle shows absolute phase 2t + p - k: -((p - k) // 2) cycles ago, phase (p - k) % 2.
        self.comb += Case(late, {k: [out[p].eq(hist[-((p - k) // 2)][(p - k) % 2]) for p in range(2)]
                                 for k in range(late_max + 1)})
        dq, dqs = Signal(len(dq_i), name="dq_late"), Signal(len(dqs_i), name="dqs_late")
        self.comb += dq.eq(Cat(out[0][:8], out[1][:8])), dqs.eq(Cat(out[0][8], out[1][8]))
        return dq, dqs
