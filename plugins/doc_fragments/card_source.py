# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment(object):
    """Where the controller-side modules read each host's card and placement from.

    Shared by ``launch_card`` and ``render_fleet``: both read the cards through
    the same code (plugins/plugin_utils/_card.py, plugins/action/launch_card.py),
    so the options are documented once.
    """

    DOCUMENTATION = r"""
options:
  src:
    description:
      - Path of the card on the controller, or an C(https://) URL fetched from the controller, for
        every host. When omitted each host's O(card_var) variable names its card.
      - A card of more than 4 MiB (4194304 bytes) is refused before it is parsed, naming O(src) or O(card_var);
        at most one byte more is read of a file or a URL.
    type: str
  checksum:
    description:
      - Expected C(sha256:<hex>) of the card's bytes; the task fails on a mismatch. When omitted, each
        host's O(checksum_var) variable is used if set.
    type: str
  card_var:
    description:
      - Host variable naming the host's card (path or https URL), used when O(src) is omitted.
      - A relative path is read from the host's inventory directory (C(inventory_dir)), never looked up in the
        playbook's or the collection's folders; a host with none (added by M(ansible.builtin.add_host)) is refused,
        naming the variable.
    type: str
    default: launchcard_card_src
  checksum_var:
    description:
      - Host variable holding the expected C(sha256:<hex>) of the host's card.
    type: str
    default: launchcard_card_checksum
  recipes_var:
    description:
      - Name of the host variable that lists the recipes a host runs (names, indexes or
        C({name, replicas}) dicts).
    type: str
    default: launchcard_recipes
  argv_overrides_var:
    description:
      - >-
        Name of the host variable holding the host's site overrides of its card's argv, a mapping from recipe
        name to C({remove: [FLAG, ...], set: {FLAG: VALUE | [VALUE, ...] | true}, env: {NAME: VALUE | null}})
        (docs/inventory.md, "Site overrides of a card's argv"); C(env) sets a variable of the recipe's environment, C(null) removes the card's.
      - Each instance runs its recipe with the overrides of the host it lands on; the plan (GPUs, ports, peer
        URLs) is made from that effective argv, and a bad override fails the task naming the variable, the
        recipe and the flag, before any host is touched.
    type: str
    default: launchcard_argv_overrides
  validate_certs:
    description:
      - Verify TLS certificates when O(src) is a URL.
    type: bool
    default: true
"""
