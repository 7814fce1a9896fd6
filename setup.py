"""What nandlab installs, found rather than listed (metadata and the rest are in pyproject.toml).

The host package sw/host/nandlab, with the SoC, gateware and die-emulator trees installed under it
(nandlab.soc, nandlab.gateware, nandlab.nand_model) and, as data, the sources the installed CLI
builds from: the firmware (nandlab/sw/firmware) and the litex_sim modules (nandlab/sw/sim).
Every directory of those trees is a package (regular or namespace), so a new subpackage or data
directory needs no line here; package data is every file of the kinds below.
"""

from setuptools import find_namespace_packages, setup

TREES = {
    "nandlab":            "sw/host/nandlab",
    "nandlab.soc":        "soc",
    "nandlab.gateware":   "gateware",
    "nandlab.nand_model": "nand_model",
    "nandlab.sw":         "sw",
}
# sw/ holds the host package itself (sw/host): only its firmware and litex_sim module sources go in as data.
ONLY = {"nandlab.sw": ["firmware", "sim", "sim.*"]}

# Data besides the Python modules: the live monitor page, the harness's C++ main, real parameter
# pages, OpenOCD configurations, firmware and litex_sim module sources.
DATA = ["*.html", "*.js", "*.cpp", "*.hex", "*.cfg", "*.c", "*.h", "*.S", "*.ld", "Makefile"]


def packages():
    out = []
    for name, where in TREES.items():
        found = find_namespace_packages(where, include=ONLY.get(name, ["*"]), exclude=["*__pycache__*"])
        out += [name] + [f"{name}.{p}" for p in found]
    return out


setup(package_dir=TREES, packages=packages(), package_data={"": DATA})
