"""`nandlab experiment power`: the MTPM paper's power experiment on the CPU-less harness in Verilator.

Synthetic traces as in Section IV-A: N operations, one erase after every 500 programs, reads at a
ratio R0..R100, spread over the dies at random (seeded); MLC programs alternate LSB and MSB pages
per die. The harness (gateware/power/harness.py) runs every policy on the same traces; results
are cycles until all dies finish (throughput, normalised to NPM), program / read latency, waiting
for tokens, and budget violations per 40 ns window. By default the dies share a channel (one bus
per channel; data input and output at NV-DDR mode 5, `interface`; gateware/power/channel.py);
`channel=False` (`--no-channel`) is the array-only harness with every die starting at once.
"""

import json
import os
import random
import tempfile
import uuid
from pathlib import Path

from nandlab import dcc, env, tokens
from nandlab.errors import NandLabError
from nandlab.gateware.power.common import DCC_FW, DCC_FLAT, DCC_FW_FLAT, DCC_POLICIES, EXPERIMENT_POLICIES, \
    ALL_EXPERIMENT_POLICIES, POLICIES as RING_MODES
from nandlab.gateware.power.channel import DEFAULT_INTERFACE
from nandlab.testing import PortedTop

READ_RATIOS = [0, 25, 50, 75, 100]


def synthetic_trace(n_ops, read_pct, dies, erase_every=500, seed=1, skew=None, channels=1):
    """[(die, op)] with op in read / program_lsb / program_msb / erase. `skew` (%, with `channels` > 1):
    that share of the operations goes to channel 0's dies (the first dies / channels), the rest to
    the other channels' (uneven load); None: every die alike."""
    rng = random.Random(seed * 1000 + read_pct)
    per = dies // channels

    def pick():
        if skew is None:
            return rng.randrange(dies)
        ch = 0 if rng.random() * 100 < skew else 1 + rng.randrange(channels - 1)
        return ch * per + rng.randrange(per)
    msb = [False] * dies
    out, programs = [], 0
    for _ in range(n_ops):
        die = pick()
        if rng.random() * 100 < read_pct:
            out.append((die, "read"))
            continue
        out.append((die, "program_msb" if msb[die] else "program_lsb"))
        msb[die] = not msb[die]
        programs += 1
        if programs % erase_every == 0:
            out.append((pick(), "erase"))
    return out


class HarnessTop(PortedTop):
    def __init__(self, part, n, sys_clk_freq, time_scale, depth, channels=1, topology="single", with_skip=False,
                 channel=None, deviation=None):
        from nandlab.gateware.power.harness import PowerHarness
        from nandlab.gateware.power.deviation import die_tables
        PortedTop.__init__(self)
        self.h = h = PowerHarness(part, n, sys_clk_freq, time_scale, depth, channels=channels, topology=topology,
                                  with_skip=with_skip, channel=channel, die_tables=die_tables(deviation))
        port = self.port
        for name in ("load_we", "load_die", "load_adr", "load_op", "go"):
            port(name, getattr(h, name), False)
        for i in range(n):
            port(f"count{i}", h.count[i], False)
            port(f"ops_done{i}", h.ops_done[i], True)
            for k in range(3):
                port(f"kind_ops{i}_{k}", h.kind_ops[i][k], True)
                port(f"kind_cycles{i}_{k}", h.kind_cycles[i][k], True)
            port(f"waited{i}", h.nodes[i].waited, True)
            port(f"hold{i}", h.hold[i], False)
            port(f"pending{i}", h.pending[i], True)
            port(f"next_op{i}", h.next_op[i], True)
            # Each die's own current and phase (nandlab.deviation's per-die monitor).
            port(f"dev_cur{i}", h.seqs[i].current, True)
            port(f"dev_oi{i}", h.seqs[i].oi, True)
        for name in ("req_mode", "req_tg", "req_alpha", "apply", "table_we", "table_adr", "table_dat",
                     "table_clear", "table_keep"):
            port(name, getattr(h, name), False)
        for name in ("running", "error", "tt"):
            port(name, getattr(h, name), True)
        port("done", h.done, True)
        port("cons_errors", h.cons_errors, True)
        if topology == "exchange":
            port("mutate", h.mutate, False)
            port("lent", h.exchange.lent, True)
            port("borrowed", h.exchange.borrowed, True)
        port("total", h.monitor.total, True)
        port("cycles", h.cycles, True)
        for name in ("violations", "windows", "max_sample"):
            port(name, getattr(h.monitor, name), True)
        if channel is not None:
            # The channel's state, for the tests' reference model (tests/test_harness_channel.py).
            for i, die in enumerate(h.dies):
                port(f"chstate{i}", die.state, True)
                port(f"seqbusy{i}", h.seqs[i].busy, True)
            for c, bus in enumerate(h.buses):
                port(f"bus_busy{c}", bus.busy, True)
                port(f"bus_owner{c}", bus.owner, True)
        if with_skip:
            self._skip_ports(h)

    def _skip_ports(self, h):
        """The skip's ports (gateware/power/harness_skip.h drives them)."""
        port, m = self.port, h.monitor
        for name in ("skip", "skip_hops", "skip_rem", "skip_wcount"):
            port(name, getattr(h, name), False)
        for name in ("skip_total", "skip_win_max", "skip_strobe_q", "skip_windows", "skip_violations", "skip_max"):
            port(name, getattr(m, name), False)
        for k, sig in enumerate(m.skip_hist):
            port(f"skip_hist{k}", sig, False)
        for name, sig in (("skip_ok", h.skip_ok), ("wcount", h.wcount), ("nbits", h.nbits), ("pb", m.pb),
                          ("win_max", m.win_max), ("strobe_q", m.strobe_q)):
            port(name, sig, True)
        for i, die in enumerate(h.dies):
            for name in ("room", "acc", "slope", "running"):
                port(f"{name}{i}", getattr(die, name), True)
        for i, (node, stops) in enumerate(zip(h.nodes, h.ring_skip.stops)):
            port(f"tx_cnt{i}", node.tx_cnt, True)
            port(f"stops{i}", stops, True)


