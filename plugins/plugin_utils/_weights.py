# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who downloads a card's weights from the Hub and who copies them from a peer (the weights role's ``peer`` source).

Pure Python (ansible-core's boolean parsing aside). The weights role (roles/weights) asks :func:`peer_plan` once per run, on
every host it stages, from the same inputs: so every host agrees on the seed of its card. :func:`peer_receive` gives
how a host receives a copy: the only thing the copy's key can run there.
"""

from __future__ import annotations

import posixpath
import re

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.launchcard.inference.plugins.module_utils import _hf_paths as hf_paths
from ansible_collections.launchcard.inference.plugins.module_utils._hf_verify import ALLOW_HTTP_TOKEN, plain_http_token


def engine_hosts(plan):
    """``{card: [host, ...]}``: the hosts of each card that run an engine (routers load no weights), sorted."""
    cards = {}
    for host, host_plan in sorted(((plan or {}).get("hosts") or {}).items()):
        if any(i.get("role") != "router" for i in host_plan.get("instances") or []):
            cards.setdefault(host_plan.get("card"), []).append(host)
    return cards


def fanout_waves(hosts, holders, fanout=0):
    """The copies that spread a revision from the hosts that hold it to the others, wave by wave.

    :param hosts: the card's engine hosts in the run.
    :param holders: those of ``hosts`` that hold the revision before the first wave (the seed, once it has
        downloaded, and every host that had it staged).
    :param fanout: how many hosts one source copies to in one wave; 0 (or less): no bound, one wave.
    :returns: ``[[(target, source), ...], ...]``, one list per wave. A host that receives in a wave is a source
        from the next, so the holders grow up to ``fanout + 1`` times a wave. Targets go by name to the sources
        in turn (round robin: no source serves more than ``ceil(targets / sources)``); the same inputs give the
        same waves in any order.
    """
    holders = sorted(set(holders))
    pending = sorted(set(hosts) - set(holders))
    waves = []
    while pending and holders:
        take = len(pending) if fanout <= 0 else min(len(pending), fanout * len(holders))
        wave = [(target, holders[i % len(holders)]) for i, target in enumerate(pending[:take])]
        pending = pending[take:]
        waves.append(wave)
        holders = sorted(holders + [target for target, dummy in wave])
    return waves


def peer_plan(plan, staged, active, fanout=0, source="peer", hub_concurrency=0):
    """Who of each card downloads from the Hub, and the waves of copies that spread it to the others.

    :param plan: ``launchcard_plan`` (``hosts``: host -> ``{card, instances}``).
    :param staged: host -> whether the card's revision is already complete there (the preflight call's
        ``weights_staged``); a host not listed counts as not staged.
    :param active: the hosts this run still reaches (``ansible_play_hosts``): a failed, unreachable or
        ``--limit``-ed out host is never a seed or a source, and is given nothing to do.
    :param fanout: with ``source="peer"``, how many hosts one source copies to in one wave (:func:`fanout_waves`);
        0: no bound (the seed copies to every other host at once).
    :param source: ``peer`` (one download per card, then copies) or ``hub`` (every host that lacks the revision
        downloads it; no copies).
    :param hub_concurrency: how many hosts download from the Hub at once; 0: no bound. The downloaders, by name,
        are cut into rounds of that many (``download_round``).
    :returns: ``{"cards": {card: {"seed", "seed_staged", "copies": [host], "hosts": [host],
        "waves": [[[target, source], ...], ...]}}, "hosts": {host: {"card", "seed", "copying": bool,
        "copies": [host], "source", "wave", "source_load", "downloading": bool, "download_round"}},
        "waves": n, "download_rounds": n}``.
        The seed of a card is the first host (by name) that already holds the revision, else the first host: with
        the peer source it alone talks to the Hub for the files. ``copies`` are the card's other hosts that lack
        the revision (in a host's entry: on the seed only, every host whose copy comes from its download). A copying
        host's ``source`` is the host it copies from in its ``wave`` (1-based), which serves ``source_load`` hosts
        in that wave; every host that held the revision before the first wave, staged or the seed, is a source.
        ``waves`` and ``download_rounds``: the most of any card, the number of rounds every host walks through.
    """
    active = set(active or [])
    staged = staged or {}
    out = {"cards": {}, "hosts": {}, "waves": 0, "download_rounds": 0}
    downloaders = []
    for card, hosts in sorted(engine_hosts(plan).items(), key=lambda kv: str(kv[0])):
        hosts = [h for h in hosts if h in active]
        if not hosts:
            continue
        holders = [h for h in hosts if staged.get(h)]
        seed = (holders or hosts)[0]
        if source == "peer":
            waves = fanout_waves(hosts, holders or [seed], fanout)
            downloaders += [] if staged.get(seed) else [seed]
        else:
            waves = []
            downloaders += [h for h in hosts if not staged.get(h)]
        copies = sorted(target for wave in waves for target, dummy in wave)
        out["cards"][card] = {"seed": seed, "seed_staged": bool(staged.get(seed)), "copies": copies, "hosts": hosts,
                              "waves": [[[target, src] for target, src in wave] for wave in waves]}
        out["waves"] = max(out["waves"], len(waves))
        for host in hosts:
            out["hosts"][host] = {"card": card, "seed": seed, "copying": False,
                                  "copies": copies if host == seed else [], "source": None, "wave": None,
                                  "source_load": 0, "downloading": False, "download_round": None}
        for number, wave in enumerate(waves, 1):
            for target, src in wave:
                out["hosts"][target].update(copying=True, source=src, wave=number,
                                            source_load=sum(1 for dummy, s in wave if s == src))
    per_round = hub_concurrency if hub_concurrency > 0 else max(len(downloaders), 1)
    for i, host in enumerate(sorted(downloaders)):
        out["hosts"][host].update(downloading=True, download_round=i // per_round + 1)
    out["download_rounds"] = -(-len(downloaders) // per_round)
    return out


def card_repos(cards):
    """``{card: "owner/name@revision"}`` (the revision's first 12 characters) of the cards that name both, for
    :func:`peer_report`'s lines."""
    out = {}
    for name, card in (cards or {}).items():
        model = (card or {}).get("model") or {}
        if model.get("repo") and model.get("revision"):
            out[name] = "%s@%s" % (model["repo"], str(model["revision"])[:12])
    return out


def peer_report(peers, repo_of=None):
    """Lines saying, per card, which host downloads from the Hub and which copy from whom (or that none has to).

    :param peers: :func:`peer_plan`'s result.
    :param repo_of: card -> ``owner/name@revision`` to name in the lines in place of the card (optional).
    """
    lines = []
    for card, entry in sorted(peers.get("cards", {}).items(), key=lambda kv: str(kv[0])):
        what = (repo_of or {}).get(card) or str(card)
        if entry["seed_staged"]:
            head = "%s: %s already holds it, no download" % (what, entry["seed"])
        else:
            head = "%s: %s downloads it from the Hub" % (what, entry["seed"])
        waves = entry.get("waves") or []
        parts = []
        for number, wave in enumerate(waves, 1):
            sources = sorted({src for dummy, src in wave})
            said = "; ".join("%s %s it from %s" % (", ".join(ts), "copy" if len(ts) > 1 else "copies", src)
                             for src, ts in ((src, [t for t, s in wave if s == src]) for src in sources))
            parts.append(("wave %d: %s" % (number, said)) if len(waves) > 1 else said)
        lines.append(head + ("; " + "; ".join(parts) if parts else "; no host copies it"))
    return lines


# what http_token_refusal reads of each host: they refuse a run, they never shape its plan (no plan file input)
HUB_TOKEN_VARS = ("launchcard_hf_endpoint", "launchcard_hf_token", ALLOW_HTTP_TOKEN)


def http_token_refusal(hosts):
    """The planning step's refusal of a token bound for a plain-HTTP Hub endpoint, or None.

    :param hosts: ``[(name, read)]``; ``read(variable)`` is the host's value of each of :data:`HUB_TOKEN_VARS`
        (None where unset). The rule is the module's own
        (``_hf_verify.plain_http_token``), applied once on the controller, so the run stops before any host changes.
    :returns: one message naming each endpoint and its hosts.
    """
    by_why = {}
    for name, read in hosts:
        endpoint = read("launchcard_hf_endpoint") or ""
        allowed = boolean(read(ALLOW_HTTP_TOKEN) or False, strict=False)
        if allowed or not endpoint.strip().lower().startswith("http://"):
            continue  # the token is read only where it would matter
        why = plain_http_token(endpoint, read("launchcard_hf_token"), allowed)
        if why:
            by_why.setdefault(why, []).append(name)
    return "; ".join("%s: %s" % (", ".join(names), why) for why, names in sorted(by_why.items())) or None


# The receiving side of a peer copy: sshd runs a single-use rsync daemon in place of whatever the source asks
# (rrsync.1, "forcing the running of an rsync daemon-over-ssh command"), whose one module is the repository's folder.
PEER_MODULE = "launchcard-weights"
# What the weights role's synchronize sends (rsync -rlpt --partial --delay-updates [--bwlimit]); the daemon refuses
# any other option (rsyncd.conf(5), refuse options: "*" then "!NAME" accepts NAME, since rsync 3.2.0; an older
# daemon refuses the copy itself: it fails closed), so a source cannot ask for
# --delete, owners (-o, -g), devices (-D), ACLs or xattrs (-A, -X), --inplace or -K (a link to a folder kept).
PEER_OPTIONS = ("recursive", "links", "perms", "times", "partial", "delay-updates", "bwlimit")
# shlex.quote leaves these unquoted: a path of them passes the login shell (rrsync.1, BASH SECURITY ISSUE: the shell
# runs the forced command) and sshd's command="..." (sshd(8), AUTHORIZED_KEYS FILE FORMAT) unchanged
_PLAIN_PATH = re.compile(r"/[A-Za-z0-9_@%+=:,./-]*")


def _plain_path(path, what):
    if not isinstance(path, str) or not _PLAIN_PATH.fullmatch(path) or posixpath.normpath(path) != path:
        raise ValueError("%s must be an absolute, normalized path of letters, digits and _@%%+=:,./- only "
                         "(it goes into root's authorized_keys and an rsync daemon's settings), got %r" % (what, path))
    return path


def peer_receive(hf_home, repo, conf_path, address):
    """How a host receives a peer copy: the rsync daemon's settings, the key's options, and where the source sends.

    :param hf_home: this host's weights folder; the daemon's module is the repository's folder in it, chrooted: nothing
        the source sends, links included, is written or followed outside it.
    :param repo: the card's repository (``owner/name``).
    :param conf_path: where the settings are written on this host (root only, removed after the copy).
    :param address: this host's address as its source reaches it (an IPv6 address is bracketed in the URL).
    :returns: ``{"repo_dir", "config": rsyncd.conf text, "key_options": authorized_keys options, "dest": rsync:// URL}``.
    :raises ValueError: a path the shell or sshd would read otherwise, naming which.
    """
    repo_dir = _plain_path(hf_paths.repo_dir(hf_home or "", repo or ""), "launchcard_weights_dir (the repository's folder)")
    _plain_path(conf_path, "weights_peer_receive_conf")
    host = "[%s]" % address if ":" in str(address) else str(address)
    config = "\n".join([
        "[%s]" % PEER_MODULE,
        "path = %s" % repo_dir,
        # rsyncd.conf(5): chroot to the path before the transfer; links out of it cannot be followed
        "use chroot = yes",
        "read only = no",
        "write only = yes",  # nothing of this host is read back
        "list = no",
        # a daemon started by root switches to nobody unless told (rsyncd.conf(5), uid): the cache is root's
        "uid = root",
        "gid = root",
        "numeric ids = yes",
        "munge symlinks = no",  # the cache's own links (snapshots -> blobs) stay; hf_snapshot refuses any out of it
        "refuse options = * " + " ".join("!" + name for name in PEER_OPTIONS),
        # rsyncd.conf(5), incoming chmod: no set-id bit, nothing writable by others, whatever the source's modes
        "incoming chmod = ug-s,go-w",
        "",
    ])
    return {
        "repo_dir": repo_dir,
        "config": config,
        # sshd(8): command= replaces the command the client asks for; restrict: no forwarding, pty or rc files
        "key_options": 'command="rsync --server --daemon --config=%s .",restrict' % conf_path,
        "dest": "rsync://%s/%s/" % (host, PEER_MODULE),
    }
