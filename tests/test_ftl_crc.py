"""The FTL's CRC-16 of page tags (sw/firmware/ftl/ftl_meta.c), built for the host and checked against
Python's binascii.crc_hqx (CRC-16/CCITT, polynomial 1021h, MSB first, any initial value)."""

import binascii
import subprocess

import pytest

from nandlab import env

FTL = env.REPO / "sw" / "firmware" / "ftl"


@pytest.mark.unit
def test_ftl_crc16_matches_crc_hqx(tmp_path):
    exe = tmp_path / "crc_check"
    src = sorted(str(p) for p in FTL.glob("ftl_*.c")) + [str(FTL / "host" / "nand_model.c"),
                                                        str(env.REPO / "tests" / "c" / "crc_check.c")]
    out = subprocess.run(["gcc", "-O2", "-std=c11", "-D_POSIX_C_SOURCE=200809L", "-Wall", "-Werror",
                          f"-I{FTL}", "-o", str(exe), *src], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    lines = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60, check=True).stdout.split("\n")
    vectors = [line.split(" ") for line in lines if line]
    assert len(vectors) == 3000 and any(data == "" for _, data, _ in vectors)
    for init, data, crc in vectors:
        assert int(crc, 16) == binascii.crc_hqx(bytes.fromhex(data), int(init, 16)), (init, data, crc)
    # The published check value of CRC-16/XMODEM (initial 0) and of CRC-16/CCITT-FALSE (initial FFFFh).
    assert binascii.crc_hqx(b"123456789", 0) == 0x31C3 and binascii.crc_hqx(b"123456789", 0xFFFF) == 0x29B1