def channel_config(part, interface=DEFAULT_INTERFACE, sys_clk_freq=100e6, time_scale=1, din_tokens=True):
    """The harness's channel (gateware/power/channel.py): transfer cycles and bus current of `interface`."""
    from nandlab.gateware.power.channel import transfer_timing
    t = transfer_timing(part, interface, sys_clk_freq, time_scale)
    return {"t_in": t["t_in"], "t_out": t["t_out"], "i_bus": t["i_bus"], "din_tokens": bool(din_tokens),
            "interface": interface}


def experiment_table(part, tg, alpha, chan=None):
    """The token table of a run: the part's array phases, and with the channel its transfer phases
    (their RT from the bus current, eq. 1)."""
    from nandlab.gateware.power.channel import transfer_rts
    table = tokens.compile_tables(part, tg=tg, alpha=alpha)
    if chan is not None:
        for oi, rt in transfer_rts(chan["i_bus"], tg).items():
            table.rt[oi], table.first[oi] = rt, True
        table.check()
    return table


def harness_spec(dies, tg, alpha, table, traces, policies, models=(), cap=0, check_dcc=False, skip=False, bus=0,
                 record=0, dcc_fw_cycles=0, flat_models=(), dcc_fw_flat_cycles=0):
    """The harness spec: the one input format of both drivers of the harness (the C++ main,
    gateware/power/harness_main.cpp, and the cocotb driver, tests/tb/experiment_tb.py), a JSON
    object of integers, strings and lists:

      dies    the dies of the harness build
      tg      the ring's TG, applied before every job
      alpha   the ring's alpha (per ring), applied before every job
      table   [[OI, RT], ...]: the token table, loaded before every job
      traces  {"<read ratio>": [[die, op], ...]}: each die runs its operations in this order; op as
              gateware.power.harness.OP_CODES (0 read, 1 program LSB, 2 program MSB, 3 erase)
      jobs    [{"policy": name, "ratio": its trace's read ratio, "mode": the ring's mode register
              (gateware.power.common.POLICIES), "dcc": true when the DCC scheduler gates the
              dies' starts (the ring in NPM), "decision_cycles" (dcc_fw): each scheduling decision
              takes that many cycles of one CPU, one after another, "models" (dcc_flat, dcc_fw_flat):
              the job's DCC models instead of the spec's}, ...], every policy at every ratio
      dcc     present when a job has "dcc": {"cap": the budget in I_max / 4096, "check": stop when
              the model (plus "bus") falls below the dies' summed current, "models": four staircases
              [[cycles, level], ...] (read, program LSB, program MSB, erase; nandlab.dcc), "bus": the
              current of the channels' transfers, kept out of the cap (0 without a channel)}
      skip    true: the C++ main skips quiet stretches in one cycle each (gateware/power/skip.py;
              same counters); the cocotb driver runs every cycle and ignores it
      mutate  true (an exchange build, tests): the exchange nodes create a token whenever they borrow
      record  cycles (> 0): the C++ main runs the first `record` cycles of every job one by one and
              adds "trace" to its result, the largest summed current of each 40 ns window in them
              (I_max / 4096; Fig. 11); absent or 0: no trace

    A job resets the harness, loads the table, applies the configuration, loads its trace and runs
    until every die has finished; its result is an object of counters: policy, ratio, cycles, ops,
    reads, read_cycles, progs, prog_cycles, erases, waited, violations, windows, max (format_results),
    cons_errors (cycles whose global token sum differed from TT) and, built with exchange nodes, lent
    and borrowed (tokens given to and taken from the exchange ring).
    `table` is a tokens.TokenTable, `traces` {ratio: synthetic_trace(...)}."""
    from nandlab.gateware.power.harness import OP_CODES
    spec = {"dies": dies, "tg": tg, "alpha": alpha, "table": [[oi, rt] for oi, rt, _ in table.words()],
            "traces": {str(r): [[d, OP_CODES[o]] for d, o in t] for r, t in traces.items()},
            "jobs": [_job(p, r, dcc_fw_cycles, flat_models, dcc_fw_flat_cycles) for r in traces for p in policies],
            "skip": bool(skip)}
    if record:
        spec["record"] = int(record)
    if any(p in DCC_POLICIES for p in policies):
        spec["dcc"] = {"cap": cap, "check": bool(check_dcc), "models": [[list(piece) for piece in m] for m in models],
                       "bus": bus}
    return spec


