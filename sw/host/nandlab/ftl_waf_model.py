"""Analytic write amplification of greedy garbage collection under uniform random page writes, and
how the FTL's geometry and configuration map onto the model's parameters.

The model (P. Desnoyers, "Analytic modeling of SSD write performance", SYSTOR 2012):

  alpha = T / U, physical pages over logical (user) pages; spare factor Sf = (T - U) / T = 1 - 1/alpha.
  Eq. 4, FIFO/LRU cleaning:  A(alpha) = alpha / (alpha + W0(-alpha * exp(-alpha)))
  Eq. 12, greedy cleaning with Np pages per erase unit:
                             A_greedy(alpha, Np) = A(k * alpha) / k,   k = 1 + 1 / (2 Np)
  Eq. 14, FIFO with hot/cold traffic (a fraction r of the writes to a fraction f of the pages):
                             x = 1 + r / (exp((r/f) alpha/x) - 1) + (1-r) / (exp(((1-r)/(1-f)) alpha/x) - 1),  A = x
  Eq. 16, greedy with hot/cold traffic: A(k alpha) / k of Eq. 14, the same k.

W0 is the principal branch of the Lambert W function. Eq. 4 is, in terms of the over-provisioning
rho = (T - U) / U = alpha - 1, the expression of L. Xiang and B. Kurkoski ("An improved analytic
expression for write amplification in NAND flash", arXiv:1110.4245, ICNC 2012), whose abstract gives
2.36 at rho = 0.3 (simulation 2.35) against 2.17 for the earlier closed form of Agarwal and Marrow,
(1 + rho) / (2 rho), the greedy limit for very large erase units.

Mapping of the FTL (sw/firmware/ftl) onto the model, see `alpha_for`:
  - erase unit = a superblock (block s of every die and plane); Np = its data slots, dies x planes x
    pages - 1 (slot 0 holds the superblock's header);
  - U = the FTL's logical pages (ftl_io.c logical_pages(): the data slots of every superblock but the
    anchor's and GC's reserve of 3, divided by 1 + op_permille / 1000);
  - T, three readings: "nominal" T = U (1 + op) (the reserve not counted as spare); "free-pool"
    (the primary one) T = data slots of the superblocks that hold data, i.e. all but the anchor's and
    the free superblocks, their mean measured over the run (the model has no free pool; the greedy
    scripts of Desnoyers' simulator, sssl-ftlsim, likewise size T as alpha U plus the free-block
    target); "all-spare" T = every data slot outside the anchor (the whole reserve counted as spare);
  - write amplification counts data programs (host writes, GC and WL moves); superblock headers and
    anchor records (metadata) are shown apart.
"""

import math


def lambert_w0(x):
    """Principal branch of the Lambert W function for real x >= -1/e (Halley's iteration)."""
    if x < -1 / math.e:
        if x > -1 / math.e - 1e-12:
            return -1.0
        raise ValueError(f"Lambert W0 is not real below -1/e: {x}")
    if x == 0:
        return 0.0
    if x < -0.25:
        p = math.sqrt(2 * (math.e * x + 1))       # series about the branch point
        w = -1 + p - p * p / 3 + 11 / 72 * p ** 3
    else:
        w = math.log1p(x) if x < 3 else math.log(x) - math.log(math.log(x))
    for _ in range(100):
        e = math.exp(w)
        f = w * e - x
        if w == -1:
            break
        step = f / (e * (w + 1) - (w + 2) * f / (2 * w + 2))
        w -= step
        if abs(step) <= 1e-15 * (1 + abs(w)):
            break
    return w


def waf_fifo(alpha):
    """Desnoyers Eq. 4 (= Xiang and Kurkoski's expression with rho = alpha - 1)."""
    if alpha <= 1:
        raise ValueError(f"alpha = T/U must exceed 1 (got {alpha})")
    return alpha / (alpha + lambert_w0(-alpha * math.exp(-alpha)))


