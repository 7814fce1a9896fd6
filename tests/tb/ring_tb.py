"""cocotb tests of the power ring (gateware/power/ring.py) with scripted dies.

Each node's die is a small Python state machine with the sequencer's handshake (present OI, start
the phase in the cycle after OE is seen, pulse phase_end / atomic_end in the phase's last cycle).
Every cycle the invariants of the ring are checked: token conservation, one key, and the RTs of
the running phases never summing above TT.
"""

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge, Timer

from nandlab.gateware.power.common import POLICIES

MODES = POLICIES
TOKEN_MODES = set(POLICIES) - {"npm", "ppm"}
NODES = 4


class StubDie:
    """Operations are lists of phases (oi, first, cycles)."""
    def __init__(self, ring, i):
        self.ring, self.i = ring, i
        self.ops = []
        self.state, self.phases, self.k, self.left = "idle", [], 0, 0
        self.granted_at = []          # (cycle, oi) of every phase start
        self.done = 0
        self.oe_seen = False

    def sig(self, name):
        return getattr(self.ring.dut, f"n{self.i}_{name}")

    def queue(self, *phases):
        self.ops.append(list(phases))
        if self.state == "idle":
            self._next_op()

    def _next_op(self):
        if self.ops:
            self.phases, self.k, self.state = self.ops.pop(0), 0, "request"
        else:
            self.state = "idle"

    @property
    def phase(self):
        return self.phases[self.k]

    def drive(self):
        req = self.state == "request"
        last = self.state == "run" and self.left == 1
        self.sig("request").value = int(req)
        self.sig("oi").value = self.phase[0] if self.state != "idle" else 0
        self.sig("oi_first").value = int(self.phase[1]) if self.state != "idle" else 0
        self.sig("phase_end").value = int(last)
        nxt_first = self.k + 1 >= len(self.phases) or self.phases[self.k + 1][1]
        self.sig("atomic_end").value = int(last and nxt_first)

    def sample(self):
        self.oe_seen = self.state == "request" and int(self.sig("oe").value) == 1

    def advance(self, cycle):
        if self.state == "request" and self.oe_seen:
            self.state, self.left = "run", self.phase[2]
            self.granted_at.append((cycle + 1, self.phase[0]))
        elif self.state == "run":
            self.left -= 1
            if self.left == 0:
                self.k += 1
                if self.k < len(self.phases):
                    self.state = "request"
                else:
                    self.done += 1
                    self._next_op()

    @property
    def running_oi(self):
        return self.phase[0] if self.state == "run" else None


