"""`nandlab fuzz`: the firmware's C parsers built for the host with clang and fuzzed by libFuzzer.

Targets (sources in sw/firmware/host):
  shell  the firmware shell (line editing, tokenising, number parsing, dispatch) and every command
         it registers but the FTL's, over a model of the SoC's HAL (fuzz_shell.c, hal_host.c);
  ftl    the FTL's API (format, mount, write, read, trim, flush, asynchronous requests; any geometry
         and configuration) on the host NAND model, reads checked against a shadow (fuzz_ftl.c);
  replay the replay's ring records and its `ftl replay ring|run` command on the FTL over the host
         NAND model, refusals and every sector's contents checked independently (fuzz_replay.c).
All run under AddressSanitizer and UndefinedBehaviorSanitizer; any report, abort or hang is a crash.
The corpus grows in build/fuzz/corpus/<target> (seeded from sw/firmware/host/seeds/<target>); a
crashing input is written to build/fuzz/crashes/<target>/ and named in the result.
"""

import json
import logging
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from nandlab import env
from nandlab.errors import MissingToolError, NandLabError

HOST_DIR = env.REPO / "sw" / "firmware" / "host"
TARGETS = ("shell", "ftl", "replay")
CLANG = "clang-14"
INSTALL = "apt-get install clang-14 libclang-rt-14-dev (make env does this)"


def out_dir():
    return env.BUILD_DIR / "fuzz"


def add_parser(sub):
    f = sub.add_parser("fuzz", help="Fuzz the firmware's shell parser, the FTL's API and the replay's records (libFuzzer, host build).",
        description="Builds the fuzz targets with clang (libFuzzer, AddressSanitizer, UBSan) and runs them: "
        "'shell' is the firmware shell with its commands over a model of the HAL, 'ftl' the FTL's API on the "
        "host NAND model with a shadow check of every read, 'replay' the trace replay's ring records and command "
        "on the FTL with the device's contents checked after every run. Prints inputs tried, exec/s, coverage (edges, "
        "features) and crashes per target; exit 1 on a crash (the input is kept under build/fuzz/crashes). "
        "Give FILEs to run those inputs only (a crash's reproducer).")
    f.add_argument("files", nargs="*", metavar="FILE", help="Inputs to run (reproduce) instead of fuzzing.")
    f.add_argument("--target", choices=[*TARGETS, "all"], default="all", help="What to fuzz (default all).")
    budget = f.add_mutually_exclusive_group()
    budget.add_argument("--runs", type=int, metavar="N", help="Inputs per target (default 100000).")
    budget.add_argument("--seconds", type=float, metavar="S", help="Wall-clock seconds per target.")
    f.add_argument("--seed", type=int, default=0, help="libFuzzer's random seed (0: its own choice).")
    f.add_argument("--jobs", type=int, default=1, help="libFuzzer processes per target, sharing the corpus, each "
                   "with its share of --runs and seed + i (default 1).")
    f.add_argument("--json", action="store_true", help="Print one JSON object: {\"targets\": [one result per target], \"crashes\": N}.")
    return f


def check_args(args):
    if args.runs is not None and args.runs < 1:
        raise NandLabError(f"--runs {args.runs}: takes >= 1")
    if args.seconds is not None and not args.seconds > 0:
        raise NandLabError(f"--seconds {args.seconds}: takes a number > 0")
    if args.seed < 0:
        raise NandLabError(f"--seed {args.seed}: takes >= 0")
    if not 1 <= args.jobs <= 64:
        raise NandLabError(f"--jobs {args.jobs}: takes 1..64")
    if args.files and args.target == "all":
        raise NandLabError("inputs to run need one --target (shell, ftl or replay)")
    for f in args.files:
        if not Path(f).is_file():
            raise NandLabError(f"{f}: no such file")


def find_clang():
    """clang-14 and its libFuzzer runtime; MissingToolError naming the packages when either is missing."""
    clang = env.which(CLANG)
    if clang is None:
        raise MissingToolError(f"{CLANG} not found: install it with '{INSTALL}'")
    r = subprocess.run([clang, "-print-runtime-dir"], capture_output=True, text=True)
    runtime = Path(r.stdout.strip()) / "libclang_rt.fuzzer-x86_64.a"
    if r.returncode or not runtime.exists():
        raise MissingToolError(f"libFuzzer's runtime ({runtime.name}) not found beside {clang}: install it with '{INSTALL}'")
    return clang


