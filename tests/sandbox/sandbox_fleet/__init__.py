"""Sandbox fleet for launchcard.inference: real Debian 12 hosts on this machine.

TEST INFRASTRUCTURE (tests/sandbox), not part of the collection: nothing here ships in
the collection or runs on a real fleet. Every host of an Ansible inventory is booted as a
systemd-nspawn container with systemd as PID 1 and a real sshd, on a private bridge,
reachable by Ansible over real SSH. GPUs (a stand-in nvidia-smi), the weights disk (a
sparse ext4 image) and the engines (tests/sandbox/standin_engine) are simulated; see
tests/sandbox/README.md. Run it as ``tests/sandbox/fleet.py`` (``cli``).

Modules, along the seams of the work:

- ``base``: paths, FleetError, logging, running commands, atomic files, locks
- ``procs``: pid files that survive pid reuse; the hosts' cgroups
- ``mounts``: mount points, unmounting
- ``inventory``: the hosts and their ``sandbox_*`` settings, from ``ansible-inventory --list``
- ``network``: the fleet's /24 and gateway, its bridge and who owns it
- ``rootfs``: the shared read-only Debian 12 base (debootstrap, one-time edits)
- ``wheelhouse``: the wheels mounted into every guest (stand-in engine, sglang-router)
- ``hostfiles``: what each guest gets: overlay, weights disk image, hostname, /etc/hosts,
  networkd, ssh keys, machine-id, stand-in nvidia-smi and gpus.json, simulated PCI bus
- ``supervisor``: the detached per-host process running systemd-nspawn (reboots included)
- ``warm``: ``fleet.py cache``, every cached part built at once
- ``lifecycle``: ``Fleet``: up, down, status of one state dir
- ``cli``: the command line

Needs root, systemd-nspawn, debootstrap, mkfs.ext4, ip, ssh, ssh-keygen and
``ansible-inventory`` on PATH. Standard library only.
"""
