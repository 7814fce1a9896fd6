"""Build the nandlab firmware against a LiteX build directory (its variables.mak, regions.ld, csr.h)."""

import subprocess
from pathlib import Path

from nandlab import env
from nandlab.csrmap import CSRMap
from nandlab.errors import NandLabError, MissingToolError


def build_firmware(build_dir, jobs=2, quiet=True):
    """Compile sw/firmware for the SoC built in `build_dir`; returns the path of firmware.bin."""
    build_dir = Path(build_dir).resolve()
    generated = build_dir / "software" / "include" / "generated"
    if not (generated / "variables.mak").exists():
        raise NandLabError(f"{build_dir} holds no generated software headers; build the SoC first")
    if env.which("riscv64-unknown-elf-gcc") is None:
        raise MissingToolError("riscv64-unknown-elf-gcc not found: install it with 'apt-get install gcc-riscv64-unknown-elf' (make does this)")
    table = CSRMap.from_csv(build_dir / "csr.csv").c_table()
    table_path = generated / "csr_table.h"
    if not table_path.exists() or table_path.read_text() != table:
        table_path.write_text(table)
    cmd = ["make", "-C", str(env.FIRMWARE_DIR), f"BUILD_DIR={build_dir}", f"-j{jobs}"]
    out = subprocess.run(cmd, capture_output=quiet, text=True)
    if out.returncode != 0:
        detail = (out.stdout or "") + (out.stderr or "") if quiet else ""
        raise NandLabError(f"firmware build failed:\n{detail}")
    return build_dir / "software" / "firmware" / "firmware.bin"
