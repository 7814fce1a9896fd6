"""Every bad input a clear error (issue 19): each case once through the CLI as a user runs it, with one
`nandlab: error:` line, a non-zero status, no traceback, nothing built or started first."""

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from nandlab.testing import run_cli as nandlab

pytestmark = pytest.mark.unit


def _error(out, code=2):
    """The one error line of a refused command (and no traceback)."""
    assert "Traceback" not in out.stderr, out.stderr
    lines = [l for l in out.stderr.splitlines() if l.startswith("nandlab: error: ")]
    assert len(lines) == 1, out.stderr
    assert out.returncode == code, (out.returncode, out.stderr)
    return lines[0]


def _no_build(tmp_path):
    """An environment whose build directory is `tmp_path/build` (to see that nothing is built)."""
    return {**os.environ, "NANDLAB_BUILD_DIR": str(tmp_path / "build")}


# Item 2: nand info reads the dumps its help names --------------------------------------------------

@pytest.fixture
def page(tmp_path):
    out = nandlab("nand", "page", "-o", str(tmp_path / "page.bin"))
    assert out.returncode == 0, out.stderr
    return tmp_path / "page.bin"


@pytest.mark.parametrize("tool", [["xxd"], ["xxd", "-g1"], ["xxd", "-a"], ["xxd", "-p"], ["hexdump", "-C"],
                                  ["hexdump", "-C", "-v"]])
def test_nand_info_reads_dumps(page, tool, tmp_path):
    from shutil import which
    assert which(tool[0]), f"{tool[0]} not installed: make env installs it (sw/host/bootstrap.sh)"
    dump = tmp_path / "page.txt"
    dump.write_text(subprocess.run([*tool, str(page)], capture_output=True, text=True, check=True).stdout)
    out = nandlab("nand", "info", str(dump))
    assert out.returncode == 0, out.stderr
    assert out.stdout == nandlab("nand", "info", str(page)).stdout.replace("page.bin", "page.txt")


def test_nand_info_dump_parser_matches_the_bytes():
    """The formats without the tools: hexdump -C's `*` and end offset, xxd's ASCII column (with '#' and
    '|' in it), plain hex with 0x, commas and comments."""
    from nandlab.dumps import parse_dump
    data = bytes(range(0x20, 0x30)) * 3 + b"#|ab" + bytes(12)
    hexdump = ("00000000  20 21 22 23 24 25 26 27  28 29 2a 2b 2c 2d 2e 2f  | !\"#$%&'()*+,-./|\n*\n"
               "00000030  23 7c 61 62 00 00 00 00  00 00 00 00 00 00 00 00  |#|ab............|\n00000040\n")
    assert parse_dump(hexdump) == data
    xxd = "".join(f"{i:08x}: " + " ".join(data[j:j + 2].hex() for j in range(i, i + 16, 2)) + "  "
                  + "".join(chr(b) if 32 <= b < 127 else "." for b in data[i:i + 16]) + "\n" for i in range(0, 64, 16))
    assert parse_dump(xxd) == data
    assert parse_dump("0x20, 0x21 # two\n2223\n") == bytes(range(0x20, 0x24))


@pytest.mark.parametrize("text, message", [
    ("hello world\n", "line 1: 'hello' is not hex"),
    ("00000000  4f 4e\n*\n", "ends with '*'"),
    ("0000000 4e4f 4946\n", "odd count of hex digits"),          # plain hexdump (byte-swapped words): refused
    ("00000000: 4f4e\n00000010: 4649\n", "line 2: offset 0x10 does not follow"),
])
def test_nand_info_refuses_text_that_is_no_dump(text, message, tmp_path):
    f = tmp_path / "page.txt"
    f.write_text(text)
    assert message in _error(nandlab("nand", "info", str(f)))


def test_nand_info_refuses_a_directory(tmp_path):
    assert "cannot read" in _error(nandlab("nand", "info", str(tmp_path)))


# Item 3: monitor and server ------------------------------------------------------------------------

