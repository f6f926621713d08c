import { isAbsolute, resolve } from "node:path";
import { ApprovalPolicySchema } from "@deckhand/wire";
import type { z } from "zod";
import { parseShellScript, type ShellWord, type SimpleCommand } from "./shell-words.ts";
import { isInsideWorktree } from "./worktree-path.ts";

/** When the native agent asks the user before acting, as Codex's approval policies mean it. */
// The policy names are a wire contract (sessions carry one); re-exported for this package's users.
export { ApprovalPolicySchema };
export type ApprovalPolicy = z.infer<typeof ApprovalPolicySchema>;

export type SafetyDecision = "auto_approve" | "ask" | "forbid";

export interface SafetyAssessment {
  decision: SafetyDecision;
  /** Why, in words fit for a permission prompt or for the model. */
  reason: string;
  /**
   * `on-failure`: the command runs without asking, and if it fails the user may be asked to
   * approve running it again. False for commands known to be safe and under other policies.
   */
  askOnFailure: boolean;
}

export interface AssessCommandOptions {
  /**
   * Where the command runs: a read outside the worktree is then not known to be harmless, so
   * `untrusted` and `on-request` ask before it.
   */
  place?: CommandPlace;
  /**
   * The model asked for the user's approval itself (execute's `with_approval`, after Codex's
   * `with_escalated_permissions`): under `on-request` the command asks even when it is known
   * to be safe; under any other policy the call is refused, as Codex refuses it.
   */
  withApproval?: boolean;
  /** Why the model asks, shown to the user with the request. */
  justification?: string;
}

/** Why an argument list is unsafe for a program, or null when it is safe. */
type ArgumentCheck = (args: readonly ShellWord[]) => string | null;

function forbidOptions(program: string, options: readonly string[]): ArgumentCheck {
  return (args) => {
    for (const { text } of args) {
      const name = text.split("=", 1)[0]!;
      if (options.includes(name)) return `${program} ${name} can write files or run programs`;
    }
    return null;
  };
}

const noGlobs =
  (program: string, check: ArgumentCheck = () => null): ArgumentCheck =>
  (args) => {
    const globbed = args.find((arg) => arg.glob);
    if (globbed !== undefined) {
      return `${program} with an unquoted pattern (${globbed.text}) could receive file names that read as options`;
    }
    return check(args);
  };

const allowAll: ArgumentCheck = () => null;

const SED_PRINT_SCRIPT = /^(?:\d+|\$)(?:,(?:\d+|\$))?p$/;

/** `sed -n 'N,Mp' [file…]` only: printing lines, nothing that edits or runs anything. */
const sedCheck: ArgumentCheck = (args) => {
  const rest = [...args];
  let quiet = false;
  let script: string | null = null;
  while (rest.length > 0 && rest[0]!.text.startsWith("-")) {
    const flag = rest.shift()!.text;
    if (flag === "-n" || flag === "--quiet" || flag === "--silent") quiet = true;
    else if (flag === "-e" && rest.length > 0 && script === null) script = rest.shift()!.text;
    else return `sed ${flag} is not a print-only use of sed`;
  }
  if (script === null) script = rest.shift()?.text ?? null;
  if (!quiet || script === null || !SED_PRINT_SCRIPT.test(script)) {
    return "only `sed -n '<line>p'` or `sed -n '<from>,<to>p'` is known to be read-only";
  }
  if (rest.some((arg) => arg.text.startsWith("-") || arg.glob)) {
    return "sed's file operands must be plain paths";
  }
  return null;
};

const RG_FORBIDDEN = ["--pre", "--hostname-bin", "--search-zip"];
const rgCheck: ArgumentCheck = noGlobs("rg", (args) => {
  for (const { text } of args) {
    const name = text.split("=", 1)[0]!;
    if (RG_FORBIDDEN.includes(name)) return `rg ${name} runs other programs`;
    if (/^-[^-]/.test(text) && text.includes("z")) return "rg -z runs decompression programs";
  }
  return null;
});

