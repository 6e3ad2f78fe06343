# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the collection: the options of the preflight module that its action plugin reads on the controller
(plugins/action/preflight.py) and the module accepts and ignores; documented in plugins/doc_fragments/preflight_action.py."""

from __future__ import annotations

CONTROLLER_SPEC = dict(
    image_vendors=dict(type="dict", default={}),
    native_packages=dict(type="raw"),
    native_lock=dict(type="raw"),
    read_units=dict(type="bool", default=False),
    recheck=dict(type="bool", default=False),
    take_lock=dict(type="bool", default=False),
    lock_defer=dict(type="bool", default=False),
    lock_dir=dict(type="path", default="/var/lib/launchcard"),
    break_lock=dict(type="bool", default=False),
    host_step=dict(type="dict"),
    from_role=dict(type="bool", default=False),
)
