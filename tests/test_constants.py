"""One definition per constant (DESIGN.md decision 10): the headers the firmware builds against carry
the Python definitions, the firmware keeps no copies, and the host's typed power control uses them."""

import re
from pathlib import Path

import pytest

from nandlab import env
from nandlab.errors import NandLabError

FIRMWARE = env.REPO / "sw" / "firmware"


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """The sim SoC's generated soc.h, csr.h and csr.csv (no gateware, no software: seconds)."""
    from nandlab.soc.targets.sim import generate_headers
    out = tmp_path_factory.mktemp("headers")
    soc = generate_headers(out)
    inc = out / "software" / "include" / "generated"
    return soc, (inc / "soc.h").read_text(), (inc / "csr.h").read_text(), (out / "csr.csv").read_text()


@pytest.fixture(scope="module")
def generated_pin(tmp_path_factory):
    """The same for the sim SoC with the pin-level die model (the pin PHY's CSRs and constants, which
    the read training uses)."""
    from nandlab.soc.targets.sim import generate_headers
    out = tmp_path_factory.mktemp("headers_pin")
    soc = generate_headers(out, dies=1, pin_model={"family": "xc7"})
    inc = out / "software" / "include" / "generated"
    return soc, (inc / "soc.h").read_text(), (inc / "csr.h").read_text()


def _defines(text):
    """#define NAME value of a generated header; strings unquoted, numbers as int."""
    out = {}
    for name, value in re.findall(r"^#define (\w+) (.+)$", text, re.M):
        value = value.strip()
        out[name] = value[1:-1] if value.startswith('"') else int(value, 0) if re.fullmatch(r"-?(0x)?[0-9a-fA-F]+", value) else value
    return out


@pytest.mark.unit
def test_soc_header_carries_the_python_definitions(generated):
    from nandlab.gateware.onfi import common as onfi
    from nandlab.gateware.onfi.controller import OPS, RESULTS
    from nandlab.gateware.power import common as power
    from nandlab.nand_model import param_page
    _, soc_h, _, _ = generated
    h = _defines(soc_h)
    sep = h["NANDLAB_LIST_SEPARATOR"]
    assert h["NANDLAB_POWER_POLICIES"].split(sep) == power.POLICIES
    assert h["NANDLAB_POWER_RING_ERRORS"].split(sep) == power.RING_ERRORS
    assert (h["NANDLAB_POWER_TG_MIN"], h["NANDLAB_POWER_TG_MAX"]) == power.TG_RANGE
    assert (h["NANDLAB_POWER_ALPHA_MIN"], h["NANDLAB_POWER_ALPHA_MAX"]) == power.ALPHA_RANGE
    assert (h["NANDLAB_POWER_DEFAULT_TG"], h["NANDLAB_POWER_DEFAULT_ALPHA"]) == (power.DEFAULT_TG, power.DEFAULT_ALPHA)
    assert h["NANDLAB_POWER_STOPPED_ALPHA"] == power.STOPPED_ALPHA
    assert h["NANDLAB_CTRL_RESULTS"].split(sep) == RESULTS
    assert {n: h[f"NANDLAB_CTRL_OP_{n}"] for n in OPS} == OPS
    assert [h[f"NANDLAB_CTRL_RESULT_{r}"] for r in RESULTS] == list(range(len(RESULTS)))
    commands = {n: v for n, v in vars(onfi).items() if n.startswith("CMD_")}
    assert commands and all(h[f"NANDLAB_ONFI_{n}"] == v for n, v in commands.items())
    assert h["NANDLAB_ONFI_READ_ID_ONFI"] == onfi.READ_ID_ONFI and h["NANDLAB_ONFI_STATUS_FAIL"] == onfi.STATUS_FAIL
    assert h["NANDLAB_ONFI_FEATURE_TIMING_MODE"] == onfi.FEATURE_TIMING_MODE
    assert (h["NANDLAB_ONFI_TIMING_MODE_P1_INTERFACE_OFFSET"], h["NANDLAB_ONFI_TIMING_MODE_P1_INTERFACE_SIZE"]) == \
        onfi.TIMING_MODE_P1_INTERFACE
    interfaces = h["NANDLAB_ONFI_INTERFACES"].split(sep)
    assert {code: interfaces[code] for code in onfi.INTERFACE_NAMES} == onfi.INTERFACE_NAMES
    assert h["NANDLAB_ONFI_PARAM_PAGE_BYTES"] == param_page.PAGE_SIZE
    assert h["NANDLAB_ONFI_PARAM_SDR_TIMING_MODES"] == param_page.FIELDS["sdr_timing_modes"].offset
    assert h["NANDLAB_ONFI_PARAM_CRC"] == param_page.FIELDS["crc"].offset


