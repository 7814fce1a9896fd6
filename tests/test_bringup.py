"""`nandlab bringup`: its arguments refused before any build, the firmware's output parsed, the report rendered
(eyes as PNGs, Markdown, HTML in a real browser), and a simulated run whose trained windows are the pin model's,
whose parameter page is the part's and whose written pages read back as the host computes them."""

import json
import re
import shutil
import subprocess

import pytest

from nandlab import bringup, bringup_report
from nandlab.bringup_parse import (LANE_NAMES, ctl_test_seed, firmware_pattern, parse_badblocks, parse_ctl_read,
                                   parse_eye, parse_features, parse_param_raw, passing_window)
from nandlab.cli import check_command_line
from nandlab.errors import NandLabError
from nandlab.gateware.onfi.pinphy import DELAY_TAP_PS, DELAY_TAPS
from nandlab.nand_model.pinmodel import expected_windows, random_lane_timings, reads_right, training
from nandlab.testing import run_cli


# Arguments ----------------------------------------------------------------------------------------

@pytest.mark.unit
@pytest.mark.parametrize("argv, message", [
    (["--target", "ecpix5"], "unknown bring-up target 'ecpix5'"),
    (["--target", "sim", "--blocks", "7-3"], "is before the first"),
    (["--target", "sim", "--blocks", "1-1024"], "blocks 0..1023"),
    (["--target", "sim", "--blocks", "a-b"], "give a block range"),
    (["--target", "sim", "--pages", "0"], "1..64 pages"),
    (["--target", "sim", "--skew-seed", "-1"], "0 or more"),
    (["--target", "arty", "--skew-seed", "3"], "--skew-seed is for the sim target"),
    (["--target", "colorlight_i5", "--family", "ecp5"], "--family is for the sim target"),
    (["--target", "sim", "--socket"], "--socket is for the board targets"),
    (["--target", "sim", "--serial", "/dev/ttyUSB0"], "--serial is for the board targets"),
    (["--target", "colorlight_i5", "--blocks", "0-2"], "blocks 0..1"),
    (["--target", "sim", "--timeout", "0"], "positive"),
])
def test_arguments_refused_before_any_build(argv, message):
    with pytest.raises(NandLabError, match=re.escape(message)):
        check_command_line(["bringup", *argv])


@pytest.mark.unit
def test_arguments_taken():
    args = check_command_line(["bringup", "--target", "sim", "--blocks", "3-5", "--skew-seed", "7"])
    assert args.block_range == (3, 5)
    assert check_command_line(["bringup", "--target", "colorlight_i5"]).block_range == (1, 1)    # its die: 2 blocks
    # With the socket the chip's page gives the geometry (checked at run time).
    assert check_command_line(["bringup", "--target", "arty", "--socket", "--blocks", "100-200"]).block_range == (100, 200)


@pytest.mark.unit
def test_board_without_loader_or_board_is_one_line(tmp_path):
    """No board here: the board target fails with one line naming what it looked for (no traceback, no build)."""
    out = run_cli("bringup", "--target", "colorlight_i5", "--out", str(tmp_path / "r"), timeout=120)
    assert out.returncode == 3, out
    lines = out.stderr.strip().splitlines()
    assert lines[-1].startswith("nandlab: error: ") and "Traceback" not in out.stderr
    assert re.search(r"openFPGALoader|no colorlight_i5 found|console UART", lines[-1])
    assert not (tmp_path / "r").exists()


# Parsing ------------------------------------------------------------------------------------------

def firmware_eye_text(lanes, family, die=0, mode=5):
    """What 'train eye' prints for lanes of the model's timings (train.c's format): each DQ lane's errors where
    the model's training says it reads wrong with DQS at its centre; DQS's where its sweep does not show the
    DQ lanes of its window right."""
    taps = DELAY_TAPS[family]
    tr = training(lanes, family)
    lines = [f"eye die={die} mode={mode} taps={taps} tap_ps={DELAY_TAP_PS[family]} pattern_bytes=256 ok=1 verify_errors=0"]
    for i in range(len(lanes)):
        errs = [0 if tr.passes[i][k] else 100 + i for k in range(taps)]
        w = tr.windows[i]
        lo, hi = w if w else (-1, -1)
        lines.append(f"eye lane={LANE_NAMES[i]} lo={lo} hi={hi} tap={(lo + hi) // 2 if w else 0} "
                     f"errors={','.join(map(str, errs))}")
    return "\n".join(lines) + "\n"


