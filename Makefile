# launchcard.inference: `make demo` deploys the example card onto the sandbox
# fleet; `make test` runs every test. Both set up what they need first.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
ROOT := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
VENV := $(ROOT)/.venv
BIN := $(VENV)/bin
INVENTORY ?= inventories/sandbox/gpus.ini
COLL := $(ROOT)/.collections/ansible_collections/launchcard/inference
E2E_WORKERS ?= 3
export PATH := $(BIN):$(PATH)
export ANSIBLE_CONFIG := $(ROOT)/ansible.cfg
export PYTHONDONTWRITEBYTECODE := 1
# A bare `make` lists the targets: nothing is installed or booted unless asked for by name.
.DEFAULT_GOAL := help

.PHONY: help docs demo test controller fleets molecules setup venv host-deps sandbox-up sandbox-down deploy monitoring undeploy units lint sanity integration e2e e2e-slices bench bench-render bench-upgrade bench-scale bench-weights build compat sanity-compat changelog clean molecule molecule-rocm molecule-ascend ee

demo: setup sandbox-up monitoring deploy ## Boot the sandbox fleet and deploy the example card (twice is fine)
	@$(BIN)/python tests/sandbox/demo_request.py -i $(INVENTORY)
	@echo "next: ssh -F .sandbox/ssh/config lc-router; make sandbox-down; README, 'The sandbox in one screen'"

# make test is CPU-bound (docs/development.md): the controller stages and the sandbox stages share the 2 CPUs from
# the start, so one's waits (pylint on one core, a fleet's health gate) are the other's time. The sandbox stages start
# once the sandbox cache is built (fleet.py cache: mirror- and disk-bound, minutes on a fresh machine, seconds after;
# each of its parts builds under a lock, so the controller's engine parser tests wait for the parts they use).
test: setup ## Every test: unit, lint, sanity, integration, compat (other ansible-cores), molecule (3 scenarios), end to end
	$(MAKE) -j2 --output-sync=target controller fleets

# the controller-only stages, one after another (-j1: beside the fleets, more at once only adds contention)
controller: setup
	$(MAKE) -j1 lint sanity integration units compat

# the molecule scenarios beside the e2e files, the sandbox cache building beside both: each fleet waits on the lock of
# the cached part it needs (tests/sandbox/sandbox_fleet/warm.py), so the parts that wait on the mirror overlap the tests.
# Started by the shell, not by a -j2 sub-make: that one was seen to start the molecules only after the e2e files.
fleets: setup
	@mkdir -p tests/output
	@$(BIN)/python tests/sandbox/fleet.py cache > tests/output/sandbox-cache.log 2>&1 & cache=$$!; \
	  $(MAKE) molecules > tests/output/molecules.log 2>&1 & mol=$$!; \
	  $(MAKE) e2e || rc=$$?; \
	  wait $$mol || { rc=1; echo "make fleets: a molecule scenario failed:"; }; cat tests/output/molecules.log; \
	  wait $$cache || { rc=1; echo "make fleets: the sandbox cache failed:"; }; cat tests/output/sandbox-cache.log; exit $${rc:-0}

# the three scenarios one after another, beside the e2e files (each its own state dir and subnet)
molecules: setup
	$(MAKE) -j1 molecule molecule-rocm molecule-ascend

setup: host-deps venv ## Debian packages and the pinned virtualenv

help: ## List the targets
	@grep -E '^[a-z][a-z0-9-]*:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z0-9-]+):.*## (.*)/\1\t\2/' | \
	  awk -F'\t' '{ printf "  %-16s %s\n", $$1, $$2 }'

host-deps: ## Debian packages the sandbox and the tests need (root; prometheus: promtool)
	@missing=""; for c in systemd-nspawn:systemd-container rsync:rsync debootstrap:debootstrap ip:iproute2 ssh:openssh-client mkfs.ext4:e2fsprogs curl:curl skopeo:skopeo docker-registry:docker-registry promtool:prometheus prometheus-node-exporter:prometheus-node-exporter; do \
	  command -v $${c%%:*} >/dev/null || missing="$$missing $${c#*:}"; done; \
	[ -f /usr/share/misc/pci.ids ] || missing="$$missing pci.ids"; \
	if [ -n "$$missing" ]; then echo "installing:$$missing"; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; fi

