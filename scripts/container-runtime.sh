#!/usr/bin/env bash
# Installs what the container-runtime tests need on a Debian machine of Deckhand's CI kind:
# Podman with runc (the default crun refuses these machines' hybrid cgroup layout) and
# busybox-static (the offline test image is built from it; nothing can be pulled here), and
# debootstrap and binutils, which deploy/images/build-base.sh builds Deckhand's images' base with.
# Idempotent: installs only what is missing and runs `apt-get update` at most once. Run as root.
#
# It does not write /etc/containers/containers.conf: @deckhand/container-runtime passes the
# equivalent flags itself when detection is asked for `restrictedHost` (the tests ask for it),
# so neither CI nor a developer machine depends on a machine-wide configuration.
#
# Exits non-zero when anything could not be installed or Podman does not answer `podman info`,
# so that CI fails loudly instead of the container tests skipping.
set -euo pipefail

if [ "$(id -u)" -ne 0 ]; then
  echo "container-runtime.sh: run as root (it installs Debian packages)" >&2
  exit 1
fi

missing=()
for package in podman runc busybox-static debootstrap binutils; do
  # dpkg, not PATH: /bin/busybox may be the dynamic `busybox` package, useless in an image.
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done

if [ "${#missing[@]}" -gt 0 ]; then
  echo "container-runtime.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update
  apt-get install -y "${missing[@]}"
else
  echo "container-runtime.sh: podman, runc, busybox-static, debootstrap and binutils are installed"
fi

# A working `info` is what makes a runtime, not a binary on PATH. The flags are the same ones
# the package passes under podmanCompat.
if ! podman --runtime runc --cgroup-manager cgroupfs info --format '{{.Host.OCIRuntime.Name}}' >/dev/null; then
  echo "container-runtime.sh: podman is installed but \`podman info\` failed" >&2
  exit 1
fi
echo "container-runtime.sh: $(podman --version) answers \`podman info\`"
