# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node exporter's textfile collector directory, where the collection writes its own metrics per host.

Pure Python, no Ansible import. One home of the path: the node_exporter role, the liveness timer and the textfile
facts read it from here.
"""

from __future__ import annotations

# Debian 12's prometheus-node-exporter 1.5.0: `--help` prints --collector.textfile.directory="/var/lib/prometheus/
# node-exporter" (Debian's build default; /etc/default/prometheus-node-exporter leaves ARGS="") and the package ships
# that directory empty (its README.textfile: "create files in the /var/lib/prometheus/node-exporter directory").
TEXTFILE_DIR = "/var/lib/prometheus/node-exporter"
