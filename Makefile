# nandlab: a thin wrapper over the environment bootstrap, the nandlab CLI and pytest.
#
#   make sim     build the simulated SoC (8 emulated dies) and capture its NAND current under a mixed
#                workload: live telemetry, recording, figures, summary checked against the chip
#   make test    the default test suite (what CI runs)
#
# Everything else: make help.

SHELL   := /bin/bash
VENV    := .venv
PYTHON  := $(VENV)/bin/python
NANDLAB := $(PYTHON) -m nandlab.cli
JOBS    ?= 2
# Reproducible netlists: Migen's statement order follows Python's string hashing.
export PYTHONHASHSEED := 0

.PHONY: help env sim console test test-slow test-all bench build-arty build-ecp5 clean distclean

help:
	@echo "make sim        simulated SoC, 8 dies, mixed workload: live telemetry, recording, figures, summary"
	@echo "make console    the simulated SoC's firmware shell (SIM_ARGS='--run \"version\"' to script it)"
	@echo "make test       default test suite (unit, cocotb, litex_sim, board generation)"
	@echo "make test-slow  long tests (ECP5 synthesis, place and route, bitstream)"
	@echo "make bench      simulated cycles/s; ECP5 Fmax and LUT/FF/BRAM"
	@echo "make build-arty / build-ecp5   board builds (Arty: Vivado project; ECP5: bitstream)"
	@echo "make clean      remove build/ (keeps the virtualenv); make distclean also removes .venv"

env:
	@sw/host/bootstrap.sh

sim: env
	@$(NANDLAB) sim --dies 8 --workload 3000 $(SIM_ARGS)

console: env
	@$(NANDLAB) sim --dies 8 $(SIM_ARGS)

test: env
	$(PYTHON) -m pytest -m "not slow" -n $(JOBS) --dist loadfile

test-slow: env
	$(PYTHON) -m pytest -m slow

test-all: env
	$(PYTHON) -m pytest -n $(JOBS) --dist loadfile

bench: env
	@$(NANDLAB) bench all

build-arty: env
	@$(NANDLAB) build --target arty

build-ecp5: env
	@$(NANDLAB) build --target colorlight_i5

clean:
	rm -rf build

distclean: clean
	rm -rf $(VENV)