venv: $(VENV)/.done $(COLL)

$(VENV)/.done: requirements.txt
	python3 -m venv $(VENV)
	$(BIN)/pip install -q -r requirements.txt
	touch $@

$(COLL):
	mkdir -p $(dir $(COLL))
	ln -sfn ../../.. $(COLL)

sandbox-up: ## Boot the sandbox hosts named in $(INVENTORY)
	$(BIN)/python tests/sandbox/fleet.py up -i $(INVENTORY)

sandbox-down: ## Stop the sandbox hosts
	$(BIN)/python tests/sandbox/fleet.py down

deploy: ## Deploy the example card onto $(INVENTORY)
	$(BIN)/ansible-playbook playbooks/deploy.yml -i $(INVENTORY)

monitoring: ## Node exporter on every host of $(INVENTORY), Prometheus on its launchcard_monitoring hosts
	$(BIN)/ansible-playbook playbooks/monitoring.yml -i $(INVENTORY)

undeploy: ## Stop and remove the card's units on $(INVENTORY) (weights and images stay)
	$(BIN)/ansible-playbook playbooks/undeploy.yml -i $(INVENTORY)

units: ## Unit tests of the pure-Python core and the modules
	$(BIN)/python -m pytest -q -n 2 tests/unit tests/sandbox

docs: ## Rewrite the lists of unit options in the docs (tools/unit_docs.py), the alert rules (tools/alert_rules.py) and dashboards (tools/dashboards.py)
	$(BIN)/python tools/unit_docs.py
	$(BIN)/python tools/alert_rules.py
	$(BIN)/python tools/dashboards.py

lint: ## ansible-lint (production profile) and the changelog fragments
	$(BIN)/ansible-lint --offline --profile production
	$(BIN)/antsibull-changelog lint

sanity: ## ansible-test sanity on a copy of the tracked tree
	bash tests/sanity/run.sh

# not in `make test` (no time left there): the figures per core are in docs/development.md
sanity-compat: venv ## ansible-test sanity under every other supported ansible-core (tests/compat's virtualenvs)
	rc=0; for v in $$($(BIN)/python tests/compat/run.py --venvs); do bash tests/sanity/run.sh --venv "$$v" || rc=1; done; exit $$rc

integration: ## render.yml for three placements and malformed cards, collection build, EE build context (controller only)
	$(BIN)/python -m pytest -q -n 2 tests/integration

# three fleets at a time: their hosts wait on engines' start-up and health gates more than they use the 2 CPUs
e2e: ## Every end-to-end file on its sandbox fleet: deploy, operations, preflight, bare host, containers, upgrade (native and containers)
	$(BIN)/python -m pytest -q -x -n $(E2E_WORKERS) --durations=30 -m "not fleet24" tests/e2e

# not in `make test`: 24 hosts and two full deploys (docs/operations.md, "A workflow: plan, sliced apply, routers")
e2e-slices: setup ## One plan in 4 parallel ansible-runner slices on the 24-host bench fleet, against one unsliced run
	$(BIN)/python -m pytest -q -x --durations=10 -m fleet24 tests/e2e/test_plan_slices_sandbox.py

bench: setup ## No-op re-run of deploy against `ansible all -m ping`, at 8 and 24 hosts; writes docs/speed.md's table
	bash bench/noop_vs_ping.sh
	$(BIN)/python bench/docs_tables.py --write
	$(BIN)/python bench/docs_tables.py

bench-render: setup ## render.yml at 8/64/256 hosts and the planner at 1,000/10,000 hosts (no host contacted)
	$(BIN)/python bench/render_and_plan.py

