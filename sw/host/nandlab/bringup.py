"""`nandlab bringup`: a fresh board (or the simulated SoC behind the skewed pin-level die model) taken through
READ ID, the parameter page, timing-mode negotiation, read training, a factory bad-block scan and an
erase/program/read test with ECC, to a report (Markdown, HTML, eye PNGs, JSON). docs/bringup.md."""

import json
import re
import time
from pathlib import Path

from nandlab import env
from nandlab.bringup_parse import (LANE_NAMES, ctl_test_seed, firmware_pattern, parse_badblocks, parse_bringup,
                                   parse_channels,
                                   parse_ctl_read, parse_ctl_test, parse_eye, parse_features, parse_ids,
                                   parse_param_raw, passing_window)
from nandlab.errors import NandLabError
from nandlab.simulator import command_failed

BRINGUP_TARGETS = ("sim", "arty", "colorlight_i5")
PIN_FAMILIES = ("xc7", "ecp5")
SIM_DIES = 1                       # The pin-level model's build (tests/test_pin_training.py builds the same).
STEPS = [("id", "READ ID"), ("param", "Parameter page"), ("timing", "Bring-up and timing mode (RESET, SET/GET FEATURES)"),
         ("training", "Read training"), ("badblocks", "Factory bad-block scan"),
         ("wre", "Erase, program, read with ECC")]


def add_parser(sub):
    b = sub.add_parser("bringup", help="Bring up NAND on a target (sim or a board) and write a report.",
        description="Take a fresh board (or the simulated SoC with the skewed pin-level die model) through READ ID, "
        "the parameter page (the host's checker), timing-mode negotiation (SET/GET FEATURES), read training (an eye "
        "per lane), a factory bad-block scan and an erase/program/read test with ECC over --blocks; writes a report "
        "(Markdown, HTML, one PNG per lane's eye) in --out. docs/bringup.md.")
    b.add_argument("--target", required=True, metavar="NAME", help="One of: " + ", ".join(BRINGUP_TARGETS))
    b.add_argument("--socket", action="store_true",
        help="Board targets: build with the external ONFI socket (--nand-socket, constraints/nand_socket.md).")
    b.add_argument("--json", action="store_true", help="Print one JSON object with every step's result.")
    b.add_argument("--out", metavar="DIR", help="Report directory (default build/bringup-<target>/).")
    b.add_argument("--blocks", metavar="A-B", help="Blocks of the erase/program/read test (default 1-2, within the part).")
    b.add_argument("--pages", type=int, metavar="N", help="Pages per block in that test (default: every page).")
    b.add_argument("--skew-seed", type=int, metavar="N",
        help="sim: the pin model's lane timings drawn from seed N (default 0), as 'nandlab sim --skew-seed'.")
    b.add_argument("--family", choices=PIN_FAMILIES, default=None,
        help="sim: the delay line modelled (xc7: 32 x 78 ps, default; ecp5: 128 x 25 ps).")
    b.add_argument("--serial", metavar="PORT", help="Board targets: the console UART (default: the only /dev/ttyUSB* "
        "or /dev/ttyACM* there is).")
    b.add_argument("--cable", metavar="NAME", help="Board targets: openFPGALoader's --cable (default: the board's).")
    b.add_argument("--no-build", action="store_true", help="Board targets: load the last build instead of building.")
    b.add_argument("--resources", action="store_true",
        help="Board targets: no board needed - generate the SoC with the socket, build its firmware, synthesise the "
             "socket's pin PHY and controller (yosys) and report their cost; no steps run.")
    b.add_argument("--timeout", type=float, default=600,
        help="Seconds a firmware command may take (sim: simulator processor time; default 600).")


def parse_blocks(text):
    """(first, last) from "A-B" or "A"."""
    m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", text or "")
    if m is None:
        raise NandLabError(f"--blocks '{text}': give a block range as A-B (or one block A), e.g. 1-4")
    first = int(m.group(1))
    last = int(m.group(2)) if m.group(2) is not None else first
    if last < first:
        raise NandLabError(f"--blocks {text}: the last block ({last}) is before the first ({first})")
    return first, last


