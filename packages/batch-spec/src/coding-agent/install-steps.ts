import { BatchSpecError } from "../batch-spec-error.ts";
import { shellQuote } from "./shell-quote.ts";
import type { AgentInstallPlan } from "./types.ts";

/**
 * Shell fragments the agent definitions compose into their install plans. Every path they
 * write is inside `"$deckhand_stage"`; names joined onto it are checked so that no quoting is
 * needed inside the double-quoted stage path.
 */

const STAGE_NAME = /^[A-Za-z0-9._@+-]+(?:\/[A-Za-z0-9._@+-]+)*$/;

function stagePath(relative: string): string {
  if (!STAGE_NAME.test(relative) || relative.split("/").includes("..")) {
    throw new BatchSpecError("invalid_stage_path", `"${relative}" is not a plain relative path`);
  }
  return `"$deckhand_stage/${relative}"`;
}

/** Binaries the renderer's own install steps use (stage, move into place, link). */
export const STAGING_BINARIES: readonly string[] = ["mktemp", "mkdir", "mv", "ln", "rm"];

/** `tar -z` runs gzip itself on GNU tar, so gzip has to be in the image too. */
export const TAR_GZ_BINARIES: readonly string[] = ["curl", "tar", "gzip", "chmod"];
export const ZIP_BINARIES: readonly string[] = ["curl", "unzip", "chmod"];
export const FILE_BINARIES: readonly string[] = ["curl", "chmod"];
export const NPM_BINARIES: readonly string[] = ["npm", "node"];

/**
 * Downloads `url` to `<stage>/download`. `--fail` makes an HTTP error an error instead of an
 * HTML page saved as the binary; `--retry` covers transient refusals and 5xx answers. A
 * transfer cut short fails the step; the stage, and with it the partial file, is removed.
 */
function download(url: string): string[] {
  return [
    `curl -fsSL --retry 3 --retry-delay 1 --connect-timeout 30 -o ${stagePath("download")} ${shellQuote(url)} ||`,
    `  deckhand_fail 'downloading %s failed; check the install source and the network, then retry the step' ${shellQuote(url)}`,
  ];
}

/**
 * Moves the first of `members` found in `directory` to `<directory>/<binary>`, so an archive
 * that names its binary per target (codex's `codex-x86_64-unknown-linux-musl`) and one that
 * does not both end up at the same path.
 */
function pickMember(
  url: string,
  directory: string,
  binary: string,
  members: readonly string[],
): string[] {
  const lines: string[] = [];
  for (const member of members) {
    if (member === binary) continue;
    lines.push(
      `if [ -f ${stagePath(`${directory}/${member}`)} ]; then`,
      `  mv ${stagePath(`${directory}/${member}`)} ${stagePath(`${directory}/${binary}`)}`,
      "fi",
    );
  }
  lines.push(
    `if [ ! -f ${stagePath(`${directory}/${binary}`)} ]; then`,
    `  deckhand_fail 'the archive from %s contains none of: %s; check the install source' ${shellQuote(url)} ${shellQuote(members.join(", "))}`,
    "fi",
    `chmod 755 ${stagePath(`${directory}/${binary}`)}`,
    `rm -f ${stagePath("download")}`,
  );
  return lines;
}

/**
 * A release archive holding the binary under one of `members`; `extract` unpacks
 * `<stage>/download` into `<stage>/package`.
 */
function archiveReleasePlan(
  url: string,
  binary: string,
  members: readonly string[],
  extract: string,
): AgentInstallPlan {
  return {
    origin: url,
    entry: `package/${binary}`,
    lines: [
      ...download(url),
      `mkdir ${stagePath("package")}`,
      `${extract} ||`,
      `  deckhand_fail 'the archive from %s could not be extracted; check the install source' ${shellQuote(url)}`,
      ...pickMember(url, "package", binary, members),
    ],
  };
}

/** A `.tar.gz` release asset holding the binary under one of `members`. */
export function tarGzReleasePlan(
  url: string,
  binary: string,
  members: readonly string[],
): AgentInstallPlan {
  return archiveReleasePlan(
    url,
    binary,
    members,
    `tar -xzf ${stagePath("download")} -C ${stagePath("package")}`,
  );
}

/** A `.zip` release asset holding the binary under one of `members`. */
export function zipReleasePlan(
  url: string,
  binary: string,
  members: readonly string[],
): AgentInstallPlan {
  return archiveReleasePlan(
    url,
    binary,
    members,
    `unzip -q ${stagePath("download")} -d ${stagePath("package")}`,
  );
}

/** A release asset that is the executable itself (a native binary, or a script with a shebang). */
export function fileReleasePlan(url: string, binary: string): AgentInstallPlan {
  return {
    origin: url,
    entry: `package/${binary}`,
    lines: [
      ...download(url),
      `mkdir ${stagePath("package")}`,
      `mv ${stagePath("download")} ${stagePath(`package/${binary}`)}`,
      `chmod 755 ${stagePath(`package/${binary}`)}`,
    ],
  };
}

/**
 * Installs `packageName@version` with npm into `<stage>/package`; npm resolves the
 * per-platform optional dependencies (codex's native binary, for one) on the machine that runs
 * the step. No lockfile or package.json is written: the stage holds nothing but the package.
 */
export function npmPlan(
  packageName: string,
  version: string,
  binary: string,
  registry: string | undefined,
): AgentInstallPlan {
  const spec = `${packageName}@${version}`;
  const registryFlag = registry === undefined ? "" : ` ${shellQuote(`--registry=${registry}`)}`;
  return {
    origin: registry === undefined ? `npm ${spec}` : `npm ${spec} from ${registry}`,
    entry: `package/node_modules/.bin/${binary}`,
    lines: [
      `mkdir ${stagePath("package")}`,
      // npm's cache goes with the staging directory: the user's ~/.npm is read-only in a sandbox,
      // and one step's download must not be another's cache.
      `npm install --prefix ${stagePath("package")} --cache ${stagePath("npm-cache")} --no-save --no-package-lock --no-audit --no-fund --loglevel=error${registryFlag} ${shellQuote(spec)} ||`,
      `  deckhand_fail 'npm could not install %s; check the version and the registry, then retry the step' ${shellQuote(spec)}`,
      `if [ ! -e ${stagePath(`package/node_modules/.bin/${binary}`)} ]; then`,
      `  deckhand_fail 'npm installed %s but it has no %s executable' ${shellQuote(spec)} ${shellQuote(binary)}`,
      "fi",
    ],
  };
}