def _write_if_changed(path, text):
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def generate_headers(gen):
    """The sim SoC's soc.h, mem.h and CSR table, the token tables and its die part's parameter page, in
    gen/generated (files rewritten only when their contents change, so make rebuilds only then)."""
    from nandlab.csrmap import CSRMap
    from nandlab.firmware import token_header
    from nandlab.nand_model.parts import get_part
    from nandlab.soc.targets.sim import generate_headers as sim_headers
    soc_dir = gen / "soc"
    generated = gen / "generated"
    generated.mkdir(parents=True, exist_ok=True)
    logging.disable(logging.INFO)       # (LiteX logs the whole SoC hierarchy)
    try:
        sim_headers(soc_dir, channels=2)
    finally:
        logging.disable(logging.NOTSET)
    src = soc_dir / "software" / "include" / "generated"
    for name in ("soc.h", "mem.h"):
        # Without LiteX's generation-date line: the same SoC gives the same header.
        text = "".join(l for l in (src / name).read_text().splitlines(keepends=True) if "Auto-generated by LiteX" not in l)
        _write_if_changed(generated / name, text)
    _write_if_changed(generated / "csr_table.h", CSRMap.from_csv(soc_dir / "csr.csv").c_table())
    _write_if_changed(generated / "nandlab_tokens.h", token_header(soc_dir / "csr.csv"))
    part = None
    for line in (soc_dir / "csr.csv").read_text().splitlines():
        f = line.split(",")
        if len(f) >= 3 and f[0] == "constant" and f[1] == "nandlab_die_part":
            part = f[2]
    page = get_part(part).param_page(copies=3)
    rows = ",\n".join("\t" + ", ".join(f"0x{b:02x}" for b in page[i:i + 16]) for i in range(0, len(page), 16))
    _write_if_changed(generated / "param_page.h",
        f"/* Generated by nandlab.fuzz: the {part} parameter page, three copies. */\n"
        f"static const unsigned char host_param_page[{len(page)}] = {{\n{rows}\n}};\n")
    return gen


def build(targets=TARGETS, out=None, extra_make=()):
    """Headers, then make; returns {target: executable}. `extra_make`: more make arguments."""
    out = Path(out or out_dir()).resolve()
    names = [t if t == "onfi-decode" else f"fuzz-{t}" for t in targets]
    if any(n.startswith("fuzz-") for n in names):
        find_clang()
    gen = generate_headers(out / "headers")
    r = subprocess.run(["make", "-s", "-C", str(HOST_DIR), f"OUT={out}", f"GEN={gen}", *extra_make,
                        *[str(out / n) for n in names]], capture_output=True, text=True)
    if r.returncode:
        raise NandLabError(f"building {', '.join(names)} failed:\n{(r.stdout + r.stderr)[-4000:]}")
    return {t: out / n for t, n in zip(targets, names)}


_STATUS = re.compile(r"^#(\d+)\s+\w+\s+cov: (\d+) ft: (\d+) corp: (\d+)/")
_STAT = re.compile(r"^stat::(\w+):\s+(\d+)")


def parse_log(text):
    """inputs, coverage (edges), features, corpus size, exec/s and crash artifact of a libFuzzer log."""
    res = {"inputs": 0, "edges": 0, "features": 0, "corpus": 0, "exec_per_s": 0, "crash_file": None, "crash": None}
    for line in text.splitlines():
        m = _STATUS.match(line)
        if m:
            res["inputs"], res["edges"], res["features"], res["corpus"] = map(int, m.groups())
        m = _STAT.match(line)
        if m and m.group(1) == "number_of_executed_units":
            res["inputs"] = int(m.group(2))
        elif m and m.group(1) == "average_exec_per_sec":
            res["exec_per_s"] = int(m.group(2))
        m = re.search(r"Test unit written to (\S+)", line)
        if m:
            res["crash_file"] = m.group(1)
        if res["crash"] is None and ("ERROR: " in line or "runtime error:" in line or "fuzz-ftl: " in line
                                     or "fuzz-replay: " in line or "hal_host: " in line or "shell_parse_u32(" in line):
            res["crash"] = line.strip()
    return res


DEFAULT_RUNS = 100_000
PROGRESS_S = 60                  # a progress line this often on long runs


def _command(exe, target, corpus, crashes, seed, runs, seconds, files):
    cmd = [str(exe), "-print_final_stats=1", "-timeout=20", "-rss_limit_mb=2560", "-max_len=4096",
           f"-artifact_prefix={crashes}/", f"-seed={seed}"]
    dictionary = HOST_DIR / "seeds" / f"{target}.dict"
    if dictionary.exists():
        cmd.append(f"-dict={dictionary}")
    if files:
        return cmd + [str(Path(f).resolve()) for f in files]
    cmd.append(f"-max_total_time={max(1, round(seconds))}" if seconds else f"-runs={runs}")
    return cmd + [str(corpus), str(HOST_DIR / "seeds" / target)]


