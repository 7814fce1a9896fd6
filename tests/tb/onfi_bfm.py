"""cocotb host for the phased NAND bus: async SDR and NV-DDR cycles, as a controller would drive them.

One bus cycle = one system clock cycle: inputs are set after a rising edge, the die's outputs are
read 1 ns later (still before the next edge). The host honours tWHR/tADL/tCCS/tRR/tWB/tCS/tRHW of the
interface and timing mode it is in (ONFI's table, nandlab.gateware.onfi.interface_timings; `timings`
overrides them) unless a call asks it not to (to exercise the die's timing checker).
"""

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import First, RisingEdge, Timer, ValueChange
from cocotb.utils import get_sim_time

from nandlab.gateware.onfi import common as onfi

import bus_trace

IF_ASYNC, IF_NVDDR, IF_SYNC = 0, 1, 3


class OnfiHost:
    def __init__(self, dut, clk_period_ns=10, timings=None):
        self.dut = dut
        self.period = clk_period_ns
        self.mode = IF_ASYNC
        self.clk_level = 0          # NV-DDR: CLK level at the end of the last cycle.
        self.dqs_level = 0
        self.die_dqs = 0
        self.timing_mode = 0
        self.overrides = dict(timings or {})
        self.honour_cs = True       # CE# low for tCS before the first latch after it fell.
        self.honour_rhw = True      # tRHW from the end of a data output to the next latch.
        self.dout_end = None        # `cycles` when the last data output ended.
        self.cycles = 0
        cocotb.start_soon(Clock(dut.sys_clk, clk_period_ns, unit="ns").start())
        bus_trace.start(dut, "die")
        self._levels = dict(ce_n=1, cle=0, ale=0, we_n=3, re_n=3, wp_n=1, dq_o=0, dq_oe=0, dqs_o=0, dqs_oe=0)

    @property
    def t(self):
        return {**onfi.interface_timings(self.mode, self.timing_mode)._asdict(), **self.overrides}

    def ns(self, t):
        return -(-t // self.period)

    async def reset(self):
        self.dut.sys_rst.value = 1
        self._apply(self._levels)
        for _ in range(3):
            await RisingEdge(self.dut.sys_clk)
        self.dut.sys_rst.value = 0
        await RisingEdge(self.dut.sys_clk)

    def _apply(self, levels):
        for k, v in levels.items():
            getattr(self.dut, k).value = v

    async def cycle(self, **changes):
        """Drive one cycle (levels persist unless changed); returns (dq_i, dqs_i, rb_n) seen in it."""
        lv = dict(self._levels)
        lv.update(changes)
        if self.mode in (IF_NVDDR, IF_SYNC) and "we_n" not in changes:
            lv["we_n"] = 0b01          # CLK high in phase 0, low in phase 1: a rising edge per cycle.
        self._levels = {k: v for k, v in lv.items()}
        self._apply(lv)
        await Timer(1, unit="ns")
        out = (int(self.dut.dq_i.value), int(self.dut.dqs_i.value), int(self.dut.rb_n.value))
        await RisingEdge(self.dut.sys_clk)
        self.cycles += 1
        return out

    async def idle(self, n):
        for _ in range(n):
            await self.cycle()

    # Command and address cycles ------------------------------------------------------------------
    async def _latch(self, byte, cle, ale):
        if self.honour_rhw and self.dout_end is not None:
            # The first phase of the latch cycle is tRHW after the end of the data output cycle.
            while (self.cycles - self.dout_end) * self.period < self.t["t_rhw"]:
                await self.cycle()
        if self._levels["ce_n"] and self.honour_cs:
            for _ in range(self.ns(self.t["t_cs"])):
                await self.cycle(ce_n=0)
        if self.mode == IF_ASYNC:
            await self.cycle(ce_n=0, cle=cle, ale=ale, we_n=0, dq_o=byte | byte << 8, dq_oe=1)
            await self.cycle(ce_n=0, cle=cle, ale=ale, we_n=3, dq_o=byte | byte << 8, dq_oe=1)
            await self.cycle(cle=0, ale=0)
        else:
            # The byte is on DQ in the phase before the CLK rising edge of the CLE/ALE cycle.
            await self.cycle(ce_n=0, cle=0, ale=0, re_n=3, dq_o=byte | byte << 8, dq_oe=1)
            await self.cycle(ce_n=0, cle=cle, ale=ale, re_n=3, dq_o=byte | byte << 8, dq_oe=1)
            await self.cycle(cle=0, ale=0)

    async def command(self, c):
        await self._latch(c, 1, 0)

    async def address(self, *bytes_):
        for b in bytes_:
            await self._latch(b, 0, 1)

    # Data ---------------------------------------------------------------------------------------
    async def write_data(self, data, honour=True, wait="t_adl"):
        if honour and wait:
            await self.idle(self.ns(self.t[wait]))
        data = bytes(data)
        if self.mode == IF_ASYNC:
            for b in data:
                await self.cycle(ce_n=0, we_n=0, dq_o=b | b << 8, dq_oe=1)
                await self.cycle(ce_n=0, we_n=3, dq_o=b | b << 8, dq_oe=1)
        elif self.mode == IF_SYNC:
            # A byte per CLK rising edge of a data cycle (CLE = ALE = 1, W/R# high), taken from
            # DQ of the phase before the edge: each byte goes out one cycle ahead.
            await self.cycle(ce_n=0, cle=0, ale=0, re_n=3, dq_o=data[0] * 0x101, dq_oe=1)
            for i in range(len(data)):
                nxt = data[i + 1] if i + 1 < len(data) else 0
                await self.cycle(ce_n=0, cle=1, ale=1, re_n=3, dq_o=nxt * 0x101, dq_oe=1)
            await self.cycle(cle=0, ale=0)
        else:
            # Data cycles: CLE = ALE = 1, W/R# high, DQS toggling once per phase with its byte.
            await self.cycle(ce_n=0, cle=1, ale=1, re_n=3, dqs_o=self.dqs_level * 3, dqs_oe=1)
            padded = data + (b"\0" if len(data) % 2 else b"")
            for i in range(0, len(data), 2):
                d0, d1 = padded[i], padded[i + 1]
                l0 = self.dqs_level ^ 1
                l1 = l0 ^ 1 if i + 1 < len(data) else l0
                self.dqs_level = l1
                await self.cycle(ce_n=0, cle=1, ale=1, re_n=3, dq_o=d0 | d1 << 8, dq_oe=1,
                                 dqs_o=l0 | l1 << 1, dqs_oe=1)
            await self.cycle(cle=0, ale=0, dqs_oe=0, dqs_o=self.dqs_level * 3)

    async def read_data(self, n, honour=True, wait="t_whr"):
        """Read n bytes (NV-DDR may return one more: the die gives bytes in pairs)."""
        if honour and wait:
            await self.idle(self.ns(self.t[wait]))
        out = []
        if self.mode == IF_ASYNC:
            for _ in range(n):
                await self.cycle(ce_n=0, re_n=0)
                dq, _, _ = await self.cycle(ce_n=0, re_n=0)
                out.append(dq >> 8 & 0xFF)
                await self.cycle(ce_n=0, re_n=3)
            self.dout_end = self.cycles - 1         # RE# rose at the start of the last cycle.
            return bytes(out)
        if self.mode == IF_SYNC:
            # A byte per CLK rising edge of a data cycle with W/R# low, on DQ from that phase.
            for _ in range(n):
                dq, _, _ = await self.cycle(ce_n=0, cle=1, ale=1, re_n=0)
                out.append(dq >> 8 & 0xFF)
            await self.cycle(cle=0, ale=0, re_n=3)
            self.dout_end = self.cycles - 1
            return bytes(out)
        # NV-DDR: W/R# low during data cycles; a byte per DQS edge from the die.
        guard = 0
        while len(out) < n:
            dq, dqs, _ = await self.cycle(ce_n=0, cle=1, ale=1, re_n=0)
            prev = self.die_dqs
            for p in range(2):
                level = dqs >> p & 1
                if level != prev:
                    out.append(dq >> (8 * p) & 0xFF)
                prev = level
            self.die_dqs = prev
            guard += 1
            assert guard < 4 * n + 100, f"die gave {len(out)} of {n} bytes"
        await self.cycle(cle=0, ale=0, re_n=3)
        self.dout_end = self.cycles - 1
        return bytes(out)

    async def wait_ready(self, timeout=1_000_000, honour=True):
        for _ in range(self.ns(self.t["t_wb"]) if honour else 0):
            await self.cycle()
        n = 0
        while n < timeout:
            _, _, rb = await self.cycle()
            n += 1
            if rb & 1:
                if honour:
                    await self.idle(self.ns(self.t["t_rr"]))
                return
            if not int(self.dut.rb_n.value) & 1:
                n += await self._sleep_until_rb_changes(timeout - n)
        raise AssertionError("die never became ready")

    async def _sleep_until_rb_changes(self, limit):
        """The cycles a run of `cycle()` calls would have spent seeing R/B# as it is now (the levels held,
        nothing else driven), without Python on every cycle: R/B# changes only at a rising edge, so the
        cycle that sees it changed starts at that edge. Returns the cycles skipped (at most `limit`)."""
        t0 = get_sim_time("ns")
        await First(ValueChange(self.dut.rb_n), Timer(limit * self.period, unit="ns"))
        skipped = round((get_sim_time("ns") - t0) / self.period)
        self.cycles += skipped
        return skipped

    async def deselect(self):
        await self.cycle(ce_n=1, cle=0, ale=0, re_n=3, dq_oe=0)

    # ONFI operations -------------------------------------------------------------------------------
    async def read_status(self):
        await self.command(0x70)
        return (await self.read_data(1))[0]

    async def set_interface(self, interface, timing_mode):
        await self.command(0xEF)
        await self.address(0x01)
        await self.write_data(bytes([interface << 4 | timing_mode, 0, 0, 0]))
        await self.wait_ready()
        self.mode, self.timing_mode = interface, timing_mode
        if interface == IF_NVDDR:
            self.dqs_level = 0
            self.die_dqs = 0
        await self.idle(2)
