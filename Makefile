# Two entry points for a fresh machine: `make demo` (the main job) and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
DEMO_WORLD := worlds/monaco
DEMO_OUT := runs/demo
# Debian's WenQuanYi Micro Hei: Latin and CJK glyphs for rendered signs.
FONT := /usr/share/fonts/truetype/wqy/wqy-microhei.ttc

.PHONY: demo test fonts clean-demo

$(BIN)/cityseeker: setup.py constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[test]'
	touch $@

fonts:
	@test -f $(FONT) || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq fonts-wqy-microhei >/dev/null; \
	  else echo "missing $(FONT): run 'sudo apt-get install fonts-wqy-microhei'" >&2; exit 1; fi; }

# Builds the Monaco world from the OSM extract packaged in quackosm 0.19.0 (fetched once with
# pip into ~/.cache/cityseeker), runs the random baseline and writes a report with rendered views.
demo: $(BIN)/cityseeker fonts
	$(BIN)/cityseeker world build monaco --out $(DEMO_WORLD)
	$(BIN)/cityseeker benchmark --data $(DEMO_WORLD) --policy random --seeds 5 --views rendered --out $(DEMO_OUT)
	$(BIN)/cityseeker report $(DEMO_OUT)

test: $(BIN)/cityseeker fonts
	$(BIN)/python -m pytest -q -rs

clean-demo:
	rm -rf $(DEMO_WORLD) $(DEMO_OUT)
