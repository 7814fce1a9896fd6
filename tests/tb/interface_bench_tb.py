"""cocotb side of `nandlab bench interface` (runs inside the simulator; nandlab.bench builds and starts it).

Sixteen emulated dies on one channel with real array times. For each interface (CONV = async SDR
mode 5, SYNC_ONLY = sync SDR mode 5, PROPOSED = NV-DDR mode 5) and each degree of way interleaving,
it programs then reads max(`pages`, 4 x ways + 1) pages spread round robin over the ways and takes
the steady state: whole rounds from the completion that ends the first round to the same way's
completion k rounds later (before the last round), k x ways pages over that time. Descriptors are kept queued; the testbench only acts when a
completion arrives or the queue has room (no per-cycle Python), so the simulator runs at its speed.
"""

import json
import os

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge, ReadOnly, First
from cocotb.utils import get_sim_time

from nandlab.gateware.onfi import common as onfi
from nandlab.gateware.onfi.controller import OPS, RESULTS
from nandlab.nand_model.die import TIMING_CHECKS

PLAN = json.loads(os.environ["NANDLAB_BENCH_PLAN"])
OUT = os.environ["NANDLAB_BENCH_OUT"]
MODES = {"CONV": (onfi.IF_ASYNC_SDR, 5), "SYNC_ONLY": (onfi.IF_SYNC_SDR, 5), "PROPOSED": (onfi.IF_NVDDR, 5)}


class Driver:
    def __init__(self, dut):
        self.dut = dut
        self.tag = 0

    async def _pop(self):
        """Pop every waiting completion; returns them."""
        dut, out = self.dut, []
        while True:
            await ReadOnly()
            if not int(dut.cpl_valid.value):
                await RisingEdge(dut.sys_clk)
                return out
            out.append((RESULTS[int(dut.cpl_result.value)], int(dut.cpl_way.value), int(dut.cpl_tag.value)))
            await RisingEdge(dut.sys_clk)
            dut.cpl_pop.value = 1
            await RisingEdge(dut.sys_clk)
            dut.cpl_pop.value = 0

    async def batch(self, descs):
        """Run descriptors (op, way, row, length, addr, col, param), keeping the queue full;
        returns, per completion in order, its time (ns) and the page bytes the bus had moved by then
        (written and read: kept for inspection), and the completions."""
        dut = self.dut
        done, i, times = [], 0, []
        await RisingEdge(dut.sys_clk)
        while len(done) < len(descs):
            await ReadOnly()
            if i < len(descs) and int(dut.submit_ready.value):
                await RisingEdge(dut.sys_clk)
                op, way, row, length, addr, col, param = descs[i]
                self.tag = (self.tag + 1) & 0xFF
                dut.d_op.value, dut.d_way.value, dut.d_tag.value = OPS[op], way, self.tag
                dut.d_row.value, dut.d_len.value, dut.d_addr.value = row, length, addr
                dut.d_col.value, dut.d_param.value = col, param
                dut.submit.value = 1
                await RisingEdge(dut.sys_clk)
                dut.submit.value = 0
                i += 1
                continue
            if not int(dut.cpl_valid.value):
                waits = [RisingEdge(dut.cpl_valid)]
                if i < len(descs):
                    waits.append(RisingEdge(dut.submit_ready))
                await First(*waits)
            got = await self._pop()
            now = (get_sim_time("ns"), int(dut.bytes_in.value) + int(dut.bytes_out.value))
            times += [now] * len(got)
            done += got
        bad = [c for c in done if c[0] != "OK"]
        assert not bad, f"failed descriptors: {bad[:4]}"
        return times, done


@cocotb.test()
async def interface_bandwidth(dut):
    for name in ("submit", "cpl_pop", "rb_stuck", "mem_stall", "mem_we", "flip_count", "flip_row", "time_scale_shift"):
        getattr(dut, name).value = 0
    cocotb.start_soon(Clock(dut.sys_clk, PLAN["clock_ns"], unit="ns").start())
    dut.bus_interface.value = onfi.IF_ASYNC_SDR
    dut.timing_mode.value = 0
    dut.ways_online.value = 2**PLAN["ways"] - 1
    dut.page_bytes.value = PLAN["page_total"]
    dut.page_bits.value = PLAN["page_bits"]
    dut.blocks.value = PLAN["blocks"]
    dut.timeout.value = 1 << 30
    if hasattr(dut, "dma_limit"):
        dut.dma_limit.value = 2**32 - 1           # DMA window: all (the register's reset value)
    dut.sys_rst.value = 1
    for _ in range(3):
        await RisingEdge(dut.sys_clk)
    dut.sys_rst.value = 0
    drv = Driver(dut)
    ways_all = range(PLAN["ways"])
    await drv.batch([("RESET", w, 0, 0, 0, 0, 0) for w in ways_all])
    page, ppb = PLAN["page_bytes"], PLAN["pages_per_block"]
    slots = PLAN["mem_bytes"] // page
    results = []
    for mode in PLAN["modes"]:
        interface, tm = MODES[mode]
        await drv.batch([("SET_FEATURES", w, 0, 0, 0, onfi.FEATURE_TIMING_MODE, (interface << 4) | tm)
                         for w in ways_all])
        dut.bus_interface.value, dut.timing_mode.value = interface, tm
        for ways in PLAN["way_counts"]:
            # Enough pages for a steady-state window of two full rounds after the first.
            n = max(PLAN["pages"], 4 * ways + 1)
            per_way = -(-n // ways)
            blocks = -(-per_way // ppb)
            # Erase (not timed), then program and read the same pages, spread round robin.
            await drv.batch([("ERASE", w, b * 2**PLAN["page_bits"] * 1, 0, 0, 0, 0)
                             for b in range(blocks) for w in range(ways)])
            where = [(k % ways, (k // ways) // ppb, (k // ways) % ppb) for k in range(n)]
            rows = [(w, (b << PLAN["page_bits"]) | p) for w, b, p in where]
            for direction, op in (("write", "PROGRAM"), ("read", "READ")):
                descs = [(op, w, r, page, (k % slots) * page, 0, 0) for k, (w, r) in enumerate(rows)]
                # Steady state: whole rounds (one page per way) from the completion that ends the
                # first round (the start-up, when the bus is free while the first array operations
                # run, is behind) to a completion of the same way k rounds later, before the last
                # round (the drain, when the last ways' array times no longer overlap any transfer):
                # k x ways pages over that time. Both ends are the same way's completions, one period
                # of the round robin apart k times, so where a completion falls within its round
                # (it waits for the bus to read its status) cancels out.
                times, _ = await drv.batch(descs)
                first = ways - 1
                k = max(1, (n - ways - first) // ways)
                last = first + k * ways
                cycles = round((times[last][0] - times[first][0]) / PLAN["clock_ns"])
                mbps = k * ways * page / (cycles * PLAN["clock_ns"] * 1e-9) / 1e6
                results.append(dict(mode=mode, ways=ways, direction=direction, pages=n, window_pages=k * ways,
                                    cycles=cycles, mb_s=mbps,
                                    bus_bytes_in=int(dut.bytes_in.value), bus_bytes_out=int(dut.bytes_out.value)))
                dut._log.info(f"{mode:9} {direction:5} {ways:2} ways: {mbps:7.2f} MB/s ({cycles} cycles)")
                with open(OUT, "w") as f:
                    json.dump(results, f)
    viol = {f"die{w}_{n}": int(getattr(dut, f"die{w}_viol_{n}").value)
            for w in ways_all for n in TIMING_CHECKS}
    with open(OUT, "w") as f:
        json.dump({"results": results, "violations": viol}, f)