const FIND_FORBIDDEN = [
  "-exec",
  "-execdir",
  "-ok",
  "-okdir",
  "-delete",
  "-fls",
  "-fprint",
  "-fprint0",
  "-fprintf",
];
const findCheck: ArgumentCheck = noGlobs("find", (args) => {
  const bad = args.find((arg) => FIND_FORBIDDEN.includes(arg.text));
  return bad === undefined ? null : `find ${bad.text} runs commands or changes files`;
});

const GIT_BRANCH_LIST_FLAGS = new Set([
  "-a",
  "--all",
  "-r",
  "--remotes",
  "-v",
  "-vv",
  "--verbose",
  "-l",
  "--list",
  "--show-current",
  "-i",
  "--ignore-case",
  "--column",
  "--no-column",
  "--color",
  "--no-color",
  "--abbrev",
  "--no-abbrev",
]);
const GIT_BRANCH_LIST_VALUE_FLAGS = [
  "--contains=",
  "--no-contains=",
  "--merged=",
  "--no-merged=",
  "--points-at=",
  "--sort=",
  "--format=",
  "--color=",
  "--abbrev=",
  "--column=",
];

function gitBranchCheck(args: readonly ShellWord[]): string | null {
  const listing = args.some((arg) => arg.text === "--list" || arg.text === "-l");
  for (const { text } of args) {
    if (text.startsWith("-")) {
      if (GIT_BRANCH_LIST_FLAGS.has(text)) continue;
      if (GIT_BRANCH_LIST_VALUE_FLAGS.some((prefix) => text.startsWith(prefix))) continue;
      return `git branch ${text} changes branches`;
    }
    if (!listing) return "git branch with a name creates a branch; only listing is read-only";
  }
  return null;
}

const GIT_READ_FORBIDDEN = ["--output", "--ext-diff", "--exec"];
const GIT_SUBCOMMANDS: Record<string, ArgumentCheck> = {
  status: forbidOptions("git status", GIT_READ_FORBIDDEN),
  log: forbidOptions("git log", GIT_READ_FORBIDDEN),
  diff: forbidOptions("git diff", GIT_READ_FORBIDDEN),
  show: forbidOptions("git show", GIT_READ_FORBIDDEN),
  branch: gitBranchCheck,
  "rev-parse": allowAll,
  "ls-files": allowAll,
  blame: forbidOptions("git blame", GIT_READ_FORBIDDEN),
};

const gitCheck: ArgumentCheck = noGlobs("git", (args) => {
  const rest = [...args];
  // Global options such as `-c` or `--exec-path` can make git run anything; only these pass.
  while (rest[0]?.text === "--no-pager") rest.shift();
  const subcommand = rest.shift()?.text;
  if (subcommand === undefined) return "git without a subcommand";
  const check = GIT_SUBCOMMANDS[subcommand];
  if (check === undefined) {
    return `git ${subcommand} is not one of the read-only git commands (${Object.keys(GIT_SUBCOMMANDS).join(", ")})`;
  }
  return check(rest);
});

/**
 * Programs known not to change anything, each with what makes a use of it unsafe. After Codex's
 * `is_known_safe_command`, with a few more plain readers.
 */
const SAFE_PROGRAMS: Record<string, ArgumentCheck> = {
  basename: allowAll,
  cat: allowAll,
  cd: allowAll,
  cmp: allowAll,
  cut: allowAll,
  date: forbidOptions("date", ["-s", "--set"]),
  diff: allowAll,
  dirname: allowAll,
  du: allowAll,
  echo: allowAll,
  egrep: allowAll,
  false: allowAll,
  fgrep: allowAll,
  file: noGlobs("file", forbidOptions("file", ["-C", "--compile"])),
  find: findCheck,
  git: gitCheck,
  grep: allowAll,
  head: allowAll,
  id: allowAll,
  ls: allowAll,
  nl: allowAll,
  printf: allowAll,
  pwd: allowAll,
  readlink: allowAll,
  realpath: allowAll,
  rg: rgCheck,
  sed: sedCheck,
  seq: allowAll,
  sort: noGlobs("sort", forbidOptions("sort", ["-o", "--output", "--compress-program"])),
  stat: allowAll,
  tail: allowAll,
  tr: allowAll,
  true: allowAll,
  uname: allowAll,
  wc: allowAll,
  which: allowAll,
  whoami: allowAll,
};

