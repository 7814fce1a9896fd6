"""LiteX's simulator glue (litex/build/sim/core/veril.cpp) as the simulated SoC's builds use it
(soc/targets/sim.py's _sim_core): without tracing, each clock edge evaluated directly, the PGO hooks."""

from pathlib import Path

from nandlab.soc.targets.sim_pgo import _VERIL_PGO


def _litex_sim_core():
    from litex.build.sim import verilator
    return Path(verilator.core_directory)


LITEX_SIM_CORE = _litex_sim_core()


def veril_source(trace, direct_eval=True):
    """LiteX's veril.cpp (the simulator's glue to the Verilated model) as _sim_core builds it: without
    tracing unless `trace`, each edge evaluated directly (_VERIL_EVAL) unless not `direct_eval`."""
    text = (LITEX_SIM_CORE / "veril.cpp").read_text()
    for old, new in (_VERIL_UNTRACED if not trace else []) + (_VERIL_EVAL if direct_eval else []) + _VERIL_PGO:
        assert old in text, "LiteX's veril.cpp changed: review _sim_core()"
        text = text.replace(old, new, 1)
    return text


# veril.cpp: after the first evaluation (which initialises the model) each clock edge runs the model's
# evaluation itself, not Vsim::eval(): that also emptied Verilator's deferred-delete list (taking a mutex)
# and flushed the message queue of other threads at every edge, which a single-threaded model without
# dynamic objects never fills (perf, 8-die SoC: 3.5 % of the time under the FTL load, 4.2 % idle; gone
# after). $finish is read from the model's own context, not looked up through the thread's. The same
# model and the same evaluations: outputs identical (tests/test_sim_veril.py).
_VERIL_EVAL = [
    ('#include "verilated.h"\n',
     '#include "verilated.h"\n#include "Vsim___024root.h"\nvoid Vsim___024root___eval(Vsim___024root* vlSelf);\n'
     'static bool model_started = false;\n'),
    ("  sim->eval();\n",
     "  if (model_started) {\n    Vsim___024root___eval(sim->rootp);\n  } else {\n"
     "    sim->eval();\n    model_started = true;\n  }\n"),
    ("  return Verilated::gotFinish();\n",
     "  return g_sim ? g_sim->contextp()->gotFinish() : Verilated::gotFinish();\n"),
]


# veril.cpp without tracing: no tracer, $finish still seen at every edge.
_VERIL_UNTRACED = [
    ('#ifdef TRACE_FST\n#include "verilated_fst_c.h"\n#else\n#include "verilated_vcd_c.h"\n#endif\n\n'
     '#ifdef TRACE_FST\nVerilatedFstC* tfp;\n#else\nVerilatedVcdC* tfp;\n#endif\n', ""),
    ("""  Verilated::traceEverOn(true);
#ifdef TRACE_FST
      tfp = new VerilatedFstC;
      sim->trace(tfp, 99);
      tfp->open("sim.fst");
#else
      tfp = new VerilatedVcdC;
      sim->trace(tfp, 99);
      tfp->open("sim.vcd");
#endif
  tfp->set_time_unit("1ps");
  tfp->set_time_resolution("1ps");
""", ""),
    ("""  if (dump_enabled && tfp_start <= main_time && main_time <= tfp_end) {
    tfp->dump((vluint64_t) main_time);
  }
""", ""),
    ("""  int finished;
  tfp->flush();
  if(finished = Verilated::gotFinish()) {
    tfp->close();
  }
  return Verilated::gotFinish();
""", """  return Verilated::gotFinish();
"""),
]