def target_geometry(args):
    """(part name, blocks, pages per block) of what the target's bring-up talks to, known before the build:
    the simulated die, the board's emulated die; None for a socket (the chip's parameter page says)."""
    if args.target == "sim":
        from nandlab.soc.targets import sim as simtarget
        return simtarget.NAND_PART, simtarget.NAND_BLOCKS, simtarget.NAND_PAGES
    if args.socket:
        return None
    from nandlab.soc import targets
    from nandlab.nand_model.parts import DEFAULT_PART
    d = targets.get_board(args.target).NAND_DEFAULTS
    return DEFAULT_PART, d["blocks"], d["pages"]


def check_args(args):
    """Every `nandlab bringup` value checked before anything is built or started (NandLabError)."""
    if args.target not in BRINGUP_TARGETS:
        raise NandLabError(f"unknown bring-up target '{args.target}'; valid: {', '.join(BRINGUP_TARGETS)}")
    board = args.target != "sim"
    for option, value, sim_only in (("--skew-seed", args.skew_seed, True), ("--family", args.family, True),
                                    ("--socket", args.socket, False), ("--serial", args.serial, False),
                                    ("--cable", args.cable, False), ("--no-build", args.no_build, False),
                                    ("--resources", args.resources, False)):
        if value not in (None, False) and board == sim_only:
            raise NandLabError(f"{option} is for the {'sim' if sim_only else 'board'} target{'' if sim_only else 's'} "
                               f"only (not --target {args.target})" +
                               (": the simulator's pin-level model stands for the socket" if option == "--socket" else ""))
    if args.skew_seed is not None and args.skew_seed < 0:
        raise NandLabError(f"--skew-seed {args.skew_seed}: a whole number, 0 or more")
    if not args.timeout > 0:
        raise NandLabError(f"--timeout {args.timeout}: a positive number of seconds")
    geometry = target_geometry(args)
    first, last = parse_blocks(args.blocks) if args.blocks else (1, 2)
    if geometry is not None:
        part, blocks, pages = geometry
        if not args.blocks:
            first, last = min(first, blocks - 1), min(last, blocks - 1)
        if last >= blocks:
            raise NandLabError(f"--blocks {args.blocks}: the {args.target} target's {part} dies have blocks 0..{blocks - 1}")
        if args.pages is not None and not 1 <= args.pages <= pages:
            raise NandLabError(f"--pages {args.pages}: {part} blocks have 1..{pages} pages")
    elif args.pages is not None and args.pages < 1:
        raise NandLabError(f"--pages {args.pages}: 1 or more")
    try:
        if args.out and Path(args.out).exists() and not Path(args.out).is_dir():
            raise NandLabError(f"--out {args.out}: a file is there, not a directory")
    except (OSError, ValueError) as e:
        raise NandLabError(f"--out {args.out!r}: not a usable path ({e})") from None
    args.block_range = (first, last)
    return args


def out_dir(args):
    return Path(args.out) if args.out else env.BUILD_DIR / f"bringup-{args.target}"


# The steps ----------------------------------------------------------------------------------------