class Ring:
    def __init__(self, dut, n=NODES):
        self.dut, self.n = dut, n
        self.dies = [StubDie(self, i) for i in range(n)]
        self.cycle = 0
        self.table = {}
        self.atomic_rt = {}
        self.mode = "npm"
        self.max_running = 0
        self.drain_grants = 0
        self.probe = None

    def node(self, i, name):
        return int(getattr(self.dut, f"n{i}_{name}").value)

    async def start(self):
        dut = self.dut
        cocotb.start_soon(Clock(dut.sys_clk, 10, unit="ns").start())
        for name in ("req_mode", "apply", "table_we", "table_adr", "table_dat", "table_clear", "pause"):
            getattr(dut, name).value = 0
        dut.req_tg.value, dut.req_alpha.value = 4, 4
        for d in self.dies:
            d.drive()
        dut.sys_rst.value = 1
        for _ in range(3):
            await RisingEdge(dut.sys_clk)
        dut.sys_rst.value = 0
        await self.tick()

    async def tick(self, n=1):
        for _ in range(n):
            for d in self.dies:
                d.drive()
            await Timer(1, unit="ns")
            for d in self.dies:
                d.sample()
            self.check()
            if self.probe:
                self.probe(self.cycle)
            await RisingEdge(self.dut.sys_clk)
            self.cycle += 1
            for d in self.dies:
                d.advance(self.cycle)
            self.dut.apply.value = 0
            self.dut.table_we.value = 0
            self.dut.table_clear.value = 0

    def check(self):
        dut = self.dut
        if not int(dut.running.value):
            return
        tt = int(dut.tt.value)
        held = sum(self.node(i, "ht") for i in range(self.n))
        flying = sum(self.node(i, "tx_tokens") for i in range(self.n))
        used = sum(self.node(i, "ut") for i in range(self.n))
        assert held + flying + used == tt, (self.cycle, held, flying, used, tt)
        keys = sum(self.node(i, k) for i in range(self.n) for k in ("key", "tx_key", "key_used"))
        assert keys == 1, (self.cycle, keys)
        if self.mode in TOKEN_MODES:
            # The RTs of the phases running now never sum above TT (atomic modes: the atomic RT,
            # taken by the first phase, covers the phases after it).
            need = 0
            for d in self.dies:
                oi = d.running_oi
                if oi is None:
                    continue
                if self.mode == "kmtpm_sub":
                    need += self.table[oi]
                else:
                    need += self.table[self.first_oi(d)]
            self.max_running = max(self.max_running, need)
            assert need <= tt, (self.cycle, need, tt)
            assert used >= need, (self.cycle, used, need)
        if self.mode == "ppm":
            in_ppz = sum(1 for d in self.dies if d.running_oi == 0x11)
            assert in_ppz <= 1, (self.cycle, "two dies in the peak-power zone")

    @staticmethod
    def first_oi(d):
        k = d.k
        while not d.phases[k][1]:
            k -= 1
        return d.phases[k][0]

    async def configure(self, mode, tg, alpha, table=None, expect_error=0):
        dut = self.dut
        if table is not None:
            dut.table_clear.value = 1
            await self.tick(260)
            for oi, rt in table.items():
                dut.table_adr.value, dut.table_dat.value, dut.table_we.value = oi, rt, 1
                await self.tick()
        before = int(dut.applies.value)
        dut.req_mode.value = MODES.index(mode)
        dut.req_tg.value, dut.req_alpha.value = tg, alpha
        dut.apply.value = 1
        await self.tick()
        if expect_error:
            await self.tick(2)
            assert int(dut.error.value) == expect_error, int(dut.error.value)
            return
        for _ in range(100_000):
            if int(dut.applies.value) == before + 1 and int(dut.running.value):
                break
            # Draining: no atomic operation may start.
            if any(self.node(i, "grant") for i in range(self.n)):
                self.drain_grants += 1
            await self.tick()
        else:
            raise AssertionError(f"the ring never ran {mode} TG={tg} alpha={alpha}: error {int(dut.error.value)}, "
                                 f"in_atomic {[self.node(i, 'in_atomic') for i in range(self.n)]}, "
                                 f"key_used {[self.node(i, 'key_used') for i in range(self.n)]}")
        assert int(dut.error.value) == 0
        assert int(dut.tt.value) == alpha * (2**tg - 1)
        assert int(dut.mode.value) == MODES.index(mode)
        if table is not None:
            self.table = dict(table)
        self.mode = mode

    async def run_until(self, cond, limit=100_000):
        for _ in range(limit):
            if cond():
                return True
            await self.tick()
        return False


async def setup(dut):
    ring = Ring(dut)
    await ring.start()
    return ring


FIG4_TABLE = {0x11: 3, 0x21: 8, 0x31: 4}


async def fig4(dut, mode):
    """Fig. 4 with TT = 9 (TG = 2, alpha = 3): w0 needs 3, w2 needs 8, then w1 needs 4."""
    ring = await setup(dut)
    # Paused while the requests line up and the ring starts: w0 holds all TT tokens (and the key).
    dut.pause.value = 1
    await ring.tick()
    w0, w1, w2 = ring.dies[:3]
    w0.queue((0x11, True, 200))
    w2.queue((0x21, True, 200))
    await ring.configure(mode, 2, 3, FIG4_TABLE)
    await ring.tick(10)
    assert ring.node(0, "ht") == 9
    dut.pause.value = 0
    # w1's operation comes once the 6 tokens w0 left have passed it (Fig. 4a-iii).
    assert await ring.run_until(lambda: ring.node(2, "ht") == 6 or w2.state == "run", 100)
    w1.queue((0x31, True, 200))
    done = await ring.run_until(lambda: w0.done and w1.done and w2.done, 5000)
    return ring, done


