"""The simulator glue (soc/targets/sim_veril.py): a model evaluated edge by edge through the patched
veril.cpp (each edge straight into the model's evaluation) gives the values Vsim::eval() gives, every
half cycle, and stops at the same edge on $finish. The model has the SoC's shape of idle gating: a
block whose clock is `sys_clk & ~idle`, idle latched at the falling edge (gateware/common/idlegate.py)."""

import subprocess

import pytest

from nandlab import env
from nandlab.soc.targets.sim_veril import veril_source

# A counter in `sys` (from 5: an evaluation that skipped the model's initial block would show), a block clocked only in cycles whose `idle` (latched at the falling edge) is 0, a
# memory written by the gated block, and $finish after FINISH cycles.
FINISH = 300
MODEL = """
module sim(input sys_clk, input sim_trace, output reg [15:0] count, output reg [15:0] gated_count,
           output reg [7:0] mem_q);
  reg idle = 0;
  reg [7:0] mem [0:15];
  wire gated_clk = sys_clk & ~idle;
  initial begin count = 5; gated_count = 7; mem_q = 0; end
  always @(negedge sys_clk) idle <= (count[2:0] == 3) | (count[4] & ~count[0]);
  always @(posedge sys_clk) begin
    count <= count + 1;
    mem_q <= mem[count[3:0]];
    if (count == %d) $finish;
  end
  always @(posedge gated_clk) begin
    gated_count <= gated_count + count[1:0] + 1;
    mem[gated_count[3:0]] <= gated_count[7:0] ^ count[7:0];
  end
endmodule
""" % FINISH

# litex_sim's loop (litex/build/sim/core/sim.c) reduced to the clock: each half cycle the clock toggles,
# the model is evaluated through veril.cpp, then $finish is asked for.
DRIVER = r"""
#include <cstdio>
#include <cstdint>
#include "Vsim.h"
extern "C" void litex_sim_init_cmdargs(int argc, char *argv[]);
extern "C" void litex_sim_init_tracer(void *vsim, long start, long end);
extern "C" void litex_sim_eval(void *vsim, uint64_t time_ps);
extern "C" int litex_sim_got_finish();
int main(int argc, char **argv) {
  litex_sim_init_cmdargs(argc, argv);
  Vsim *sim = new Vsim;
  litex_sim_init_tracer(sim, 0, -1);
  for (uint64_t t = 0; t < 4 * %d; t++) {
    sim->sys_clk = t & 1;
    litex_sim_eval(sim, t * 5000);
    printf("%%llu %%u %%u %%u\n", (unsigned long long)t, sim->count, sim->gated_count, sim->mem_q);
    if (litex_sim_got_finish()) { printf("finish at %%llu\n", (unsigned long long)t); break; }
  }
  delete sim;
  return 0;
}
""" % FINISH


def _run(tmp_path, name, direct_eval):
    d = tmp_path / name
    d.mkdir()
    (d / "sim.v").write_text(MODEL)
    (d / "driver.cpp").write_text(DRIVER)
    (d / "veril.cpp").write_text(veril_source(trace=False, direct_eval=direct_eval))
    build = subprocess.run([env.which("verilator"), "--cc", "sim.v", "--top-module", "sim", "--exe", "driver.cpp",
                            "veril.cpp", "--build", "-O3", "-Wno-fatal", "-CFLAGS", "-O1", "-j", "2"],
                           cwd=d, capture_output=True, text=True)
    assert build.returncode == 0, build.stdout[-2000:] + build.stderr[-2000:]
    return subprocess.run([str(d / "obj_dir" / "Vsim")], cwd=d, capture_output=True, text=True, check=True).stdout


@pytest.mark.sim
def test_direct_evaluation_matches_vsim_eval(tmp_path):
    direct, plain = _run(tmp_path, "direct", True), _run(tmp_path, "plain", False)
    # The plain glue's run is the reference: it counted, gated and stopped where the model says.
    assert plain.splitlines()[-1] == f"finish at {2 * (FINISH - 4) - 1}"   # count from 5: the (FINISH-4)th rising edge
    rows = [tuple(map(int, l.split())) for l in plain.splitlines() if l[0].isdigit()]
    steps = [(b[1] != a[1], b[2] != a[2]) for a, b in zip(rows, rows[1:]) if b[1] != a[1]]
    assert (True, True) in steps and (True, False) in steps, "the model's gated block never ran or never paused"
    assert direct == plain


def test_direct_evaluation_is_in_the_glue():
    text = veril_source(trace=False)
    assert "Vsim___024root___eval(sim->rootp)" in text and "sim->eval();" in text
    assert "Vsim___024root___eval(" not in veril_source(trace=False, direct_eval=False)
    assert "Vsim___024root___eval(sim->rootp)" in veril_source(trace=True)
