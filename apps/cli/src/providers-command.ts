import { parseArgs } from "node:util";
import { SERVER_DEFAULT_LISTEN } from "@deckhand/server-app";
import { createServerClient, ServerApiError, type ServerClient } from "@deckhand/server-client";
import {
  type ProviderEntry,
  type ProvidersConfigPatch,
  type ProvidersDiagnostic,
  type ProvidersSnapshot,
  WireEnv,
} from "@deckhand/wire";
import { explainServerFailure, SERVER_URL_ENV, serverUrlOf } from "./server-command-options.ts";

export { SERVER_URL_ENV };

export interface ProvidersCommandIo {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
  env: Record<string, string | undefined>;
  fetch: typeof fetch;
}

export const providersUsage = `Usage: deckhand providers <command> [options]

Commands:
  list                       every agent provider, its status, version, models, modes and commands
  refresh [ids...]           probe the providers again now (all enabled ones when no id is given)
  enable <id>                turn a provider on
  disable <id>               turn a provider off
  add <id> [--label L] [--env NAME=VALUE]... [--force] -- <command...>
                             add a custom ACP agent, started as <command...>; exits 1 when it
                             is not ready afterwards. --force replaces an existing provider's
                             command, label and env (a built-in's too)

Options:
  --server URL   the Deckhand server (default: $${SERVER_URL_ENV}, else http://${SERVER_DEFAULT_LISTEN})
  --json         print the server's JSON answer instead of a table

The admin token, when the server needs one, is read from $${WireEnv.adminToken}.
Providers live in <data-dir>/providers.json; see docs/providers.md.
`;

class UsageError extends Error {}

/** The command could not do what was asked: exit 1 with the message. */
class CommandError extends Error {}

interface Options {
  server: string;
  json: boolean;
  label: string | undefined;
  env: string[];
  force: boolean;
  positionals: string[];
  /** Everything after `--`: the command of `add`. */
  command: string[];
}