bench-upgrade: setup ## upgrade.yml under load: per host against fleet size (2 and 4 replicas), then per topology of the example card; writes docs/speed.md's tables
	bash bench/upgrade_per_host.sh
	$(BIN)/python bench/upgrade_topologies.py
	$(BIN)/python bench/docs_tables.py --write

bench-scale: setup ## A no-op deploy's controller CPU seconds per host at 24, 256 and 1,000 generated hosts (no host contacted)
	$(BIN)/python bench/scale.py

bench-weights: setup ## The card's revision staged on 24 sandbox hosts from one seed against fanned out: Hub bytes and wall time
	$(BIN)/python bench/weights_fanout.py

# molecule finds a collection's scenarios in extensions/molecule/<scenario> when run from the collection root
# (molecule/util.py get_effective_molecule_glob, molecule 26.10)
molecule: setup ## roles/nvidia on sandbox hosts against the stand-in package repository (molecule test)
	cd $(ROOT) && ANSIBLE_ROLES_PATH=$(ROOT)/roles ANSIBLE_COLLECTIONS_PATH=$(ROOT)/.collections \
	  $(BIN)/molecule test -s nvidia

molecule-rocm: setup ## roles/rocm on sandbox hosts against the stand-in ROCm package repository (molecule test)
	cd $(ROOT) && ANSIBLE_ROLES_PATH=$(ROOT)/roles ANSIBLE_COLLECTIONS_PATH=$(ROOT)/.collections \
	  $(BIN)/molecule test -s rocm

molecule-ascend: setup ## roles/ascend on sandbox hosts against stand-in Ascend .run installers (molecule test)
	cd $(ROOT) && ANSIBLE_ROLES_PATH=$(ROOT)/roles ANSIBLE_COLLECTIONS_PATH=$(ROOT)/.collections \
	  $(BIN)/molecule test -s ascend

# meta/execution-environment.yml names its files relative to the collection root (as ansible-builder
# reads it from an installed collection): give ansible-builder a folder where they resolve that way.
EE_DIR ?= build/ee
ee: setup ## Execution environment for AWX / AAP and ansible-navigator: the build context of meta/execution-environment.yml in $(EE_DIR)/context
	rm -rf $(EE_DIR) && mkdir -p $(EE_DIR)
	ln -s $(ROOT)/meta $(EE_DIR)/meta && ln -s $(ROOT)/meta/execution-environment.yml $(EE_DIR)/execution-environment.yml
	$(BIN)/ansible-builder create -f $(EE_DIR)/execution-environment.yml -c $(EE_DIR)/context --output-filename Containerfile
	@tag=$$($(BIN)/python -c 'import yaml; print(yaml.safe_load(open("$(ROOT)/meta/execution-environment.yml"))["options"]["tags"][0])'); \
	  echo "next: podman build -t $$tag $(EE_DIR)/context   (the image ansible-navigator.yml runs)"

# from the files git knows (tools/stage_tree.sh): galaxy's manifest walks every file under the collection, the
# sandbox's guest filesystems (.sandbox*/) too, whose files a running fleet removes under the walk
build: ## Build the collection tarball into build/
	tools/stage_tree.sh build/src
	$(BIN)/ansible-galaxy collection build --force --output-path build build/src

compat: venv build ## The built collection's docs and the unit tests that reach ansible-core, on every other supported ansible-core (tests/compat)
	$(BIN)/python tests/compat/run.py

# keep_fragments (changelogs/config.yaml): a fragment is folded into a release once, by name; until the release
# is tagged, running this again adds the fragments that landed since (and --refresh-fragments their edits) to it;
# --refresh-plugins with --reload-plugins adds the modules and plugins that landed since to the release too.
changelog: setup ## Fold every changelog fragment and new plugin into the release galaxy.yml names (changelog.yaml, CHANGELOG.rst)
	ANSIBLE_COLLECTIONS_PATH=$(ROOT)/.collections $(BIN)/antsibull-changelog release --refresh-fragments --refresh-plugins --reload-plugins

clean: sandbox-down ## Stop the sandbox hosts, delete build outputs
	rm -rf build tests/output