@pytest.mark.parametrize("args, message", [
    (["--udp", "99999"], "--udp 99999 is not a port number"),
    (["--udp", "-1"], "--udp -1 is not a port number"),
    (["--web", "99999", "--udp", "5000"], "--web 99999 is not a port number"),
    (["--tcp", "127.0.0.1:0"], "--tcp 0 is not a port number"),
    (["--tcp", "nohost"], "expected HOST:PORT"),
    (["--udp", "5000", "--seconds", "0"], "--seconds 0.0: give a positive number"),
    (["--udp", "5000", "--connect-timeout", "nan"], "--connect-timeout nan"),
])
def test_monitor_refuses_bad_values_at_once(args, message):
    t0 = time.monotonic()
    out = nandlab("monitor", *args, timeout=60)
    assert message in _error(out)
    assert time.monotonic() - t0 < 30


def test_monitor_serial_names_the_missing_device_at_once(tmp_path):
    t0 = time.monotonic()
    out = nandlab("monitor", "--serial", str(tmp_path / "ttyNONE"), "--record", str(tmp_path / "rec"), timeout=60)
    line = _error(out, code=3)
    assert "ttyNONE" in line and "127.0.0.1" not in line and "is the board attached" in line
    assert time.monotonic() - t0 < 20


def test_monitor_udp_port_in_use_is_named_at_once(tmp_path):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("0.0.0.0", 0))
        port = s.getsockname()[1]
        out = nandlab("monitor", "--udp", str(port), "--record", str(tmp_path / "rec"), timeout=60)
    assert f"cannot listen on UDP 0.0.0.0:{port}" in _error(out)