/** Redirections that only read a file, duplicate a descriptor or discard output. */
function redirectionProblem(redirection: SimpleCommand["redirections"][number]): string | null {
  const { operator, target } = redirection;
  if (target === null || target.expands || target.substitutes || target.glob) {
    return `redirection ${operator} to a target the shell expands`;
  }
  if (operator === "<") return null;
  if ((operator === ">&" || operator === "<&") && /^(?:\d+|-)$/.test(target.text)) return null;
  if ((operator === ">" || operator === ">>" || operator === "&>") && target.text === "/dev/null") {
    return null;
  }
  return `redirection ${operator} ${target.text} writes to a file`;
}

/** Where a command runs: what a path it reads is checked against. */
export interface CommandPlace {
  /** The worktree: a read of anything outside it is not known to be harmless. */
  worktreeRoot: string;
  /** The command's working directory; the worktree root by default. */
  cwd?: string;
}

/**
 * The path a word may name, for the read check: the word itself, the value of `--option=value`,
 * or of a short option written together with it (`-f/etc/passwd`).
 */
function pathCandidates(text: string): string[] {
  if (!text.startsWith("-")) return [text];
  const equals = text.indexOf("=");
  if (equals !== -1) return [text.slice(equals + 1)];
  return text.length > 2 && !text.startsWith("--") ? [text.slice(2)] : [];
}

/**
 * A path a read-only command would read (or `cd` into) outside the worktree, or null: absolute
 * paths and `~` outside it (/proc, the server's data directory, the home's dot-directories), and
 * relative ones whose `..` climb out of it. Such a read is not a known-harmless command: under
 * `untrusted` and `on-request` the user is asked first.
 */
function outsideRead(command: SimpleCommand, place: CommandPlace): string | null {
  const root = resolve(place.worktreeRoot);
  const cwd = place.cwd === undefined ? root : resolve(root, place.cwd);
  const words = [
    ...command.words.slice(1),
    // What it reads from; writes were judged already (only to /dev/null is harmless).
    ...command.redirections.flatMap((redirection) =>
      redirection.operator !== "<" || redirection.target === null ? [] : [redirection.target],
    ),
  ];
  for (const word of words) {
    for (const candidate of pathCandidates(word.text)) {
      if (
        candidate === "" ||
        (!candidate.includes("/") && candidate !== ".." && !candidate.startsWith("~"))
      ) {
        continue;
      }
      if (candidate.startsWith("~")) return candidate;
      const absolute = isAbsolute(candidate) ? candidate : resolve(cwd, candidate);
      if (!isInsideWorktree(root, absolute, { allowAbsolute: true })) return candidate;
    }
  }
  return null;
}

function commandProblem(command: SimpleCommand): string | null {
  if (command.assignments.length > 0) return "it sets environment variables for the command";
  for (const redirection of command.redirections) {
    const problem = redirectionProblem(redirection);
    if (problem !== null) return problem;
  }
  const [program, ...args] = command.words;
  if (program === undefined) return "a redirection without a command";
  for (const word of command.words) {
    if (word.substitutes) return "it runs a command substitution ($( ) or backticks)";
    if (word.expands) return `it expands shell variables (${word.text || "$…"})`;
  }
  if (program.glob || program.text.includes("/")) {
    return `${program.text} is not a plain program name`;
  }
  const check = SAFE_PROGRAMS[program.text];
  if (check === undefined) return `${program.text} is not a known read-only command`;
  return check(args);
}

export interface CommandSafety {
  /** The command only reads: every part of it is a known read-only command used safely. */
  safe: boolean;
  reason: string;
}

/**
 * Whether a shell command is known to only read, after Codex's `is_known_safe_command`; with a
 * `place`, also that it reads nothing outside the worktree.
 */
