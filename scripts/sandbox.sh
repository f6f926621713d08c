#!/usr/bin/env bash
# Installs what Deckhand's sandbox uses on a Debian or Ubuntu machine: bubblewrap (every agent,
# command, local step, hook and probe runs in it) and slirp4netns (the internet for local steps,
# without the machine's loopback services). Idempotent: installs only what is missing and runs
# `apt-get update` at most once. Run as root (CI does).
#
# Exits non-zero when bubblewrap cannot create a sandbox afterwards, so that CI fails loudly
# instead of the sandbox tests skipping.
set -euo pipefail

if [ "$(id -u)" -ne 0 ]; then
  echo "sandbox.sh: run as root (it installs Debian packages)" >&2
  exit 1
fi

missing=()
for package in bubblewrap slirp4netns; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "sandbox.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update
  apt-get install -y "${missing[@]}"
else
  echo "sandbox.sh: bubblewrap and slirp4netns are installed"
fi

# The same sandbox Deckhand's detection tries: its own PID and network namespaces.
if ! bwrap --ro-bind / / --dev /dev --proc /proc --unshare-pid --unshare-net --die-with-parent true; then
  echo "sandbox.sh: bubblewrap is installed but cannot create a sandbox here" >&2
  exit 1
fi
echo "sandbox.sh: $(bwrap --version) creates sandboxes"