def waf_greedy(alpha, np_):
    """Desnoyers Eq. 12: greedy cleaning, Np pages per erase unit (np_ = inf: the large-unit limit)."""
    k = 1 + 1 / (2 * np_)
    return waf_fifo(k * alpha) / k


def waf_fifo_hotcold(alpha, r, f):
    """Desnoyers Eq. 14: x solving x = 1 + hot + cold terms (bisection; the right side falls with x)."""
    if not (0 < f < 1 and 0 < r < 1):
        raise ValueError("hot/cold fractions r and f must lie in (0, 1)")

    def excess(x):
        hot = r / math.expm1((r / f) * alpha / x)
        cold = (1 - r) / math.expm1(((1 - r) / (1 - f)) * alpha / x)
        return 1 + hot + cold - x
    lo, hi = 1.0, 2.0
    while excess(hi) > 0:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if excess(mid) > 0 else (lo, mid)
    return (lo + hi) / 2


def waf_greedy_hotcold(alpha, np_, r, f):
    """Desnoyers Eq. 16: Eq. 14 with greedy's k = 1 + 1/(2 Np)."""
    k = 1 + 1 / (2 * np_)
    return waf_fifo_hotcold(k * alpha, r, f) / k


def waf_agarwal(rho):
    """Agarwal and Marrow's (1 + rho) / (2 rho), as Xiang and Kurkoski quote it (large erase units)."""
    return (1 + rho) / (2 * rho)


MAPPINGS = ("free-pool", "nominal", "all-spare")
PRIMARY = "free-pool"


def alpha_for(run, mapping=PRIMARY):
    """alpha = T / U for one torture run's JSON (see the module's docstring for the readings)."""
    slots = run["slots_per_superblock"] - 1
    usable = run["superblocks"] - run["reserved_superblocks"]
    U = run["logical_pages"]
    if mapping == "nominal":
        return 1 + run["op_permille"] / 1000
    if mapping == "free-pool":
        return (usable - run["free_superblocks_mean"]) * slots / U
    if mapping == "all-spare":
        return usable * slots / U
    raise ValueError(f"unknown mapping {mapping!r}")


def np_for(run, header_counts=False):
    """Pages per erase unit: the superblock's data slots (its header slot too with header_counts)."""
    return run["slots_per_superblock"] - (0 if header_counts else 1)


ANCHOR_BLOCKS = 4   # ftl_int.h FTL_ANCHOR_BLOCKS: the anchor log's two blocks and two spares


def anchor_superblocks(dies, planes):
    """Superblocks the anchor log's candidates take without factory bad blocks (ftl_io.c anchor_sb())."""
    members = dies * planes
    return -(-ANCHOR_BLOCKS // members)


def ckpt_region(dies, planes, blocks, pages, page_bytes):
    """Superblocks one map checkpoint takes (mirrors ftl_io.c ftl_ckpt_region()): a header page and 4 B
    per logical page counted without over-provisioning; two such regions are left out of capacity."""
    members = dies * planes
    reserved = anchor_superblocks(dies, planes)
    nsb = blocks // planes
    if nsb <= reserved + 3:
        return 1
    per_sb = members * pages - 1
    ckpt_pages = 1 + -(-4 * (nsb - reserved - 3) * per_sb // page_bytes)
    return -(-ckpt_pages // per_sb)


def logical_pages(dies, planes, blocks, pages, op_permille, page_bytes=2048):
    """The FTL's logical pages for a geometry without bad blocks (mirrors ftl_io.c logical_pages();
    the torture driver reports the real number, which the experiments check against this)."""
    members = dies * planes
    reserved = anchor_superblocks(dies, planes)
    nsb = blocks // planes
    ckpt = 2 * ckpt_region(dies, planes, blocks, pages, page_bytes)
    if nsb <= reserved + 3 + ckpt:
        return 0
    return (nsb - reserved - 3 - ckpt) * (members * pages - 1) * 1000 // (1000 + op_permille)
