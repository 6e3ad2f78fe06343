#!/usr/bin/env bash
# ansible-test sanity needs the collection at .../ansible_collections/NS/NAME:
# copy the files git knows there (tools/stage_tree.sh) and
# run it with an ansible-core's virtualenv. No ignore entries: fix the code.
# Usage: run.sh [--venv DIR] [ansible-test sanity arguments]; DIR defaults to
# .venv (2.19); `make sanity-compat` passes tests/compat/run.py's virtualenvs.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
venv=$root/.venv
if [ "${1:-}" = --venv ]; then venv=$(cd "$2" && pwd); shift 2; fi
# the controller Python is the virtualenv's; each core gets its own copy of the tree
read -r controller_python core < <("$venv/bin/python" -c \
  'import sys; from ansible.release import __version__ as v; print("%d.%d" % sys.version_info[:2], ".".join(v.split(".")[:2]))')
dest=$root/build/sanity-$core/ansible_collections/launchcard/inference
"$root/tools/stage_tree.sh" "$dest"
cd "$dest"
git init -q . && git add -A >/dev/null 2>&1 || true
export PATH=$venv/bin:$PATH
# ansible-test bootstraps pip with a get-pip script from a host this machine
# cannot reach; give it an equivalent that uses Python's own ensurepip.
cache=$HOME/.ansible/test/cache
mkdir -p "$cache"
# The pip versions this core's ansible-test bootstraps (get_venv_packages in its python_requirements.py):
reqs=$("$venv/bin/python" -c 'import ansible_test, os; print(os.path.dirname(ansible_test.__file__))')/_internal/python_requirements.py
pips=$(sed -n "s/^ *pip='\([0-9.]*\)',\{0,1\}$/\1/p" "$reqs" | sort -u | tr . _)
[ -n "$pips" ] || { echo "sanity: no pip version in $reqs" >&2; exit 1; }
for v in $pips; do
  [ -e "$cache/get_pip_$v.py" ] || cp "$root/tests/sanity/get_pip_offline.py" "$cache/get_pip_$v.py"
done
# Sanity tests that need a container or network are not used. Every test
# runs against the virtualenv's Python (the controller's); then the tests that check code per
# Python version (compile, import) run again for modules and module_utils,
# the code that runs on the hosts, on the oldest Python a host may have:
# 3.9 (RHEL 9's platform Python). ansible-test limits those runs to the
# host-side code by itself (3.9 is a remote-only version for ansible-core).
# The interpreter: a pyenv build, else python3.9 on PATH. Set
# LC_SANITY_HOST_PYTHONS (e.g. "3.9 3.10 3.12") for more versions, or to ""
# to skip; a version without an interpreter fails the run unless
# LC_SANITY_ALLOW_MISSING_PYTHON=1. Arguments (e.g. --test pep8 FILE) go to
# the first run only, and then the host-Python runs are left out unless
# LC_SANITY_HOST_PYTHONS asks for them.
ansible-test sanity --python "$controller_python" --color no --requirements "$@"
find_python() {  # a working interpreter of version $1 (a pyenv shim may name one it cannot run)
  local v=$1 p
  for p in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$v".*/bin/"python$v" "$(command -v "python$v" 2>/dev/null)"; do
    if [ -x "$p" ] && "$p" -c "import sys; sys.exit(sys.version_info[:2] != tuple(map(int, '$v'.split('.'))))" 2>/dev/null; then
      echo "$p"
      return 0
    fi
  done
  return 1
}
# the oldest Python modules support: tests/config.yml's python_requires
host_pythons=$(sed -n "s/^  python_requires: '>=\(3\.[0-9]*\)'.*/\1/p" "$root/tests/config.yml")
[ -n "$host_pythons" ] || { echo "sanity: no '>=3.N' python_requires in tests/config.yml" >&2; exit 1; }
[ $# -eq 0 ] || host_pythons=
for v in ${LC_SANITY_HOST_PYTHONS-$host_pythons}; do
  py=$(find_python "$v" || true)
  if [ -z "$py" ]; then
    echo "sanity: no Python $v interpreter (python$v on PATH or a pyenv build): compile/import on $v NOT run" >&2
    [ "${LC_SANITY_ALLOW_MISSING_PYTHON:-0}" = 1 ] && continue
    exit 1
  fi
  echo "sanity: compile and import on Python $v ($py), host-side code"
  PATH=$(dirname "$py"):$PATH ansible-test sanity --python "$v" --color no --requirements \
    --test compile --test import
done
