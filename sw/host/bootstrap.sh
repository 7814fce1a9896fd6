#!/usr/bin/env bash
# Bootstrap the nandlab environment: system packages when missing, then the project virtualenv.
#
# Idempotent: with everything present it only checks and returns (a second run takes seconds).
# Called by the Makefile before any other target; safe to run by hand.
set -euo pipefail

top="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="$top/.venv"
python="${PYTHON:-python3}"

say() { printf '[nandlab-setup] %s\n' "$*"; }
die() { printf '[nandlab-setup] error: %s\n' "$*" >&2; exit 1; }

# System packages ----------------------------------------------------------------------------------
# Each entry: Debian package, then the file or command whose presence proves it is installed.
apt_checks=(
    "gcc-riscv64-unknown-elf:cmd:riscv64-unknown-elf-gcc"
    "libevent-dev:file:/usr/include/event2/event.h"
    "libjson-c-dev:file:/usr/include/json-c/json.h"
    "zlib1g-dev:file:/usr/include/zlib.h"
    "meson:cmd:meson"
    "ninja-build:cmd:ninja"
    "openocd:cmd:openocd"
    "g++:cmd:g++"
    "make:cmd:make"
    "perl:cmd:perl"
    "chromium:cmd:chromium"          # headless, for the live monitor page's test
    "xxd:cmd:xxd"                    # the dump formats `nand info` reads, made by the tools in its test
    "bsdextrautils:cmd:hexdump"
    "tcl:cmd:tclsh"                  # runs the Arty's Vivado timing script against stubs (no Vivado here)
    "ccache:cmd:ccache"              # Verilator's object cache (OBJCACHE): its runtime library is compiled once, not per model
    # clang and its libFuzzer/sanitizer runtimes, for `nandlab fuzz` (the firmware's parsers on the host)
    "clang-14:cmd:clang-14"
    "libclang-rt-14-dev:file:/usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a"
)
missing=()
for entry in "${apt_checks[@]}"; do
    IFS=: read -r pkg kind what <<<"$entry"
    case "$kind" in
        cmd)  command -v "$what" >/dev/null 2>&1 || missing+=("$pkg") ;;
        file) [ -e "$what" ] || missing+=("$pkg") ;;
    esac
done
# The venv module is split out of python3 on Debian.
"$python" -c 'import ensurepip, venv' >/dev/null 2>&1 || missing+=("python3-venv")

if [ ${#missing[@]} -gt 0 ]; then
    say "installing system packages: ${missing[*]}"
    if [ "$(id -u)" -eq 0 ]; then
        sudo=""
    elif command -v sudo >/dev/null 2>&1; then
        sudo="sudo"
    else
        die "missing system packages (${missing[*]}) and no root or sudo to install them; run as root: apt-get install ${missing[*]}"
    fi
    command -v apt-get >/dev/null 2>&1 || die "missing system packages (${missing[*]}) and this is not a Debian/Ubuntu system; install their equivalents"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Project virtualenv -------------------------------------------------------------------------------
# Rebuilt only when the pinned requirements or the packaging change (hash stamp).
stamp="$venv/.nandlab-stamp"
want="$(cat "$top/requirements.txt" "$top/pyproject.toml" | sha256sum | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$venv/bin/nandlab" ]; then
    exit 0
fi
if [ ! -x "$venv/bin/python" ]; then
    say "creating virtualenv in .venv"
    "$python" -m venv "$venv"
fi
say "installing pinned Python packages (requirements.txt)"
"$venv/bin/python" -m pip install -q --upgrade pip
"$venv/bin/python" -m pip install -q -r "$top/requirements.txt"
say "installing nandlab (editable)"
PYTHONWARNINGS=ignore "$venv/bin/python" -m pip install -q --no-deps -e "$top" 2>&1 | { grep -v -e "BuildBackendWarning" -e "^ *!!" -e "^ *\*\*\*" -e "Please be careful" -e "name as your package" -e "with strategy" -e "^ *$" || true; }
echo "$want" > "$stamp"
say "environment ready"
