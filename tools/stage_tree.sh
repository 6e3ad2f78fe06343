#!/usr/bin/env bash
# Copy the files git knows (tracked, and untracked but not ignored) into DEST, emptied first: the tree a build or
# sanity run reads, without the sandbox's live guest filesystems (.sandbox*/), whose files come and go under a walk.
#   tools/stage_tree.sh DEST
set -euo pipefail
dest=${1:?usage: stage_tree.sh DEST}
root=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$dest"
mkdir -p "$dest"
cd "$root"
# a file deleted but not yet staged is listed by git and absent here: left out
git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
  [ -e "$f" ] || continue
  mkdir -p "$dest/$(dirname "$f")"
  cp -a "$f" "$dest/$f"
done
