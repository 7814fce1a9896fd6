"""What `nandlab bringup` reads back from the firmware's shell: parsers of its commands' output, and the
firmware's test pattern recomputed on the host (the shadow copy the written pages are compared with)."""

import re

from nandlab.errors import NandLabError

LANE_NAMES = [f"DQ{i}" for i in range(8)] + ["DQS"]


def parse_ids(out):
    """`nand scan`: {die: {"id": [5 bytes], "onfi": bool}}."""
    dies = {}
    for die, hexes, sig in re.findall(r"^die (\d+): ID ((?:[0-9a-f]{2} ?){5}), ONFI signature (present|absent)", out,
                                      re.M):
        dies[int(die)] = {"id": [int(h, 16) for h in hexes.split()], "onfi": sig == "present"}
    return dies


def parse_param_raw(out):
    """`nand param <die> raw`: the bytes of every copy the die gave (offset-ordered hex lines)."""
    data = bytearray()
    for offset, hexes in re.findall(r"^param ([0-9a-f]{4}):((?: [0-9a-f]{2})+)\s*$", out, re.M):
        if int(offset, 16) != len(data):
            raise NandLabError(f"parameter page dump: line at offset 0x{offset} after {len(data)} bytes (lost output?)")
        data += bytes(int(h, 16) for h in hexes.split())
    return bytes(data)


def parse_bringup(out, channel=0):
    """`ctl bringup`: (dies up, dies, interface name, timing mode) of `channel` (its lines say "ch N: "
    but channel 0's), or None."""
    prefix = f"ch {channel}: " if channel else ""
    m = re.search(rf"^{prefix}(\d+) of (\d+) dies up, (.+?) mode (\d+)\s*$", out, re.M)
    if m is None:
        return None
    return {"up": int(m.group(1)), "dies": int(m.group(2)), "interface": m.group(3), "mode": int(m.group(4))}


# ONFI SET/GET FEATURES 01h P1: data interface in bits 5:4, timing mode in 3:0 (nandlab.gateware.onfi.common).
P1_INTERFACES = {0: "async SDR", 1: "NV-DDR", 2: "NV-DDR2", 3: "NV-DDR3"}


def parse_channels(out):
    """`ctl ch`: the last channel's number ("ctl: channel C of 0..N, ..."), or None."""
    m = re.search(r"^ctl: channel \d+ of 0\.\.(\d+)", out, re.M)
    return int(m.group(1)) if m else None


def parse_features(out):
    """`ctl features <die>`: {"p": [P1..P4], "interface": name, "mode": n, "result": text}, or None."""
    m = re.search(r"^features die=(\d+) address=0x([0-9a-f]+) result=(\S+) p1=0x([0-9a-f]{2}) p2=0x([0-9a-f]{2}) "
                  r"p3=0x([0-9a-f]{2}) p4=0x([0-9a-f]{2})", out, re.M)
    if m is None:
        return None
    from nandlab.gateware.onfi.common import TIMING_MODE_P1_INTERFACE, TIMING_MODE_P1_MODE
    p = [int(m.group(i), 16) for i in range(4, 8)]
    (io, iw), (mo, mw) = TIMING_MODE_P1_INTERFACE, TIMING_MODE_P1_MODE
    return {"die": int(m.group(1)), "result": m.group(3), "p": p,
            "interface": P1_INTERFACES[p[0] >> io & ((1 << iw) - 1)], "mode": p[0] >> mo & ((1 << mw) - 1)}


