# -*- coding: utf-8 -*-
# Copyright: (c) 2026, launchcard.inference contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Wait until an engine's health URL answers 200: the units' ``ExecStartPost=``.

Usage: wait-ready.py URL [SECONDS]

systemd keeps the unit "activating" while this runs, so "active" means the
engine answers, not only that its process started (vLLM and SGLang do not
speak sd_notify, so ``Type=notify`` cannot say so). systemd bounds the wait
with the unit's ``TimeoutStartSec=`` and stops it when the engine exits;
SECONDS (default 3600) bounds it here too. systemd waits for this check even
when the engine has exited, so the check ends as soon as the engine's process
($MAINPID, which systemd gives ExecStartPost=) is gone. Exit 0: healthy; 1:
not in time, or the engine exited.
Installed by the launchcard.inference units role; stdlib only.
"""

import os
import sys
import time
import urllib.error
import urllib.request


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        return True
    return True


def main(argv):
    if len(argv) not in (2, 3):
        sys.stderr.write("usage: wait-ready.py URL [SECONDS]\n")
        return 2
    url, deadline = argv[1], time.monotonic() + (float(argv[2]) if len(argv) == 3 else 3600.0)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # the engine's own port
    last = "no answer"
    main_pid = int(os.environ.get("MAINPID") or 0)
    while time.monotonic() < deadline:
        if main_pid and not alive(main_pid):
            sys.stderr.write("the engine (PID %d) exited before %s answered\n" % (main_pid, url))
            return 1
        try:
            with opener.open(url, timeout=5) as resp:
                if resp.status == 200:
                    return 0
                last = "answered %d" % resp.status
        except urllib.error.HTTPError as exc:
            last = "answered %d" % exc.code
        except (OSError, ValueError) as exc:
            last = "no answer (%s)" % getattr(exc, "reason", exc)
        time.sleep(2)
    sys.stderr.write("%s not ready in time: %s\n" % (url, last))
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