def _job(policy, ratio, dcc_fw_cycles, flat_models, dcc_fw_flat_cycles):
    """One job of harness_spec: a ring policy, or DCC (the ring in NPM) with the spec's models or, for
    the flat policies, `flat_models`, charged its firmware's time per decision for dcc_fw(_flat)."""
    job = {"policy": policy, "ratio": ratio, "mode": RING_MODES.index("npm" if policy in DCC_POLICIES else policy),
           "dcc": policy in DCC_POLICIES}
    if policy == DCC_FW:
        job["decision_cycles"] = _per_ratio(dcc_fw_cycles, ratio)
    elif policy == DCC_FW_FLAT:
        job["decision_cycles"] = _per_ratio(dcc_fw_flat_cycles, ratio)
    if policy in (DCC_FLAT, DCC_FW_FLAT):
        job["models"] = [[list(piece) for piece in m] for m in flat_models]
    return job


def _per_ratio(value, ratio):
    """`value` (a number, or {read ratio: number}) at `ratio`, as an int."""
    return int(value[ratio] if isinstance(value, dict) else value)


def _depth(traces, dies):
    """Trace memory entries per die: the longest per-die trace, rounded up to a power of two."""
    longest = max(max(sum(1 for d, _ in t if d == i) for i in range(dies)) for t in traces.values())
    return 1 << max(longest, 1).bit_length()


def run_cocotb_harness(part_name="MTPM-MLC", dies=8, n_ops=5000, ratios=READ_RATIOS, policies=None, tg=4,
                       alpha=4, time_scale=1, sys_clk_freq=100e6, seed=1, log=print, workdir=None, channel=True,
                       interface=DEFAULT_INTERFACE, din_tokens=True):
    """The same runs driven by cocotb (tests/tb/experiment_tb.py): an independent driver of the
    harness, ~5x slower than `run` (C++ main); the tests check that both agree. Ring policies only
    (default: every one of the experiment's; DCC's scheduler is C, in the C++ main)."""
    policies = [p for p in EXPERIMENT_POLICIES if p not in DCC_POLICIES] if policies is None else policies
    if any(p in DCC_POLICIES for p in policies):
        raise NandLabError("the cocotb driver runs the ring policies only; DCC needs the C++ main (run)")
    from nandlab.nand_model.parts import get_part
    from nandlab.testing import run_cocotb
    part = get_part(part_name)
    chan = channel_config(part, interface, sys_clk_freq, time_scale, din_tokens) if channel else None
    table = experiment_table(part, tg, alpha, chan)
    traces = {r: synthetic_trace(n_ops, r, dies, seed=seed) for r in ratios}
    workdir = (env.BUILD_DIR / "experiment" if workdir is None else Path(workdir)).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    spec = harness_spec(dies, tg, alpha, table, traces, policies)
    (workdir / "spec.json").write_text(json.dumps(spec))
    log(f"harness: {dies} dies of {part_name}, {n_ops} operations per trace, {len(spec['jobs'])} runs "
        f"(Verilator; progress in {workdir / 'progress.txt'}) ...")
    top = HarnessTop(part, dies, sys_clk_freq, time_scale, _depth(traces, dies), channel=chan)
    run_cocotb(top, top.ios, "nandlab_harness", "experiment_tb", workdir,
               extra_env={"NANDLAB_EXPERIMENT": str(workdir / "spec.json"),
                          "NANDLAB_EXPERIMENT_RESULTS": str(workdir / "results.json")},
               build_args=["-O3", "--x-assign", "fast", "--x-initial", "fast", "-CFLAGS", "-O2"])
    results = json.loads((workdir / "results.json").read_text())
    for r in results:
        r["rings"] = 1                       # One ring: the cocotb driver runs the single topology.
    return results, table


