# BlockX build. `make deps` fetches what a fresh machine lacks (npm registry and Debian only),
# `make build` produces dist/blockx, `make test` runs every test and ends with "N passed, N failed".
SHELL := /bin/bash
BUN_VERSION := 1.4.4
CACHE := .cache
BUN := $(CACHE)/bun/node_modules/.bin/bun
ETCD := $(CACHE)/etcd/root/usr/bin/etcd
GRPCIO_STAMP := $(CACHE)/python3-debs.stamp
GANACHE_STAMP := $(CACHE)/ganache.stamp
ANVIL_VERSION := 1.7.1
ANVIL := $(CACHE)/anvil/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil
SYSTEMD_STAMP := $(CACHE)/systemd-analyze.stamp
POSTGRES_STAMP := $(CACHE)/postgres.stamp
QEMU_STAMP := $(CACHE)/qemu-user-static.stamp
ARM64_LIBC := $(CACHE)/arm64-libc/root/usr/aarch64-linux-gnu
BUN_TARGETS := $(CACHE)/bun-targets
DIST_RUNTIMES := $(BUN_TARGETS)/linux-x64/bun $(BUN_TARGETS)/linux-arm64/bun
DIST_DIR ?= dist/release
CHROMIUM_STAMP := $(CACHE)/chromium.stamp
BWRAP_STAMP := $(CACHE)/bubblewrap.stamp
BWRAP_CACHE := $(CACHE)/bubblewrap/root/usr/bin/bwrap
DEPS_STAMP := node_modules/.blockx-deps-stamp
# src's embedded assets (the dashboard's page) count: a page changed alone must rebuild and change the digest.
SOURCES := $(shell find src -name '*.ts' -not -name '*.test.ts') $(shell find src -name '*.html') $(shell find executor-py/blockx_executor client-py/blockx -name '*.py') $(wildcard deploy/systemd/*) package.json
COMMIT := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
# What the binary was built from; test/support/source-digest.ts computes the same over the same files
# and the process tests refuse a binary whose digest differs (a stale dist/blockx).
SOURCE_DIGEST = $(shell sha256sum $(sort $(SOURCES)) | sha256sum | cut -c1-16)

export PATH := $(abspath $(CACHE)/bun/node_modules/.bin):$(PATH)
export BLOCKX_ETCD_BIN := $(abspath $(ETCD))

.PHONY: fuzz deps build dist test typecheck proto py-stubs bench clean run demo soak source-digest mutants
.DEFAULT_GOAL := build

deps: $(BUN) $(DEPS_STAMP) $(ETCD) $(GRPCIO_STAMP) $(GANACHE_STAMP) $(ANVIL) $(SYSTEMD_STAMP) $(QEMU_STAMP) $(ARM64_LIBC)/lib/ld-linux-aarch64.so.1 $(DIST_RUNTIMES) $(CHROMIUM_STAMP) $(POSTGRES_STAMP) $(BWRAP_STAMP) $(BWRAP_CACHE)

# Bun from the npm registry, pinned; bun-types in package.json carries the same version.
$(BUN):
	npm install --prefix $(CACHE)/bun --no-save --no-audit --no-fund --loglevel=error bun@$(BUN_VERSION)
	@$(BUN) --version

# npm packages, with the committed patch of etcd3 (see patches/) applied by bun install.
$(DEPS_STAMP): package.json bun.lock $(wildcard patches/*) | $(BUN)
	$(BUN) install --frozen-lockfile
	@touch $@

# etcd from Debian, unpacked into the cache: no root install.
$(ETCD):
	mkdir -p $(CACHE)/etcd
	cd $(CACHE)/etcd && (apt-get download etcd-server 2>/dev/null || (apt-get update -qq && apt-get download etcd-server))
	dpkg -x $(CACHE)/etcd/etcd-server_*.deb $(CACHE)/etcd/root
	@$(ETCD) --version | head -1

# Debian's Python packages: python3-grpcio (a gRPC client that is not grpc-js, for the interop
# tests) and python3-protobuf (both blockx-py's dependencies), python3-pytest (client-py/tests) and
# python3-tqdm (blockx-py's progress bar), and protoc 3.21 + grpc_python_plugin 1.51 (a test checks
# that blockx-py's committed stubs are what `make py-stubs` makes). Installs only what is missing (root then), so it is
# idempotent and needs no root on a machine that has them.
PY_DEBS := grpc:python3-grpcio google.protobuf:python3-protobuf pytest:python3-pytest tqdm:python3-tqdm
$(GRPCIO_STAMP):
	@mkdir -p $(CACHE)
	missing=""; for m in $(PY_DEBS); do /usr/bin/python3 -c "import $${m%%:*}" 2>/dev/null || missing="$$missing $${m#*:}"; done; \
	command -v protoc >/dev/null || missing="$$missing protobuf-compiler"; \
	command -v grpc_python_plugin >/dev/null || missing="$$missing protobuf-compiler-grpc"; \
	if [ -n "$$missing" ]; then \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing); fi
	/usr/bin/python3 -c 'import grpc, google.protobuf, pytest, tqdm; print("python3-grpcio", grpc.__version__, "python3-protobuf", google.protobuf.__version__, "pytest", pytest.__version__, "tqdm", tqdm.__version__)'
	protoc --version
	@touch $@

# ganache 7 from the npm registry: the real Ethereum JSON-RPC node of test/io and bench/io
# (run by /usr/bin/node; not a package.json dependency, the binary never loads it).
$(GANACHE_STAMP):
	npm install --prefix $(CACHE)/ganache --no-save --no-audit --no-fund --loglevel=error ganache@7
	/usr/bin/node $(CACHE)/ganache/node_modules/ganache/dist/node/cli.js --version
	@touch $@

# Foundry's anvil from the npm registry (the package ships the binary; nothing is downloaded at run
# time): the node of the chain tests that need a chain that lies still or reorganises on request
# (anvil_reorg, anvil_rollback), which ganache 7 cannot. Not a package.json dependency: the binary never runs it.
$(ANVIL):
	npm install --prefix $(CACHE)/anvil --no-save --no-audit --no-fund --loglevel=error @foundry-rs/anvil-linux-amd64@$(ANVIL_VERSION)
	$(ANVIL) --version | head -1

# Debian's systemd package for systemd-analyze: the tests verify deploy/systemd with it.
$(SYSTEMD_STAMP):
	@mkdir -p $(CACHE)
	command -v systemd-analyze >/dev/null || \
	  (DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends systemd || \
	   (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends systemd))
	systemd-analyze --version | head -1
	@touch $@

# Debian's Postgres 15 server for the tests and `blockx dev --postgres` (each starts a private server
# as an unprivileged user). Uses an installed /usr/lib/postgresql/<v>/bin when there is one; else
# installs postgresql-15 as root, or unpacks it (and its libraries' packages) into the cache like etcd.
$(POSTGRES_STAMP):
	@mkdir -p $(CACHE)
	if ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql-15 || \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql-15); \
	  else \
	    mkdir -p $(CACHE)/postgres && cd $(CACHE)/postgres && \
	    (apt-get download postgresql-15 libpq5 2>/dev/null || (apt-get update -qq && apt-get download postgresql-15 libpq5)) && \
	    for d in *.deb; do dpkg -x $$d root; done; \
	  fi; \
	fi
	for p in /usr/lib/postgresql/*/bin/postgres $(CACHE)/postgres/root/usr/lib/postgresql/*/bin/postgres; do \
	  if [ -x "$$p" ]; then "$$p" --version; exit 0; fi; done; echo "no Postgres binaries" >&2; exit 1

# qemu-user-static from Debian (only when missing; root then): the tests run the arm64 release
# binary with it, over the arm64 C library of Debian's libc6-arm64-cross (apt-get download + dpkg -x
# into the cache, no root install).
$(QEMU_STAMP):
	@mkdir -p $(CACHE)
	command -v qemu-aarch64-static >/dev/null || \
	  (DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends qemu-user-static || \
	   (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends qemu-user-static))
	qemu-aarch64-static --version | head -1
	@touch $@

$(ARM64_LIBC)/lib/ld-linux-aarch64.so.1:
	mkdir -p $(CACHE)/arm64-libc
	cd $(CACHE)/arm64-libc && (apt-get download libc6-arm64-cross 2>/dev/null || (apt-get update -qq && apt-get download libc6-arm64-cross))
	dpkg -x $(CACHE)/arm64-libc/libc6-arm64-cross_*.deb $(CACHE)/arm64-libc/root
	@test -e $@

# Bun's runtime of each release target, from the npm registry (the packages `npm install bun` picks
# from), pinned to BUN_VERSION: `bun build --compile-executable-path` uses it instead of downloading.
$(BUN_TARGETS)/%/bun:
	mkdir -p $(@D)
	cd $(@D) && npm pack --silent --loglevel=error @oven/bun-$(subst arm64,aarch64,$*)@$(BUN_VERSION) >/dev/null && \
	  tar xzf oven-bun-*.tgz --strip-components=2 package/bin/bun && rm -f oven-bun-*.tgz
	@test -x $@

# Debian's chromium, headless: the dashboard's browser test drives it over the DevTools protocol.
$(CHROMIUM_STAMP):
	@mkdir -p $(CACHE)
	command -v chromium >/dev/null || \
	  (DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium || \
	   (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium))
	chromium --version | head -1
	@touch $@

# Debian's bubblewrap: every executor runs in its sandbox (EXECUTOR_SANDBOX=on), in the tests too.
$(BWRAP_STAMP):
	@mkdir -p $(CACHE)
	command -v bwrap >/dev/null || \
	  (DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends bubblewrap || \
	   (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends bubblewrap))
	bwrap --version
	@touch $@

# Debian's bubblewrap unpacked into the cache like etcd (no root install): `make demo` needs no system
# bubblewrap, since every role run from this checkout's dist/blockx finds this copy when bwrap is
# not on PATH (src/runtime/executor/isolation.ts). Its libraries (libcap2, libselinux1) are in
# every Debian base system. `make deps` fetches it too: a test runs dev with bwrap absent from PATH.
$(BWRAP_CACHE):
	mkdir -p $(CACHE)/bubblewrap
	cd $(CACHE)/bubblewrap && (apt-get download bubblewrap 2>/dev/null || (apt-get update -qq && apt-get download bubblewrap))
	dpkg -x $(CACHE)/bubblewrap/bubblewrap_*.deb $(CACHE)/bubblewrap/root
	@$(BWRAP_CACHE) --version

build: dist/blockx

dist/blockx: $(SOURCES) $(DEPS_STAMP) | $(BUN)
	BLOCKX_COMMIT=$(COMMIT) BLOCKX_SOURCE_DIGEST=$(SOURCE_DIGEST) ./scripts/compile.sh dist/blockx
	@./dist/blockx version

# Release archives for x64 and arm64 hosts with SHA256SUMS in DIST_DIR (README "Release archives").
dist: $(DEPS_STAMP) $(DIST_RUNTIMES) | $(BUN)
	./scripts/dist.sh $(DIST_DIR)

# The type check first: some tests are types only (they hold only if they compile).
test: deps build typecheck
	./scripts/run-tests.sh

# The digest `make build` embeds (the tests compare it with the tree's).
source-digest:
	@echo $(SOURCE_DIGEST)

typecheck: $(DEPS_STAMP)
	node_modules/.bin/tsc --noEmit -p .

# Regenerates src/gen from proto/ (the generated code is committed).
proto: $(DEPS_STAMP)
	node_modules/.bin/buf generate
	$(BUN) scripts/patch-gen.ts
	node_modules/.bin/buf lint || true

# Regenerates client-py/blockx/_gen (blockx-py's stubs, committed) from proto/ with Debian's protoc
# 3.21 and grpc_python_plugin 1.51, the versions of python3-protobuf and python3-grpcio
# (client-py/scripts/gen-stubs.sh says why not python3-grpc-tools).
py-stubs:
	command -v protoc >/dev/null && command -v grpc_python_plugin >/dev/null || \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends protobuf-compiler protobuf-compiler-grpc
	./client-py/scripts/gen-stubs.sh

bench: deps build
	$(BUN) bench/coordinator/selection.ts
	$(BUN) bench/coordinator/reserve.ts
	$(BUN) bench/executor/pool.ts
	python3 bench/executor/engine_call.py
	$(BUN) bench/executor/frames.ts
	python3 bench/executor/decode_held.py
	$(BUN) bench/worker/run.ts
	$(BUN) bench/worker/batch.ts
	$(BUN) bench/worker/dispatcher-steps.ts
	$(BUN) bench/syncinvoker/invoke.ts
	$(BUN) bench/io/ganache-backfill.ts
	$(BUN) bench/io/cache.ts
	$(BUN) bench/io/io-bound.ts
	$(BUN) bench/io/logical-types.ts
	$(BUN) bench/proxy/pass-through.ts
	$(BUN) bench/client-py/tiny-task.ts
	$(BUN) bench/scale/scale.ts --quick

# The long soak: a cluster under seeded faults for MINUTES, then every row checked (README "Soak").
# STORE=postgres: every Worker a host of its own writing one Postgres (a private server).
# REORGS=1: and `blockx follow` keeping a table current on anvil (a block every 100 ms, reorganising at random),
# ALONE_SECONDS of it alone on the cluster first (default 20; 600 for the issue's 10-minute lag figure).
SEED ?= 1
MINUTES ?= 10
STORE ?= sqlite
REORGS ?= 0
ALONE_SECONDS ?= 20
soak: deps build
	SEED=$(SEED) MINUTES=$(MINUTES) STORE=$(STORE) REORGS=$(REORGS) ALONE_SECONDS=$(ALONE_SECONDS) BLOCKS_PER_TASK=$(BLOCKS_PER_TASK) CONCURRENCY=$(CONCURRENCY) $(BUN) test/soak/main.ts

# Hostile input at every surface (test/fuzz), with a larger budget than make test's 22 cases a
# method: FUZZ_CASES a gRPC method (10x that per config loader), FUZZ_SEED to vary the cases.
FUZZ_CASES ?= 220
FUZZ_SEED ?= 20261206
fuzz: deps build
	FUZZ_CASES=$(FUZZ_CASES) FUZZ_SEED=$(FUZZ_SEED) ./scripts/run-tests.sh test/fuzz

# Each test/mutants/*.patch breaks a promise on purpose; its tests must fail (scripts/mutants.sh).
mutants: deps build
	./scripts/mutants.sh

clean:
	rm -rf dist

# The whole system on this machine: `blockx dev` (etcd, Coordinators, Workers, Sync Invoker, proxy;
# Ctrl-C stops everything). Its arguments go in ARGS, e.g. `make run ARGS=--keep`.
ARGS ?=
run: $(BUN) $(DEPS_STAMP) $(ETCD) $(BWRAP_CACHE) build
	./dist/blockx dev $(ARGS)

# The two-command demo: blockx dev, the block-statistics example with progress, its first rows, stop.
# Needs only what runs the system (Bun, npm packages, etcd, bubblewrap for the executors' sandbox,
# the last two unpacked into .cache): no root when apt lists are present.
demo: $(BUN) $(DEPS_STAMP) $(ETCD) $(BWRAP_CACHE) build
	./scripts/demo.sh
