"""cocotb test of one BCH decoder shared by two clients (NandLabSharedBchDecoder) scored against bchlib."""

import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, RisingEdge, Timer

from bch_tb import BCH, CODE, T, apply, beats_of, bchlib_decode, error_cases, flip, random_data


async def start(dut, seed):
    """Clock, both clients' inputs at 0, reset; the test's random generator."""
    cocotb.start_soon(Clock(dut.sys_clk, 10, unit="ns").start())
    for name in ("sink_valid", "sink_data", "source_ready", "restart"):
        for k in (0, 1):
            getattr(dut, f"c{k}_{name}").value = 0
    dut.sys_rst.value = 1
    for _ in range(3):
        await RisingEdge(dut.sys_clk)
    dut.sys_rst.value = 0
    return random.Random(seed)


class Client:
    """One port's stream of received codewords and what came back for it."""
    def __init__(self, dut, k, cases, rng, valid_prob, ready_prob, gap=0):
        self.dut, self.k, self.rng = dut, k, rng
        self.cases, self.valid_prob, self.ready_prob, self.gap = cases, valid_prob, ready_prob, gap
        self.words = sum((beats_of(flip(cw, pos)) for _, cw, pos in cases), [])
        self.i, self.results, self.fixes, self.wait = 0, [], {}, 0

    def sig(self, name):
        return getattr(self.dut, f"c{self.k}_{name}")

    def drive(self):
        """Inputs of the cycle: a beat offered at random, none for `gap` cycles after each codeword."""
        self.wait = max(self.wait - 1, 0)
        offer = self.i < len(self.words) and not self.wait and self.rng.random() < self.valid_prob
        self.sig("sink_valid").value = int(offer)
        self.sig("sink_data").value = self.words[self.i] if self.i < len(self.words) else 0
        self.sig("source_ready").value = int(self.rng.random() < self.ready_prob)

    def sample(self):
        """Returns True when a status came out for this client this cycle."""
        if int(self.sig("sink_valid").value) and int(self.sig("sink_ready").value):
            self.i += 1
            if self.i % CODE.beats == 0:
                self.wait = self.gap
        if int(self.sig("source_valid").value) and int(self.sig("source_ready").value):
            if int(self.sig("source_last").value):
                self.results.append((self.fixes, int(self.sig("source_count").value),
                                     int(self.sig("source_uncorrectable").value)))
                self.fixes = {}
                return True
            w = int(self.sig("source_word").value)
            assert w not in self.fixes, f"client {self.k}: word {w} corrected twice"
            self.fixes[w] = int(self.sig("source_mask").value)
        return False

    def check(self):
        for (kind, cw, pos), (fixes, count, unc) in zip(self.cases, self.results):
            received = flip(cw, pos)
            if len(pos) <= T:
                assert not unc, f"client {self.k} {kind}: flagged uncorrectable"
                assert count == len(pos) == bchlib_decode(received), f"client {self.k} {kind}: count {count}"
                assert apply(received, fixes) == cw, f"client {self.k} {kind}: data not restored"
            else:
                assert unc and not fixes, f"client {self.k} {kind}: {T + 1} errors not flagged or corrections sent"


async def run_clients(dut, clients, max_cycles):
    order = []
    for _ in range(max_cycles):
        await FallingEdge(dut.sys_clk)
        for c in clients:
            c.drive()
        await Timer(1, "ns")
        for c in clients:
            if c.sample():
                order.append(c.k)
        if all(len(c.results) == len(c.cases) for c in clients):
            return order
    raise AssertionError(f"statuses after {max_cycles} cycles: {[len(c.results) for c in clients]}")


@cocotb.test()
async def shared_decoder_serves_both_clients(dut):
    """Two clients stream codewords (0, t and t+1 errors) at the same time with random valid and ready:
    each gets exactly its own codewords' corrections and statuses. Back to back, the first keeps the
    decoder until its stream ends; with a pause after each codeword (as between pages) they alternate."""
    rng = await start(dut, 4)
    # The pause outlasts the decoder's stage 2 (NANDLAB_BCH_GAP: a smaller decoder's is longer).
    pause = int(os.environ.get("NANDLAB_BCH_GAP", 2 * CODE.beats))
    for gap, switches in ((0, 1), (pause, 2 * len(error_cases(rng)) - 1)):
        clients = [Client(dut, k, error_cases(rng), rng, 0.8, 0.5, gap) for k in (0, 1)]
        order = await run_clients(dut, clients, 40 * CODE.beats * len(clients[0].cases))
        for c in clients:
            c.check()
        assert sum(a != b for a, b in zip(order, order[1:])) == switches, (gap, order)