@cocotb.test()
async def fig4_deadlock_without_key(dut):
    ring, done = await fig4(dut, "mtpm_nokey")
    assert not done
    w0, w1, w2 = ring.dies[:3]
    assert w0.done == 1 and w1.done == 0 and w2.done == 0
    # w1 holds 3 of the 4 it needs, w2 6 of its 8; nothing moves.
    assert (ring.node(1, "ht"), ring.node(2, "ht")) == (3, 6)
    assert sum(ring.node(i, "tx_tokens") for i in range(NODES)) == 0


@cocotb.test()
async def fig4_no_deadlock_with_key(dut):
    ring, done = await fig4(dut, "mtpm")
    assert done
    w0, w1, w2 = ring.dies[:3]
    # w2 (with the key) gathers its 8 before w1 gets 4: w2 starts first.
    assert w2.granted_at[0][0] < w1.granted_at[0][0]


@cocotb.test()
async def fig8_decision_and_hop_timing(dut):
    """OI and {key, tokens} arrive in t0; RT and the request in t1; OE in t2, when the remaining
    token and the key leave on the next hop (Fig. 8): TT = 6 (TG = 2, alpha = 2), RT = 5."""
    ring = await setup(dut)
    await ring.configure("mtpm", 2, 2, {0x11: 5})
    nbits = int(dut.nbits.value)
    assert nbits == 1 + (6).bit_length()
    # The key and all tokens circulate; find node 2's arrival period.
    arrivals = []
    ring.probe = lambda cycle: arrivals.append(cycle) if ring.node(2, "rx_done") else None
    while len(arrivals) < 3:
        await ring.tick()
    period = arrivals[2] - arrivals[1]
    assert period == NODES * nbits                    # T_trans = packet bits per hop, no stall.
    t0 = arrivals[2] + period
    await ring.tick(t0 - ring.cycle)
    obs = {"bits": []}
    def probe(cycle):
        rel = cycle - t0
        if rel == 0:
            obs["rx_done"] = ring.node(2, "rx_done")
        if ring.node(2, "oe") and "oe" not in obs:
            obs["oe"] = rel
        if ring.node(2, "tx_valid") and len(obs["bits"]) < nbits:
            obs.setdefault("tx", rel)
            obs["bits"].append(ring.node(2, "tx_data"))
    ring.probe = probe
    ring.dies[2].queue((0x11, True, 50))
    await ring.tick(2 + nbits)
    ring.probe = None
    assert obs["rx_done"] == 1                      # The packet's last bit arrives with the OI.
    assert obs.get("oe") == 2, obs                  # T_comp = 2 cycles.
    assert obs.get("tx") == 2, obs                  # The rest leaves in the same cycle as OE...
    assert obs["bits"] == [1, 0, 0, 1], obs         # ...as {key = 1, tokens = 6 - 5 = 001b}.
    assert ring.node(2, "ut") == 5


async def subatomic(dut, mode):
    ring = await setup(dut)
    await ring.configure(mode, 4, 1, {0x11: 15, 0x12: 8, 0x13: 2, 0x21: 7})
    d0, d1 = ring.dies[:2]
    d0.queue((0x11, True, 100), (0x12, False, 300), (0x13, False, 100))
    assert await ring.run_until(lambda: d0.state == "run", 500)
    d1.queue((0x21, True, 50))
    assert await ring.run_until(lambda: d0.done and d1.done, 5000)
    phase2 = next(c for c, oi in d0.granted_at if oi == 0x12)
    atomic_end = next(c for c, oi in d0.granted_at if oi == 0x13) + 100
    return ring, d1.granted_at[0][0], phase2, atomic_end


