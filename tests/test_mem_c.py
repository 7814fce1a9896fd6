"""The firmware's word-at-a-time memset/memcpy/memmove (sw/firmware/mem.c), built for the host under
other names and checked byte for byte against a reference at every size and alignment."""

import subprocess

import pytest

from nandlab import env


@pytest.mark.unit
def test_firmware_mem_functions_match_a_byte_reference(tmp_path):
    exe = tmp_path / "mem_check"
    src = env.REPO / "sw" / "firmware" / "mem.c"
    out = subprocess.run(["gcc", "-O2", "-fno-builtin", "-Wall", "-Werror", "-Dmemset=nl_memset",
                          "-Dmemcpy=nl_memcpy", "-Dmemmove=nl_memmove", "-fsanitize=address,undefined",
                          "-o", str(exe), str(src), str(env.REPO / "tests" / "c" / "mem_check.c")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.startswith("ok ") and int(run.stdout.split()[1]) > 100000, run.stdout
