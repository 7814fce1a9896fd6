"""The longest register-to-register paths of one clock, read from a nextpnr SDF file.

nextpnr-ecp5 prints no critical path before routing, and its `--report` has none then either; but its
`--sdf` written after placement (`--no-route --sdf placed.sdf`) holds the cells' delays and, for the
unrouted nets, the same interconnect estimates the placer's Fmax comes from. This walks them: the worst
path's delay gives the placer's Fmax (tests/test_sdf_paths.py checks it against nextpnr's), and the paths
name the logic to pipeline while the router is still far away.

    python -m nandlab.sdf_paths placed.sdf [--paths N] [--clock SUBSTRING]
"""

import argparse
import re
from collections import defaultdict, deque

_TRIPLE = r"\((-?\d+):(-?\d+):(-?\d+)\)"
_CLOCK_PORT = re.compile(r"^(CLK|CLKA|CLKB|WCK|CLK\d|SCLK|ECLK|PCLK)$")


def _unescape(name):
    return re.sub(r"\\(.)", r"\1", name)


def _pin(text):
    """'instance/port' split at the last unescaped '/' (the SDF's divider)."""
    cut = max(k for k, c in enumerate(text) if c == "/" and (k == 0 or text[k - 1] != "\\"))
    return _unescape(text[:cut]), text[cut + 1:]


def parse_sdf(lines):
    """(interconnects, cell arcs, setup checks): ((from pin), (to pin), worst delay ps) each; pins are
    (instance, port)."""
    nets, arcs, setups = [], [], []
    instance = None
    for line in lines:
        line = line.strip()
        if line.startswith("(INSTANCE"):
            instance = _unescape(line[len("(INSTANCE"):].rstrip(")").strip())
        elif line.startswith("(INTERCONNECT"):
            m = re.match(r"\(INTERCONNECT (\S+) (\S+) " + _TRIPLE, line)
            nets.append((_pin(m.group(1)), _pin(m.group(2)), int(m.group(5))))
        elif line.startswith("(IOPATH"):
            m = re.match(r"\(IOPATH (\S+) (\S+) " + _TRIPLE, line)
            arcs.append(((instance, m.group(1)), (instance, m.group(2)), int(m.group(5))))
        elif line.startswith("(SETUPHOLD"):
            m = re.match(r"\(SETUPHOLD \((?:posedge|negedge) (\S+)\) \((?:posedge|negedge) (\S+)\) " + _TRIPLE, line)
            setups.append(((instance, m.group(1)), (instance, m.group(2)), int(m.group(5))))
    return nets, arcs, setups


def worst_paths(nets, arcs, setups, clock=None):
    """(clock net, [(ps, [(arrival ps, pin), ...]), ...] worst first): every endpoint of one clock (the
    clock driving most checked endpoints, or the first whose driver's name contains `clock`), with
    the longest path to it from a register of the same clock."""
    driver, succ, indeg = {}, defaultdict(list), defaultdict(int)
    for a, b, d in nets:
        driver[b] = a
        succ[a].append((b, d))
        indeg[b] += 1
    clock_pins = {c for _, c, _ in setups} | {a for a, _, _ in arcs if _CLOCK_PORT.match(a[1])}
    endpoints = defaultdict(int)
    for _, c, _ in setups:
        endpoints[driver.get(c, ("?",))[0]] += 1
    names = [k for k in endpoints if clock is None or clock in k]
    domain = max(names, key=endpoints.get)
    arrival, prev = {}, {}
    for a, b, d in arcs:
        if a not in clock_pins:
            succ[a].append((b, d))
            indeg[b] += 1
        elif driver.get(a, ("?",))[0] == domain and d > arrival.get(b, -1):
            arrival[b], prev[b] = d, a
    queue = deque(n for n in set(succ) | set(indeg) if indeg[n] == 0)
    while queue:                               # Longest arrival, in topological order.
        n = queue.popleft()
        for m, d in succ[n]:
            if n in arrival and arrival[n] + d > arrival.get(m, -1):
                arrival[m], prev[m] = arrival[n] + d, n
            indeg[m] -= 1
            if indeg[m] == 0:
                queue.append(m)
    paths = []
    for pin, c, setup in setups:
        if driver.get(c, ("?",))[0] == domain and pin in arrival:
            chain = [pin]
            while chain[-1] in prev:
                chain.append(prev[chain[-1]])
            paths.append((arrival[pin] + setup, [(arrival.get(p, 0), p) for p in reversed(chain)]))
    paths.sort(key=lambda p: -p[0])
    return domain, paths


def report(path, count=10, clock=None):
    with open(path) as f:
        domain, paths = worst_paths(*parse_sdf(f), clock=clock)
    out = [f"clock {domain}: worst {paths[0][0] / 1000:.2f} ns, {1e6 / paths[0][0]:.2f} MHz"]
    shown = set()
    for total, chain in paths:
        ends = (chain[0][1][0], chain[-1][1][0])
        if ends in shown:
            continue
        shown.add(ends)
        out.append(f"\n{total / 1000:.2f} ns: {ends[0]} -> {ends[1]}")
        out += [f"  {t / 1000:7.2f}  {inst} .{port}" for t, (inst, port) in chain]
        if len(shown) >= count:
            break
    return "\n".join(out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("sdf")
    parser.add_argument("--paths", type=int, default=10, help="paths shown (distinct start/end cells)")
    parser.add_argument("--clock", help="a substring of the clock net's driver (default: the busiest clock)")
    args = parser.parse_args(argv)
    print(report(args.sdf, args.paths, args.clock))


if __name__ == "__main__":
    main()