@cocotb.test()
async def subatomic_token_return(dut):
    """KMTPM sub-atomic: when P_SA2 starts, 15 - 8 = 7 tokens go on at once and the other die
    (RT 7) starts while the program is still in its atomic operation."""
    ring, start1, phase2, end0 = await subatomic(dut, "kmtpm_sub")
    assert phase2 <= start1 < phase2 + 400, (phase2, start1)
    assert ring.max_running == 15


@cocotb.test()
async def atomic_mode_waits_for_the_atomic_end(dut):
    ring, start1, phase2, end0 = await subatomic(dut, "kmtpm_atomic")
    assert start1 >= end0, (start1, end0)


@cocotb.test()
async def ppm_and_npm(dut):
    ring = await setup(dut)
    await ring.configure("ppm", 4, 1, {0x11: 15, 0x21: 7})
    for d in ring.dies:
        d.queue((0x11, True, 40), (0x21, True, 40))
    assert await ring.run_until(lambda: all(d.done for d in ring.dies), 5000)
    starts = sorted(c for d in ring.dies for c, oi in d.granted_at if oi == 0x11)
    assert all(b - a >= 40 for a, b in zip(starts, starts[1:]))       # one at a time
    await ring.configure("npm", 4, 1)
    for d in ring.dies:
        d.queue((0x11, True, 40))
    await ring.tick()
    # NPM: OE in the cycle the OI is presented; all four run together.
    assert all(d.state == "run" for d in ring.dies)


@cocotb.test()
async def configuration_refused(dut):
    ring = await setup(dut)
    await ring.configure("mtpm", 3, 2, {0x11: 7})
    await ring.configure("kmtpm_sub", 6, 2, expect_error=1)
    await ring.configure("kmtpm_sub", 3, 0, expect_error=2)
    await ring.configure("kmtpm_sub", 3, 9, expect_error=2)
    # An RT above TT (TG = 2, alpha = 2: TT = 6 < 7).
    await ring.configure("kmtpm_sub", 2, 2, expect_error=3)
    # The ring still runs the last good configuration.
    assert int(dut.running.value) and int(dut.mode.value) == MODES.index("mtpm") and int(dut.tt.value) == 14


@cocotb.test()
async def mode_switching_under_load(dut):
    """Random operations on every die while the policy, TG and alpha change; invariants every cycle,
    no atomic operation starts while draining, every operation completes."""
    rng = random.Random(5)
    ring = await setup(dut)
    # Table: P_A1-like (15/8/2 at TG 4 scaled to each TG by the host; here one table fits all).
    table = {0x11: 3, 0x12: 2, 0x13: 1, 0x21: 2, 0x22: 1, 0x31: 3, 0x41: 1}
    await ring.configure("kmtpm_sub", 2, 1, table)
    shapes = [
        [(0x11, True, 30), (0x12, False, 40), (0x13, False, 20), (0x21, True, 25), (0x22, False, 25)],
        [(0x31, True, 35)],
        [(0x41, True, 60), (0x11, True, 20), (0x12, False, 10), (0x13, False, 10)],
    ]
    queued = 0
    for mode, tg, alpha in [("kmtpm_sub", 2, 1), ("mtpm", 2, 2), ("kmtpm_atomic", 3, 1), ("ppm", 2, 1),
                            ("npm", 2, 1), ("kmtpm_sub", 2, 2), ("mtpm", 2, 1)]:
        await ring.configure(mode, tg, alpha)
        for _ in range(1500):
            if rng.random() < 0.02:
                ring.dies[rng.randrange(NODES)].queue(*rng.choice(shapes))
                queued += 1
            await ring.tick()
    assert await ring.run_until(lambda: all(d.state == "idle" for d in ring.dies), 50_000)
    assert sum(d.done for d in ring.dies) == queued and queued > 100
    assert ring.drain_grants == 0