class Bringup:
    """The steps over a firmware shell: `shell.command(line, timeout)` returns a command's output.
    `model` (sim): per lane the window the pin model implies, to report beside the trained one."""

    def __init__(self, shell, blocks, pages=None, timeout=600, log=None, model=None, socket=False):
        self.shell, self.blocks, self.pages, self.timeout = shell, blocks, pages, timeout
        self.socket = socket         # the chip in the external socket (its bit-bang master and channel)
        self.channel = 0
        self.log = log or (lambda text: None)
        self.model = model
        self.console = []            # (command, output) of every command run
        self.steps, self.eyes = [], []
        self.page = None             # the checked parameter page (nand_model.param_page.ParameterPage)
        self.negotiated = None

    def cmd(self, line, timeout=None):
        out = self.shell.command(line, timeout=timeout or self.timeout)
        self.console.append((line, out))
        return out

    def step(self, name, ok, summary, numbers=None, detail=None):
        title = dict(STEPS)[name]
        s = {"name": name, "title": title, "ok": ok, "summary": summary, "numbers": numbers or {}}
        if detail:
            s["detail"] = detail
        self.steps.append(s)
        self.log(f"{title}: {'PASS' if ok else 'skipped' if ok is None else 'FAIL'}: {summary}")
        return s

    def _use_socket(self):
        """The bit-bang commands and the ctl commands to the socket (the last channel); False (a failed
        first step) when the firmware has no socket."""
        out = self.cmd("nand socket on")
        last = parse_channels(self.cmd("ctl ch"))
        if command_failed(out) or last is None:
            self.step("id", False, "the SoC has no NAND socket: " + (out.strip().splitlines() or ["no answer"])[-1])
            return False
        self.channel = last
        self.cmd(f"ctl ch {last}")
        return True

    def run(self):
        if self.socket and not self._use_socket():
            return self.steps
        for k, (name, title) in enumerate(STEPS, 1):
            done = {s["name"]: s["ok"] for s in self.steps}
            blocker = next((b for b in _NEEDS.get(name, ()) if done.get(b) is False), None)
            if blocker:
                self.step(name, None, f"not run: '{dict(STEPS)[blocker]}' failed")
                continue
            self.log(f"step {k}/{len(STEPS)}: {title} ...")
            getattr(self, f"_{name}")()
        return self.steps

    def _id(self):
        out = self.cmd("nand scan")
        dies = parse_ids(out)
        ok = bool(dies) and all(d["onfi"] for d in dies.values()) and not command_failed(out)
        ids = {str(d): " ".join(f"{b:02x}" for b in v["id"]) for d, v in dies.items()}
        self.dies = sorted(dies)
        self.step("id", ok, f"{len(dies)} die(s); " + "; ".join(f"die {d}: ID {i}, ONFI signature "
                  f"{'present' if dies[int(d)]['onfi'] else 'ABSENT'}" for d, i in ids.items()) if dies else
                  "no die answered READ ID", {"dies": len(dies), "ids": ids})

    def _param(self):
        from nandlab.nand_model import param_page as pp
        pages, problems = {}, []
        for die in self.dies:
            data = parse_param_raw(self.cmd(f"nand param {die} raw"))
            try:
                page = pp.inspect(data)
            except pp.ParamPageError as e:
                problems.append(f"die {die}: {e}")
                continue
            pages[die] = page
            problems += [f"die {die}: error: {d}" for d in page.errors]
        ok = bool(pages) and not problems
        page = pages.get(self.dies[0]) if self.dies else None
        numbers = {}
        if page is not None:
            self.page = page
            numbers = {"manufacturer": page.text_manufacturer, "model": page.text_model,
                       "revision": page.revision_name, "copy": page.copy,
                       "page_bytes": page.data_bytes_per_page, "spare_bytes": page.spare_bytes_per_page,
                       "pages_per_block": page.pages_per_block, "blocks_per_lun": page.blocks_per_lun,
                       "sdr_modes": page.sdr_modes, "nvddr_modes": page.nvddr_modes,
                       "max_bad_blocks_per_lun": page.max_bad_blocks_per_lun,
                       "warnings": [str(w) for w in page.warnings]}
        summary = (f"{numbers['manufacturer']} {numbers['model']}, ONFI {numbers['revision']}, copy {numbers['copy']}, "
                   f"{numbers['page_bytes']}+{numbers['spare_bytes']} B x {numbers['pages_per_block']} pages x "
                   f"{numbers['blocks_per_lun']} blocks; {len(numbers['warnings'])} warning(s)" if page else "no usable page")
        self.step("param", ok, summary + ("; " + "; ".join(problems) if problems else ""), numbers,
                  detail=problems or None)

    def advertised_mode(self):
        """(interface, mode) the fastest the parameter page announces (NV-DDR before async SDR), or None."""
        if self.page is None:
            return None
        if self.page.nvddr_modes:
            return "NV-DDR", max(self.page.nvddr_modes)
        return "async SDR", max(self.page.sdr_modes or [0])

    def _timing(self):
        out = self.cmd("ctl bringup")
        b = parse_bringup(out, self.channel)
        want = self.advertised_mode()
        if b is None or b["up"] == 0:
            self.step("timing", False, "no die came up ('ctl bringup': " + (out.strip().splitlines() or ["no output"])[-1] + ")")
            return
        self.negotiated = (b["interface"], b["mode"])
        features = {}
        for die in self.dies:
            f = parse_features(self.cmd(f"ctl features {die}"))
            features[str(die)] = f
        got = {d: (f["interface"], f["mode"]) if f else None for d, f in features.items()}
        ok = (b["up"] == b["dies"] and not command_failed(out) and (want is None or self.negotiated == want)
              and all(g == self.negotiated for g in got.values()))
        summary = (f"{b['up']} of {b['dies']} dies up in {b['interface']} mode {b['mode']}; the parameter page announces "
                   + (f"{want[0]} mode {want[1]} at best" if want else "nothing (no page)") + "; GET FEATURES: " +
                   ", ".join(f"die {d} {g[0]} mode {g[1]} (P1 0x{features[d]['p'][0]:02x})" if g else f"die {d} no answer"
                             for d, g in got.items()))
        self.step("timing", ok, summary, {"dies_up": b["up"], "dies": b["dies"], "interface": b["interface"],
                  "mode": b["mode"], "advertised": list(want) if want else None,
                  "get_features": {d: f and {"p1": f["p"][0], "interface": f["interface"], "mode": f["mode"]}
                                   for d, f in features.items()}})

    def _training(self):
        if self.negotiated is None or self.negotiated[0] != "NV-DDR":
            self.step("training", None, f"not needed: the dies run {self.negotiated[0] if self.negotiated else '?'}")
            return
        mode, problems = self.negotiated[1], []
        for die in self.dies:
            out = self.cmd(f"train eye {die} {mode}")
            eye = parse_eye(out)
            if eye is None:
                problems.append(f"die {die}: no eye ({(out.strip().splitlines() or ['no output'])[-1]})")
                continue
            for i, lane in enumerate(eye["lanes"]):
                lane["window"] = passing_window(lane["errors"])
                if self.model is not None:
                    lane["model"] = self.model[i]
                if lane["lo"] < 0:
                    problems.append(f"die {die} {lane['name']}: no window")
            if not eye["ok"]:
                problems.append(f"die {die}: training failed ({eye['verify_errors']} bit errors verifying)")
            self.eyes.append(eye)
        taps = {f"die {e['die']}": {l["name"]: l["tap"] for l in e["lanes"]} for e in self.eyes}
        summary = "; ".join(f"die {e['die']} NV-DDR mode {e['mode']}: " + ", ".join(
            f"{l['name']} {l['lo']}..{l['hi']}@{l['tap']}" if l["lo"] >= 0 else f"{l['name']} none" for l in e["lanes"])
            + f"; {e['verify_errors']} bit errors in the verification reads" for e in self.eyes)
        self.step("training", bool(self.eyes) and not problems, summary + ("; " + "; ".join(problems) if problems else ""),
                  {"mode": mode, "taps": taps, "tap_ps": self.eyes[0]["tap_ps"] if self.eyes else None},
                  detail=problems or None)

    def _badblocks(self):
        out = self.cmd("ctl badblocks")
        dies = parse_badblocks(out)
        limit = self.page.max_bad_blocks_per_lun if self.page is not None else None
        over = {d: v for d, v in dies.items() if limit is not None and len(v["bad"]) > limit}
        ok = bool(dies) and not command_failed(out) and not over
        self.bad = {d: set(v["bad"]) | set(v["unread"]) for d, v in dies.items()}
        summary = "; ".join(f"die {d}: {len(v['bad'])} bad of blocks {v['first']}..{v['last']}" +
                            (f" ({', '.join(map(str, v['bad']))})" if v["bad"] else "") +
                            (f", {len(v['unread'])} unreadable" if v["unread"] else "") for d, v in dies.items())
        if limit is not None:
            summary += f"; the page allows {limit} a LUN"
        self.step("badblocks", ok, summary or "no result", {"bad": {str(d): v["bad"] for d, v in dies.items()},
                  "unread": {str(d): v["unread"] for d, v in dies.items()}, "max_per_lun": limit})

    def _wre(self):
        first, last = self.blocks
        page_bytes = self.page.data_bytes_per_page if self.page else None
        pages_per_block = self.page.pages_per_block if self.page else None
        if self.page is not None and last >= self.page.blocks_per_lun:
            self.step("wre", False, f"blocks {first}..{last}: the chip has {self.page.blocks_per_lun}")
            return
        pages = self.pages or pages_per_block or 4
        totals = {"blocks": 0, "skipped_bad": [], "bytes": 0, "differ": 0, "corrected": 0, "uncorrectable": 0,
                  "shadow_pages": 0, "shadow_differ": 0, "failed_blocks": []}
        bad = set().union(*getattr(self, "bad", {}).values()) if getattr(self, "bad", None) else set()
        for block in range(first, last + 1):
            if block in bad:
                totals["skipped_bad"].append(block)
                continue
            self.log(f"  block {block}: {pages} pages")
            out = self.cmd(f"ctl test {pages} {block}")
            t = parse_ctl_test(out)
            totals["blocks"] += 1
            if t is None or command_failed(out):
                totals["failed_blocks"].append(block)
                if t is None:
                    continue
            for k in ("bytes", "differ", "corrected", "uncorrectable"):
                totals[k] += t[k]
            totals["ecc"] = t["ecc"]
            # The host's own check: the first and last page read back against the pattern computed here.
            for page in sorted({0, pages - 1}):
                for die in self.dies:
                    res, data = parse_ctl_read(self.cmd(f"ctl read {die} {block} {page} {page_bytes}"))
                    want = firmware_pattern(len(data), ctl_test_seed(0, die, block, page))
                    totals["shadow_pages"] += 1
                    totals["shadow_differ"] += sum(a != b for a, b in zip(data, want)) + (page_bytes - len(data))
                    if res != "OK":
                        totals["failed_blocks"].append(block)
        ok = (totals["blocks"] > 0 and not totals["failed_blocks"] and totals["differ"] == 0 and
              totals["uncorrectable"] == 0 and totals["shadow_differ"] == 0)
        summary = (f"blocks {first}..{last}, {pages} pages each: {totals['blocks']} tested" +
                   (f" ({len(totals['skipped_bad'])} factory-bad skipped)" if totals["skipped_bad"] else "") +
                   f", {totals['bytes']} bytes written and read back, {totals['differ']} differ; ECC "
                   f"{totals.get('ecc') or 'none'}: {totals['corrected']} bits corrected, {totals['uncorrectable']} "
                   f"codewords uncorrectable; host check of {totals['shadow_pages']} pages against the pattern: "
                   f"{totals['shadow_differ']} bytes differ" +
                   (f"; failed blocks {sorted(set(totals['failed_blocks']))}" if totals["failed_blocks"] else ""))
        totals["pages_per_block"] = pages
        self.step("wre", ok, summary, totals)


