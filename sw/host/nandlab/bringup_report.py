"""The report of `nandlab bringup`: an eye PNG per lane, Markdown and HTML pages with every step's result,
the chosen taps and modes, and what to check on the board for each step that failed."""

import html
from pathlib import Path

HEADER_PINS = [1, 2, 3, 4, 7, 8, 9, 10]         # Pmod pin of LiteX connector index 0..7
HEADER_NAMES = {"pmoda": "JA", "pmodb": "JB", "pmodc": "JC", "pmodd": "JD", "pmode": "PMOD E", "pmodf": "PMOD F"}

# What to check when a step fails (constraints/nand_socket.md has the pin maps and the adaptor wiring).
HINTS = {
    "id": [
        "power: VCC and VCCQ at the chip's pins are 3.3 V (the Pmod header's 3.3 V pins), with decoupling next to the chip",
        "CE# reaches the chip (pin {ce}) and its pull-up does not hold it high against the FPGA; the adaptor's pin 1 "
        "matches the TSOP-48's",
        "WE#, RE#, CLE, ALE wired to the pins of the table (WE# {we}, RE# {re}, CLE {cle}, ALE {ale}); an ID of all "
        "00h or FFh is a chip that never drove the bus",
        "R/B# ({rb}) has its pull-up to VCCQ on the adaptor (the FPGA's internal one is too weak): a chip held busy "
        "never answers",
    ],
    "param": [
        "a DQ lane stuck at 0 or 1 or two lanes swapped/shorted: compare the page's bytes with the data sheet's "
        "(the checker names the field and byte offset); DQ0-7 are on {dq}",
        "long or unequal wires between header and chip: async SDR mode 0 should read right even over a ribbon",
    ],
    "timing": [
        "R/B# pull-up ({rb}): RESET and SET FEATURES wait for R/B# high",
        "VCCQ is 3.3 V: NV-DDR2/NV-DDR3 need 1.8/1.2 V, which the Pmod banks do not give; a chip that announces only "
        "those modes stays in async SDR",
        "WP# ({wp}) high if the chip is to be written (on the Colorlight i5: the adaptor's jumper to VCCQ)",
        "GET FEATURES disagreeing with SET FEATURES: the chip does not take that mode at this VCCQ (data sheet)",
    ],
    "training": [
        "the lane without a window: its wire (pin in the table of failing lanes), solder joint and length against the "
        "other DQ lanes and DQS ({dqs})",
        "no window on any lane: DQS not reaching its pin, or the delay lines' reference clock (Arty: 200 MHz "
        "IDELAYCTRL)",
        "narrow windows on every lane: reflections on unterminated wires; shorten them or use a lower NV-DDR mode",
    ],
    "badblocks": [
        "more bad blocks than the parameter page allows: a chip already written (markers lost) or another marking "
        "convention (the data sheet: first or last page, spare byte 0 or 1)",
        "unreadable spare areas: the steps before (training) did not leave reads reliable",
    ],
    "wre": [
        "WP# ({wp}) must be high: a protected chip fails every program and erase (status FAIL)",
        "program/erase current peaks: decoupling on VCC next to the chip, a supply that holds 3.3 V",
        "bit errors the ECC corrected, or data that differs: signal integrity at this mode (retrain, lower mode) or "
        "worn blocks (try other --blocks)",
    ],
}


def socket_pins(target):
    """{signal: "FPGA pin (header pin)"} of the target's NAND socket, from its IO list and platform, or None."""
    try:
        from nandlab.soc.targets import nand_socket
        if target == "arty":
            from litex_boards.platforms import digilent_arty
            io, platform = nand_socket.arty_nand_socket_io(), digilent_arty.Platform(variant="a7-35", toolchain="vivado")
        elif target == "colorlight_i5":
            from litex_boards.platforms import colorlight_i5
            io = nand_socket.colorlight_i5_nand_socket_io()
            platform = colorlight_i5.Platform(board="i5", revision="7.0", toolchain="trellis")
        else:
            return None
        table = platform.constraint_manager.connector_manager.connector_table
    except Exception:            # (a board package without the platform: the hints go without pins)
        return None
    pins = {}
    from litex.build.generic_platform import Pins, Subsignal
    for sub in io[0][2:]:
        if not isinstance(sub, Subsignal):
            continue
        refs = next(c for c in sub.constraints if isinstance(c, Pins)).identifiers
        names = []
        for ref in refs:
            conn, idx = ref.split(":")
            names.append(f"{table[conn][int(idx)]} ({HEADER_NAMES.get(conn, conn)} pin {HEADER_PINS[int(idx)]})")
        if sub.name == "dq":
            for i, n in enumerate(names):
                pins[f"DQ{i}"] = n
            pins["dq"] = ", ".join(names)
        else:
            pins[sub.name] = " / ".join(names)
    return pins