def format_results(results, table, sys_clk_freq=100e6):
    by = {(r["policy"], r["ratio"]): r for r in results}
    ratios = sorted({r["ratio"] for r in results})
    policies = [p for p in ALL_EXPERIMENT_POLICIES if any(r["policy"] == p for r in results)]
    rings = results[0].get("rings", 1) if results else 1
    pb = table.pb * rings
    per = f" per ring, {rings} rings" if rings > 1 else ""
    lines = [f"Throughput normalised to NPM (TG = {table.tg}, alpha = {table.alpha}, TT = {table.tt}{per}, "
             f"PB = {pb} x I_max)",
             f"{'policy':<13}" + "".join(f"{'R' + str(r):>8}" for r in ratios) + f"{'mean':>8}"]
    for p in policies:
        vals = [by[("npm", r)]["cycles"] / by[(p, r)]["cycles"] for r in ratios]
        lines.append(f"{p:<13}" + "".join(f"{v:>8.3f}" for v in vals) + f"{sum(vals) / len(vals):>8.3f}")
    lines.append("")
    lines.append(f"{'policy':<13}{'ratio':>6}{'cycles':>12}{'prog lat us':>12}{'read lat us':>12}"
                 f"{'wait us/op':>11}{'violations':>11}{'max/PB':>8}")
    us = 1e6 / sys_clk_freq
    for r in ratios:
        for p in policies:
            x = by[(p, r)]
            pl = x["prog_cycles"] / x["progs"] * us if x["progs"] else 0
            rl = x["read_cycles"] / x["reads"] * us if x["reads"] else 0
            w = x["waited"] / max(x["ops"], 1) * us
            lines.append(f"{p:<13}{'R' + str(r):>6}{x['cycles']:>12}{pl:>12.1f}{rl:>12.1f}{w:>11.2f}"
                         f"{x['violations']:>11}{x['max'] / 4096 / pb:>8.3f}")
    return "\n".join(lines)


def harness_sources(part, dies, sys_clk_freq, time_scale, depth, channels=1, topology="single", channel=None,
                    deviation=None):
    """Everything a harness build needs, as data ({file name: text}, "cflags"): the harness's
    Verilog (and its memory files), its C++ main (gateware/power/harness_main.cpp), the skip's and
    the dies' headers and the DCC scheduler (sw/firmware/dcc.c). Its digest names the build, here and
    on Dask workers elsewhere (nandlab.cluster)."""
    from importlib import resources
    from migen.fhdl.verilog import convert
    top = HarnessTop(part, dies, sys_clk_freq, time_scale, depth, channels, topology, with_skip=True, channel=channel,
                     deviation=deviation)
    output = convert(top, ios=set(top.ios), name="nandlab_harness")
    sources = {"nandlab_harness.v": output.main_source}
    sources.update(output.data_files)
    power = resources.files("nandlab.gateware.power")
    sources["main.cpp"] = power.joinpath("harness_main.cpp").read_text()
    sources["harness_skip.h"] = power.joinpath("harness_skip.h").read_text()
    sources["harness_deviation.h"] = power.joinpath("harness_deviation.h").read_text()
    sources["harness_dies.h"] = _harness_header(top.h)
    sources["dcc.c"] = (env.FIRMWARE_DIR / "dcc.c").read_text()
    sources["dcc.h"] = (env.FIRMWARE_DIR / "dcc.h").read_text()
    sources["cflags"] = f"-DDCC_MAX_PIECES={DCC_MAX_PIECES} -DDCC_MAX_RES={2 * 16}"
    return sources


