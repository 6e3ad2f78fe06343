# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the collection writes its own metrics for node_exporter's textfile collector.

node_exporter reads every ``*.prom`` file of the directory its ``--collector.textfile.directory`` names. Debian's
``prometheus-node-exporter`` package (1.5.0-1+b6, Debian 12) ships that directory, ``/var/lib/prometheus/node-exporter``,
and its ``/usr/share/doc/prometheus-node-exporter/README.textfile`` says to put there files "readable by the
prometheus user" (the user its unit runs as), written beside and renamed into place so the collector never reads
half a file.

Pure Python, no Ansible import.
"""

from __future__ import annotations

TEXTFILE_DIR = "/var/lib/prometheus/node-exporter"
