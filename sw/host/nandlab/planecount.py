"""The emulated dies' operation counters, read over the host bridge, and the plane papers' multi-plane
exploitation computed from them.

Each die counts the array operations it started (`nand_die<i>_ops_<op>`) and, of those, the multi-plane
ones by page count (`nand_die<i>_mp_<op><n>`, n = 2 .. its page registers: nand_model/die/core.py).
Exploitation is measured in the die, not inferred from what the firmware meant to issue: the share of
pages read or programmed that went through multi-plane operations (the DW/SDW paper's Fig. 6), and the
share of operations."""

import re

from nandlab.errors import NandLabError

OPS = ("read", "program", "erase")
_NAME = re.compile(r"nand_(?:ch(\d+)_)?die(\d+)_(ops_(read|program|erase)|mp_(read|program|erase)(\d+))$")


_STATS = re.compile(r"(nand_(?:ch\d+_)?die\d+_)stats_index$")


def _stat_values(regs, stats):
    """{CSR-style name: value} of the dies' statistics kept in memory (SoC option nand_die_stats="memory":
    `stats` is the SoC constant NANDLAB_DIE_STATS, the counters' names by index), read through each die's
    stats_index / stats_ready / stats_value."""
    from nandlab.soc.constants import LIST_SEPARATOR
    names = stats.split(LIST_SEPARATOR)
    out = {}
    for reg in sorted(vars(regs)):
        m = _STATS.match(reg)
        if not m:
            continue
        prefix = m.group(1)
        for index, stat in enumerate(names):
            if not (stat.startswith("ops_") or stat.startswith("mp_")):
                continue
            getattr(regs, reg).write(index)
            for _ in range(100):
                if getattr(regs, prefix + "stats_ready").read():
                    break
            else:
                raise NandLabError(f"{prefix}stats_ready stayed 0 reading {stat}")
            out[prefix + stat] = getattr(regs, prefix + "stats_value").read()
    return out


def read(regs, stats=None):
    """{die: {"ops": {op: n}, "mp": {op: {pages: n}}}} for every die in the CSR map `regs` (a RemoteClient's
    `regs`, or any object whose attributes named as the CSRs have `read()`); {} without dies. Dies are
    numbered over every channel, channel 0's first (nand_die<d>, then nand_ch1_die<d>, ...), as the
    firmware's `die ops` numbers them. Dies with their statistics in memory are read through their
    stats_* CSRs when `stats` (the SoC constant NANDLAB_DIE_STATS, e.g. RemoteClient's
    `constants.nandlab_die_stats`) is given."""
    found = {}
    values = {name: getattr(regs, name).read() for name in vars(regs) if _NAME.match(name)}
    if stats:
        values.update(_stat_values(regs, stats))
    for name in sorted(values):
        m = _NAME.match(name)
        key = (int(m.group(1) or 0), int(m.group(2)))
        die = found.setdefault(key, {"ops": dict.fromkeys(OPS, 0), "mp": {op: {} for op in OPS}})
        value = values[name]
        if m.group(4):
            die["ops"][m.group(4)] = value
        else:
            die["mp"][m.group(5)][int(m.group(6))] = value
    return {i: found[key] for i, key in enumerate(sorted(found))}


def delta(before, after):
    """The counts of `after` minus those of `before` (32-bit counters: a wrap counts forward)."""
    sub = lambda a, b: (a - b) % (1 << 32)
    return {d: {"ops": {op: sub(v, before[d]["ops"][op]) for op, v in c["ops"].items()},
                "mp": {op: {k: sub(v, before[d]["mp"][op].get(k, 0)) for k, v in by.items()}
                       for op, by in c["mp"].items()}}
            for d, c in after.items()}


def summary(counts):
    """Totals over the dies: operations and pages per op, operations by page count, and exploitation
    (pages in multi-plane operations / all pages, and the same over operations) for reads and programs
    together and per op. Single-page operations are the ops counted minus the multi-plane ones."""
    out = {"dies": len(counts)}
    pages_mp = pages_all = ops_mp = ops_all = 0
    for op in OPS:
        ops = sum(c["ops"][op] for c in counts.values())
        by = {}
        for c in counts.values():
            for k, v in c["mp"][op].items():
                by[k] = by.get(k, 0) + v
        multi = sum(by.values())
        single = ops - multi
        if single < 0:
            raise NandLabError(f"the dies counted {multi} multi-plane {op}s but only {ops} {op}s: counters read "
                             "at different times")
        pages = single + sum(k * v for k, v in by.items())
        mp_pages = sum(k * v for k, v in by.items())
        out[op] = {"operations": ops, "pages": pages, "by_pages": {1: single, **dict(sorted(by.items()))},
                   "exploitation_pages": mp_pages / pages if pages else None,
                   "exploitation_operations": multi / ops if ops else None}
        if op != "erase":
            pages_mp, pages_all, ops_mp, ops_all = pages_mp + mp_pages, pages_all + pages, ops_mp + multi, ops_all + ops
    out["exploitation_pages"] = pages_mp / pages_all if pages_all else None
    out["exploitation_operations"] = ops_mp / ops_all if ops_all else None
    return out