export function knownSafeCommand(command: string, place?: CommandPlace): CommandSafety {
  if (command.trim().length === 0) return { safe: false, reason: "the command is empty" };
  const script = parseShellScript(command);
  if (script.unsupported.length > 0) {
    return { safe: false, reason: `the command uses ${script.unsupported.join(", ")}` };
  }
  if (script.operators.includes("&")) {
    return { safe: false, reason: "the command starts a background job" };
  }
  for (const part of script.commands) {
    const problem = commandProblem(part);
    if (problem !== null) return { safe: false, reason: `not known to be read-only: ${problem}` };
    const outside = place === undefined ? null : outsideRead(part, place);
    if (outside !== null) {
      return { safe: false, reason: `it reads ${outside}, which is outside the worktree` };
    }
  }
  return {
    safe: true,
    reason:
      script.commands.length > 1
        ? "every part of the command is a known read-only command"
        : "a known read-only command",
  };
}

/**
 * Whether a shell command may run without asking under `policy`, after Codex's command
 * assessment with no sandbox:
 * - `untrusted`: known read-only commands run; everything else asks.
 * - `on-request`: the same; the model may also ask on its own (`withApproval`), even for a
 *   known read-only command. Under every other policy asking on its own is refused.
 * - `on-failure`: everything runs; when a command that was not known safe fails, the user is
 *   asked whether to run it again (`askOnFailure`).
 * - `never`: everything runs and nothing asks; failures go back to the model.
 */
export function assessCommand(
  command: string,
  policy: ApprovalPolicy,
  options: AssessCommandOptions = {},
): SafetyAssessment {
  if (command.trim().length === 0) {
    return { decision: "forbid", reason: "the command is empty", askOnFailure: false };
  }
  if (options.withApproval === true) {
    if (policy !== "on-request") {
      return {
        decision: "forbid",
        reason: `the approval policy is ${policy}, under which a call cannot ask for approval (only on-request allows with_approval); call execute without with_approval, or do without the command`,
        askOnFailure: false,
      };
    }
    const justification = options.justification?.trim();
    return {
      decision: "ask",
      reason: justification ? `the agent asks: ${justification}` : "the agent asks for approval",
      askOnFailure: false,
    };
  }
  const known = knownSafeCommand(command, options.place);
  if (known.safe) return { decision: "auto_approve", reason: known.reason, askOnFailure: false };
  switch (policy) {
    case "untrusted":
    case "on-request":
      return { decision: "ask", reason: known.reason, askOnFailure: false };
    case "on-failure":
      return {
        decision: "auto_approve",
        reason: `${known.reason}; on-failure runs it and asks only to retry if it fails`,
        askOnFailure: true,
      };
    case "never":
      return {
        decision: "auto_approve",
        reason: `${known.reason}; the never policy runs it without asking`,
        askOnFailure: false,
      };
  }
}

/**
 * Whether a change to `paths` (relative to the worktree, or absolute inside it) may be made
 * without asking. Paths outside the worktree are forbidden under every policy: the workspace
 * guard refuses them anyway. Inside it, only `untrusted` asks.
 */
export function assessPatch(
  paths: readonly string[],
  worktreeRoot: string,
  policy: ApprovalPolicy,
): SafetyAssessment {
  if (paths.length === 0) {
    return { decision: "forbid", reason: "the patch changes no files", askOnFailure: false };
  }
  const outside = paths.find(
    (path) => !isInsideWorktree(worktreeRoot, path, { allowAbsolute: true }),
  );
  if (outside !== undefined) {
    return {
      decision: "forbid",
      reason: `${outside} is outside the worktree ${worktreeRoot}; only files inside it can be changed`,
      askOnFailure: false,
    };
  }
  if (policy === "untrusted") {
    return {
      decision: "ask",
      reason: "the untrusted policy asks before every change to files",
      askOnFailure: false,
    };
  }
  return {
    decision: "auto_approve",
    reason: "every changed file is inside the worktree",
    askOnFailure: false,
  };
}