def hints_for(step, target):
    """What to check for failed step `step` on `target` (pins filled in from the socket's map)."""
    pins = socket_pins(target) or {}
    name = {"ce": "ce_n", "we": "we_n", "re": "re_n", "cle": "cle", "ale": "ale", "rb": "rb_n", "wp": "wp_n",
            "dq": "dq", "dqs": "dqs"}
    values = {k: pins.get(v, "see constraints/nand_socket.md") for k, v in name.items()}
    if target == "colorlight_i5":
        values["wp"] = "no pin: the adaptor's jumper"
    lines = [h.format(**values) for h in HINTS.get(step["name"], [])]
    if step["name"] == "training" and pins:
        for lane in (step.get("numbers", {}).get("failing_lanes") or []):
            lines.insert(0, f"lane {lane}: pin {pins.get(lane if lane != 'DQS' else 'dqs', '?')}")
    if target == "sim":
        lines = [f"(simulation) {h}" for h in lines[:1]] + \
            ["in simulation: a failure here is a bug of the firmware, the PHY or the pin model, not of a board"]
    return lines


# Eyes ---------------------------------------------------------------------------------------------

def eye_title(result, eye, lane):
    c = result["context"]
    where = f"sim, pin model {c.get('family')}, skew seed {c.get('seed')}" if result["target"] == "sim" else \
        result["target"] + (", socket" if c.get("socket") else "")
    return f"{lane['name']} - {where}\n{result.get('die') or '?'} die {eye['die']}, NV-DDR mode {eye['mode']}"


