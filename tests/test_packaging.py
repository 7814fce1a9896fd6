"""Packaging: what `pip install .` puts in the package (every module of the trees, the data the CLI reads)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nandlab import env

# Source tree -> where it lands in the installed package.
TREES = {"sw/host/nandlab": "nandlab", "soc": "nandlab/soc", "gateware": "nandlab/gateware",
         "nand_model": "nandlab/nand_model"}
DATA = ["nandlab/web/monitor.html", "nandlab/web/monitor.js", "nandlab/gateware/power/harness_main.cpp",
        "nandlab/gateware/power/harness_skip.h",
        "nandlab/soc/targets/openocd_arty.cfg", "nandlab/soc/targets/openocd_colorlight_i5.cfg",
        "nandlab/sw/firmware/Makefile", "nandlab/sw/firmware/main.c", "nandlab/sw/firmware/dcc.h",
        "nandlab/sw/firmware/linker.ld", "nandlab/sw/sim/modules/telemetry2tcp/telemetry2tcp.c",
        "nandlab/sw/sim/modules/nandstore/nandstore.c", "nandlab/sw/sim/modules/nandstore/Makefile"]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The package as setuptools builds it for a wheel (build_py: modules and package data), from a
    copy of the sources so that the checkout gets no build files; returns (build lib, source copy)."""
    tmp = tmp_path_factory.mktemp("packaging")
    src = tmp / "src"
    for name in ("setup.py", "pyproject.toml", "requirements.txt"):
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(env.REPO / name, src / name)
    for tree in ("sw", "soc", "gateware", "nand_model"):
        shutil.copytree(env.REPO / tree, src / tree, ignore=shutil.ignore_patterns("__pycache__"))
    lib = tmp / "lib"
    out = subprocess.run([sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(lib)], cwd=src,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return lib, src


def _files(root):
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


@pytest.mark.unit
def test_package_holds_every_module_and_its_data(built):
    lib, _ = built
    files = _files(lib)
    expected = {f"{dest}/{p.relative_to(env.REPO / tree).as_posix()}"
                for tree, dest in TREES.items() for p in (env.REPO / tree).rglob("*.py") if "__pycache__" not in p.parts}
    expected |= {f"nandlab/nand_model/data/{p.name}" for p in (env.REPO / "nand_model" / "data").glob("*.hex")}
    expected |= {f"nandlab/sw/firmware/{p.name}" for p in env.FIRMWARE_DIR.iterdir() if p.is_file()}
    assert "nandlab/gateware/power/ring.py" in expected and "nandlab/gateware/telemetry/telemetry.py" in expected
    assert not expected - files, f"missing from the package: {sorted(expected - files)}"
    assert not set(DATA) - files, f"missing from the package: {sorted(set(DATA) - files)}"
    # Only the firmware and litex_sim module sources of sw/: not the host package a second time.
    assert not [f for f in files if f.startswith("nandlab/sw/host")]


@pytest.mark.unit
def test_package_dependencies_are_the_pins(built):
    _, src = built
    requires = (src / "nandlab.egg-info" / "requires.txt").read_text().split()
    pins = [l.strip() for l in (env.REPO / "requirements.txt").read_text().splitlines()
            if l.strip() and not l.startswith("#")]
    assert requires == pins


@pytest.mark.unit
def test_installed_layout_finds_its_data(built, tmp_path):
    """The built package imported from elsewhere (not the checkout): the power and telemetry gateware
    import, and the CLI's data (firmware sources, monitor page, harness main) is found in the package."""
    lib, _ = built
    code = ("import nandlab.gateware.power.ring, nandlab.gateware.telemetry.telemetry\n"
            "from importlib import resources\n"
            "from nandlab import env, webmonitor\n"
            "assert not env.SOURCE_CHECKOUT\n"
            "assert (env.FIRMWARE_DIR / 'dcc.c').exists() and (env.SIM_MODULES_DIR / 'telemetry2tcp').is_dir()\n"
            "assert b'monitor.js' in webmonitor._page_file('monitor.html')\n"
            "assert 'NANDLAB_HARNESS_DIES' in (resources.files('nandlab.gateware.power') / 'harness_main.cpp').read_text()\n"
            "print(nandlab.__file__)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(lib)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(lib / "nandlab" / "__init__.py")
