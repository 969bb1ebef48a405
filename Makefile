# rdc-operator: a Kubernetes operator for RedisCluster, in C.
#
#   make            build every daemon into build/bin/
#   make asan       the same with AddressSanitizer + UBSan, into build-asan/
#   make test       unit suites, a short fuzz run, then the end-to-end suite on the local control plane
#   make unit       unit suites only (make asan-unit: under the sanitizers)
#   make e2e        end-to-end suite only (brings the local cluster up and down)
#   make deps       install the Debian packages the build and the tests need
#   make fault      the daemons with a test-only fault switch, into build-fault/
#   make fuzz       libFuzzer over the kubeconfig parser, the watch decoder and the admission
#                   webhooks, from committed seeds (FUZZ_SECONDS a target; make fuzz-short: 20 s)
#   make cluster-up / cluster-down   the local control plane (tests/cluster/)

VERSION := 0.1.0
CC ?= cc
BUILD ?= build
OPT ?= -O2
SAN ?=
CFLAGS_ALL := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror $(OPT) -g $(SAN) \
	-Icommon -DRDC_VERSION='"$(VERSION)"' $(CFLAGS)
LDLIBS_ALL := -lcurl -ljson-c -lyaml -lssl -lcrypto -lzmq -lmicrohttpd -levent -levent_openssl -lhiredis -lm -lpthread \
	-Wl,--push-state,--as-needed -lexpat -Wl,--pop-state $(LDLIBS)

