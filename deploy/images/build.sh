#!/usr/bin/env bash
# Builds Deckhand's images from this checkout: the base image when this machine lacks it
# (build-base.sh), then each target of deploy/images/Containerfile from the CLI bundle that
# `pnpm build` wrote to apps/cli/dist. Nothing is pulled and nothing runs inside the build.
#
#   bash deploy/images/build.sh [--tag TAG] [TARGET...]
#
# TARGET is deckhand, server, executor or agent (default: all four). Each is tagged
# $DECKHAND_IMAGE_PREFIX/<target>:<TAG> (prefix default localhost/deckhand); without --tag, with
# the CLI's version and `latest`. Prints one line per image: "<target> <reference> <bytes>".
# DECKHAND_CONTAINER_ENGINE picks the engine and its global flags (default podman).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
engine="${DECKHAND_CONTAINER_ENGINE:-podman}"
read -r -a engine_command <<<"$engine"
prefix="${DECKHAND_IMAGE_PREFIX:-localhost/deckhand}"

fail() {
  echo "build: $*" >&2
  exit 1
}

tags=()
targets=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --tag)
      [[ $# -ge 2 && -n "$2" ]] || fail "--tag needs a value"
      tags+=("$2")
      shift 2
      ;;
    deckhand | server | executor | agent)
      targets+=("$1")
      shift
      ;;
    *) fail "usage: $0 [--tag TAG] [deckhand|server|executor|agent...]" ;;
  esac
done
[[ ${#targets[@]} -gt 0 ]] || targets=(deckhand server executor agent)
if [[ ${#tags[@]} -eq 0 ]]; then
  version="$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$root/apps/cli/package.json" | head -1)"
  tags=("$version" latest)
fi

[[ -f "$root/apps/cli/dist/bin/deckhand.cjs" ]] ||
  fail "apps/cli/dist is missing: build the CLI first (sh scripts/toolchain.sh pnpm build)"

base="$(bash "$root/deploy/images/build-base.sh")"

# podman reads HEALTHCHECK only in the Docker image format, and must not try to pull the base
# (it exists only in local storage); Docker keeps HEALTHCHECK and never pulls without --pull.
format_flags=()
if [[ "$(basename "${engine_command[0]}")" == podman ]]; then
  format_flags=(--format docker --pull=never)
fi

for target in "${targets[@]}"; do
  tag_flags=()
  for tag in "${tags[@]}"; do tag_flags+=(--tag "$prefix/$target:$tag"); done
  "${engine_command[@]}" build "${format_flags[@]}" --quiet \
    --file "$root/deploy/images/Containerfile" --build-arg "BASE=$base" --target "$target" \
    "${tag_flags[@]}" "$root" >/dev/null
  reference="$prefix/$target:${tags[0]}"
  size="$("${engine_command[@]}" image inspect --format '{{.Size}}' "$reference")"
  echo "$target $reference $size"
done
