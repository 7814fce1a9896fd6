"""ECC torture of the channel controller's BCH path on emulated dies (`nandlab ecc torture`): flips per
codeword until uncorrectable, and a histogram of corrected counts under random read flips."""

import json
import time

from nandlab import env
from nandlab.errors import NandLabError

ECC = dict(data_bytes=512, t=8, m=13)
DEFAULTS = dict(seed=1, reads=40, rate=2500, beyond=4)


def check_plan(seed, reads, rate, beyond):
    """Refuse impossible values before any build."""
    if reads < 1:
        raise NandLabError(f"--reads {reads}: give at least 1 read")
    if not 0 <= rate <= 65535:
        raise NandLabError(f"--rate {rate}: the die's flip rate is per 32-bit word read, in 1/65536 (0..65535)")
    if not 0 <= beyond <= 40:
        raise NandLabError(f"--beyond {beyond}: flips past t + 1, 0..40")
    return dict(seed=seed, reads=reads, rate=rate, beyond=beyond)


def run_torture(plan, build_dir=None, log=print):
    """Build the channel (2 emulated dies, BCH t = 8 per 512 B) and run tests/tb/ecc_torture_tb.py with
    `plan`; returns its results (the dict the testbench writes)."""
    from nandlab.gateware.onfi.sim_top import NandLabChannelSimTop
    from nandlab.testing import run_cocotb, die_test_config, TB_DIR

    if not (TB_DIR / "ecc_torture_tb.py").exists():
        raise NandLabError(f"the ECC torture testbench ({TB_DIR / 'ecc_torture_tb.py'}) is part of the source "
                           f"checkout, not of the installed package: run it from a checkout")
    build = env.BUILD_DIR / "ecc_torture" if build_dir is None else build_dir
    build.mkdir(parents=True, exist_ok=True)
    out = build / "results.json"
    out.unlink(missing_ok=True)
    top = NandLabChannelSimTop(die_test_config(), ways=2, ecc=ECC)
    log(f"ECC torture: building and running the channel (BCH t = {ECC['t']} per {ECC['data_bytes']} B), "
        f"{plan['reads']} reads at rate {plan['rate']}/65536")
    t0 = time.monotonic()
    try:
        run_cocotb(top, top.ios, "nandlab_channel_ecc_torture", "ecc_torture_tb", build,
                   extra_env={"NANDLAB_TB_WAYS": "2", "NANDLAB_ECC_PLAN": json.dumps(plan),
                              "NANDLAB_ECC_OUT": str(out)})
    except (AssertionError, SystemExit) as e:
        # A check of the testbench failed: the controller's answer differs from bchlib's (or it hung).
        raise NandLabError(f"ECC torture failed ({e or 'the simulation stopped'}); the cocotb log and "
                           f"results.xml are in {build}") from None
    log(f"ECC torture: done ({time.monotonic() - t0:.0f} s)")
    return json.loads(out.read_text())


def format_tables(r):
    """Lines: the flips-versus-outcome table and the histogram of corrected counts."""
    t = r["t"]
    lines = [f"Flips in one codeword (BCH t = {t} per {r['codeword_bytes']} B; each step clears one more bit, "
             "then READ_ECC)", f"{'area':<7}{'cw':>3}{'flips':>6}  {'result':<18}{'count':>6}  outcome"]
    for row in r["incremental"]:
        count = "-" if row["count"] is None else row["count"]
        lines.append(f"{row['area']:<7}{row['codeword']:>3}{row['flips']:>6}  {row['result']:<18}{count!s:>6}  "
                     f"{row['outcome']}")
    h = r["histogram"]
    n = sum(h["histogram"].values())
    lines += ["", f"Random read flips: {h['reads']} reads x {r['codewords']} codewords, rate {h['rate']}/65536 "
                  f"per 32-bit word ({h['flips']} flips, {h['flips'] / h['reads'] / r['codewords']:.2f} per codeword)",
              f"{'corrected':>13} {'codewords':>9} {'share':>7}"]
    for key in [str(k) for k in range(t + 1)] + ["uncorrectable", "miscorrected"]:
        v = h["histogram"].get(key, 0)
        lines.append(f"{key:>13} {v:>9} {v / n:>7.1%}")
    return lines