@pytest.mark.unit
def test_csr_h_has_every_field_the_firmware_uses(generated, generated_pin):
    """Each HAL_FIELD_*(REG, FIELD) in the firmware is a field csr.h generated from a CSRField, at the
    offset and size the core declared; every NANDLAB_* name the firmware uses is generated (by the sim
    SoC, or by the one with the pin PHY for the read training's)."""
    soc, soc_h, csr_h, _ = generated
    pin_soc, pin_soc_h, pin_csr_h = generated_pin
    h = {**_defines(pin_csr_h), **_defines(csr_h)}
    sources = {p.name: p.read_text() for p in sorted(FIRMWARE.glob("*.[ch]"))}
    used = {(reg, field) for text in sources.values()
            for reg, field in re.findall(r"HAL_FIELD_(?:GET|PUT|MASK)\((\w+), (\w+)", text) if reg != "reg"}
    assert ("POWER_RING_CONFIG", "TG") in used and ("TELEMETRY_STATUS", "COUNTING") in used
    declared = {}
    for owner, name in [(soc, n) for n in ("power_ring", "power_monitor", "telemetry", "nand_ctrl", "nand_bitbang")] + [(pin_soc, "nand_phy")]:
        for csr in getattr(owner, name).get_csrs():
            for f in getattr(getattr(csr, "fields", None), "fields", []):
                declared[(f"{name}_{csr.name}".upper(), f.name.upper())] = (f.offset, f.size)
    for reg, field in sorted(used):
        assert (h[f"CSR_{reg}_{field}_OFFSET"], h[f"CSR_{reg}_{field}_SIZE"]) == declared[(reg, field)], (reg, field)
    # NANDLAB_HOST: the -D of the firmware's host builds (sw/firmware/host/Makefile), not the SoC's.
    from nandlab.gateware.onfi.pinphy import FAMILIES
    import tempfile
    from nandlab.firmware import token_header
    with tempfile.TemporaryDirectory() as tmp:       # nandlab_tokens.h, generated from the SoC's csr.csv
        (Path(tmp) / "csr.csv").write_text(generated[3])
        tokens_h = token_header(Path(tmp) / "csr.csv")
    generated_names = set(_defines(soc_h)) | set(_defines(pin_soc_h)) | set(h) | set(_defines(tokens_h)) | {"NANDLAB_HOST"}
    generated_names |= {f"NANDLAB_NAND_PHY_FAMILY_{f.upper()}" for f in FAMILIES}   # (one, the PHY's family)
    # Dies with their statistics in memory (the ECPIX-5's; nand_die_stats="memory") list them.
    from nandlab.soc.targets.sim import NandLabSimSoC
    stats_soc = NandLabSimSoC(nand_dies=1, nand_die_stats="memory")
    stats_soc.finalize()
    generated_names |= set(stats_soc.constants)
    own = {n for text in sources.values() for n in re.findall(r"#define (NANDLAB_\w+)", text)}
    for name, text in sources.items():
        for n in set(re.findall(r"\bNANDLAB_[A-Z0-9_]*[A-Z0-9]\b", text)) - own:
            # The socket's (board targets built --nand-socket): test_pinphy checks them in those builds.
            if not n.endswith("_H") and not n.startswith("NANDLAB_NAND_SOCKET_"):
                assert n in generated_names, f"{name}: {n} is not generated"


@pytest.mark.unit
def test_csr_csv_rows_stay_five_columns(generated):
    """List constants must not break csr.csv (LiteX's RemoteClient unpacks five columns a row)."""
    _, _, _, csv = generated
    rows = [line.split(",") for line in csv.splitlines() if line and not line.startswith("#")]
    assert all(len(r) == 5 for r in rows)
    assert ["constant", "nandlab_power_policies", "npm;ppm;mtpm;kmtpm_atomic;kmtpm_sub;mtpm_nokey", "", ""] in rows


@pytest.mark.unit
def test_firmware_keeps_no_copies():
    from nandlab.gateware.onfi.controller import RESULTS
    from nandlab.gateware.power.common import POLICIES, RING_ERRORS
    text = "\n".join(p.read_text() for p in FIRMWARE.glob("*.[ch]"))
    strings = set(re.findall(r'"([^"\\]*)"', text))
    assert not strings & (set(POLICIES) | set(RING_ERRORS[1:]) | set(RESULTS[1:]))
    assert not re.search(r'hal_csr_find\("(power|telemetry)_', text)
    assert "#ifndef NANDLAB_CTRL_OP" not in text and "#ifdef NANDLAB_CTRL_OP" not in text
    assert not re.search(r"onfi_command\(\w+, 0x", text)


