# Two entry points for a fresh machine: `make demo` (the main job) and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
DEMO_WORLD := worlds/gridtown
DEMO_OUT := runs/demo

.PHONY: demo test clean-demo

$(BIN)/cityseeker: setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

demo: $(BIN)/cityseeker
	$(BIN)/cityseeker world synth --out $(DEMO_WORLD)
	$(BIN)/cityseeker benchmark --data $(DEMO_WORLD) --policy random --seeds 5 --out $(DEMO_OUT)
	$(BIN)/cityseeker report $(DEMO_OUT)

test: $(BIN)/cityseeker
	$(BIN)/python -m pytest -q

clean-demo:
	rm -rf $(DEMO_WORLD) $(DEMO_OUT)