@pytest.mark.unit
@pytest.mark.parametrize("family", ["xc7", "ecp5"])
def test_eye_parsing_gives_the_models_windows(family):
    for seed in range(6):
        lanes = random_lane_timings(seed)
        eye = parse_eye("junk before\n" + firmware_eye_text(lanes, family) + "nandlab> ")
        assert eye["taps"] == DELAY_TAPS[family] and eye["tap_ps"] == DELAY_TAP_PS[family]
        assert [l["name"] for l in eye["lanes"]] == LANE_NAMES
        for lane, want in zip(eye["lanes"], expected_windows(lanes, family)):
            assert passing_window(lane["errors"]) == want


@pytest.mark.unit
def test_eye_with_lost_output_is_refused():
    text = firmware_eye_text(random_lane_timings(1), "xc7")
    with pytest.raises(NandLabError, match="taps read"):
        parse_eye(text.replace(",0,", ",", 1))
    with pytest.raises(NandLabError, match="lanes"):
        parse_eye("\n".join(l for l in text.splitlines() if "lane=DQ3" not in l))


@pytest.mark.unit
def test_parsers_of_the_other_commands():
    from nandlab.nand_model.parts import get_part
    from nandlab.nand_model import param_page as pp
    data = get_part("NL-SLC-2K").param_page(copies=3)
    dump = "".join(f"param {i:04x}:" + "".join(f" {b:02x}" for b in data[i:i + 32]) + "\n" for i in range(0, len(data), 32))
    assert parse_param_raw("die 0: ...\n" + dump + "die 0: NANDLAB NL-SLC-2K\n") == data
    assert not pp.inspect(parse_param_raw(dump)).errors
    f = parse_features("features die=0 address=0x01 result=OK p1=0x15 p2=0x00 p3=0x00 p4=0x00\n")
    assert (f["interface"], f["mode"]) == ("NV-DDR", 5)
    assert parse_badblocks("badblocks die=0 first=0 last=1023 bad=5,7?,9\n")[0] == \
        {"first": 0, "last": 1023, "bad": [5, 9], "unread": [7]}
    want = firmware_pattern(32, ctl_test_seed(0, 0, 1, 3))
    text = "die 0 block 1 page 3: read OK\n" + "".join(
        "  " + " ".join(f"{b:02x}" for b in want[i:i + 16]) + "\n" for i in range(0, 32, 16)) + "  ECC: 0 bits\n"
    assert parse_ctl_read(text) == ("OK", want)
    # The pattern of cmds_ctl.c, a value worked out by hand from its LCG (seed 259: x0 = 259 * 2654435761 + 1).
    x = (259 * 2654435761 + 1) % 2**32
    x = (x * 1103515245 + 12345) % 2**32
    assert want[0] == x >> 16 & 0xff


class ScriptedShell:
    """A firmware shell answering from a table (the firmware's own output formats); records the lines."""
    def __init__(self, answers):
        self.answers, self.lines = answers, []

    def command(self, line, timeout):
        self.lines.append(line)
        return self.answers.get(line, f"error: unknown command '{line}'\n")


