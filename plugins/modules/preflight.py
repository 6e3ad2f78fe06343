#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: preflight
short_description: Check one host against its share of a launch card's plan, in one call
version_added: 1.0.0
description:
  - Gathers, in one round trip, everything the preflight checks need - the OS from C(/etc/os-release),
    free bytes of the filesystem that will hold the weights (C(statvfs)), bytes of the card's revision
    already in the Hugging Face cache, accelerator facts (the same collectors as
    M(launchcard.inference.accelerator_facts)), listening TCP ports with the process (name and PID) and the
    systemd unit (or the docker/podman container) holding each, read from C(/proc), a TCP connect to every
    peer port this host must reach (all in parallel threads),
    the size of C(/dev/shm), the free bytes of the container engine's data root, and what container device flags
    need from the host (the C(render) group's id, the C(/dev/davinciN) nodes).
  - For containers (O(runtime) C(docker) or C(podman)) on a host that runs accelerator engines, whether the
    containers can reach the accelerators - docker with NVIDIA GPUs has the C(nvidia) runtime or CDI (C(daemon.json),
    C(docker info)), podman with NVIDIA GPUs has a CDI spec naming the loaded driver (C(/etc/cdi), C(/var/run/cdi)),
    AMD has C(/dev/kfd), C(/dev/dri) and render nodes owned by the group the units add, Ascend has every
    C(/dev/davinciN) the units pass and the control devices.
  - A peer connect that is refused (RST) counts as reachable - at preflight time the servers are not running
    yet, so a refusal proves the network path works; a timeout, no route or an unreachable host is blocked.
  - Evaluates the checks and returns them; it never fails the host by itself and never changes it, so
    one report can cover the whole fleet before anything is touched.
options:
  needs:
    description:
      - What this host needs (C(disk_bytes), C(gpus), C(validated_models), C(weights_per_gpu_mib),
        C(weights_per_gpu_spread_mib), C(ports), C(images), C(peers), C(rdma), C(image_vendors), C(native_gaps)).
      - Unset, the action plugin computes it on the controller from this host's share of the plan
        (C(launchcard_plan), C(launchcard_cards), C(launchcard_peer_ports)), O(image_vendors), O(native_packages)
        and O(native_lock); empty on a host the plan gives nothing.
    type: dict
    default: {}
  weights_dir:
    description: Directory that will hold the Hugging Face cache (HF_HOME); its filesystem is measured.
    type: path
    required: true
  repo:
    description:
      - Hugging Face repository of the card, to count what of its revision is already staged.
      - Unset, the card's C(model.repo) of this host's share of the plan.
    type: str
  revision:
    description:
      - The card's pinned revision (40 hex).
      - Unset, the card's C(model.revision) of this host's share of the plan.
    type: str
  checks:
    description:
      - Checks to run; any left out stays on. Keys C(os), C(disk), C(gpu_count), C(gpu_model),
        C(memory_fit), C(memory_budget), C(gpu_in_use), C(gpu_health), C(driver), C(driver_branch), C(rocm_release),
        C(cann_driver), C(fabric), C(ports), C(peers),
        C(shm), C(rdma), C(container_engine), C(image_disk), C(image_vendor), C(native_install),
        C(container_nvidia_runtime), C(container_cdi_spec), C(container_amd_devices), C(container_ascend_devices),
        C(removal), C(runtime_change).
      - C(runtime_change) - with O(record) and O(allow_runtime_change) set - see O(allow_runtime_change).
      - C(removal) - with O(record) and O(allow_removal) set - every instance the host's record names is still placed
        here (C(needs.units), or C(needs.former_units) - its unit under an earlier release's name). One the plan no
        longer places (a host or group that lost its C(launchcard_recipes), a misspelt variable) fails, naming it,
        so the deploy stops before any host changes and nothing that serves is pruned; with O(allow_removal) true a
        warning names what the deploy removes.
      - C(memory_budget) - the engine's share of each placed GPU (its C(--gpu-memory-utilization) or
        C(--mem-fraction-static) of the memory CUDA reports) holds the weights, the activation floor and the KV
        cache of one C(--max-model-len) sequence (C(needs.memory)); C(gpu_in_use) - that share is free, naming the
        processes that hold it; C(gpu_health) - no ECC, row remap, page retirement or lost-GPU error on a placed GPU
        (docs/deploy.md).
      - C(rdma) - a warning where the host's PD prefills or decodes or multi-node ranks find no RDMA device
        (C(/sys/class/infiniband) and C(/dev/infiniband)), naming the TCP fallback.
      - C(image_vendor) - docker/podman with accelerators placed - every GPU instance's image serves the host's vendor
        (O(container_vendor), else the one its tools or PCI bus show), as C(needs.image_vendors) lists them; a CUDA
        image on an AMD or Ascend host fails, naming the vendor, the recipe and the image.
      - C(native_install) - native runtime without C(launchcard_runtime_native_lock) or
        C(launchcard_runtime_native_packages) - the collection ships a hash-pinned lock of what is placed here for the
        host's vendor (C(needs.native_gaps)); a vendor without one (AMD, Ascend, SGLang there) fails, naming the variables.
      - C(container_nvidia_runtime) - docker with NVIDIA GPUs - the daemon has the C(nvidia) runtime
        (C(nvidia-ctk runtime configure --runtime=docker)) or CDI on (C(features.cdi)); the running daemon's
        C(docker info) wins over C(/etc/docker/daemon.json).
      - C(container_cdi_spec) - podman with NVIDIA GPUs - a CDI spec of kind C(nvidia.com/gpu) in C(/etc/cdi) or
        C(/var/run/cdi) whose driver libraries are the loaded driver's (C(nvidia-ctk cdi generate)); a spec left by
        an earlier driver fails, naming both versions and the command that regenerates it.
      - C(container_amd_devices) - AMD - C(/dev/kfd) and C(/dev/dri) exist and the render nodes C(/dev/dri/renderD*)
        belong to the group the units add (O(amd_render_gid), else the host's C(render) group).
      - C(container_ascend_devices) - Ascend - every C(/dev/davinciN) the units pass (O(ascend_devices), else those
        found) exists, with C(/dev/davinci_manager), C(/dev/devmm_svm), C(/dev/hisi_hdc), and they cover the NPUs
        placed here.
      - The four apply only to O(runtime) C(docker)/C(podman), on a host that runs accelerator engines, for the
        vendor of O(container_vendor) (else the one found); C(native) and vendor C(none) skip them.
    type: dict
    default: {}
  gpu_memory_mib:
    description:
      - Device memory per GPU in MiB, stated by the operator for GPUs whose tool cannot report it
        (C(nvidia-smi) prints C([N/A]) for GB10 unified memory and C([Insufficient Permissions]) under MIG
        without privileges). Used only where the tool reports nothing; without it such a host gets a
        C(memory_fit) warning saying the memory is unknown.
    type: int
  stack_versions:
    description:
      - The versions the accelerator stack roles pin, checked against the hardware when O(install_driver) is set
        (otherwise the installed versions are checked). Keys C(nvidia_driver) (e.g. C(580.95.05)), C(rocm)
        (e.g. C(7.0.2)), C(cann) (e.g. C(8.2.RC1)), C(ascend_driver) (e.g. C(25.2.0)); empty values are ignored.
      - C(driver_branch) - NVIDIA driver branch against the GPU generation (Hopper and Ada from R525, Blackwell from
        R570, Blackwell Ultra from R580; NVIDIA data-center driver release notes,
        U(https://docs.nvidia.com/datacenter/tesla/index.html)).
      - C(rocm_release) - ROCm release against the Instinct model (MI300X/MI300A/MI325X from 6.2, MI350X/MI355X from
        7.0; U(https://rocm.docs.amd.com/en/latest/compatibility/compatibility-matrix.html)).
      - C(cann_driver) - Ascend NPU driver against the CANN release (CANN 8.0 with HDK 24.1, 8.1 with 25.0, 8.2 with
        25.2, 8.3 with 25.3; Huawei's CANN/HDK version compatibility table, U(https://www.hiascend.com/document)).
    type: dict
    default: {}
  allow_unvalidated_hardware:
    description: Report a GPU model outside the recipe's C(validated_hardware) as a warning instead of an error.
    type: bool
    default: false
  headroom_mib:
    description: Device memory (MiB) required per GPU beyond the weights' share.
    type: int
    default: 4096
  vendor:
    description: Accelerator vendor to query, or C(auto).
    type: str
    choices: [auto, nvidia, amd, ascend]
    default: auto
  install_driver:
    description:
      - The play installs the accelerator stack after this check (C(launchcard_install_accelerator_stack)).
      - A bare host, whose accelerators show on the PCI bus but whose vendor tool is missing or has no
        driver to talk to, then passes C(gpu_count) on the PCI count, with a C(driver) warning;
        C(gpu_model), C(memory_fit) and C(driver) are checked when preflight runs again after the install.
      - With V(false), such a host fails C(gpu_count), naming the accelerators the PCI bus shows.
    type: bool
    default: false
  pci_devices_dir:
    description:
      - The sysfs directory listing PCI functions (vendor, device and class of each), read to find
        accelerators before any driver is installed. Another path when the host's sysfs is mounted elsewhere.
    type: path
    default: /sys/bus/pci/devices
  connect_timeout:
    description: Seconds each TCP connect to a peer port (C(needs.peers)) may take before it counts as blocked.
    type: float
    default: 5.0
  host_ipc:
    description:
      - Whether the engines share the host's IPC namespace (containers run with C(--ipc host), native engines).
        Then C(/dev/shm) is the host's and the C(shm) check does not apply; otherwise C(/dev/shm) must hold
        O(shm_min_gib). Containers given their own C(/dev/shm) (C(--shm-size), the units'
        C(launchcard_container_shm_size)) do not use the host's either.
    type: bool
    default: true
  shm_min_gib:
    description:
      - Size of C(/dev/shm) (GiB) needed when O(host_ipc=false). NCCL with TP>1 keeps its buffers there and
        Docker's 64 MB default breaks it (vllm issue 1710); 1 GiB is a floor, not a sizing.
    type: float
    default: 1.0
  runtime:
    description:
      - How the engines run. For C(docker) and C(podman) the free space of the engine's data root (C(data-root)
        in C(/etc/docker/daemon.json), C(graphroot) in C(/etc/containers/storage.conf), else C(/var/lib/docker)
        or C(/var/lib/containers); its nearest existing ancestor) is checked; C(native) skips that check.
    type: str
    choices: [docker, podman, native]
    default: docker
  image_sizes:
    description:
      - Card image (as in C(needs.images)) to its compressed size in bytes, the config and layer C(size) fields of its
        manifest (RV(launchcard.inference.resolve_images#module:image_sizes), read from the registry on the
        controller before preflight).
      - Each image placed on the host that is not in the engine's store yet (see RV(facts.image_disk)) needs its size
        times O(image_unpack_factor) under the engine's data root; an image missing here needs O(image_allowance_gib).
    type: dict
    default: {}
  image_unpack_factor:
    description:
      - Free bytes needed per compressed byte of an image to pull (O(image_sizes)) - its layers unpacked, plus the
        compressed blob of the layer being unpacked, which the engine holds meanwhile. The sandbox's stand-in image
        (Python and shared libraries, one gzip layer) unpacks to 3.1 times its compressed size, 4.1 with its blob.
    type: float
    default: 4.0
  image_allowance_gib:
    description:
      - Free space (GiB) needed per image to pull whose size O(image_sizes) does not give (a registry that gave no
        manifest, a run that resolved no sizes). An estimate, not a measurement - vLLM and SGLang CUDA images take
        10-25 GB.
    type: float
    default: 30.0
  container_vendor:
    description:
      - The vendor whose devices the units pass into containers (C(launchcard_accelerator_vendor)); empty - the
        vendor found on the host (its tools, else its PCI bus). V(none) skips the C(container_*) checks.
    type: str
    choices: ['', nvidia, amd, ascend, none]
    default: ''
  container_toolkit:
    description:
      - With O(install_driver), whether the NVIDIA stack role installed next configures the container toolkit
        (registers docker's C(nvidia) runtime, generates the CDI spec); then C(container_nvidia_runtime) and
        C(container_cdi_spec) warn instead of failing.
    type: bool
    default: true
  amd_render_gid:
    description: The group id the AMD units add (C(launchcard_amd_render_gid)); unset - the host's C(render) group.
    type: int
  ascend_devices:
    description: The C(/dev/davinciN) numbers the Ascend units pass (C(launchcard_ascend_devices)); unset - those found.
    type: list
    elements: int
  lock:
    description:
      - Take the run lock in this same call (no round trip of its own), after the checks; see
        M(launchcard.inference.run_lock) for the lock files and their holder.
      - "The shape is C({holder: {run_id, user, controller, playbook, card}, paths: [{path, scope}], break_stale: bool}):
        C(paths) the host lock and, on the fleet's anchor host, the fleet lock; C(break_stale) replaces a lock
        held by another run (C(-e launchcard_lock_break=true))."
      - A path with C(defer=true) is only checked here (a lock another run holds is reported as for the others) and
        listed in RV(lock)'s C(deferred); the deploy takes it later with M(launchcard.inference.run_lock), on the
        hosts it changes (a host it leaves as it is takes none).
      - Not taken when a check of this host fails (the host stops; it holds nothing to release). A lock held by
        another run is returned in RV(lock), never failed here, so the play can release what it took on the other
        hosts before it refuses the run. In check mode nothing is written and a held lock is reported.
      - Unset, the action plugin fills it with O(take_lock) on a host the plan places; otherwise (the default, and
        C(playbooks/preflight.yml)) no lock is touched.
    type: dict
  units_reads:
    description:
      - Read in this same call what the units role's converge (M(launchcard.inference.systemd_units)) would compare,
        and probe the host's endpoints once, without waiting; RV(units_found) returns it. The deploy decides from it,
        on the controller, whether the converge would change nothing on this host
        (M(launchcard.inference.settle_or_lock)); such a host gets no converge call.
      - Unset, the action plugin fills it with O(read_units) (except on O(recheck)); otherwise nothing is read.
    type: dict
    suboptions:
      prefix:
        description: The unit files' name prefix, as M(launchcard.inference.systemd_units) has it.
        type: str
        default: launchcard-
      directory:
        description: Where the C(.service) unit files are.
        type: path
        default: /etc/systemd/system
      quadlet_directory:
        description: Where the Quadlet C(.container) files are.
        type: path
        default: /etc/containers/systemd
      dropin_directories:
        description: Where drop-ins (C(UNIT.d/*.conf)) of the units are looked for.
        type: list
        elements: path
        default: [/etc/systemd/system, /run/systemd/system]
      secrets_file:
        description: The secrets file the units read (C(EnvironmentFile=)).
        type: path
        default: /etc/launchcard/secrets.env
      secrets_sha256:
        description:
          - SHA-256 (hex) of the secrets file the converge would write; empty - none written (the file is kept as it
            is, or removed with O(units_reads.remove_secrets)). Only whether the file matches is returned, never a
            digest of it.
        type: str
        default: ""
      remove_secrets:
        description: The converge would remove the secrets file.
        type: bool
        default: false
      endpoints:
        description: The gate's first stage (M(launchcard.inference.http_health)'s endpoints), each probed once.
        type: list
        elements: dict
        default: []
      then:
        description: The gate's second stage (endpoints that answer through their peers), each probed once.
        type: list
        elements: dict
        default: []
  native_venv:
    description:
      - The C(native) runtime's virtualenv. When set, RV(native_stamps) lists its requirement stamps, so a
        deploy learns in this same call whether the engines need installing (no separate round trip).
      - Unset (the default) reads nothing.
    type: path
  inspect:
    description:
      - Paths whose state RV(inspected) reports in this same call (type, owner, group, mode, SHA-1 of a file), so
        a deploy skips the setup steps that find everything in place without a round trip of their own. Nothing
        is changed; a symbolic link is followed.
    type: list
    elements: path
    default: []
  users:
    description: User names whose presence in the host's user database RV(users) reports.
    type: list
    elements: str
    default: []
  record:
    description:
      - The host's record of what it runs (M(launchcard.inference.host_state)'s file, for example
        C(/var/lib/launchcard/state.json)). When set, RV(recorded_image_refs) returns the pinned images it names,
        so a deploy holds a fleet at the digests it runs when a tag moved, without a round trip of its own.
      - Unset (the default) reads nothing.
    type: path
  allow_removal:
    description:
      - With O(record) - V(false) - the C(removal) check fails when the plan no longer places an instance the
        record names here; V(true) - it warns, naming them (the converge then removes them). Unset - not checked
        (C(playbooks/upgrade.yml) removes the instances it replaces itself). C(playbooks/deploy.yml) sets it from
        C(launchcard_allow_removal) (default V(false)).
    type: bool
  allow_runtime_change:
    description:
      - With O(record) - V(false) - the C(runtime_change) check fails when the instances the record names and the plan
        keeps here run under another runtime (the record's C(runtime.kind)) than O(runtime); V(true) - it warns.
        Unset - not checked. C(playbooks/deploy.yml) sets it from C(launchcard_allow_runtime_change) (default V(false)).
    type: bool
  misspelt:
    description: The host's unknown variables near C(launchcard_runtime), named in the C(runtime_change) message
      (left out of the task, the action plugin finds them among the host's variables).
    type: list
    elements: str
    default: []
  misspelt_recipes:
    description: The host's unknown variables near C(launchcard_recipes), named in the C(removal) message (as O(misspelt)).
    type: list
    elements: str
    default: []
  placed:
    description:
      - V(false) - the plan gives this host nothing; only the C(removal) check runs (what it serves today).
      - Without O(needs) in the task, the action plugin sets it from C(launchcard_plan).
    type: bool
    default: true
author:
  - launchcard.inference contributors (@launchcard)
extends_documentation_fragment:
  - launchcard.inference.preflight_action
  - launchcard.inference.attributes
attributes:
  check_mode:
    support: full
    details: The checks only read; with O(lock), check mode reports a held lock and writes nothing.
  diff_mode:
    support: N/A
    details: The checks change nothing; the lock file is the run's bookkeeping, released by the same run.
"""

EXAMPLES = r"""
- name: Preflight this host against its share of the plan (launchcard_plan, set by the plan role)
  launchcard.inference.preflight:
    weights_dir: /var/lib/launchcard/models
    runtime: podman

- name: Preflight, take this run's lock and read what the units role compares, in the same call
  launchcard.inference.preflight:
    weights_dir: /var/lib/launchcard/models
    take_lock: true
    read_units: true
  register: preflight_result
"""

RETURN = r"""
checks:
  description:
    - One result per check that applied to this host, made on the controller by the action plugin from RV(facts)
      (on the host where the call takes a lock, which waits on them).
  returned: always
  type: list
  elements: dict
  sample:
    - check: disk
      ok: false
      severity: error
      need: 417.0 GiB free on /var/lib/launchcard/models
      found: 400.0 GiB free
      message: not enough free space for the weights
    - check: peers
      ok: true
      severity: ok
      need: TCP from here to 10.0.0.5:31000, 10.0.0.5:8998
      found: "reachable: 2 refused"
      message: every peer port is reachable
bare_host:
  description:
    - True when O(install_driver) is set and the host is bare - no device answers through a vendor tool,
      but the PCI bus shows accelerators. Such a host is checked again after its stack is installed.
  returned: always
  type: bool
lock:
  description:
    - With O(lock) - C(taken) (bool, every lock of C(paths) is this run's now), C(reason) (why nothing was taken,
      or empty), C(held_by) (C(<path> held by <holder>) for each lock another run holds), C(broken) (the same for
      each stale lock broken on request) and C(locks) (one result per path, as M(launchcard.inference.run_lock)
      returns them), C(deferred) (the paths given with C(defer=true), checked but not taken). Null without O(lock).
  returned: always
  type: dict
  sample:
    taken: false
    reason: held by another run
    held_by: ["/var/lib/launchcard/lock.json held by alice@ops-1, upgrade.yml, run 20261130T130055Z-1a2b3c4d,
      card sha256:0f1e2d3c4b5a, since 2026-11-30 13:00:56 UTC"]
    broken: []
native_stamps:
  description:
    - The names of the C(.launchcard-*) requirement stamps in O(native_venv) (each records one successful
      install of an exact requirement set), empty when the virtualenv does not exist; null when O(native_venv)
      is not set.
  returned: always
  type: list
  elements: str
  sample: [.launchcard-5f0c2d1e9b8a7c6d5e4f3a2b1c0d9e8f7a6b5c4d]
inspected:
  description:
    - One entry per path of O(inspect) - C(exists) (bool), C(type) (V(file), V(directory), V(other)), C(owner) and
      C(group) (names, null when the id has no name), C(mode) (four octal digits), C(checksum) (SHA-1 of a file's
      content, as M(ansible.builtin.stat) gives it) - all null but C(exists) when the path is absent.
  returned: always
  type: dict
  sample:
    /var/lib/launchcard/models: {exists: true, type: directory, owner: launchcard, group: launchcard, mode: "0755",
                                 checksum: null}
users:
  description: Whether each user of O(users) exists (name to bool).
  returned: always
  type: dict
  sample: {launchcard: true}
weights_staged:
  description:
    - True when the weights role's completion stamp of O(repo) at O(revision) is in O(weights_dir)'s cache and the
      snapshot still holds exactly the bytes it records (C(facts.disk.present_bytes)); the deploy then skips the
      weights role (no Hub request). False otherwise, and when O(repo) or O(revision) is unset.
  returned: always
  type: bool
container_package:
  description:
    - The OS package that provides the O(runtime)'s container engine on this host, for the runtime role to install
      (C(docker.io) on Debian and Ubuntu, C(podman)); null for O(runtime=native), on an unsupported system, and for
      docker on the RHEL 9 family, whose repositories have none (the C(container_engine) check then requires docker
      installed from Docker's repository).
  returned: always
  type: str
  sample: docker.io
recorded_image_refs:
  description:
    - With O(record), the record's C(runtime.image_refs), image as the card wrote it to the C(name@sha256:...) the
      host runs. Empty without O(record), without a record, for a native runtime, or when the record does not parse.
  returned: always
  type: dict
  sample: {"lmsysorg/sglang:latest": "docker.io/lmsysorg/sglang@sha256:0a1b2c3d4e5f..."}
recorded_runtime_setup:
  description:
    - With O(record), the record's C(runtime.setup) - the digest of what the C(launchcard.inference.runtime) role's
      container steps applied on the host (engine package, registry mirrors, keyring setting, pinned images). A
      deploy skips those steps while it equals the C(setup) of M(launchcard.inference.runtime_settings). Null without O(record), without
      a record, for a native runtime, when the record does not parse, or when the engine's store lacks an image the
      record names (RV(recorded_images_missing)).
  returned: always
  type: str
  sample: 3f786850e387550fdab836ed7e6dc881de23001b
host_step:
  description: "With O(host_step), on a host that passed every check - C(settled) and C(setup_parts) as
    M(launchcard.inference.settle_or_lock) returns them, made on the controller; empty where they could not be made."
  returned: with O(host_step)
  type: dict
units_found:
  description:
    - "With O(units_reads) - C(files) (C({file name: SHA-256}) of the collection's unit and Quadlet files), C(states)
      (C(systemctl show) of the units they give, C({unit: {property: value}})), C(dropins) (paths of their drop-ins),
      C(secrets_in_place) (bool, see O(units_reads.secrets_sha256)), C(endpoints) and C(then) (one probe of each
      endpoint, as M(launchcard.inference.http_health) reports them) and C(record_sha256) (of the running state
      the record at O(record) describes, null without one), C(record_instances) (the unit, URL and argv of each
      instance the record names: what its peers reach). Null without O(units_reads)."
  returned: always
  type: dict
  sample:
    files: {launchcard-demo-vllm-aggregated-0.service: 3b1f0c...}
    states: {launchcard-demo-vllm-aggregated-0.service: {ActiveState: active, SubState: running, UnitFileState: enabled}}
    dropins: []
    secrets_in_place: true
    endpoints: [{name: launchcard-demo-vllm-aggregated-0.service, healthy: true, detail: health 200}]
    then: []
    record_sha256: 9c2e41...
    record_instances: [{unit: launchcard-demo-vllm-aggregated-0.service, url: "http://10.0.0.5:8000", argv: [vllm, serve]}]
recorded_images_missing:
  description:
    - The images of RV(recorded_image_refs) that this host runs (C(needs.images)) whose digest the engine's store does
      not hold (removed by hand, or a store its engine's CLI could not list, which a warning names); an image only
      other hosts run is never missing here. When any is missing, RV(recorded_runtime_setup) is
      null, so a deploy runs the runtime role's container steps again and pulls them.
  returned: always
  type: list
  elements: str
  sample: ["lmsysorg/sglang:latest"]
recorded_argv:
  description:
    - With O(record), the argv of each recipe the record says the host runs (recipe name to its tokens). Preflight's
      engine argv check skips an argv and image every host already runs (no call on a no-op run).
  returned: always
  type: dict
  sample: {sglang-prefill: [sglang, serve, --model-path, zai-org/GLM-5.3-Flash, --tp-size, "2"]}
recorded_card:
  description:
    - With O(record), the C(repo) and C(revision) of the card the record says this host serves, and C(previous_revision)
      (its replaced record's, or null); a deploy's report warns when its plan moves the host to another. Null without
      O(record), without a record naming a card, or when the record does not parse.
  returned: always
  type: dict
  sample: {repo: zai-org/GLM-5.3-Flash, revision: 46a050bec13002ad29ee795c16e61cf4fa3c4a9c, previous_revision: null}
failed_checks:
  description: Names of the checks with severity C(error).
  returned: always
  type: list
  elements: str
stack_vendor:
  description:
    - Whose accelerator driver stack this host needs - the vendor whose tools answered (C(facts.accelerators.vendor)),
      else the vendor whose accelerators the PCI bus shows (C(facts.accelerators.pci.vendor)), else V(none).
  returned: always
  type: str
  choices: [nvidia, amd, ascend, none]
  sample: nvidia
facts:
  description:
    - What was gathered.
  returned: always
  type: dict
  contains:
    os:
      description: C(ID) and C(VERSION_ID) of C(/etc/os-release).
      type: dict
      sample: {id: debian, version_id: "12"}
    disk:
      description:
        - C(statvfs) of the weights filesystem (its nearest existing directory) - C(path), C(free_bytes),
          C(total_bytes) (bytes) - and C(present_bytes), the bytes of the card's revision already in the HF cache.
      type: dict
    accelerators:
      description: The M(launchcard.inference.accelerator_facts) summary (same shape as C(launchcard_accelerators)).
      type: dict
    listening:
      description:
        - Listening TCP ports (keys are port numbers as strings), from C(/proc/net/tcp{,6}), each with the process
          holding it - C(comm) (the name in C(/proc/PID/comm)), C(pid) (int) - and C(unit), the systemd service of
          its cgroup or C(container NAME) for a docker/podman container; any of them null when not readable.
      type: dict
      sample: {"22": {unit: ssh.service, pid: 412, comm: sshd}}
    peers:
      description:
        - One C({address, port, state, reachable, detail}) per peer port; state C(open), C(refused), C(timeout),
          C(unreachable), C(unresolved) or C(error).
      type: list
      elements: dict
    shm:
      description: C({path, size_bytes}) of C(/dev/shm) (bytes), or null when absent.
      type: dict
    image_disk:
      description:
        - C({path, data_root, free_bytes, in_place}) of the container engine's data root (bytes), or null. C(in_place)
          lists the card images whose digest the host's record names (O(record)) and the engine's store holds, as
          the engine's own CLI lists it in the same call (C(podman image ls --all --format json), C(docker image ls
          --all --digests --format '{{json .}}'), either store of docker 29); the C(image_disk) check asks room only
          for the others. An engine that cannot list its store (no CLI, a daemon down) holds none, with a warning.
      type: dict
    runtime_devices:
      description: What container device flags need from the host.
      type: dict
      contains:
        render_gid:
          description:
            - The numeric id of group C(render) in the host's group database (NSS, as C(getent group render)), which
              owns the AMD render nodes C(/dev/dri/renderD*); null when there is no such group.
          type: int
          sample: 110
        davinci:
          description: N of each Ascend NPU node C(/dev/davinciN) present, sorted (C(/dev/davinci_manager) excluded).
          type: list
          elements: int
          sample: [0, 1, 2, 3, 4, 5, 6, 7]
        rdma:
          description: The RDMA devices of C(/sys/class/infiniband), sorted; empty without them or without C(/dev/infiniband).
          type: list
          elements: str
          sample: [mlx5_0, mlx5_1]
        selinux:
          description: C(enforcing), C(permissive) or C(disabled) (C(/sys/fs/selinux/enforce)).
          type: str
          sample: enforcing
    container_access:
      description:
        - "What the C(container_*) checks read, only what applies to O(runtime) and the vendor - C(docker)
          (C({daemon_json: {path, runtimes, cdi, error}, info: {runtimes, cdi} or null}), docker with NVIDIA),
          C(cdi_specs) (C([{path, kind, driver_versions}]), podman with NVIDIA), C(devices) (path to bool, and for
          AMD C(render_nodes), path to group id)."
      type: dict
    engines:
      description:
        - C(docker), the path of the docker client (null when absent); with O(runtime=podman), C(podman_version),
          the installed podman's version from C(podman --version) (null when absent), which decides Quadlet units.
      type: dict
      sample: {docker: null, podman_version: 5.4.2}
"""

import re

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.launchcard.inference.plugins.module_utils import _accelerators as accelerators
from ansible_collections.launchcard.inference.plugins.module_utils._accel_common import bare_host, read_text as _read, stack_vendor
from ansible_collections.launchcard.inference.plugins.module_utils._hf_paths import stamp_path
from ansible_collections.launchcard.inference.plugins.module_utils._platforms import engine_package
from ansible_collections.launchcard.inference.plugins.module_utils import _gate as gate
from ansible_collections.launchcard.inference.plugins.module_utils import _lock
from ansible_collections.launchcard.inference.plugins.module_utils._preflight_options import (
    CONTROLLER_SPEC, DEFAULT_IMAGE_UNPACK_FACTOR, evaluate_options)
from ansible_collections.launchcard.inference.plugins.module_utils._state import (
    parse as parse_record, recorded_argv, recorded_card, recorded_image_refs, recorded_runtime, recorded_runtime_setup,
    recorded_units)
from ansible_collections.launchcard.inference.plugins.module_utils._image_store import (
    image_data_root, images_in_place, images_missing, stored_image_digests)
from ansible_collections.launchcard.inference.plugins.module_utils._preflight_reads import (
    container_access, gpu_owners, image_disk, inspect_path, listening_sockets, native_stamps, parse_os_release,
    podman_version, probe_all, rdma_and_selinux, runtime_devices, shm_size, user_exists, weights_disk, weights_staged)

_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def _image_store(module, runtime, recorded):
    """The engine's data root and the images of the host's record its store holds, ``(root, in_place)``: listed by the
    engine's own CLI (``podman image ls``, ``docker image ls``) only where the record names images; one it cannot list
    holds nothing known, with a warning saying why."""
    root = image_data_root(runtime, _read("/etc/docker/daemon.json"), _read("/etc/containers/storage.conf"))
    if not root or not recorded:
        return root, []
    stored, problem = stored_image_digests(runtime, module.get_bin_path, module.run_command)
    if problem:
        module.warn("image store not read: %s; no image of the host's record counts as in place (image_disk asks "
                    "room for each, the runtime role's pull steps run again)" % problem)
    return root, images_in_place(recorded, stored)


def _docker_info(module, docker):
    """``docker info --format '{{json .}}'`` of the running daemon (10 s at most), or None without one."""
    if not docker:
        return None
    timeout = module.get_bin_path("timeout")
    argv = ([timeout, "10"] if timeout else []) + [docker, "info", "--format", "{{json .}}"]
    rc, out, dummy = module.run_command(argv)
    return out if rc == 0 else None


def _units_found(module, spec, record_text):
    """What the converge would compare, and one probe of the endpoints (``units_reads`` option)."""
    if not spec:
        return None
    try:
        record = parse_record(record_text)
    except ValueError:
        record = None  # the converge's record call replaces it (and says so)
    return gate.converge_reads(spec, module.run_command, module.get_bin_path, record)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            needs=dict(type="dict", default={}),
            weights_dir=dict(type="path", required=True),
            repo=dict(type="str"),
            revision=dict(type="str"),
            checks=dict(type="dict", default={}),
            allow_unvalidated_hardware=dict(type="bool", default=False),
            headroom_mib=dict(type="int", default=4096),
            vendor=dict(type="str", choices=["auto", "nvidia", "amd", "ascend"], default="auto"),
            connect_timeout=dict(type="float", default=5.0),
            install_driver=dict(type="bool", default=False),
            pci_devices_dir=dict(type="path", default="/sys/bus/pci/devices"),
            host_ipc=dict(type="bool", default=True),
            shm_min_gib=dict(type="float", default=1.0),
            runtime=dict(type="str", choices=["docker", "podman", "native"], default="docker"),
            image_allowance_gib=dict(type="float", default=30.0),
            image_sizes=dict(type="dict", default={}),
            image_unpack_factor=dict(type="float", default=DEFAULT_IMAGE_UNPACK_FACTOR),
            gpu_memory_mib=dict(type="int"),
            stack_versions=dict(type="dict", default={}),
            native_venv=dict(type="path"),
            inspect=dict(type="list", elements="path", default=[]),
            users=dict(type="list", elements="str", default=[]),
            lock=dict(type="dict"),
            record=dict(type="path"),
            allow_removal=dict(type="bool"),
            allow_runtime_change=dict(type="bool"),
            misspelt=dict(type="list", elements="str", default=[]),
            misspelt_recipes=dict(type="list", elements="str", default=[]),
            placed=dict(type="bool", default=True),
            container_vendor=dict(type="str", choices=["", "nvidia", "amd", "ascend", "none"], default=""),
            container_toolkit=dict(type="bool", default=True),
            amd_render_gid=dict(type="int"),
            ascend_devices=dict(type="list", elements="int"),
            units_reads=dict(type="dict", options=gate.READS_SPEC),
            # read by the action plugin, on the controller (plugins/doc_fragments/preflight_action.py)
            **CONTROLLER_SPEC
        ),
        supports_check_mode=True,
    )
    p = module.params
    record_text = _read(p["record"]) if p["record"] else None
    recorded = recorded_image_refs(record_text) if p["record"] else {}
    on = dict((c, (p["checks"] or {}).get(c, True)) for c in ("peers", "image_disk"))
    root, in_place = _image_store(module, p["runtime"], recorded)
    # an image this host runs that the engine's store lost (removed by hand): the runtime role's pull steps run again
    missing = images_missing(recorded, in_place, p["needs"].get("images"))
    facts = {
        "os": parse_os_release(_read("/etc/os-release") or ""),
        "disk": weights_disk(p["weights_dir"], p["repo"], p["revision"]),
        "accelerators": accelerators.collect(
            p["vendor"], module.get_bin_path, module.run_command, _read, pci_dir=p["pci_devices_dir"]),
        "listening": listening_sockets(),
        "peers": probe_all(p["needs"].get("peers") or [], p["connect_timeout"]) if on["peers"] else [],
        "shm": shm_size(),
        "image_disk": image_disk(root, in_place) if on["image_disk"] else None,
        "runtime_devices": dict(runtime_devices(), **rdma_and_selinux()),
        "engines": {"docker": module.get_bin_path("docker")},
        # what the record says the host runs, for the removal check (not returned once checked: the record has its own)
        "recorded_units": recorded_units(record_text) if p["record"] else None,
        "recorded_runtime": recorded_runtime(record_text) if p["record"] else None,
    }
    facts["gpu_owners"] = gpu_owners(facts["accelerators"])
    facts["container_access"] = container_access(
        p["runtime"], p["container_vendor"] or stack_vendor(facts["accelerators"]),
        docker_info=lambda: _docker_info(module, facts["engines"]["docker"]))
    if p["runtime"] == "podman":
        # what decides Quadlet units (podman >= 4.4) for the units role: plugin_utils/_unit_options.py detected
        facts["engines"]["podman_version"] = podman_version(module.get_bin_path, module.run_command)
    checks = failed_checks = None
    if _lock.takes_now(p["lock"]):
        # a lock taken in this call is taken only where every check passed: the checks run here
        from ansible_collections.launchcard.inference.plugins.module_utils._preflight import evaluate, failed
        checks = evaluate(facts, p["needs"], evaluate_options(p))
        failed_checks = [r["check"] for r in failed(checks)]
    facts["listening"] = dict((str(k), v) for k, v in facts["listening"].items())
    if checks is not None:
        facts = dict((k, v) for k, v in facts.items() if k not in ("recorded_units", "recorded_runtime"))
    staged = False
    if p["repo"] and p["revision"] and _COMMIT.match(p["revision"]):
        staged = weights_staged(_read(stamp_path(p["weights_dir"], p["repo"], p["revision"])),
                                facts["disk"]["present_bytes"])
    # changed stays false: the lock files are the run's own; without checks here the action plugin makes them
    module.exit_json(changed=False, checks=checks, failed_checks=failed_checks,
                     checks_options=None if checks is not None else evaluate_options(p),
                     lock=_lock.preflight_lock(module, p["lock"], failed_checks),
                     bare_host=bare_host(facts["accelerators"], p["install_driver"]),
                     stack_vendor=stack_vendor(facts["accelerators"]),
                     native_stamps=native_stamps(p["native_venv"]) if p["native_venv"] else None,
                     inspected=dict((path, inspect_path(path)) for path in p["inspect"]),
                     users=dict((name, user_exists(name)) for name in p["users"]),
                     weights_staged=staged,
                     container_package=engine_package(facts["os"].get("id"), p["runtime"]),
                     recorded_image_refs=recorded,
                     recorded_runtime_setup=None if missing else recorded_runtime_setup(record_text),
                     recorded_images_missing=missing,
                     recorded_argv=recorded_argv(record_text) if p["record"] else {},
                     recorded_card=recorded_card(record_text) if p["record"] else None,
                     units_found=_units_found(module, p["units_reads"], record_text),
                     facts=facts)


if __name__ == "__main__":
    main()