def build_native(part, dies, sys_clk_freq, time_scale, depth, log=print, channels=1, topology="single",
                 channel=None, deviation=None):
    """Verilate the harness with its C++ main and the DCC scheduler; returns (the executable, its
    sources). Builds are kept by the digest of their sources in build/harness-cache/ (the directory a
    Dask worker builds into too, nandlab.cluster): a harness is verilated once, whichever experiment,
    sweep or reproduction asks for it again."""
    from nandlab import cluster
    sources = harness_sources(part, dies, sys_clk_freq, time_scale, depth, channels, topology, channel, deviation)
    return cluster.build(sources, env.BUILD_DIR / "harness-cache" / cluster.digest_of(sources)[:16], log), sources


def _harness_header(h):
    """harness_dies.h: the dies' ports, named per die, for the main's X-macros, and the constants of
    the build its skip needs (gateware/power/harness_skip.h)."""
    from nandlab.gateware.power.monitor import HIST_BINS, HIST_SHIFT
    from nandlab.nand_model.current import ACC_FRAC
    seq = h.seqs[0]
    macros = {
        "DIES(X)": " ".join(f"X({i})" for i in range(h.n)),
        "RING_NODES": h.ring_nodes,
        "WINDOW": h.window_cycles,
        "ACC_FRAC": ACC_FRAC,
        "ACC_BITS": len(seq.acc),
        "SLOPE_BITS": len(seq.slope),
        "CURRENT_BITS": len(seq.current),
        "HIST_BINS": HIST_BINS,
        "HIST_SHIFT": HIST_SHIFT,
        "HIST(X)": " ".join(f"X({k})" for k in range(HIST_BINS)),
    }
    if hasattr(h, "exchange"):
        macros["EXCHANGE"] = 1
    return "".join(f"#define NANDLAB_HARNESS_{name} {value}\n" for name, value in macros.items())


DCC_MAX_PIECES = 1024       # Pieces per DCC model in the harness (segment granularity: 320 at the paper's MLC).


def run(part_name="MTPM-MLC", dies=8, n_ops=5000, ratios=READ_RATIOS, policies=EXPERIMENT_POLICIES, tg=4, alpha=4,
        **kw):
    """Every (ratio, policy) run on the harness verilated with a C++ main; returns (results, table).
    Keywords as `run_points`."""
    return run_points([(tg, alpha)], part_name, dies, n_ops, ratios, policies, **kw)[(tg, alpha)]


def check_layout(dies, channels, topology, alphas, skew=None):
    """The dies split over channels and rings as `topology` says, each alpha in `alphas` split over the
    rings (per_channel; exchange shares one global alpha); returns the number of budget shares
    (per_channel: the rings; single and exchange: 1). `skew`: channel 0's share of the operations (%)."""
    from nandlab.gateware.power.harness import TOPOLOGIES
    if topology not in TOPOLOGIES:
        raise NandLabError(f"topology '{topology}' is not one of {', '.join(TOPOLOGIES)}")
    if channels < 1 or dies % channels:
        raise NandLabError(f"{dies} dies do not split evenly into {channels} channels")
    if topology == "exchange" and channels < 2:
        raise NandLabError(f"topology exchange lends tokens between channels' rings: it needs --channels 2 or "
                           f"more (got {channels})")
    if skew is not None:
        if channels < 2:
            raise NandLabError(f"--skew {skew:g}: uneven load between channels needs --channels 2 or more")
        if not 0 <= skew <= 100:
            raise NandLabError(f"--skew {skew:g}: channel 0's share of the operations is a percentage (0..100)")
    rings = channels if topology == "per_channel" else 1
    for alpha in alphas:
        if alpha % rings:
            raise NandLabError(f"alpha = {alpha} does not split into {rings} per-channel rings (alpha per ring "
                               f"must be a whole number)")
    return rings