@pytest.mark.unit
def test_socket_runs_on_the_last_channel():
    """--socket: the bit-bang commands go to the socket ('nand socket on'), the ctl commands to the last
    channel, and bring-up is judged on that channel's line; a SoC without a socket fails the first step."""
    from nandlab.bringup_parse import parse_bringup, parse_channels
    out = "die 0: ONFI ...\n1 of 1 dies up, NV-DDR mode 5\nch 2: die 0: ONFI ...\nch 2: 1 of 2 dies up, async SDR mode 4\n"
    assert parse_bringup(out)["mode"] == 5 and parse_bringup(out, 2) == \
        {"up": 1, "dies": 2, "interface": "async SDR", "mode": 4}
    assert parse_channels("ctl: channel 0 of 0..2, not brought up\n") == 2
    shell = ScriptedShell({"nand socket on": "nand commands use the socket (2 dies)\n",
                           "ctl ch": "ctl: channel 0 of 0..2, not brought up\n",
                           "ctl ch 2": "ctl: channel 2 of 0..2, not brought up\n"})
    b = bringup.Bringup(shell, (1, 1), socket=True)
    b.run()
    assert shell.lines[:4] == ["nand socket on", "ctl ch", "ctl ch 2", "nand scan"] and b.channel == 2
    assert b.steps[0]["name"] == "id" and b.steps[0]["ok"] is False      # (the table has no 'nand scan')
    shell = ScriptedShell({"nand socket on": "error: this SoC has no NAND socket (build it with --nand-socket)\n",
                           "ctl ch": "ctl: channel 0 of 0..0, not brought up\n"})
    steps = bringup.Bringup(shell, (1, 1), socket=True).run()
    assert len(steps) == 1 and steps[0]["ok"] is False and "no NAND socket" in steps[0]["summary"]


# The report ---------------------------------------------------------------------------------------

def constructed_result(seed=4, family="xc7", fail_wre=False):
    """A run's result built from the pin model: eyes as the firmware reports them for seed's lanes."""
    lanes = random_lane_timings(seed)
    eye = parse_eye(firmware_eye_text(lanes, family))
    for lane, want in zip(eye["lanes"], expected_windows(lanes, family)):
        lane["model"] = want
    steps = [{"name": n, "title": t, "ok": True, "summary": f"{t} fine", "numbers": {}} for n, t in bringup.STEPS]
    if fail_wre:
        steps[-1].update(ok=False, summary="12 bytes differ")
    return {"target": "sim", "context": {"target": "sim", "family": family, "seed": seed}, "die": "NL-SLC-2K",
            "ok": not fail_wre, "duration_s": 1.0, "mode": {"interface": "NV-DDR", "mode": 5}, "steps": steps,
            "eyes": [eye], "lanes": LANE_NAMES}


@pytest.mark.unit
def test_report_has_every_lane_step_and_hint(tmp_path):
    result = constructed_result(fail_wre=True)
    paths = bringup_report.write(result, tmp_path, console=[("nand scan", "die 0: ...\n")])
    md, page = paths["markdown"].read_text(), paths["html"].read_text()
    assert len(paths["eyes"]) == 9 and all((tmp_path / p).stat().st_size > 5000 for p in paths["eyes"])
    for name, title in bringup.STEPS:
        assert title in md and title in page
    assert "FAIL" in md and "what to check" in md and "WP#" in md
    for lane in result["eyes"][0]["lanes"]:
        lo, hi = lane["model"]
        assert re.search(rf"\| {lane['name']} \| {lane['lo']}\.\.{lane['hi']} \|.*\| {lo}\.\.{hi} \|", md)
        assert f"eye-die0-mode5-{lane['name']}.png" in page
    assert "nandlab> nand scan" in paths["console"].read_text()


@pytest.mark.unit
def test_board_hints_name_the_socket_pins():
    step = {"name": "training", "numbers": {"failing_lanes": ["DQ3"]}}
    hints = bringup_report.hints_for(step, "arty")
    assert hints[0] == "lane DQ3: pin C15 (JB pin 4)"                 # constraints/nand_socket.md's table
    assert any("U12 (JC pin 1)" in h for h in hints)                  # DQS
    assert any("jumper" in h for h in bringup_report.hints_for({"name": "wre"}, "colorlight_i5"))