def eye_png(result, eye, lane, path):
    """One lane's eye: bit errors per tap (pass green, fail red), the window, the tap chosen, the model's window
    (simulation); a second x axis in ps."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    taps, tap_ps = eye["taps"], eye["tap_ps"]
    errors = lane["errors"]
    fig, ax = plt.subplots(figsize=(6.4, 3.2), dpi=100)
    colors = ["#2a9d3a" if e == 0 else "#c0392b" for e in errors]
    heights = [e if e else 0 for e in errors]
    ax.bar(range(taps), heights, color=colors, width=0.9)
    ax.scatter([t for t in range(taps) if errors[t] == 0], [0] * errors.count(0), marker="|", color="#2a9d3a", s=80,
               label="pass (0 bit errors)")
    if lane.get("model"):
        lo, hi = lane["model"]
        ax.axvspan(lo - 0.45, hi + 0.45, color="#3a6ea5", alpha=0.12, label=f"model window {lo}..{hi}")
    if lane["lo"] >= 0:
        ax.axvline(lane["tap"], color="black", linestyle="--", linewidth=1, label=f"tap {lane['tap']} "
                   f"(window {lane['lo']}..{lane['hi']})")
    ax.set_xlim(-0.5, taps - 0.5)
    ax.set_ylim(0, max(max(errors) * 1.1, 1))
    ax.set_xlabel(f"delay tap ({tap_ps} ps a tap)")
    ax.set_ylabel(f"bit errors / {eye['pattern_bytes'] * (8 if lane['name'] == 'DQS' else 1)} bits")
    sec = ax.secondary_xaxis("top", functions=(lambda t: t * tap_ps, lambda ps: ps / tap_ps))
    sec.set_xlabel("delay (ps)")
    ax.set_title(eye_title(result, eye, lane), fontsize=9)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def eye_files(result, out):
    """{(die, lane name): relative PNG name}, the files written."""
    files = {}
    for eye in result["eyes"]:
        for lane in eye["lanes"]:
            name = f"eye-die{eye['die']}-mode{eye['mode']}-{lane['name']}.png"
            eye_png(result, eye, lane, out / name)
            files[(eye["die"], lane["name"])] = name
    return files


# Pages --------------------------------------------------------------------------------------------

def _status(ok):
    return "PASS" if ok else "skipped" if ok is None else "FAIL"


def _context_line(result):
    c = result["context"]
    parts = [f"target {result['target']}", f"die {result.get('die') or '?'}"]
    if result.get("mode"):
        parts.append(f"{result['mode']['interface']} mode {result['mode']['mode']}")
    if result["target"] == "sim":
        parts += [f"pin model {c.get('family')}", f"skew seed {c.get('seed')}"]
    parts.append(f"{result['duration_s']} s")
    return ", ".join(parts)


def lane_rows(eye):
    for lane in eye["lanes"]:
        win = f"{lane['lo']}..{lane['hi']}" if lane["lo"] >= 0 else "none"
        width = (lane["hi"] - lane["lo"] + 1) if lane["lo"] >= 0 else 0
        model = lane.get("model")
        yield [lane["name"], win, str(width), f"{width * eye['tap_ps']} ps", str(lane["tap"]),
               (f"{model[0]}..{model[1]}" if model else ("none" if "model" in lane else "-"))]


LANE_HEADER = ["lane", "window (taps)", "width", "width (ps)", "tap chosen", "model window"]


def markdown(result, files):
    lines = [f"# NAND bring-up: {'PASS' if result['ok'] else 'FAIL'}", "", _context_line(result), "",
             "| step | result | numbers |", "|---|---|---|"]
    for s in result["steps"]:
        lines.append(f"| {s['title']} | {_status(s['ok'])} | {s['summary'].replace('|', '/')} |")
    for s in result["steps"]:
        if s["ok"] is False:
            lines += ["", f"## {s['title']}: what to check", ""] + [f"- {h}" for h in hints_for(s, result["target"])]
    for eye in result["eyes"]:
        lines += ["", f"## Eyes: die {eye['die']}, NV-DDR mode {eye['mode']} ({eye['taps']} taps of {eye['tap_ps']} ps)",
                  "", "| " + " | ".join(LANE_HEADER) + " |", "|" + "---|" * len(LANE_HEADER)]
        lines += ["| " + " | ".join(r) + " |" for r in lane_rows(eye)]
        lines.append("")
        lines += [f"![{lane['name']}]({files[(eye['die'], lane['name'])]})" for lane in eye["lanes"]]
    lines += ["", "Every command's output: console.log; every number: bringup.json.", ""]
    return "\n".join(lines)


_CSS = """body{font-family:sans-serif;margin:2em;max-width:1400px}table{border-collapse:collapse;margin:1em 0}
td,th{border:1px solid #bbb;padding:4px 8px;text-align:left;vertical-align:top}.PASS{color:#1e7d32;font-weight:bold}
.FAIL{color:#b71c1c;font-weight:bold}.skipped{color:#777}.eyes{display:flex;flex-wrap:wrap;gap:8px}
.eyes img{width:640px;height:320px;border:1px solid #ddd}"""


def html_page(result, files):
    e = html.escape
    ok = "PASS" if result["ok"] else "FAIL"
    rows = "".join(f"<tr><td>{e(s['title'])}</td><td class=\"{_status(s['ok'])}\">{_status(s['ok'])}</td>"
                   f"<td>{e(s['summary'])}</td></tr>" for s in result["steps"])
    body = [f"<h1>NAND bring-up: <span class=\"{ok}\">{ok}</span></h1>", f"<p>{e(_context_line(result))}</p>",
            f"<table id=\"steps\"><tr><th>step</th><th>result</th><th>numbers</th></tr>{rows}</table>"]
    for s in result["steps"]:
        if s["ok"] is False:
            body.append(f"<h2>{e(s['title'])}: what to check</h2><ul>" +
                        "".join(f"<li>{e(h)}</li>" for h in hints_for(s, result["target"])) + "</ul>")
    for eye in result["eyes"]:
        head = "".join(f"<th>{e(h)}</th>" for h in LANE_HEADER)
        trs = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in lane_rows(eye))
        imgs = "".join(f"<img class=\"eye\" src=\"{e(files[(eye['die'], l['name'])])}\" alt=\"eye of {e(l['name'])}\">"
                       for l in eye["lanes"])
        body += [f"<h2>Eyes: die {eye['die']}, NV-DDR mode {eye['mode']} ({eye['taps']} taps of {eye['tap_ps']} ps)</h2>",
                 f"<table><tr>{head}</tr>{trs}</table>", f"<div class=\"eyes\">{imgs}</div>"]
    body.append("<p>Every command's output: <a href=\"console.log\">console.log</a>; every number: "
                "<a href=\"bringup.json\">bringup.json</a>.</p>")
    return (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>nandlab bring-up: {e(result['target'])}</title>"
            f"<style>{_CSS}</style></head><body>{''.join(body)}</body></html>\n")


def write(result, out, console=()):
    """Write the report into `out`: eye PNGs, bringup.md, bringup.html, console.log. Returns their paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("eye-*.png"):
        old.unlink()
    for step in result["steps"]:
        if step["name"] == "training":
            step["numbers"]["failing_lanes"] = sorted({l["name"] for eye in result["eyes"] for l in eye["lanes"]
                                                       if l["lo"] < 0})
    files = eye_files(result, out)
    paths = {"markdown": out / "bringup.md", "html": out / "bringup.html", "console": out / "console.log"}
    paths["markdown"].write_text(markdown(result, files))
    paths["html"].write_text(html_page(result, files))
    paths["console"].write_text("".join(f"nandlab> {c}\n{o}" for c, o in console))
    paths["eyes"] = sorted(files.values())
    return paths


def text_summary(result):
    """The lines `nandlab bringup` prints without --json."""
    lines = [f"nandlab bringup: {'PASS' if result['ok'] else 'FAIL'} ({_context_line(result)})"]
    for s in result["steps"]:
        lines.append(f"  {_status(s['ok']):<7} {s['title']}: {s['summary']}")
    if result.get("report"):
        lines.append(f"report: {result['report']['html']}")
    return "\n".join(lines)