# Steps that are not run when an earlier one failed.
_NEEDS = {"param": ("id",), "timing": ("id",), "training": ("timing",), "badblocks": ("timing",),
          "wre": ("timing",)}


# Sessions -----------------------------------------------------------------------------------------

class _SimShell:
    def __init__(self, console):
        self.console = console

    def command(self, line, timeout):
        return self.console.command(line, timeout=timeout)


def sim_model_windows(family, seed):
    """Per lane, the window (first, last tap) the pin model implies for `seed`'s lane timings (or None)."""
    from nandlab.nand_model.pinmodel import expected_windows, random_lane_timings
    return expected_windows(random_lane_timings(seed), family)


def run_sim(args, say):
    """The simulated SoC (1 die behind the pin PHY and the pin-level model of `--family`), the lanes of
    `--skew-seed` written into the model's CSRs, the steps run. Returns (result, context)."""
    from nandlab.nand_model.pinmodel import random_lane_timings
    from nandlab.soc.targets import sim as simtarget
    from nandlab.simulator import SimConsole, free_tcp_port, prepare_run_dir
    family, seed = args.family or "xc7", args.skew_seed or 0
    # One build for every seed (the lanes are CSRs): the build tests/test_pin_training.py makes.
    pin_model = {"family": family, "seed": 0, "lanes": None}
    build_dir = env.BUILD_DIR / simtarget.build_dir_name(SIM_DIES, pin_model=pin_model)
    say(f"building the simulated SoC with the pin-level model ({family}) in {build_dir} (minutes the first time) ...")
    gateware = simtarget.build_all(build_dir, dies=SIM_DIES, pin_model=pin_model)
    run_dir = prepare_run_dir(gateware, build_dir / "bringup-run", bridge_port=free_tcp_port())
    say("booting the simulated SoC ...")
    with SimConsole(gateware, run_dir) as console:
        console.boot(timeout=args.timeout)
        for i, t in enumerate(random_lane_timings(seed)):
            for name, value in ((f"lane{i}_delay", t.delay), (f"lane{i}_window", t.start | t.end << 16)):
                out = console.command(f"csr write nand_pin_model_{name} {value}")
                if command_failed(out):
                    raise NandLabError(f"setting the pin model's lanes: {out.strip()}")
        b = Bringup(_SimShell(console), args.block_range, args.pages, args.timeout, log=say,
                    model=sim_model_windows(family, seed))
        b.run()
        cpu = console.cpu_seconds()
    context = {"target": "sim", "family": family, "seed": seed, "simulator_cpu_s": round(cpu or 0, 1),
               "build_dir": str(build_dir)}
    return b, context


