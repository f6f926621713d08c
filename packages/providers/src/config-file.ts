import { createHash, randomBytes } from "node:crypto";
import { mkdir, open, readFile, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { errnoCode, errorMessage } from "@deckhand/errors";
import {
  ProviderConfigEntrySchema,
  ProviderIdSchema,
  type ProvidersDiagnostic,
} from "@deckhand/wire";
import type { z } from "zod";
import { BUILTIN_PROVIDERS, builtinProvider, type ProviderDefinition } from "./registry.ts";

/** A provider as the config file leaves it: its definition plus whether it is turned on. */
export interface ConfiguredProvider extends ProviderDefinition {
  enabled: boolean;
}

/** What the config file says, read without ever failing. */
export interface InterpretedConfig {
  /** The file's top-level object; `{}` when it is missing or not a JSON object. */
  document: Record<string, unknown>;
  /** False when the file exists but is not a JSON object, so it cannot be patched safely. */
  patchable: boolean;
  /** Built-ins (with their valid overrides) first, then valid custom providers. */
  providers: ConfiguredProvider[];
  diagnostics: ProvidersDiagnostic[];
}

export interface ConfigSnapshot extends InterpretedConfig {
  path: string;
  /** Strong ETag of the file's bytes (of no bytes when it does not exist), quoted. */
  etag: string;
  /** The file's text; null when it does not exist. */
  text: string | null;
}

const FALLBACK = "Deckhand uses the built-in providers until it is fixed";

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** `providers.my-agent.env.KEY`, with odd keys quoted so the path stays unambiguous. */
export function jsonPath(segments: readonly PropertyKey[]): string {
  return segments
    .map((segment, index) => {
      const text = String(segment);
      if (typeof segment === "number") return `[${text}]`;
      const plain = /^[A-Za-z_$][\w$-]*$/.test(text);
      if (plain) return index === 0 ? text : `.${text}`;
      return `[${JSON.stringify(text)}]`;
    })
    .join("");
}

function issues(error: z.ZodError, base: readonly PropertyKey[]) {
  return error.issues.map((issue) => ({
    field: jsonPath([...base, ...issue.path]),
    message: issue.message,
  }));
}

const entryFields = ProviderConfigEntrySchema.shape;
type EntryField = keyof typeof entryFields;
const ENTRY_FIELDS = Object.keys(entryFields) as EntryField[];

/**
 * Interprets the text of a providers config file. Never throws: anything wrong becomes a
 * diagnostic naming the file, the field and why, and only the fields that are wrong are
 * ignored, so one typo does not undo the rest of the file.
 */
export function interpretProvidersConfig(file: string, text: string | null): InterpretedConfig {
  const diagnostics: ProvidersDiagnostic[] = [];
  const report = (field: string, message: string) => diagnostics.push({ file, field, message });
  const builtins = (): ConfiguredProvider[] =>
    BUILTIN_PROVIDERS.map((provider) => ({ ...provider, enabled: true }));

  if (text === null) return { document: {}, patchable: true, providers: builtins(), diagnostics };
  let parsed: unknown;
  try {
    // Editors on Windows save UTF-8 with a byte order mark, which JSON.parse does not accept.
    parsed = JSON.parse(text.startsWith("\uFEFF") ? text.slice(1) : text);
  } catch (error) {
    report("", `not valid JSON (${errorMessage(error)}); ${FALLBACK}`);
    return { document: {}, patchable: false, providers: builtins(), diagnostics };
  }
  if (!isObject(parsed)) {
    report("", `must be a JSON object like {"providers": {...}}; ${FALLBACK}`);
    return { document: {}, patchable: false, providers: builtins(), diagnostics };
  }
  const document = parsed;
  const section = document.providers;
  if (section === undefined) {
    return { document, patchable: true, providers: builtins(), diagnostics };
  }
  if (!isObject(section)) {
    report("providers", `must be an object keyed by provider id; ${FALLBACK}`);
    return { document, patchable: true, providers: builtins(), diagnostics };
  }

  const providers = builtins();
  for (const [id, entry] of Object.entries(section)) {
    const base = ["providers", id];
    const idCheck = ProviderIdSchema.safeParse(id);
    if (!idCheck.success) {
      report(jsonPath(base), `provider id ${idCheck.error.issues[0]!.message}; entry ignored`);
      continue;
    }
    if (!isObject(entry)) {
      report(jsonPath(base), "must be an object of provider settings; entry ignored");
      continue;
    }
    const valid = validEntryFields(entry, base, report);
    const builtin = builtinProvider(id);
    if (builtin) {
      const index = providers.findIndex((provider) => provider.id === id);
      providers[index] = withOverrides(providers[index]!, builtin, valid, base, report);
      continue;
    }
    const custom = customProvider(id, entry, valid, base, report);
    if (custom !== null) providers.push(custom);
  }
  return { document, patchable: true, providers, diagnostics };
}

type Report = (field: string, message: string) => void;
type ValidEntryFields = Partial<Record<EntryField, unknown>>;

/**
 * The entry's valid settings, each field on its own, so a bad `label` does not cost a valid
 * `enabled`; bad and unknown settings are reported.
 */
function validEntryFields(
  entry: Record<string, unknown>,
  base: readonly PropertyKey[],
  report: Report,
): ValidEntryFields {
  const valid: ValidEntryFields = {};
  for (const field of ENTRY_FIELDS) {
    if (!(field in entry)) continue;
    const result = entryFields[field].safeParse(entry[field]);
    if (result.success) {
      if (result.data !== undefined) valid[field] = result.data;
    } else {
      for (const issue of issues(result.error, [...base, field])) {
        report(issue.field, `${issue.message}; setting ignored`);
      }
    }
  }
  for (const key of Object.keys(entry)) {
    if (!(ENTRY_FIELDS as string[]).includes(key)) {
      report(
        jsonPath([...base, key]),
        `unknown setting (known: ${ENTRY_FIELDS.join(", ")}); kept in the file, not used`,
      );
    }
  }
  return valid;
}

/** A built-in provider with the entry's valid overrides; the native agent takes no command. */
function withOverrides(
  current: ConfiguredProvider,
  builtin: ProviderDefinition,
  valid: ValidEntryFields,
  base: readonly PropertyKey[],
  report: Report,
): ConfiguredProvider {
  let command = valid.command as string[] | undefined;
  if (command !== undefined && builtin.transport === "native") {
    report(jsonPath([...base, "command"]), "the native agent runs in the server; ignored");
    command = undefined;
  }
  return {
    ...current,
    label: (valid.label as string | undefined) ?? current.label,
    enabled: (valid.enabled as boolean | undefined) ?? current.enabled,
    command: command ?? current.command,
    env: { ...current.env, ...(valid.env as Record<string, string> | undefined) },
    versionArgs: versionArgsOf(valid.versionArgs, current.versionArgs),
    stateDirectories: (valid.stateDirectories as string[] | undefined) ?? current.stateDirectories,
  };
}

/**
 * A custom ACP agent from an entry that is no built-in: null (ignored) without `"extends":
 * "acp"` and a command, reported unless the entry had the field and it was already reported.
 */
function customProvider(
  id: string,
  entry: Record<string, unknown>,
  valid: ValidEntryFields,
  base: readonly PropertyKey[],
  report: Report,
): ConfiguredProvider | null {
  if (valid.extends !== "acp") {
    if (!("extends" in entry)) {
      report(
        jsonPath(base),
        `no built-in provider is called "${id}"; to add a custom ACP agent set "extends": "acp" and a "command"; entry ignored`,
      );
    }
    return null;
  }
  if (valid.command === undefined) {
    if (!("command" in entry)) {
      report(
        jsonPath([...base, "command"]),
        'a custom provider needs a command, e.g. ["my-agent", "--acp"]; entry ignored',
      );
    }
    return null;
  }
  return {
    id,
    label: (valid.label as string | undefined) ?? id,
    transport: "acp",
    builtin: false,
    command: valid.command as string[],
    env: { ...(valid.env as Record<string, string> | undefined) },
    installHint: null,
    // An agent's own CLI may refuse any extra argument: none is tried unless configured.
    versionArgs: versionArgsOf(valid.versionArgs, null),
    modelProxy: null,
    stateDirectories: (valid.stateDirectories as string[] | undefined) ?? [],
    loginFiles: [],
    serveFileReads: true,
    enabled: (valid.enabled as boolean | undefined) ?? true,
  };
}

/** A configured `versionArgs` (`[]` meaning the agent has no version command) over `fallback`. */
function versionArgsOf(configured: unknown, fallback: readonly string[] | null) {
  if (configured === undefined) return fallback;
  const args = configured as string[];
  return args.length > 0 ? args : null;
}

/** A strong ETag: the SHA-256 of the file's bytes, so any change, by anyone, changes it. */
export function configEtag(bytes: Buffer | string): string {
  return `"${createHash("sha256").update(bytes).digest("hex").slice(0, 32)}"`;
}

/** Reads and interprets the config file; a missing or unreadable file is not an error. */
export async function readProvidersConfig(path: string): Promise<ConfigSnapshot> {
  let bytes: Buffer | null = null;
  let unreadable: string | undefined;
  try {
    bytes = await readFile(path);
  } catch (error) {
    const code = errnoCode(error);
    if (code !== "ENOENT") unreadable = code ?? errorMessage(error);
  }
  if (unreadable !== undefined) {
    const interpreted = interpretProvidersConfig(path, null);
    interpreted.patchable = false;
    interpreted.diagnostics.push({
      file: path,
      field: "",
      message: `cannot be read (${unreadable}); ${FALLBACK}`,
    });
    return { ...interpreted, path, etag: configEtag(""), text: null };
  }
  const text = bytes === null ? null : bytes.toString("utf8");
  return {
    ...interpretProvidersConfig(path, text),
    path,
    etag: configEtag(bytes ?? ""),
    text,
  };
}

/**
 * Replaces the file atomically: the text goes to a temporary file in the same directory (so the
 * rename cannot cross file systems), is flushed, renamed over the target, and the directory is
 * flushed too. A crash at any point leaves the old file or the new one, never a mix.
 */
export async function writeFileAtomically(path: string, text: string): Promise<void> {
  const directory = dirname(path);
  await mkdir(directory, { recursive: true });
  const temporary = join(
    directory,
    `.${basename(path).slice(0, 100)}.deckhand-${randomBytes(6).toString("hex")}.tmp`,
  );
  try {
    // "wx": never reuse a name that exists, so the temp file is never someone else's file.
    const handle = await open(temporary, "wx", 0o600);
    try {
      await handle.writeFile(text);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
  try {
    const handle = await open(directory, "r");
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    // Some file systems cannot fsync a directory; the data itself is already on disk.
  }
}
