#!/usr/bin/env bash
# ansible-test sanity needs the collection at .../ansible_collections/NS/NAME:
# copy the files git knows (tracked, and untracked but not ignored) there and
# run it with the project's virtualenv. No ignore entries: fix the code.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
venv=${VENV:-$root/.venv}
dest=$root/build/sanity/ansible_collections/launchcard/inference
rm -rf "$dest"
mkdir -p "$dest"
cd "$root"
git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
  [ -e "$f" ] || continue
  mkdir -p "$dest/$(dirname "$f")"
  cp -a "$f" "$dest/$f"
done
cd "$dest"
git init -q . && git add -A >/dev/null 2>&1 || true
export PATH=$venv/bin:$PATH
# ansible-test bootstraps pip with a get-pip script from a host this machine
# cannot reach; give it an equivalent that uses Python's own ensurepip.
cache=$HOME/.ansible/test/cache
mkdir -p "$cache"
for v in 24_2 25_3; do
  [ -e "$cache/get_pip_$v.py" ] || cp "$root/tests/sanity/get_pip_offline.py" "$cache/get_pip_$v.py"
done
# Sanity tests that need a container or network are not used; every other
# test runs against the controller's Python.
exec ansible-test sanity --python 3.11 --color no --requirements "$@"