# The host's typed power control, on a stand-in for RemoteClient that plays the ring's registers.

class _Reg:
    def __init__(self, bus, name):
        self.bus, self.name = bus, name

    def read(self):
        return self.bus.read(self.name)

    def write(self, value):
        self.bus.writes.append((self.name, value))
        self.bus.write(self.name, value)


class FakeBus:
    def __init__(self, refuse=0, constants=None):
        from nandlab.soc.constants import constants as exported
        self.constants = type("C", (), {})()
        self.constants.d = constants if constants is not None else \
            {k.lower(): str(v).lower() if isinstance(v, str) else v for k, v in exported().items()}
        self.constants.d.setdefault("nandlab_die_part", "nl-slc-2k")
        self.regs = type("R", (), {})()
        for name in ("power_ring_config", "power_ring_table", "power_ring_status", "timebase_latch",
                     "timebase_timestamp", "power_monitor_clear", "power_monitor_windows",
                     "power_monitor_violations", "power_monitor_max", "power_monitor_pb"):
            setattr(self.regs, name, _Reg(self, name))
        self.writes, self.status, self.refuse, self.time = [], 0, refuse, 0

    def read(self, name):
        if name == "timebase_timestamp":
            self.time += 100
            return self.time
        return self.status if name == "power_ring_status" else 0

    def write(self, name, value):
        from nandlab.control import CONFIG, STATUS, pack, unpack
        if name == "power_ring_config" and unpack(CONFIG, value)["apply"]:
            c = unpack(CONFIG, value)
            self.status = pack(STATUS, error=self.refuse) if self.refuse else \
                pack(STATUS, running=1, mode=c["mode"], tt=c["alpha"] * (2**c["tg"] - 1))


@pytest.mark.unit
def test_power_control_loads_the_table_and_applies():
    from nandlab import tokens
    from nandlab.control import CONFIG, TABLE, PowerControl, unpack
    from nandlab.nand_model.parts import get_part
    bus = FakeBus()
    state = PowerControl(bus).configure("kmtpm_sub", tg=3, alpha=2)
    assert state.running and state.policy == "kmtpm_sub" and state.tt == 14
    config = [unpack(CONFIG, v) for n, v in bus.writes if n == "power_ring_config"]
    assert config[0]["table_clear"] == 1 and not config[0]["apply"]
    assert {k: config[-1][k] for k in ("mode", "tg", "alpha", "apply")} == {"mode": 4, "tg": 3, "alpha": 2, "apply": 1}
    table = [(unpack(TABLE, v)["oi"], unpack(TABLE, v)["rt"]) for n, v in bus.writes if n == "power_ring_table"]
    want = {oi: rt for oi, rt, _ in tokens.compile_tables(get_part("NL-SLC-2K"), tg=3, alpha=2).words()}
    # And the SoC's transfers (gateware/power/xfer.py): data output 0x51, data input 0x81, each a die moving
    # two bytes a cycle at 0.04 I_max, 0.08 I_max = 0.56 of a token at TG 3: 1 token.
    want.update({0x51: 1, 0x81: 1})
    assert table == sorted(want.items()) and table
    # The clear finished (time base read) before the first entry went in.
    names = [n for n, _ in bus.writes]
    assert names.index("timebase_latch") < names.index("power_ring_table")


@pytest.mark.unit
@pytest.mark.parametrize("kwargs, message", [
    (dict(policy="fast"), r"unknown policy 'fast' \(valid: npm, ppm, mtpm"),
    (dict(policy="mtpm", tg=6), r"TG = 6 is out of range: the ring supports TG 2..5"),
    (dict(policy="mtpm", alpha=0), r"alpha = 0 is out of range"),
    (dict(policy="mtpm", tg="4"), r"TG = '4' is not an integer"),
])
def test_power_control_refuses_bad_arguments(kwargs, message):
    from nandlab.control import PowerControl
    bus = FakeBus()
    with pytest.raises(NandLabError, match=message):
        PowerControl(bus).configure(**kwargs)
    assert bus.writes == []          # Checked before the ring is touched.


@pytest.mark.unit
def test_power_control_reports_refusals_and_stale_socs():
    from nandlab.control import PowerControl
    with pytest.raises(NandLabError, match="the ring refused mtpm TG 4 alpha 4: a table RT above TT"):
        PowerControl(FakeBus(refuse=3)).configure("mtpm")
    bus = FakeBus()
    bus.constants.d["nandlab_power_policies"] = "npm;ppm"
    with pytest.raises(NandLabError, match="power policies .* are not this host's"):
        PowerControl(bus)
    with pytest.raises(NandLabError, match="exports no power policies"):
        PowerControl(FakeBus(constants={}))