@pytest.mark.unit
def test_report_renders_in_chromium(tmp_path):
    """The HTML report in headless Chromium: every eye image loaded (naturalWidth, read by a script added to a copy
    of the page), and the screenshot shows the eyes' pass and fail bars."""
    import matplotlib.image as mpimg
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "chromium is installed by 'make' (sw/host/bootstrap.sh)"
    # (The trained draw whose eyes fail at the most taps: red bars to find.)
    seed = max((s for s in range(40) if not training(random_lane_timings(s), "xc7").error),
               key=lambda s: sum(not ok for p in training(random_lane_timings(s), "xc7").passes for ok in p))
    paths = bringup_report.write(constructed_result(seed), tmp_path)
    probe = tmp_path / "probe.html"
    script = ("<script>window.addEventListener('load',()=>{const i=[...document.images];document.body.setAttribute("
              "'data-loaded',i.filter(x=>x.complete&&x.naturalWidth>0).length+'/'+i.length)});</script>")
    probe.write_text(paths["html"].read_text().replace("</body>", script + "</body>"))
    flags = ["--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1400,1400",
             "--virtual-time-budget=4000", "--allow-file-access-from-files", f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([chromium, *flags, "--dump-dom", probe.as_uri()], capture_output=True, text=True, timeout=120)
    assert 'data-loaded="9/9"' in dom.stdout, dom.stdout[-1500:]
    shot = tmp_path / "report.png"
    subprocess.run([chromium, *flags, f"--screenshot={shot}", paths["html"].as_uri()], capture_output=True, text=True,
                   timeout=120)
    img = mpimg.imread(shot)
    assert img.shape[0] >= 1000 and img.shape[1] >= 1000
    assert (img[..., :3].min(axis=2) < 0.9).mean() > 0.05            # not blank
    green = (abs(img[..., 0] - 0x2a / 255) < 0.05) & (abs(img[..., 1] - 0x9d / 255) < 0.05)
    red = (abs(img[..., 0] - 0xc0 / 255) < 0.05) & (abs(img[..., 1] - 0x39 / 255) < 0.05) & (img[..., 2] < 0.3)
    assert green.sum() > 200 and red.sum() > 200, (green.sum(), red.sum())


# The simulated run --------------------------------------------------------------------------------

@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.parametrize("seed", [8, 13])
def test_sim_bringup_matches_the_model(tmp_path, seed):
    """`nandlab bringup --target sim` end to end (the pin-model build tests/test_pin_training.py makes): every
    lane's window within one tap of the skew model's, the parameter page the part's (CRC and bytes), the factory
    bad blocks the simulator's, the pages written read back as the host computes them."""
    from nandlab.nand_model import param_page as pp
    from nandlab.nand_model.parts import get_part
    from nandlab.soc.targets.sim import NAND_BLOCKS, NAND_PAGES, NAND_PART, sim_bad_blocks
    out_dir = tmp_path / "report"
    out = run_cli("bringup", "--target", "sim", "--skew-seed", str(seed), "--blocks", "1-2", "--pages", "2", "--json",
                  "--out", str(out_dir), timeout=3600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "step 4/6: Read training" in out.stderr             # progress on stderr
    r = json.loads(out.stdout)
    steps = {s["name"]: s for s in r["steps"]}
    assert r["ok"] and all(s["ok"] for s in steps.values()), steps
    # Windows against the skew model (computed here from the seed's lane timings).
    (eye,) = r["eyes"]
    for lane, want in zip(eye["lanes"], expected_windows(random_lane_timings(seed), "xc7")):
        assert want and abs(lane["lo"] - want[0]) <= 1 and abs(lane["hi"] - want[1]) <= 1, (lane["name"], lane, want)
        assert lane["lo"] <= lane["tap"] <= lane["hi"]
    # The parameter page as read, against the part database's page and its own CRC.
    console = (out_dir / "console.log").read_text()
    raw = parse_param_raw(console[console.index("nandlab> nand param 0 raw"):])
    assert raw == get_part(NAND_PART).scaled(blocks_per_lun=NAND_BLOCKS, pages_per_block=NAND_PAGES).param_page(copies=3)
    assert pp.crc16(raw[:254]) == int.from_bytes(raw[254:256], "little")
    # Mode: the highest NV-DDR mode the page announces, confirmed by GET FEATURES.
    assert r["mode"] == {"interface": "NV-DDR", "mode": max(pp.inspect(raw).nvddr_modes)}
    assert steps["badblocks"]["numbers"]["bad"]["0"] == list(sim_bad_blocks(NAND_BLOCKS)(0))
    wre = steps["wre"]["numbers"]
    assert wre["blocks"] == 2 and wre["differ"] == 0 and wre["uncorrectable"] == 0
    assert wre["shadow_pages"] == 4 and wre["shadow_differ"] == 0
    assert len(list(out_dir.glob("eye-die0-mode5-*.png"))) == 9 and (out_dir / "bringup.html").exists()