@cocotb.test()
async def lone_client_keeps_the_pace(dut):
    """Client 1 alone, back to back without errors: a status every codeword's beats plus one cycle,
    as with a decoder of its own (test_bch's clean rate)."""
    rng = await start(dut, 5)
    datas = [random_data(rng) for _ in range(4)]
    client = Client(dut, 1, [("none", x + BCH.encode(x), []) for x in datas], rng, 1.0, 1.0)
    cycles = []
    for n in range(10 * CODE.beats):
        await FallingEdge(dut.sys_clk)
        client.drive()
        await Timer(1, "ns")
        if client.sample():
            cycles.append(n)
        if len(client.results) == len(client.cases):
            break
    client.check()
    assert len(client.results) == len(client.cases)
    gaps = [b - a for a, b in zip(cycles, cycles[1:])]
    assert all(g <= CODE.beats + 1 for g in gaps), gaps


async def idle_cycles(dut, clients, n):
    """`n` cycles with nothing offered by `clients`; returns the statuses that came out meanwhile."""
    got = 0
    for _ in range(n):
        await FallingEdge(dut.sys_clk)
        for c in clients:
            c.sig("sink_valid").value = 0
            c.sig("source_ready").value = 1
        await Timer(1, "ns")
        got += sum(c.sample() for c in clients)
    return got


@cocotb.test()
async def restart_frees_a_stopped_owner(dut):
    """Client 0 stops mid-codeword (a read that timed out): the decoder stays its own and client 1's
    codeword waits (the hang). Client 0's restart (its ECC state clearing) frees the decoder at once:
    client 1 then decodes, and a fresh codeword of client 0 decodes as if nothing had been dropped.
    The same from stage 2: client 0's whole codeword (t errors) dropped while the decoder works on it
    sends no correction and no status."""
    rng = await start(dut, 6)
    # Half a codeword: the hang shows over a few codewords' time. A whole one: dropped in Berlekamp-Massey.
    for stop_beats, wait in ((CODE.beats // 2, 3 * CODE.beats), (CODE.beats, 4)):
        c0 = Client(dut, 0, error_cases(rng)[1:2], rng, 1.0, 1.0)
        c0.words = c0.words[:stop_beats]                       # The read that stopped.
        await run_until(dut, [c0], lambda: c0.i == stop_beats, 4 * CODE.beats)
        c1 = Client(dut, 1, error_cases(rng)[1:3], rng, 1.0, 1.0)
        await run_until(dut, [c0, c1], lambda: False, wait, stop=False)
        assert c1.i == 0 and not c1.results, "client 1 served while client 0 owned the decoder"
        dut.c0_restart.value = 1
        await FallingEdge(dut.sys_clk)
        dut.c0_restart.value = 0
        await run_until(dut, [c0, c1], lambda: len(c1.results) == len(c1.cases), 40 * CODE.beats)
        c1.check()
        assert not c0.results and not c0.fixes, "a dropped codeword's corrections or status came out"
        c0 = Client(dut, 0, error_cases(rng)[:4], rng, 0.8, 0.5)
        await run_until(dut, [c0], lambda: len(c0.results) == len(c0.cases), 40 * CODE.beats * 4)
        c0.check()


async def run_until(dut, clients, done, max_cycles, stop=True):
    """Drive and sample `clients` until `done()`; returns the cycles run. Without `stop`, `max_cycles`
    is simply run."""
    for n in range(max_cycles):
        if stop and done():
            return n
        await FallingEdge(dut.sys_clk)
        for c in clients:
            c.drive()
        await Timer(1, "ns")
        for c in clients:
            c.sample()
    if stop and not done():
        raise AssertionError(f"not done after {max_cycles} cycles: {[(c.k, c.i, len(c.results)) for c in clients]}")
    return max_cycles
