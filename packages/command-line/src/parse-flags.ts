import { parseArgs } from "node:util";

/** A flag that takes a value (`--listen 127.0.0.1:7420`): the setting gets the text as given. */
export interface ValueFlag<Setting extends string> {
  type: "string";
  setting: Setting;
}

/** A flag without a value (`--no-agent`): the setting gets `value` when it is given. */
export interface SwitchFlag<Setting extends string> {
  type: "boolean";
  setting: Setting;
  value: string | number | boolean;
}

export type Flag<Setting extends string> = ValueFlag<Setting> | SwitchFlag<Setting>;

/** A command's flags by name (without the leading `--`). `-h`/`--help` is every command's. */
export type FlagTable<Setting extends string> = Readonly<Record<string, Flag<Setting>>>;

export interface ParsedFlags<Setting extends string> {
  /**
   * The settings the given flags set, as text for a value flag; the command's own schema then
   * reads them, as it reads the same settings from the environment or a file.
   */
  settings: Partial<Record<Setting, string | number | boolean>>;
  help: boolean;
}

export interface ParseFlagsOptions {
  /** The command's usage text, shown under a usage mistake. */
  usage: string;
  /** The command's own error for a usage mistake, with the message to show. */
  invalid: (message: string, cause: unknown) => Error;
}

/**
 * Reads `argv` against a command's flag table. An unknown flag, a missing value or a positional
 * argument throws the command's error whose message names the mistake, then its usage.
 */
export function parseFlags<Setting extends string>(
  argv: readonly string[],
  flags: FlagTable<Setting>,
  options: ParseFlagsOptions,
): ParsedFlags<Setting> {
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: {
        ...Object.fromEntries(
          Object.entries(flags).map(([name, flag]) => [name, { type: flag.type }]),
        ),
        help: { type: "boolean", short: "h" },
      },
    }).values as Record<string, string | boolean | undefined>;
  } catch (error) {
    throw options.invalid(`${(error as Error).message}\n\n${options.usage}`, error);
  }
  const settings: Partial<Record<Setting, string | number | boolean>> = {};
  for (const [name, flag] of Object.entries(flags)) {
    const given = values[name];
    if (given === undefined || given === false) continue;
    settings[flag.setting] = flag.type === "boolean" ? flag.value : (given as string);
  }
  return { settings, help: values.help === true };
}
