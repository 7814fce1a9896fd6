"""Token-ring fault injection measured (issue 19): build the fault bench (gateware/power/faultbench.py)
for Verilator, run it through cocotb (tests/tb/ring_fault_tb.py), sum up and check the results.

`run(faults, seed, policies, ...)` splits the faults over the policies and returns one summary;
`check(summary)` lists what broke (empty: every fault found and recovered from, the budget and the
single key held in every cycle).
"""

import json
from pathlib import Path

from nandlab.errors import NandLabError

POLICIES = ["ppm", "mtpm", "kmtpm_atomic", "kmtpm_sub"]
NODES = 4
ALPHA = 2          # TT = 30 at TG = 4: half the 4 dies' summed peak (4 x 15), so the budget binds.


def _top(nodes):
    from nandlab.testing import PortedTop
    from nandlab.gateware.power.faultbench import RingFaultBench
    from nandlab.gateware.power.common import FAULT_KINDS, FAULT_CAUSES

    class Top(PortedTop):
        def __init__(self):
            PortedTop.__init__(self)
            self.bench = b = RingFaultBench(nodes, tx_ahead=True)     # The SoC's ring nodes' sender.
            r = b.ring
            for name in ("seed", "load", "go", "target", "kinds"):
                self.port(name, getattr(b, name), False)
            for name in ("req_mode", "req_tg", "req_alpha", "apply", "req_protect"):
                self.port(name, getattr(r, name), False)
            for name in ("faults", "done", "cycles", "stuck", "over_budget", "over_tokens", "conservation",
                         "ppz_two", "max_need", "ops_done"):
                self.port(name, getattr(b, name), True)
            for name in ("running", "protect", "nbits", "tt", "recoveries"):
                self.port(name, getattr(r, name), True)
            for k, sig in zip(FAULT_KINDS[1:], r.injected):
                self.port(f"injected_{k}", sig, True)
            for c, sig in zip(FAULT_CAUSES, r.detected):
                self.port(f"detected_{c}", sig, True)
    return Top()


def validate(faults, seed, policies):
    if faults < 1:
        raise NandLabError(f"--faults {faults}: must be 1 or more")
    if not 0 <= seed < 2**31:
        raise NandLabError(f"--seed {seed}: must be in 0..2^31-1")
    bad = [p for p in policies if p not in POLICIES]
    if bad or not policies:
        raise NandLabError(f"--policies: {', '.join(bad) or 'none given'}: choose from {', '.join(POLICIES)}")


def run(faults, seed, build_dir, policies=POLICIES, alpha=ALPHA, kinds=7, nodes=NODES, protect=True):
    """Inject `faults` faults (split evenly over `policies`) into a 4-node ring at TG = 4, `alpha`.
    `kinds`: bit mask of the kinds drawn (1 drop, 2 duplicate, 4 flip). `protect=False` runs the
    paper's unprotected packets (the checks must then see the faults' harm: the negative control)."""
    validate(faults, seed, policies)
    from nandlab.testing import run_cocotb
    build_dir = Path(build_dir).resolve()
    build_dir.mkdir(parents=True, exist_ok=True)
    share = [faults // len(policies) + (k < faults % len(policies)) for k in range(len(policies))]
    spec = {"seed": seed, "nodes": nodes, "kinds": kinds, "protect": int(protect),
            "runs": [[p, alpha, f] for p, f in zip(policies, share)]}
    out = build_dir / "ring_faults.json"
    if out.exists():
        out.unlink()
    top = _top(nodes)
    run_cocotb(top, top.ios, "nandlab_ring_faults", "ring_fault_tb", build_dir,
               extra_env={"RING_FAULT_SPEC": json.dumps(spec), "RING_FAULT_OUT": str(out)})
    runs = json.loads(out.read_text())
    return summarize(runs, faults, seed)


def summarize(runs, faults, seed):
    total = lambda key: sum(r[key] for r in runs)
    injected = {k: sum(r["injected"][k] for r in runs) for k in runs[0]["injected"]}
    detected = {c: sum(r["detected"][c] for r in runs) for c in runs[0]["detected"]}
    return {
        "faults_requested": faults, "seed": seed,
        "injected": sum(injected.values()), "injected_by_kind": injected,
        "detected": sum(detected.values()), "detected_by_check": detected,
        "recoveries": total("recoveries"),
        "budget_violation_cycles": total("over_budget"),
        "token_or_key_excess_cycles": total("over_tokens"),
        "conservation_violation_cycles": total("conservation"),
        "ppm_two_in_peak_zone_cycles": total("ppz_two"),
        "max_summed_rt": max(r["max_need"] for r in runs), "tt": min(r["tt"] for r in runs),
        "cycles": total("cycles"), "operations_done": total("ops_done"),
        "stuck": total("stuck"), "runs": runs,
    }


def check(s):
    """What went wrong (list of messages; empty when nothing did)."""
    bad = []
    if s["injected"] != s["faults_requested"]:
        bad.append(f"{s['injected']} faults injected of {s['faults_requested']}")
    if s["detected"] != s["injected"]:
        bad.append(f"{s['detected']} faults detected of {s['injected']} injected")
    if s["recoveries"] != s["injected"]:
        bad.append(f"{s['recoveries']} recoveries for {s['injected']} faults")
    for key in ("budget_violation_cycles", "token_or_key_excess_cycles", "conservation_violation_cycles",
                "ppm_two_in_peak_zone_cycles", "stuck"):
        if s[key]:
            bad.append(f"{key} = {s[key]}")
    if s["max_summed_rt"] > s["tt"]:
        bad.append(f"summed RT {s['max_summed_rt']} above TT = {s['tt']}")
    return bad


def format_summary(s):
    kinds = ", ".join(f"{k} {v}" for k, v in s["injected_by_kind"].items())
    checks = ", ".join(f"{k} {v}" for k, v in s["detected_by_check"].items())
    lines = [
        f"faults injected   {s['injected']} ({kinds})",
        f"detected          {s['detected']} (first by: {checks})",
        f"recoveries        {s['recoveries']}",
        f"summed RT max     {s['max_summed_rt']} of TT = {s['tt']}; cycles over the budget: {s['budget_violation_cycles']}",
        f"tokens/keys       cycles with more than TT or two keys: {s['token_or_key_excess_cycles']}; "
        f"cycles off TT / one key while running: {s['conservation_violation_cycles']}",
        f"workload          {s['operations_done']} operations in {s['cycles']} cycles",
        "result            " + ("ok" if not s.get("violations") else "FAILED: " + "; ".join(s["violations"])),
    ]
    return "\n".join(lines)
