"""Profile-guided builds of the simulator (NANDLAB_SIM_PGO=1; soc/targets/sim.py's build_simulator calls
these): GCC compiles the Verilated model and LiteX's sim core instrumented, a short training run of the
booted SoC writes the profile, and a second compile uses it."""

import os
import subprocess

# Profile-guided optimisation of the simulator (GCC): the Verilated model and the sim core are
# compiled instrumented, run through PGO_TRAINING, and compiled again with the profile. Measured
# (same-run A/B, same Verilog): 1.08-1.20x the cycles/s at 8 dies for about 1.5x the build's CPU time (two
# compiles and a training run), see NOTES.md "Simulator build options". Opt-in (NANDLAB_SIM_PGO=1): it
# pays for long runs (`nandlab reproduce`, `bench sim`, long replays), not for the test suite's builds.
PGO_GENERATE = "-fprofile-generate -fprofile-update=single -DNANDLAB_PGO_GEN"
PGO_USE      = "-fprofile-use -fprofile-partial-training -Wno-missing-profile"
# The training run (console commands after boot; the NAND ones only with dies). Fixed commands, so
# each build is trained on the same simulated work (the console's host-side timing varies the idle
# shell's share a little, the simulation itself never depends on it).
PGO_TRAINING = dict(
    idle_s = 2.0,    # the idle shell (the firmware polling its UART), wall seconds
    nand   = ("nand workload 2000 30", "ctl bringup", "ctl test 2"),
)
_SIM_C_OBJS = ("libdylib.o", "modules.o", "pads.o", "parse.o", "sim.o")


def sim_pgo():
    """Whether simulator builds are profile-guided: only when NANDLAB_SIM_PGO is 1 (yes, on)."""
    value = os.environ.get("NANDLAB_SIM_PGO", "0").strip().lower()
    if value not in ("0", "1", "no", "yes", "off", "on", ""):
        from nandlab.errors import NandLabError
        raise NandLabError(f"NANDLAB_SIM_PGO={value!r}: use 1 (profile-guided simulator builds) or 0 (the default)")
    return value in ("1", "yes", "on")


def _pgo_train_and_rebuild(gateware_dir, core, opt, dies, log):
    """Run the instrumented simulator through PGO_TRAINING, then compile the model and the sim core
    again with the profile (the Verilated sources as they are: Verilator is not run again)."""
    import shutil, time
    from nandlab.simulator import SimConsole, prepare_run_dir, free_tcp_port
    # Absolute: the compiles below run in gateware_dir and name it again (`make -C`); a relative build
    # directory made the second compile fail ("No such file or directory").
    gateware_dir, core = gateware_dir.resolve(), core.resolve()
    obj = gateware_dir / "obj_dir"
    log("[nandlab] training the simulator for profile-guided optimisation...")
    t0 = time.monotonic()
    run_dir = prepare_run_dir(gateware_dir, gateware_dir.parent / "pgo-train", bridge_port=free_tcp_port())
    console = SimConsole(gateware_dir, run_dir)
    try:
        console.start()
        console.boot(timeout=600)
        time.sleep(PGO_TRAINING["idle_s"])
        for line in PGO_TRAINING["nand"] if dies else ():
            console.command(line, timeout=1800)
        # The instrumented build (NANDLAB_PGO_GEN) leaves its loop on SIGTERM and exits normally,
        # writing its profile (.gcda next to the objects).
        console.proc.terminate()
        status = console.proc.wait(timeout=300)
    finally:
        console.close()
    shutil.rmtree(run_dir, ignore_errors=True)
    if status != 0 or not any(obj.glob("*.gcda")):
        raise RuntimeError(f"simulator PGO training run failed (status {status}, no profile in {obj})")
    # veril.cpp's SIGTERM hook exists only in the instrumented build: its profile would not match.
    (obj / "veril.gcda").unlink(missing_ok=True)
    log(f"[nandlab] trained in {time.monotonic() - t0:.0f} s; compiling again with the profile...")
    use = opt.replace(PGO_GENERATE, PGO_USE)
    mk = obj / "Vsim.mk"
    mk.write_text(mk.read_text().replace(PGO_GENERATE, PGO_USE))
    for p in list(obj.glob("*.o")) + list(obj.glob("*.gch")) + list(obj.glob("*.a")) + [obj / "Vsim"]:
        p.unlink(missing_ok=True)
    jobs = str(os.cpu_count() or 1)
    steps = [
        # The sim core's C files (LiteX's Makefile rule, with the profile).
        ["make", "-C", str(gateware_dir), "-f", str(core / "Makefile"), f"OPT_LEVEL={use}", *_SIM_C_OBJS],
        ["make", f"-j{jobs}", "-C", str(obj), "-f", "Vsim.mk", "Vsim"],
    ]
    for cmd in steps:
        out = subprocess.run(cmd, cwd=gateware_dir, capture_output=True, text=True)
        if out.returncode != 0:
            tail = "\n".join((out.stdout + out.stderr).splitlines()[-40:])
            raise RuntimeError(f"simulator PGO rebuild failed in {gateware_dir}:\n{tail}")
    if not (obj / "Vsim").exists():
        raise RuntimeError(f"simulator PGO rebuild made no {obj / 'Vsim'}")


# veril.cpp, every build: the PGO instrumented build (NANDLAB_PGO_GEN) stops on SIGTERM by leaving
# its loop (as at $finish), so that the profile is written at exit.
_VERIL_PGO = [
    ('#include "verilated.h"\n',
     '#include "verilated.h"\n#ifdef NANDLAB_PGO_GEN\n#include <signal.h>\n'
     'static volatile sig_atomic_t pgo_stop = 0;\nstatic void pgo_on_term(int) { pgo_stop = 1; }\n#endif\n'),
    ('  Verilated::commandArgs(argc, argv);\n',
     '  Verilated::commandArgs(argc, argv);\n#ifdef NANDLAB_PGO_GEN\n  signal(SIGTERM, pgo_on_term);\n#endif\n'),
    ('extern "C" int litex_sim_got_finish()\n{\n',
     'extern "C" int litex_sim_got_finish()\n{\n#ifdef NANDLAB_PGO_GEN\n  if (pgo_stop) return 1;\n#endif\n'),
]
