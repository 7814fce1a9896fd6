"""The project's tool environment: the compiler cache in front of the simulators' C++ compiles."""

import json
import os
import subprocess

import pytest

from nandlab import env


@pytest.mark.unit
def test_compiler_cache_env_and_off_switch():
    e = env.compiler_cache_env({"PATH": os.environ["PATH"]})
    assert os.path.basename(e["OBJCACHE"]) == "ccache" and os.access(e["OBJCACHE"], os.X_OK)
    assert e["CCACHE_DIR"] == str(env.BUILD_DIR / "ccache") and "pch_defines" in e["CCACHE_SLOPPINESS"]
    off = env.compiler_cache_env({"PATH": os.environ["PATH"], "NANDLAB_CCACHE": "0"})
    assert "OBJCACHE" not in off


@pytest.mark.unit
def test_same_source_in_two_build_directories_compiles_once(tmp_path):
    """As two simulator builds in sibling directories do: the second compile of the same file is a cache hit
    (paths relative to the root, no working directory in the hash)."""
    e = env.compiler_cache_env({"PATH": os.environ["PATH"], "CCACHE_DIR": str(tmp_path / "cache")})
    for name in ("a", "b"):
        d = tmp_path / name / "obj_dir"
        d.mkdir(parents=True)
        (d / "m.cpp").write_text("#include \"m.h\"\nint f(int x) { return x * K; }\n")
        (d / "m.h").write_text("#define K 3\n")
        r = subprocess.run([e["OBJCACHE"], "g++", "-O1", "-I.", "-c", "m.cpp", "-o", "m.o"], cwd=d, env=e,
                           capture_output=True, text=True)
        assert r.returncode == 0 and (d / "m.o").exists(), r.stderr
    stats = subprocess.run([e["OBJCACHE"], "--print-stats", "--format=json"], env=e, capture_output=True, text=True)
    s = json.loads(stats.stdout)
    assert (s["direct_cache_hit"] + s["preprocessed_cache_hit"], s["cache_miss"]) == (1, 1), s
