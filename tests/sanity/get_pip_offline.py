# Offline stand-in for https://ci-files.testing.ansible.com/ansible-test/get-pip-24.2.py
# (that host is unreachable here): bootstrap pip with the interpreter's own
# ensurepip, then let pip install what ansible-test asked for (pip==24.2 etc.)
# from the configured package index.
import ensurepip
import os
import subprocess
import sys

ensurepip.bootstrap(upgrade=True)
os.environ.pop("PIP_CONFIG_FILE", None)  # ensurepip points it at /dev/null
args = [arg for arg in sys.argv[1:] if arg not in ("--no-setuptools", "--no-wheel")]
if args and args[0] != "install":
    args.insert(0, "install")
sys.exit(subprocess.call([sys.executable, "-m", "pip"] + args))