def parse_eye(out):
    """`train eye <die> <mode>`: {"die", "mode", "taps", "tap_ps", "pattern_bytes", "ok", "verify_errors",
    "lanes": [{"name", "lo", "hi", "tap", "errors": [per tap]}]} (lo = hi = -1: no window), or None."""
    head = re.search(r"^eye die=(\d+) mode=(\d+) taps=(\d+) tap_ps=(\d+) pattern_bytes=(\d+) ok=(\d) "
                     r"verify_errors=(\d+)", out, re.M)
    if head is None:
        return None
    die, mode, taps, tap_ps, pattern, ok, verify = (int(v) for v in head.groups())
    lanes = []
    for name, lo, hi, tap, errors in re.findall(r"^eye lane=(\w+) lo=(-?\d+) hi=(-?\d+) tap=(-?\d+) errors=([\d,]*)",
                                                out, re.M):
        errs = [int(e) for e in errors.split(",") if e]
        if len(errs) != taps:
            raise NandLabError(f"eye of lane {name}: {len(errs)} taps read, the header says {taps} (lost output?)")
        lanes.append({"name": name, "lo": int(lo), "hi": int(hi), "tap": int(tap), "errors": errs})
    if [l["name"] for l in lanes] != LANE_NAMES:
        raise NandLabError(f"eye of die {die}: lanes {[l['name'] for l in lanes]}, expected {LANE_NAMES}")
    return {"die": die, "mode": mode, "taps": taps, "tap_ps": tap_ps, "pattern_bytes": pattern, "ok": bool(ok),
            "verify_errors": verify, "lanes": lanes}


def passing_window(errors):
    """(first, last) of the longest run of taps without errors, or None: the firmware's rule (train.c `window`),
    applied here to the errors it reported."""
    best, start = None, None
    for t, e in enumerate(list(errors) + [1]):
        if e == 0 and start is None:
            start = t
        elif e != 0 and start is not None:
            if best is None or t - 1 - start > best[1] - best[0]:
                best = (start, t - 1)
            start = None
    return best


def parse_badblocks(out):
    """`ctl badblocks`: {die: {"first", "last", "bad": [blocks], "unread": [blocks]}}."""
    dies = {}
    for die, first, last, bad in re.findall(r"^badblocks die=(\d+) first=(\d+) last=(\d+) bad=([\d,?]*)\s*$", out, re.M):
        items = [b for b in bad.split(",") if b]
        dies[int(die)] = {"first": int(first), "last": int(last),
                          "bad": [int(b) for b in items if not b.endswith("?")],
                          "unread": [int(b[:-1]) for b in items if b.endswith("?")]}
    return dies


def parse_ctl_test(out):
    """`ctl test`: bytes moved and differing, ECC counts (None when the summary line is missing)."""
    m = re.search(r"^ctl test: (?:ch \d+, )?(.+?) mode (\d+), (\d+) bytes written and read back, (\d+) bytes differ", out,
                  re.M)
    if m is None:
        return None
    res = {"interface": m.group(1), "mode": int(m.group(2)), "bytes": int(m.group(3)), "differ": int(m.group(4)),
           "ecc": None, "corrected": 0, "uncorrectable": 0, "max_per_codeword": 0}
    e = re.search(r"ECC \(BCH t=(\d+) per (\d+) B\): (\d+) bits corrected, max (\d+) in a codeword, (\d+) codewords "
                  r"uncorrectable", out)
    if e:
        res.update(ecc=f"BCH t={e.group(1)} per {e.group(2)} B", corrected=int(e.group(3)),
                   max_per_codeword=int(e.group(4)), uncorrectable=int(e.group(5)))
    return res


def parse_ctl_read(out):
    """`ctl read <die> <block> <page> <bytes>`: (result, data bytes shown)."""
    m = re.search(r"^(?:die|ch)\S*.*? block \d+ page \d+: read (\S+)", out, re.M)
    if m is None:
        return None, b""
    rest = out[m.end():]
    data = bytearray()
    for line in rest.splitlines()[1:]:
        if not re.fullmatch(r"\s+(?:[0-9a-f]{2} ?)+\s*", line):
            break
        data += bytes(int(h, 16) for h in line.split())
    return m.group(1), bytes(data)


def firmware_pattern(n, seed):
    """The bytes `ctl test` and `ctl write` program (cmds_ctl.c `pattern`), computed here."""
    x = (seed * 2654435761 + 1) & 0xFFFFFFFF
    out = bytearray(n)
    for i in range(n):
        x = (x * 1103515245 + 12345) & 0xFFFFFFFF
        out[i] = (x >> 16) & 0xFF
    return bytes(out)


def ctl_test_seed(ch, die, block, page):
    """The seed `ctl test` gives page `page` of `block` on `die` (cmds_ctl.c)."""
    return (ch << 24 | die << 16 | block << 8 | page) & 0xFFFFFFFF