def _combine(parts):
    """One result of the jobs' results: inputs and exec/s added, coverage the largest, the first crash."""
    res = dict(parts[0])
    for key in ("inputs", "exec_per_s"):
        res[key] = sum(p[key] for p in parts)
    for key in ("edges", "features", "corpus"):
        res[key] = max(p[key] for p in parts)
    crashed = [p for p in parts if p["exit_code"]]
    if crashed:
        res.update(crash=crashed[0]["crash"], crash_file=crashed[0]["crash_file"], exit_code=crashed[0]["exit_code"])
    res["crashes"] = len(crashed)
    res["command"] = " ; ".join(p["command"] for p in parts)
    return res


def run(target, runs=None, seconds=None, seed=0, out=None, files=(), exe=None, log=None, jobs=1, progress=None):
    """Fuzz one target (or run `files` through it); returns the result dict (see parse_log). `jobs`
    libFuzzer processes share the corpus, each with its own seed (seed + i; 0: their own choice) and
    its share of `runs` (or all of `seconds`); their output goes to `log` (default build/fuzz/<target>.log,
    `.<i>.log` per job), read while they run: `progress(line)` gets a summary every PROGRESS_S seconds."""
    out = Path(out or out_dir()).resolve()
    exe = exe or build([target], out)[target]
    corpus = out / "corpus" / target
    crashes = out / "crashes" / target
    corpus.mkdir(parents=True, exist_ok=True)
    crashes.mkdir(parents=True, exist_ok=True)
    log = Path(log or out / f"{target}.log")
    n = 1 if files else max(1, jobs)
    per = -(-(runs or DEFAULT_RUNS) // n)
    environ = dict(os.environ, UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
    t0 = last = time.monotonic()
    procs = []
    try:
        for i in range(n):
            cmd = _command(exe, target, corpus, crashes, seed + i if seed else 0, per, seconds, files)
            path = log if n == 1 else log.with_name(f"{log.stem}.{i}{log.suffix}")
            f = open(path, "w")
            procs.append((subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=str(out), env=environ),
                          f, path, cmd))
        while any(p.poll() is None for p, *_ in procs):
            time.sleep(0.2)
            if progress and time.monotonic() - last >= PROGRESS_S:
                last = time.monotonic()
                now = [parse_log(path.read_text(errors="replace")) for _, _, path, _ in procs]
                progress(f"fuzz {target}: {sum(r['inputs'] for r in now)} inputs of {per * n if not seconds else '-'}, "
                         f"edges {max(r['edges'] for r in now)}, {round(last - t0)} s")
    finally:
        for p, f, _, _ in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
            f.close()
    parts = []
    for p, _, path, cmd in procs:
        text = path.read_text(errors="replace")
        res = parse_log(text)
        res.update(target=target, exit_code=p.returncode, crashes=int(p.returncode != 0), command=" ".join(cmd))
        if p.returncode and not res["crash"]:
            res["crash"] = "\n".join(text.splitlines()[-15:])
        parts.append(res)
    res = _combine(parts)
    res.update(seconds=round(time.monotonic() - t0, 1), jobs=n)
    if files:
        res["inputs"] = len(files)
    elif res["exec_per_s"] == 0 and res["seconds"]:
        res["exec_per_s"] = int(res["inputs"] / res["seconds"])
    return res


def summary(res):
    line = (f"{res['target']:<6} {res['inputs']:>10} inputs  {res['exec_per_s']:>7} exec/s  "
            f"edges {res['edges']:>5}  features {res['features']:>6}  corpus {res['corpus']:>5}  "
            f"crashes {res['crashes']}  ({res['seconds']} s)")
    if res["crashes"]:
        line += f"\n  crash: {res['crash']}\n  input: {res['crash_file']}"
    return line


def cmd_fuzz(args):
    check_args(args)
    targets = TARGETS if args.target == "all" else (args.target,)
    exes = build(targets)
    results = []
    for t in targets:
        res = run(t, runs=args.runs, seconds=args.seconds, seed=args.seed, files=args.files, exe=exes[t],
                  log=out_dir() / f"{t}.log", jobs=args.jobs,
                  progress=lambda line: print(f"[nandlab] {line}", file=sys.stderr, flush=True))
        results.append(res)
        if not args.json:
            print(summary(res), flush=True)
    crashes = sum(r["crashes"] for r in results)
    if args.json:
        print(json.dumps({"targets": results, "crashes": crashes}))
    return 1 if crashes else 0