def result_of(b, context, started):
    """The JSON object of a run: every step, the eyes, what was chosen."""
    part = b.page.text_model if b.page is not None else None
    return {"target": context["target"], "context": context, "die": part,
            "ok": all(s["ok"] is not False for s in b.steps) and any(s["ok"] for s in b.steps),
            "duration_s": round(time.monotonic() - started, 1),
            "mode": {"interface": b.negotiated[0], "mode": b.negotiated[1]} if b.negotiated else None,
            "steps": b.steps, "eyes": b.eyes, "lanes": LANE_NAMES}


def cmd_bringup(args):
    from nandlab.steps import say
    check_args(args)
    out = out_dir(args)
    started = time.monotonic()
    if args.target == "sim":
        b, context = run_sim(args, say)
    else:
        from nandlab import bringup_board
        if args.resources:
            return bringup_board.cmd_resources(args, out, say)
        b, context = bringup_board.run_board(args, say, Bringup)
    result = result_of(b, context, started)
    from nandlab import bringup_report
    paths = bringup_report.write(result, out, console=b.console)
    result["report"] = {k: v if isinstance(v, list) else str(v) for k, v in paths.items()}
    (out / "bringup.json").write_text(json.dumps(result, indent=1))
    say(f"report: {paths['html']} ({paths['markdown']})")
    if args.json:
        print(json.dumps(result))
    else:
        print(bringup_report.text_summary(result))
    return 0 if result["ok"] else 1