function parseOwnOptions(args: string[]) {
  try {
    return parseArgs({
      args,
      options: {
        server: { type: "string" },
        json: { type: "boolean" },
        label: { type: "string" },
        env: { type: "string", multiple: true },
        force: { type: "boolean" },
      },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

function parse(argv: string[], io: ProvidersCommandIo): Options {
  const separator = argv.indexOf("--");
  const own = separator === -1 ? argv : argv.slice(0, separator);
  const command = separator === -1 ? [] : argv.slice(separator + 1);
  const parsed = parseOwnOptions(own);
  return {
    server: serverUrlOf(parsed.values.server, io.env, (message) => new UsageError(message)),
    json: parsed.values.json ?? false,
    label: parsed.values.label,
    env: parsed.values.env ?? [],
    force: parsed.values.force ?? false,
    positionals: parsed.positionals,
    command,
  };
}

/** The server's providers API, through the server client (which checks every answer). */
class ProvidersApi {
  private readonly client: ServerClient;

  constructor(options: Options, io: ProvidersCommandIo) {
    this.client = createServerClient({
      baseUrl: options.server,
      token: io.env[WireEnv.adminToken] ?? null,
      fetch: io.fetch,
    });
  }

  snapshot(refresh?: { ids: string[] }): Promise<ProvidersSnapshot> {
    if (refresh === undefined) return this.client.getProvidersSnapshot();
    return this.client.refreshProviders({
      body: { ...(refresh.ids.length > 0 ? { ids: refresh.ids } : {}), force: true },
    });
  }

  config() {
    return this.client.getProvidersConfig();
  }

  patch(patch: ProvidersConfigPatch, ifMatch?: string) {
    return this.client.patchProvidersConfig(
      { body: patch },
      ifMatch ? { headers: { "If-Match": ifMatch } } : {},
    );
  }

  /** The provider's diagnostic: plain text for a human. */
  diagnostic(id: string): Promise<string> {
    return this.client.getProviderDiagnostic({ params: { provider_id: id } });
  }
}

function pad(text: string, width: number): string {
  return text.length >= width ? `${text} ` : text.padEnd(width);
}

function names(items: readonly { id?: string; name?: string }[], limit = 6): string {
  const shown = items.slice(0, limit).map((item) => item.id ?? item.name ?? "");
  return items.length > limit
    ? `${shown.join(", ")}, +${items.length - limit} more`
    : shown.join(", ");
}

function formatEntry(entry: ProviderEntry): string {
  const head = `${pad(entry.id, 12)}${pad(entry.status, 14)}${pad(entry.version ?? "-", 12)}${entry.label}`;
  const lines = [head];
  if (entry.models.length > 0) lines.push(`    models:   ${names(entry.models)}`);
  if (entry.modes.length > 0) lines.push(`    modes:    ${names(entry.modes)}`);
  const commands = entry.commands.filter((command) => command.kind === "command");
  const skills = entry.commands.filter((command) => command.kind === "skill");
  if (commands.length > 0)
    lines.push(`    commands: ${commands.map((command) => `/${command.name}`).join(" ")}`);
  if (skills.length > 0)
    lines.push(`    skills:   ${skills.map((command) => `/${command.name}`).join(" ")}`);
  if (entry.last_error && entry.status !== "ready") lines.push(`    ${entry.last_error}`);
  return lines.join("\n");
}

function formatDiagnostics(diagnostics: readonly ProvidersDiagnostic[]): string {
  return diagnostics
    .map(
      (diagnostic) =>
        `${diagnostic.file}${diagnostic.field ? `: ${diagnostic.field}` : ""}: ${diagnostic.message}\n`,
    )
    .join("");
}

function printSnapshot(
  snapshot: ProvidersSnapshot,
  options: Options,
  io: ProvidersCommandIo,
): number {
  if (options.json) {
    io.stdout.write(`${JSON.stringify(snapshot, null, 2)}\n`);
    return 0;
  }
  io.stdout.write(`${pad("ID", 12)}${pad("STATUS", 14)}${pad("VERSION", 12)}LABEL\n`);
  for (const entry of snapshot.providers) io.stdout.write(`${formatEntry(entry)}\n`);
  io.stdout.write(
    snapshot.sandbox.kind === "none"
      ? `\nsandbox: none (${snapshot.sandbox.reason ?? "not configured"}); agents run as the server's user\n`
      : `\nsandbox: ${snapshot.sandbox.kind}\n`,
  );
  io.stderr.write(formatDiagnostics(snapshot.diagnostics));
  return 0;
}

function oneId(options: Options, command: string): string {
  if (options.positionals.length !== 1) throw new UsageError(`${command} takes one provider id`);
  return options.positionals[0]!;
}

function parseEnv(assignments: readonly string[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const assignment of assignments) {
    const match = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s.exec(assignment);
    if (!match) throw new UsageError(`--env takes NAME=VALUE, got "${assignment}"`);
    env[match[1]!] = match[2]!;
  }
  return env;
}

async function setEnabled(
  api: ProvidersApi,
  options: Options,
  io: ProvidersCommandIo,
  enabled: boolean,
) {
  const id = oneId(options, enabled ? "enable" : "disable");
  // Enabling removes the override (providers are on by default), so the file stays minimal.
  const result = await api.patch({ providers: { [id]: { enabled: enabled ? null : false } } });
  io.stderr.write(formatDiagnostics(result.diagnostics));
  const entry = (await api.snapshot()).providers.find((provider) => provider.id === id);
  io.stdout.write(`${id}: ${entry ? entry.status : enabled ? "enabled" : "disabled"}\n`);
  return 0;
}

/** The settings `add` writes; with --force, any of them the new entry lacks is removed. */
const ADD_SETTINGS = ["extends", "label", "enabled", "command", "env"] as const;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The merge patch that makes the entry `id` hold exactly `entry`'s settings: with --force a
 * setting or env variable the old entry had and the new one does not is set to null, so nothing
 * stale survives; keys `add` does not write (the user's own notes) are kept.
 */
function replacingPatch(
  existing: unknown,
  entry: Record<string, unknown>,
  env: Record<string, string>,
): Record<string, unknown> {
  const patch: Record<string, unknown> = { ...entry };
  if (!isObject(existing)) return patch;
  for (const setting of ADD_SETTINGS) {
    if (setting in existing && !(setting in entry)) patch[setting] = null;
  }
  if (isObject(existing.env) && "env" in entry) {
    const stale = Object.keys(existing.env).filter((name) => !(name in env));
    patch.env = { ...Object.fromEntries(stale.map((name) => [name, null])), ...env };
  }
  return patch;
}

async function add(api: ProvidersApi, options: Options, io: ProvidersCommandIo) {
  const id = oneId(options, "add");
  if (options.command.length === 0) {
    throw new UsageError(
      `add needs the agent's command after "--", e.g. deckhand providers add ${id} -- my-agent --acp`,
    );
  }
  const env = parseEnv(options.env);
  const before = (await api.snapshot()).providers.find((provider) => provider.id === id);
  const current = await api.config();
  const section = current.config.providers;
  const existing = isObject(section) ? section[id] : undefined;
  if ((before !== undefined || existing !== undefined) && !options.force) {
    const what = before?.builtin ? "a built-in provider" : "a provider";
    throw new CommandError(
      `${what} "${id}" exists already; pass --force to replace its command, label and env, or choose another id`,
    );
  }
  const entry: Record<string, unknown> = {
    // A built-in keeps its own definition; only its command, label and env are replaced.
    ...(before?.builtin ? {} : { extends: "acp" }),
    command: options.command,
    ...(options.label !== undefined ? { label: options.label } : {}),
    ...(Object.keys(env).length > 0 ? { env } : {}),
  };
  const patch = options.force ? replacingPatch(existing, entry, env) : entry;
  // If-Match: a concurrent edit of the file makes this fail instead of being overwritten.
  const result = await api.patch({ providers: { [id]: patch } }, current.etag);
  io.stderr.write(formatDiagnostics(result.diagnostics));
  const snapshot = await api.snapshot({ ids: [id] });
  const added = snapshot.providers.find((provider) => provider.id === id);
  if (added) io.stdout.write(`${formatEntry(added)}\n`);
  if (added?.status === "ready") return 0;
  // Kept in the file (it may work once installed or logged in); the diagnostic says what is wrong.
  io.stderr.write(
    `deckhand providers add: "${id}" was added but is ${added?.status ?? "missing from the snapshot"}:\n`,
  );
  io.stderr.write(await api.diagnostic(id));
  return 1;
}

/** `deckhand providers ...`: a client of a running server's providers API. */
export async function runProvidersCommand(
  argv: string[],
  io: ProvidersCommandIo = {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    fetch: globalThis.fetch,
  },
): Promise<number> {
  const [command, ...rest] = argv;
  try {
    if (command === undefined || command === "help" || command === "--help" || command === "-h") {
      io.stdout.write(providersUsage);
      return 0;
    }
    const options = parse(rest, io);
    const api = new ProvidersApi(options, io);
    switch (command) {
      case "list":
        if (options.positionals.length > 0) throw new UsageError("list takes no arguments");
        return printSnapshot(await api.snapshot(), options, io);
      case "refresh":
        return printSnapshot(await api.snapshot({ ids: options.positionals }), options, io);
      case "enable":
        return await setEnabled(api, options, io, true);
      case "disable":
        return await setEnabled(api, options, io, false);
      case "add":
        return await add(api, options, io);
      default:
        throw new UsageError(`unknown command "${command}"`);
    }
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`deckhand providers: ${error.message}\n\n${providersUsage}`);
      return 2;
    }
    if (error instanceof CommandError || error instanceof ServerApiError) {
      const message = error instanceof ServerApiError ? explainServerFailure(error) : error.message;
      io.stderr.write(`deckhand providers ${command}: ${message}\n`);
      return 1;
    }
    throw error;
  }
}