DAEMONS := supervisor informerd workerd electord webhookd observerd metricsd
# Command-line tools built beside the daemons: directory -> build/bin/rdc-<directory>
# (backup/: rdc-backup, docs/backup.md). Their modules are linked into the unit tests too.
TOOLS := backup
COMMON_SRC := $(wildcard common/*.c)
COMMON_OBJ := $(COMMON_SRC:%.c=$(BUILD)/%.o)
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
# Each daemon's module files (everything but main.c) are linked into the unit tests too,
# so the pure parts (queue, plan, lease steps, restart policy) are tested directly.
MODULE_SRC := $(filter-out %/main.c,$(foreach d,$(DAEMONS) $(TOOLS),$(wildcard $(d)/*.c)))
MODULE_OBJ := $(MODULE_SRC:%.c=$(BUILD)/%.o)

# Keep object files of the unit tests between runs.
.SECONDARY:


.PHONY: s3-check backup-check bench bench-informer bench-redis-probe bench-webhook bench-ackwriter bench-failover bench-cluster bench-reshard bench-backup bench-slotmove soak all fault asan test unit asan-unit e2e deps fuzz fuzz-short fuzz-cov fuzz-targets clean banned complexity cluster-up cluster-down
all: $(BUILD)/.banned-ok $(DAEMONS:%=$(BUILD)/bin/%) $(TOOLS:%=$(BUILD)/bin/rdc-%)

# The source checks (scripts/check-banned.sh: banned functions, line width) over every C file.
$(BUILD)/.banned-ok: scripts/check-banned.sh $(shell find common $(DAEMONS) $(TOOLS) tests bench -name '*.[ch]' 2>/dev/null)
	@scripts/check-banned.sh
	@mkdir -p $(@D) && touch $@

banned:
	@scripts/check-banned.sh

# No product function over 80 lines or CCN 30 (lizard, pinned and cached: scripts/complexity.sh).
complexity:
	@scripts/complexity.sh common $(DAEMONS) $(TOOLS)

$(BUILD)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -MMD -MP -c $< -o $@

$(BUILD)/libcommon.a: $(COMMON_OBJ)
	@rm -f $@
	ar rcs $@ $^

define daemon_rule
$(BUILD)/bin/$(1): $(filter $(BUILD)/$(1)/%,$(MODULE_OBJ)) $(BUILD)/$(1)/main.o $(BUILD)/libcommon.a
	@mkdir -p $$(@D)
	$$(CC) $$(CFLAGS_ALL) $$^ $$(LDLIBS_ALL) -o $$@
endef
$(foreach d,$(DAEMONS),$(eval $(call daemon_rule,$(d))))

define tool_rule
$(BUILD)/bin/rdc-$(1): $(filter $(BUILD)/$(1)/%,$(MODULE_OBJ)) $(BUILD)/$(1)/main.o $(BUILD)/libcommon.a
	@mkdir -p $$(@D)
	$$(CC) $$(CFLAGS_ALL) $$^ $$(LDLIBS_ALL) -o $$@
endef
$(foreach d,$(TOOLS),$(eval $(call tool_rule,$(d))))

# Unit tests see every daemon's headers (their modules are linked in, see MODULE_SRC).
$(BUILD)/tests/unit/%.o: tests/unit/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(DAEMONS:%=-I%) $(TOOLS:%=-I%) -Itests/unit -Itests/sim -MMD -MP -c $< -o $@

# The failover simulation (tests/sim/, docs/simulation.md): its model of Redis and the
# world around the plan, linked into test_sim_failover.
SIM_SRC := $(wildcard tests/sim/*.c)
SIM_OBJ := $(SIM_SRC:%.c=$(BUILD)/%.o)
$(BUILD)/tests/sim/%.o: tests/sim/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(DAEMONS:%=-I%) -Itests/sim -MMD -MP -c $< -o $@
$(BUILD)/tests/test_sim_failover: $(SIM_OBJ)
$(BUILD)/tests/test_sim_cluster: $(SIM_OBJ)

$(BUILD)/tests/test_%: $(BUILD)/tests/unit/test_%.o $(MODULE_OBJ) $(BUILD)/libcommon.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $^ -lcunit $(LDLIBS_ALL) -o $@

# The S3 client against a real S3-compatible server (issue 36): the pinned versitygw,
# built once from Go modules (tests/cluster/build-s3.sh) and started on 127.0.0.1 for the
# run (tests/cluster/s3.sh, tests/s3/run.sh). Not part of `make unit` (yet).
$(BUILD)/tests/s3/%.o: tests/s3/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -Itests/unit -MMD -MP -c $< -o $@
# Outside build/tests/: `scripts/run-unit.sh build/tests/test_*` must not pick it up.
$(BUILD)/s3/test_s3_server: $(BUILD)/tests/s3/test_s3_server.o $(BUILD)/libcommon.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $^ -lcunit $(LDLIBS_ALL) -o $@

s3-check: $(BUILD)/s3/test_s3_server ## The S3 client against the pinned versitygw (tests/s3/): put, get, list, multipart, corruption.
	@tests/s3/run.sh $(BUILD)/s3/test_s3_server

backup-check: $(BUILD)/bin/rdc-backup ## rdc-backup against versitygw and redis-server on 127.0.0.1 (tests/s3/backup.sh).
	@tests/s3/backup.sh $(BUILD)/bin/rdc-backup

asan:
	$(MAKE) BUILD=build-asan OPT=-O1 SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" all

unit: all $(UNIT_BIN)
	@scripts/run-unit.sh $(UNIT_BIN)

asan-unit:
	$(MAKE) BUILD=build-asan OPT=-O1 SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" unit

# The daemons with the test-only fault switch (workerd aborts on a RedisCluster annotated
# cache.example.com/test-fault: crash), for the supervisor's isolation tests.
fault:
	$(MAKE) BUILD=build-fault CFLAGS=-DRDC_FAULT_INJECTION all

e2e: all fault
	@tests/e2e/run.sh

test: unit fuzz-short s3-check backup-check e2e

deps:
	@scripts/deps.sh

# libFuzzer targets: the same objects as the daemons, built by clang with coverage
# instrumentation and the sanitizers into build-fuzz/ (scripts/fuzz.sh calls this with
# BUILD=build-fuzz CC=clang and SAN=$(FUZZ_SAN)), each linked with the libFuzzer runtime.
FUZZ_SAN := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN := $(FUZZ_SRC:tests/fuzz/%.c=$(BUILD)/fuzz/%)
$(BUILD)/fuzz/%: tests/fuzz/%.c $(MODULE_OBJ) $(BUILD)/libcommon.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -fsanitize=fuzzer $(DAEMONS:%=-I%) $^ $(LDLIBS_ALL) -o $@

fuzz-targets: $(FUZZ_BIN)

# make fuzz: every target for FUZZ_SECONDS (default 60) each, from its committed seeds
# (tests/fuzz/corpus/<target>/); new inputs go to build-fuzz/corpus/. Fails on a crash.
fuzz:
	@scripts/fuzz.sh run $(or $(FUZZ_SECONDS),60)

# The short run for make test: 20 s a target (about 2 minutes with the build).
fuzz-short:
	@scripts/fuzz.sh run $(or $(FUZZ_SECONDS),20)

# Coverage reached after FUZZ_RUNS executions (default 200000) with and without the seeds.
fuzz-cov:
	@scripts/fuzz.sh cov $(or $(FUZZ_RUNS),200000)

# The informer's own figures: cache memory per object, deltas per second through PUB.
$(BUILD)/bench/bench_informer: bench/bench_informer.c $(filter $(BUILD)/informerd/%,$(MODULE_OBJ)) $(BUILD)/libcommon.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -Iinformerd $^ $(LDLIBS_ALL) -o $@

bench-informer: $(BUILD)/bench/bench_informer
	@$< $(or $(N),10000) $(or $(M),100000)

# observerd's probe through the Redis transport, plain and TLS, against a local
# redis-server: latency per probe and per round of N nodes, CPU per round.
$(BUILD)/bench/bench_redis_probe: bench/bench_redis_probe.c $(filter $(BUILD)/observerd/%,$(MODULE_OBJ)) $(BUILD)/libcommon.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -Iobserverd $^ $(LDLIBS_ALL) -o $@

bench-redis-probe: $(BUILD)/bench/bench_redis_probe
	@$< --nodes $(or $(N),300) --rounds $(or $(ROUNDS),200)

# The slot move's own throughput against four local redis-servers, side by side with
# redis-cli --cluster rebalance (bench/bench_slotmove.c; BYTES, default 64 MiB; RUNS).
$(BUILD)/bench/bench_slotmove: bench/bench_slotmove.c bench/bench_util.h bench/latency_hist.h $(MODULE_OBJ) $(BUILD)/libcommon.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -Iworkerd -Itests/unit $(filter-out %.h,$^) $(LDLIBS_ALL) -o $@

bench-slotmove: $(BUILD)/bench/bench_slotmove
	@$< --bytes $(or $(BYTES),67108864) --runs $(or $(RUNS),1)

# The webhook server under idle TLS connections: RSS per connection, refusals at the cap,
# AdmissionReview latency while they are open (N connections, CAPS a list of caps).
$(BUILD)/bench/bench_webhook: bench/bench_webhook.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $< -lssl -lcrypto -o $@

bench-webhook: $(BUILD)/bin/webhookd $(BUILD)/bench/bench_webhook
	@$(BUILD)/bench/bench_webhook --webhookd $(BUILD)/bin/webhookd -n $(or $(N),2000) --caps $(or $(CAPS),4096:1024)

bench: all
	@bench/run.sh

# The failover benchmark's client (bench/ackwriter.c): SET + WAIT writer that logs only
# acknowledged writes, their verifier and a ROLE sampler; and the benchmark itself
# (bench/failover.sh, bench/README.md "Failover"; SYSTEMS, TRIALS, DOWN_AFTER_MS knobs).
$(BUILD)/bench/ackwriter: bench/ackwriter.c bench/bench_util.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $< -lhiredis -o $@

bench-ackwriter: $(BUILD)/bench/ackwriter

# The Cluster-mode client (bench/clusterwriter.c): slot map, MOVED/ASK, SET + WAIT writer
# that logs only acknowledged writes, bulk fill and verify (tests/e2e/test_cluster_mode.sh).
$(BUILD)/bench/clusterwriter: bench/clusterwriter.c bench/bench_util.h bench/latency_hist.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $< -lhiredis -o $@

bench-failover: $(BUILD)/bench/ackwriter
	@ACKWRITER=$(BUILD)/bench/ackwriter RDC_BIN=$(BUILD)/bin bench/failover.sh

# Cluster mode: bootstrap time for 3/6/10 shards beside redis-cli --cluster create, and a
# shard primary's failover with and without the operator (bench/cluster.sh).
bench-cluster: all $(BUILD)/bench/clusterwriter
	@RDC_BIN=$(BUILD)/bin CLUSTERWRITER=$(BUILD)/bench/clusterwriter BUILD=$(BUILD) bench/cluster.sh

# Cluster mode: a 3 -> 4 shard rebalance of 1 GiB beside redis-cli --cluster rebalance on
# the same pods and data (bench/reshard.sh; DATA=67108864 for a short run).
bench-reshard: all $(BUILD)/bench/clusterwriter
	@RDC_BIN=$(BUILD)/bin CLUSTERWRITER=$(BUILD)/bench/clusterwriter BUILD=$(BUILD) bench/reshard.sh

# Backup and restore throughput with DATA bytes (default 1 GiB) against redis-cli --rdb + curl
# (bench/backup.sh; DATA=67108864 for a short run).
bench-backup: all $(BUILD)/bench/clusterwriter
	@RDC_BIN=$(BUILD)/bin CLUSTERWRITER=$(BUILD)/bench/clusterwriter BUILD=$(BUILD) bench/backup.sh

# The fault soak (tests/soak/): SOAK_SECONDS of random faults from SOAK_SEED against two
# operator replicas under ASan and three RedisClusters with checked writers.
soak: all
	@tests/soak/run.sh

# ==== kubebuilder's targets (install, run, deploy, image, bundle) =========================
# Same names and meaning as a kubebuilder project's Makefile; `make help` lists them (the
# `##` comments below, kubebuilder's awk). Kept in one block: the lines that only carry a
# `##` for an existing target add no prerequisite and no recipe.
KUBECTL ?= kubectl
IMG ?= rediscluster-operator:$(VERSION)
BUNDLE_IMG ?= rediscluster-operator-bundle:v$(VERSION)
# The first container tool that works here: docker with a daemon, else podman, else buildah.
CONTAINER_TOOL ?= $(shell (docker info >/dev/null 2>&1 && echo docker) || \
	(command -v podman >/dev/null 2>&1 && echo podman) || \
	(command -v buildah >/dev/null 2>&1 && echo buildah) || echo docker)
ignore-not-found ?= false
RUN_ARGS ?=

.PHONY: help install uninstall run deploy undeploy deploy-manifests docker-build docker-push \
	bundle bundle-check bundle-build bundle-validate monitoring-check build-installer manifests \
	manifests-check helm helm-chart helm-check helm-lint helm-package catalog-build catalog-validate

##@ General

help: ## Display this help.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

all: ## Build every daemon into build/bin/ (BUILD=dir for another).
unit: monitoring-check bundle-validate catalog-validate helm-check complexity ## Run the CUnit suites, the monitoring rules' tests, the bundle's and catalog's validation, the chart's checks and the complexity bound.
asan-unit: ## Run the CUnit suites under ASan and UBSan.
test: ## Unit suites, a short fuzz run, then the end-to-end suite on the local control plane.
e2e: ## Run the end-to-end suite (brings the local control plane up and down).
fuzz: ## libFuzzer over the parsers and webhooks, FUZZ_SECONDS (60) a target.
bench: ## The benchmarks (bench/README.md).
soak: ## The fault soak (tests/soak/soak.sh): SOAK_SECONDS (300) of random faults from SOAK_SEED, invariants checked.
deps: ## Install the Debian packages the build and the tests need.
cluster-up: ## Bring up the local control plane (tests/cluster/).
cluster-down: ## Tear the local control plane down.
clean: ## Remove the build directories.

##@ Deployment

install: ## Install the CRDs into the cluster of the current kubeconfig.
	$(KUBECTL) apply --server-side --force-conflicts -f crds/

uninstall: ## Remove the CRDs (and every RedisCluster and RedisBackup) from the cluster. ignore-not-found=true to ignore absence.
	$(KUBECTL) delete --ignore-not-found=$(ignore-not-found) -f crds/

run: all ## Run the operator from this host against the current kubeconfig (RUN_ARGS for more flags).
	$(BUILD)/bin/supervisor --bindir $(abspath $(BUILD)/bin) $(RUN_ARGS)

# deploy/ with its image replaced by IMG (kustomize's images transformer, through kubectl's
# built-in kustomize), in $(BUILD)/deploy-img/.
deploy-manifests:
	@scripts/deploy-img.sh "$(IMG)" $(BUILD)/deploy-img

deploy: deploy-manifests ## Deploy the operator (deploy/) with image IMG to the cluster of the current kubeconfig.
	$(KUBECTL) apply --server-side --force-conflicts -k $(BUILD)/deploy-img

undeploy: deploy-manifests ## Remove what make deploy created. ignore-not-found=true to ignore absence.
	$(KUBECTL) delete --ignore-not-found=$(ignore-not-found) --wait=true -k $(BUILD)/deploy-img

docker-build: ## Build the image IMG with CONTAINER_TOOL (docker, podman or buildah; scripts/image.sh).
	@CONTAINER_TOOL=$(CONTAINER_TOOL) scripts/image.sh build "$(IMG)"

docker-push: ## Push the image IMG with CONTAINER_TOOL.
	$(CONTAINER_TOOL) push $(IMG)

build-installer: ## Write dist/install.yaml: deploy/ as one file, image IMG (kubectl apply --server-side -f dist/install.yaml).
	@python3 scripts/installer.py --img $(IMG) --out dist/install.yaml

##@ Manifests

# The CRD's source is crds/; deploy/base/crd/ holds a copy (kustomize's load restrictor),
# and bundle/ and charts/rdc-operator/ are generated from deploy/. The RBAC and webhook
# manifests are written by hand in deploy/base/ (no annotations in C sources to generate
# them from): manifests regenerates everything that is derived from them.
manifests: ## Regenerate the manifests derived from crds/ and deploy/: the CRD's copy, bundle/, the Helm chart, catalog/.
	cp crds/cache.example.com_redisclusters.yaml crds/cache.example.com_redisbackups.yaml deploy/base/crd/
	@python3 scripts/bundle.py --img $(IMG)
	@python3 scripts/helm_chart.py
	@python3 scripts/catalog.py --bundle-img $(BUNDLE_IMG)

manifests-check: ## Fail when a manifest derived from crds/ or deploy/ is not what make manifests writes.
	@for f in crds/*.yaml; do cmp $$f deploy/base/crd/$${f#crds/} || \
		{ echo "manifests: deploy/base/crd/ is not crds/'s CRDs: run make manifests"; exit 1; }; done
	@python3 scripts/bundle.py --check
	@python3 scripts/helm_chart.py --check
	@python3 scripts/catalog.py --check

##@ Helm

# The pinned Helm (tests/cluster/helm.env), built from Go modules into the control
# plane's cache by tests/cluster/build-helm.sh (once per version; `=`: only looked up
# by the targets that use it).
HELM = $(shell tests/cluster/build-helm.sh --path)

helm: ## Build the pinned Helm into the control plane's cache (tests/cluster/build-helm.sh).
	@tests/cluster/build-helm.sh >/dev/null

helm-chart: ## Regenerate charts/rdc-operator/ (templates, values.yaml) from deploy/.
	@python3 scripts/helm_chart.py

helm-check: helm ## The chart's checks: drift from deploy/ (with a control), lint, template, schema (tests/helm/check.sh).
	@tests/helm/check.sh

helm-lint: helm ## helm lint --strict charts/rdc-operator.
	$(HELM) lint --strict charts/rdc-operator

helm-package: helm ## Package the chart into dist/ (rdc-operator-$(VERSION).tgz).
	$(HELM) package charts/rdc-operator --version $(VERSION) --app-version $(VERSION) -d dist/

##@ Bundle (OLM)

bundle: ## Generate bundle/ and bundle.Dockerfile (CSV, CRD, metadata) from deploy/ and crds/ for IMG.
	@python3 scripts/bundle.py --img $(IMG)

bundle-check: ## Fail when bundle/ is not what make bundle generates from deploy/ and crds/.
	@python3 scripts/bundle.py --check

bundle-validate: ## bundle-check, then operator-framework/api's validators (operatorframework suite), 0 errors and warnings.
	@tests/olm/validate.sh bundle

bundle-build: ## Build the bundle image BUNDLE_IMG from bundle.Dockerfile.
	@CONTAINER_TOOL=$(CONTAINER_TOOL) scripts/image.sh build-bundle "$(BUNDLE_IMG)"

catalog-build: ## Write the file-based catalog of the bundle (catalog/, BUNDLE_IMG) and validate it.
	@python3 scripts/catalog.py --bundle-img $(BUNDLE_IMG)
	@tests/olm/catalog.sh

catalog-validate: ## Validate catalog/ (operator-framework/api; opm rules), with controls (tests/olm/catalog.sh).
	@tests/olm/catalog.sh

##@ Monitoring

monitoring-check: ## promtool check rules and promtool test rules over deploy/overlays/monitoring.
	@tests/monitoring/check.sh
# ==== end of kubebuilder's targets ========================================================

cluster-up:
	@tests/cluster/cluster.sh up

cluster-down:
	@tests/cluster/cluster.sh down

clean:
	rm -rf build build-asan build-fuzz build-fault

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