def check_exchange_shares(part, points, channels, chan=None):
    """With exchange, each ring starts with its home share, TT // channels: an RT above it can leave two
    hungry rings each waiting for tokens the other holds (the SoC refuses such an apply, gateware/power/
    rings.py; the harness refuses it before building)."""
    for tg, alpha in points:
        table = experiment_table(part, tg, alpha, chan)
        oi, rt = max(table.rt.items(), key=lambda kv: kv[1])
        share = table.tt // channels
        if rt > share:
            raise NandLabError(f"topology exchange at TG {tg}, alpha {alpha}: OI {oi:#04x} needs {rt} tokens, above "
                               f"a ring's home share of {share} (TT {table.tt} // {channels} channels): two hungry "
                               f"rings could wait on each other; raise --alpha or lower --tg")


def run_points(points, part_name="MTPM-MLC", dies=8, n_ops=5000, ratios=READ_RATIOS, policies=EXPERIMENT_POLICIES,
               time_scale=1, sys_clk_freq=100e6, seed=1, log=print, workdir=None,
               dcc_granularity=dcc.DEFAULT_GRANULARITY, check_dcc=False, jobs=1, channels=1, topology="single",
               skip=True, skip_stats=None, scheduler=None, channel=True, interface=DEFAULT_INTERFACE,
               din_tokens=True, scales=None, record=0, dcc_fw_cycles=0, dcc_fw_flat_cycles=0, skew=None,
               mutate=False, deviation=None, adaptive=None):
    """Every (ratio, policy) run at every (tg, alpha) point as Dask tasks: `jobs` harness processes at
    a time on the embedded cluster, or on the cluster at `scheduler` (nandlab.cluster);
    returns {(tg, alpha): (results, table)}. `check_dcc` makes the harness stop if the DCC model ever
    falls below the dies' summed current. `channels` / `topology`: the dies in channels with one ring
    through all of them ("single") or a ring per channel with alpha / channels each ("per_channel");
    DCC schedules every channel against the whole budget either way. `skip`: quiet stretches in one
    cycle each (the same results, faster; gateware/power/skip.py); `skip_stats`, a list, receives
    each run's {policy, ratio, skips, skipped_cycles}. `channel`: a bus per channel, data input before
    programs and data output after reads at `interface`'s rate ("nvddr5", "sdr0", ...; gateware/power/
    channel.py), data input under the ring when `din_tokens`; False: array operations only, every die
    starting at once (the harness before issue 18). `scales`: a waveforms.WaveformScales (the sensitivity
    sweep, nandlab.sensitivity; None: the fixed waveforms). `record`: cycles of each run whose 40 ns
    windows' peak current its result carries as "trace" (harness_spec). `dcc_fw_cycles`: the harness
    cycles policy dcc_fw charges each DCC decision, or {read ratio: cycles} (nandlab.dcc_fw); `dcc_fw_flat_cycles`
    the same for policy dcc_fw_flat (DCC with the flat, "atomic", model whatever `dcc_granularity` is). Topology
    "exchange": a ring per channel sharing the global alpha through exchange nodes (gateware/power/
    exchange.py), run without the skip. `skew`: channel 0's share of the operations in % (None: even).
    `mutate` (tests): the exchange nodes create a token whenever they borrow (a negative control).
    `deviation` ({die: (level %, stretch %)}): those dies play deviated waveforms (nandlab.deviation);
    `adaptive` (None: off; False: detect only; True: detect and re-compile the dies' tables)."""
    rings = check_layout(dies, channels, topology, [alpha for _, alpha in points], skew)
    if topology == "exchange" and skip:
        skip = False           # The skip's rotation does not model the exchange nodes (gateware/power/skip.py).
        log("topology exchange: every cycle simulated (no skip)")
    from nandlab.nand_model.parts import get_part
    from nandlab.nand_model.current import PhaseTables
    from nandlab.nand_model.waveforms import scaled_part
    part = scaled_part(get_part(part_name), scales)
    chan = channel_config(part, interface, sys_clk_freq, time_scale, din_tokens) if channel else None
    # DCC models array current; with the channel it keeps one transfer's current per bus out of its cap
    # (a bus moves one page at a time), as a controller that owns the buses can.
    bus = channels * chan["i_bus"] if chan is not None else 0
    if chan is not None:
        log(f"channel: {channels} bus(es), {interface}: a page in {chan['t_in']} / out {chan['t_out']} cycles at "
            f"{chan['i_bus'] / 4096:.3f} I_max, data input {'under the ring' if din_tokens else 'without tokens'}")
    else:
        log("no channel: array operations only, every die starting at t = 0")
    if topology == "exchange":
        check_exchange_shares(part, points, channels, chan)
    traces = {r: synthetic_trace(n_ops, r, dies, seed=seed, skew=skew, channels=channels) for r in ratios}
    depth = _depth(traces, dies)
    workdir = (env.BUILD_DIR / "experiment" if workdir is None else Path(workdir)).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    build = build_native(part, dies, sys_clk_freq, time_scale, depth, log=log, channels=channels, topology=topology,
                         channel=chan, deviation=deviation)
    models = dcc.models(PhaseTables(part, sys_clk_freq, time_scale), dcc_granularity) \
        if any(p in DCC_POLICIES for p in policies) else []
    flat = dcc.models(PhaseTables(part, sys_clk_freq, time_scale), "atomic") \
        if DCC_FLAT in policies or DCC_FW_FLAT in policies else []
    for gran, ms in ((dcc_granularity, models), ("atomic", flat)):
        for op, m in enumerate(ms):
            if len(m) > DCC_MAX_PIECES:
                raise NandLabError(f"DCC: the {gran} model of op {op} has {len(m)} pieces; the "
                                   f"harness takes {DCC_MAX_PIECES}")
    specs, tables = {}, {}
    try:
        for tg, alpha in points:
            # Each ring's table is checked against its own TT (alpha / rings).
            tables[(tg, alpha)] = table = experiment_table(part, tg, alpha // rings, chan)
            cap = (alpha << 12) - bus
            dcc.check_cap(models, cap)
            dcc.check_cap(flat, cap)
            # A file of its own: several experiments may share the work directory.
            with tempfile.NamedTemporaryFile("w", dir=workdir, prefix="spec", suffix=".json", delete=False) as f:
                spec = harness_spec(dies, tg, alpha // rings, table, traces, policies, models, cap, check_dcc, skip, bus,
                                    record, dcc_fw_cycles, flat, dcc_fw_flat_cycles)
                if mutate:
                    spec["mutate"] = True
                if adaptive is not None:
                    from nandlab.deviation import spec_part
                    spec["deviation"] = spec_part(PhaseTables(part, sys_clk_freq, time_scale), table, adaptive)
                json.dump(spec, f)
            specs[(tg, alpha)] = (f.name, len(spec["jobs"]))
        return _run_native(build, specs, tables, rings, jobs, log,
                           f"harness: {dies} dies of {part_name}, {n_ops} operations per trace", skip_stats,
                           scheduler)
    finally:
        for name, _ in specs.values():
            os.unlink(name)


def _run_native(build, specs, tables, rings, jobs, log, what, skip_stats=None, scheduler=None):
    """Every job of every point's spec ({point: (spec file, jobs in it)}) as Dask tasks (nandlab.cluster:
    the embedded cluster, `jobs` at a time, or the cluster at `scheduler`); returns {point: (results,
    table)} in spec order, whatever order the runs finished in. `build` is (the local executable, its
    sources). The harness's skip statistics go to `skip_stats` when it is a list."""
    from distributed import as_completed
    from nandlab import cluster
    exe, sources = build
    digest = cluster.digest_of(sources)
    order = [(pt, k) for pt, (_, n) in specs.items() for k in range(n)]
    results = {}
    with cluster.client(scheduler, max(1, min(jobs, len(order)))) as c:
        where = f"the Dask cluster at {scheduler}" if scheduler else f"{max(1, min(jobs, len(order)))} at a time"
        log(f"{what}, {len(order)} runs, {where} ...")
        # Keys unique to this run (hash=False, a run token): a key reused from a client that has just
        # gone can reach the scheduler while it still forgets the old one, which cancels the new one.
        run = uuid.uuid4().hex[:8]
        # Scattered data is on every worker (broadcast): data that lived only on a worker that is lost
        # cannot be recomputed, and Dask cancels every task that needs it ("already forgotten": CI's
        # lost-worker test, when a trace had gone to the worker it killed).
        [src] = c.scatter([sources], broadcast=True, hash=False)
        spec_data = {pt: c.scatter([Path(name).read_text()], broadcast=True, hash=False)[0]
                     for pt, (name, _) in specs.items()}
        futures = {c.submit(cluster.harness_job, src, digest, spec_data[pt], j, str(exe.parent.parent),
                            key=f"harness-{digest[:12]}-{run}-{pt[0]}-{pt[1]}-{j}-{i}"): i
                   for i, (pt, j) in enumerate(order)}
        try:
            for fut in as_completed(futures):
                k = futures[fut]
                try:
                    out = fut.result()
                except NandLabError:
                    raise
                except Exception as e:
                    raise NandLabError(f"the harness failed: {type(e).__name__}: {e}") from None
                results[k] = res = out["result"]
                res["rings"] = rings
                if skip_stats is not None and out["stats"]:
                    skip_stats.append(dict(policy=res["policy"], ratio=res["ratio"], **out["stats"]))
                pt = order[k][0]
                at = f"TG {pt[0]} alpha {pt[1]} " if len(specs) > 1 else ""
                log(f"  {at}{res['policy']:<13} R{res['ratio']:<4} {res['cycles']:>11} cycles, "
                    f"{res['violations']} violations [{len(results)}/{len(order)}]")
        except BaseException:
            c.cancel(list(futures))
            raise
    return {pt: ([results[k] for k, (q, _) in enumerate(order) if q == pt], tables[pt]) for pt in specs}


def throughput_vs_npm(results):
    """{policy: {"R<ratio>": cycles of NPM / cycles of the policy, ..., "mean": their mean}}."""
    by = {(r["policy"], r["ratio"]): r for r in results}
    ratios = sorted({r["ratio"] for r in results})
    out = {}
    for p in [p for p in ALL_EXPERIMENT_POLICIES if any(r["policy"] == p for r in results)]:
        vals = {f"R{q}": by[("npm", q)]["cycles"] / by[(p, q)]["cycles"] for q in ratios}
        out[p] = {**vals, "mean": sum(vals.values()) / len(vals)}
    return out


def results_json(results, table, params):
    """One JSON-ready object of a run: the parameters, the token table's numbers, throughput normalised to
    NPM and every (policy, ratio) run's counters as the harness gave them."""
    rings = results[0].get("rings", 1) if results else 1
    return {"params": params, "tg": table.tg, "alpha": table.alpha, "tt": table.tt, "pb_i_max": table.pb * rings,
            "rings": rings, "throughput_vs_npm": throughput_vs_npm(results), "runs": results,
            # Over every run: budget violations (40 ns windows above the global PB) and cycles whose global
            # token sum differed from TT; both must be 0 for every token policy.
            "violations": {p: sum(r["violations"] for r in results if r["policy"] == p)
                           for p in {r["policy"] for r in results}},
            "cons_errors": sum(r.get("cons_errors", 0) for r in results)}


CSV_FIELDS = ["tg", "alpha", "policy", "ratio", "rings", "cycles", "ops", "reads", "read_cycles", "progs",
              "prog_cycles", "erases", "waited", "violations", "windows", "max"]


def write_csv(path, points):
    """Every run's counters, one row per run: `points` is [((tg, alpha), results), ...]. The same runs
    give the same file, whether they ran here or on a Dask cluster (the tests compare them)."""
    import csv
    try:
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(CSV_FIELDS)
            for (tg, alpha), results in points:
                for r in sorted(results, key=lambda r: (r["ratio"], ALL_EXPERIMENT_POLICIES.index(r["policy"]))):
                    w.writerow([tg, alpha] + [r.get(k, "") for k in CSV_FIELDS[2:]])
    except OSError as e:
        raise NandLabError(f"cannot write {path}: {e.strerror or e}") from None


def format_sweep(what, rows, policies):
    """Throughput normalised to NPM (mean over the read ratios) and violations, per sweep point."""
    label = {"tg": "TG", "alpha": "alpha"}[what]
    lines = [f"Sweep of {label}: throughput normalised to NPM (mean over the read ratios) / budget violations",
             f"{label:<6}" + "".join(f"{p:>22}" for p in policies)]
    for v, res in rows:
        by = {(r["policy"], r["ratio"]): r for r in res}
        ratios = sorted({r["ratio"] for r in res})
        cells = []
        for p in policies:
            thr = sum(by[("npm", q)]["cycles"] / by[(p, q)]["cycles"] for q in ratios) / len(ratios)
            viol = sum(by[(p, q)]["violations"] for q in ratios)
            cells.append(f"{thr:>12.3f} / {viol:<7}")
        lines.append(f"{v:<6}" + "".join(f"{c:>22}" for c in cells))
    return "\n".join(lines)