def test_monitor_web_port_in_use(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        out = nandlab("monitor", "--web", str(port), "--udp", "5000", "--record", str(tmp_path / "rec"), timeout=60)
    assert f"cannot serve the monitor page on 127.0.0.1:{port}" in _error(out)


def test_server_jtag_without_a_probe_exits(tmp_path):
    """JTAGbone with no probe attached: OpenOCD fails in litex_server's thread; we end the server and say so."""
    from shutil import which
    assert which("openocd"), "openocd not installed: make env installs it (sw/host/bootstrap.sh)"
    from nandlab.simulator import free_tcp_port
    out = nandlab("server", "--target", "colorlight_i5", "--port", str(free_tcp_port()), timeout=120)
    assert "is the colorlight_i5 board attached" in _error(out, code=3)


def test_server_sim_without_a_simulator():
    from nandlab.simulator import free_tcp_port
    out = nandlab("server", "--bridge-port", str(free_tcp_port()), "--port", str(free_tcp_port()), timeout=120)
    assert "start 'nandlab sim' first" in _error(out)


@pytest.mark.parametrize("args, message", [
    (["--target", "arty", "--ip", "1.2.3"], "--ip '1.2.3' is not an IPv4 address"),
    (["--port", "70000"], "--port 70000 is not a port number"),
])
def test_server_refuses_bad_values(args, message):
    assert message in _error(nandlab("server", *args, timeout=60))


def test_sigterm_ends_what_a_command_started(tmp_path):
    """SIGTERM to nandlab runs its clean-up: here `nandlab server`'s litex_server (in a session of its
    own, as the interactive simulator's is) ends with it and frees its port."""
    from nandlab.simulator import free_tcp_port
    bridge = socket.socket()
    bridge.bind(("127.0.0.1", 0))
    bridge.listen()
    port = free_tcp_port()
    proc = subprocess.Popen([sys.executable, "-m", "nandlab.cli", "server", "--bridge-port",
                             str(bridge.getsockname()[1]), "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not _listening(port):
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.2)
        assert _listening(port)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
        bridge.close()
    assert proc.returncode == 128 + signal.SIGTERM and "nandlab: terminated" in err, err
    assert not _listening(port)


def test_sigterm_during_a_build_step(tmp_path):
    """SIGTERM while a step runs (its output goes to a log) ends the command as terminated, not as the
    step's failure."""
    proc = subprocess.Popen([sys.executable, "-m", "nandlab.cli", "build", "--target", "arty", "--no-compile"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_no_build(tmp_path))
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "build" / "arty" / "build.log").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM and "nandlab: terminated" in err, err
    assert "failed" not in err and "Traceback" not in err, err


def _listening(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


# Item 4: csr ---------------------------------------------------------------------------------------

CSR_CSV = """csr_base,ctrl,0xf0000000,,
csr_register,ctrl_scratch,0xf0000004,1,rw
csr_register,ctrl_bus_errors,0xf0000008,1,ro
csr_register,timebase_timestamp,0xf0001000,2,ro
csr_register,timebase_wide,0xf0001008,2,rw
"""


@pytest.fixture
def sim8(tmp_path):
    """A build directory holding only build/sim8 (as after 'make sim')."""
    (tmp_path / "build" / "sim8").mkdir(parents=True)
    (tmp_path / "build" / "sim8" / "csr.csv").write_text(CSR_CSV)
    return tmp_path


def test_csr_finds_the_only_simulator_build(sim8):
    out = nandlab("csr", "list", env=_no_build(sim8))
    assert out.returncode == 0, out.stderr
    assert "ctrl_scratch" in out.stdout


def test_csr_build_dir_and_csv_options(sim8):
    (sim8 / "build" / "sim16").mkdir()
    (sim8 / "build" / "sim16" / "csr.csv").write_text(CSR_CSV.replace("scratch", "other"))
    line = _error(nandlab("csr", "list", env=_no_build(sim8)))
    assert "several simulator builds (sim16, sim8)" in line and "--build-dir" in line
    out = nandlab("csr", "list", "--build-dir", str(sim8 / "build" / "sim16"))
    assert out.returncode == 0 and "ctrl_other" in out.stdout, out.stderr
    out = nandlab("csr", "list", "--csr-csv", str(sim8 / "build" / "sim8" / "csr.csv"))
    assert out.returncode == 0 and "ctrl_scratch" in out.stdout, out.stderr
    assert "not found" in _error(nandlab("csr", "list", "--build-dir", str(sim8)))


@pytest.mark.parametrize("args, message", [
    (["write", "ctrl_scratch"], "csr write ctrl_scratch needs a value"),
    (["write", "ctrl_scratch", "0x100000000"], "does not fit CSR 'ctrl_scratch' (32 bits"),
    (["write", "ctrl_scratch", "-1"], "does not fit CSR 'ctrl_scratch'"),
    (["write", "timebase_wide", "0x10000000000000000"], "(64 bits"),
    (["write", "ctrl_scratch", "x12"], "'x12' is not a number"),
    (["write", "ctrl_bus_errors", "1"], "read-only"),
    (["read", "ctrl_scratch", "5"], "csr read takes a name only"),
    (["read"], "needs a CSR name"),
    (["read", "nope"], "no CSR named 'nope'"),
    (["list", "--port", "0"], "--port 0 is not a port number"),
])
def test_csr_argument_errors_come_before_the_server(sim8, args, message):
    """No litex_server runs here: each of these is refused for what it is, not for the missing server."""
    line = _error(nandlab("csr", *args, env=_no_build(sim8)))
    assert message in line and "litex_server" not in line


def test_csr_takes_the_map_of_the_simulator_serving_the_port(sim8):
    from nandlab import simulator
    other = sim8 / "other.csv"
    other.write_text(CSR_CSV.replace("scratch", "noted"))
    env = _no_build(sim8)
    code = ("import sys; from nandlab import simulator; simulator.note_served(4321, sys.argv[1]); "
            "sys.stdout.write('ok'); sys.stdout.flush(); sys.stdin.read()")
    proc = subprocess.Popen([sys.executable, "-c", code, str(other)], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.read(2) == "ok"
        out = nandlab("csr", "list", "--port", "4321", env=env)
        assert "ctrl_noted" in out.stdout, out.stderr
        assert "ctrl_scratch" in nandlab("csr", "list", "--port", "4322", env=env).stdout
    finally:
        proc.communicate("")
    # The process that noted it is gone: the note is not used.
    assert "ctrl_scratch" in nandlab("csr", "list", "--port", "4321", env=env).stdout
    assert simulator  # (imported for the note's module)


# Item 5: sim options refused before the build ------------------------------------------------------

@pytest.mark.parametrize("args, message", [
    (["--alpha", "0"], "alpha = 0 is out of range"),
    (["--workload", "0"], "--workload 0"),
    (["--reads", "150"], "--reads 150: a percentage"),
    (["--workload", "10", "--reads", "-1"], "--reads -1"),
    (["--timeout", "0"], "--timeout 0.0"),
    (["--threads", "0"], "--threads 0 is out of range"),
    (["--bridge-port", "70000"], "--bridge-port 70000"),
    (["--server-port", "0"], "--server-port 0"),
    (["--nand-sdw", "--nand-blocks", "4"], "--nand-sdw: 4 blocks cannot give each of the 2 x 4 subplanes"),
    (["--dies", "2", "--nand-deviation", "20@2"], "--nand-deviation '20@2': die 2 is not one of the 2 dies (0..1)"),
    (["--nand-deviation", "200"], "--nand-deviation '200': level 200 % is outside -50..100 %"),
    (["--nand-deviation", "x"], "--nand-deviation 'x': expected LEVEL_PCT[:STRETCH_PCT][@DIES]"),
])
def test_sim_options_refused_before_building(args, message, tmp_path):
    out = nandlab("sim", "--non-interactive", *args, env=_no_build(tmp_path), timeout=120)
    assert message in _error(out)
    assert not (tmp_path / "build").exists()


def test_sim_bridge_port_in_use_refused_before_building(tmp_path):
    """A second simulator on a bridge port another one holds: named, with the way out, before any build
    (the simulator's own serial2tcp said only "Can't bind port" after the build)."""
    import socket
    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    held.listen()
    try:
        port = held.getsockname()[1]
        out = nandlab("sim", "--non-interactive", "--bridge-port", str(port), env=_no_build(tmp_path), timeout=120)
        assert f"--bridge-port {port}: the TCP port is in use" in _error(out) and "--bridge-port 0" in _error(out)
        assert not (tmp_path / "build").exists()
    finally:
        held.close()


# Item 6: tracebacks ---------------------------------------------------------------------------------

HEADER = "time_us,total_max,total_mean,pb,violations\n"


@pytest.mark.parametrize("content, message", [
    (HEADER + "1,nan,3,4,0\n", "line 2: total_max = nan is not a finite number"),
    (HEADER + "1,2,inf,4,0\n", "line 2: total_mean = inf is not a finite number"),
    (HEADER + "1,2,3,4,0\n2,2,3,4,0,9\n", "line 3: 6 fields where the header has 5"),
    (HEADER + "1,2,3,4\n", "line 2: 4 fields where the header has 5"),
    (HEADER + "1,2,3,0,0\n", "line 2: pb = 0: the power budget must be positive"),
    (HEADER + "1,2,3,-4,0\n", "pb = -4"),
    (HEADER + "1,2,3,1e300,0\n", "out of range"),
    (HEADER.strip() + ",pb\n1,2,3,4,0,4\n", "the column pb appears twice"),
    (HEADER + "1,x,3,4,0\n", "total_max = 'x' is not a number"),
    (b"\x89PNG\r\n\x1a\n\xff\xfe\x00", "not text"),
    (b"a,b\n\x00,1\n", "not a telemetry recording"),
    ("", "lacks the columns"),
])
def test_plot_refuses_bad_recordings(content, message, tmp_path):
    f = tmp_path / "rec.csv"
    (f.write_bytes if isinstance(content, bytes) else f.write_text)(content)
    assert message in _error(nandlab("plot", str(f)))


def test_plot_refuses_a_directory_and_a_missing_output_directory(tmp_path):
    assert "is a directory" in _error(nandlab("plot", str(tmp_path)))
    f = tmp_path / "rec.csv"
    f.write_text(HEADER + "1,2,3,4,0\n2,3,3,4,1\n")
    assert "no directory" in _error(nandlab("plot", str(f), "--out", str(tmp_path / "none" / "fig")))
    out = nandlab("plot", str(f), "--out", str(tmp_path / "fig"))
    assert out.returncode == 0 and (tmp_path / "fig_current.png").exists(), out.stderr


def test_report_die_bad_geometry_before_synthesis(tmp_path):
    assert "--blocks 0" in _error(nandlab("report", "die", "--blocks", "0", env=_no_build(tmp_path)))
    assert "--pages 0" in _error(nandlab("report", "die", "--pages", "0", env=_no_build(tmp_path)))
    assert not (tmp_path / "build").exists()


def test_nand_page_into_a_missing_directory(tmp_path):
    assert "cannot write" in _error(nandlab("nand", "page", "-o", str(tmp_path / "none" / "page.bin")))


@pytest.mark.parametrize("args, message", [
    (["--ratios", ","], "--ratios: ',' lists nothing"),
    (["--policies", ","], "--policies: ',' lists nothing"),
])
def test_experiment_empty_lists(args, message, tmp_path):
    assert message in _error(nandlab("experiment", "power", *args, env=_no_build(tmp_path)))
    assert not (tmp_path / "build").exists()


def test_output_into_head_is_quiet():
    """`nandlab ... | head`: the reader leaves early; no traceback, the status of a program ended by SIGPIPE."""
    for args in (["nand", "parts"], ["nand", "info"], ["--help"]):
        p = subprocess.run(f"{sys.executable} -m nandlab.cli {' '.join(args)} | head -c 1 >/dev/null; "
                           "echo ${PIPESTATUS[0]} >&2", shell=True, executable="/bin/bash", capture_output=True,
                           text=True, timeout=120)
        assert "Traceback" not in p.stderr and "Exception ignored" not in p.stderr, (args, p.stderr)
        assert p.stderr.strip().splitlines()[-1] in ("0", "141"), (args, p.stderr)


# Item 7: accepted silently before ------------------------------------------------------------------

@pytest.mark.parametrize("args, message", [
    (["--target", "arty", "--nand-dies", "0"], "--nand-dies 0 is out of range"),
    (["--target", "colorlight_i5", "--nand-dies", "1000"], "--nand-dies 1000 is out of range"),
    (["--target", "arty", "--eth-ip", "300.1.1.1"], "--eth-ip '300.1.1.1' is not an IPv4 address"),
    (["--target", "colorlight_i5", "--eth-ip", "board"], "--eth-ip 'board'"),
    (["--target", "arty", "--telemetry-ip", "224.0.0.1"], "--telemetry-ip 224.0.0.1: a unicast address"),
    (["--target", "arty", "--nand-channels", "9"], "--nand-channels 9"),
    (["--target", "arty", "--nand-blocks", "3"], "3 blocks do not divide into 2 planes"),
    (["--target", "colorlight_i5", "--sys-clk-freq", "0"], "--sys-clk-freq 0"),
    (["--target", "arty", "--nand-dies", "2", "--nand-deviation", "10@5"],
     "--nand-deviation '10@5': die 5 is not one of the 2 dies (0..1)"),
])
def test_board_build_options_refused_before_generating(args, message, tmp_path):
    out = nandlab("build", "--no-compile", *args, env=_no_build(tmp_path), timeout=120)
    assert message in _error(out)
    assert not (tmp_path / "build").exists()


@pytest.mark.parametrize("args, message", [
    (["info", "--sys-clk-mhz", "0"], "--sys-clk-mhz 0.0"),
    (["info", "--sys-clk-mhz", "nan"], "--sys-clk-mhz nan"),
    (["info", "--scale-blocks", "1000000"], "need 4 row address cycles; NL-SLC-2K has 3"),
    (["info", "--scale-blocks", "0"], "--scale-blocks 0"),
    (["page", "--copies", "0", "-o", "x.bin"], "--copies 0"),
    (["page", "--copies", "-1", "-o", "x.bin"], "--copies -1"),
])
def test_nand_values_out_of_range(args, message, tmp_path):
    out = subprocess.run([sys.executable, "-m", "nandlab.cli", "nand", *args], capture_output=True, text=True,
                         cwd=tmp_path, timeout=120)
    assert message in _error(out)
    assert not (tmp_path / "x.bin").exists()


# Item 9 ---------------------------------------------------------------------------------------------

def test_version():
    from nandlab import env
    out = nandlab("--version")
    assert out.returncode == 0, out.stderr
    from importlib import metadata
    assert out.stdout.startswith(f"nandlab {metadata.version('nandlab')}")
    if env.SOURCE_CHECKOUT:
        assert "(source " in out.stdout
