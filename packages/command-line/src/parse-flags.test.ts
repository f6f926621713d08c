import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type FlagTable, parseFlags } from "./parse-flags.ts";

class UsageMistake extends Error {}

const FLAGS = {
  listen: { type: "string", setting: "listen" },
  "data-dir": { type: "string", setting: "dataDir" },
  "no-agent": { type: "boolean", setting: "workspaceAgent", value: false },
  "reset-admin-token": { type: "boolean", setting: "resetAdminToken", value: true },
} as const satisfies FlagTable<string>;

const options = {
  usage: "Usage: demo [options]\n",
  invalid: (message: string, cause: unknown) => new UsageMistake(message, { cause }),
};

describe("parseFlags", () => {
  it("sets each given flag's setting: a value flag's text, a switch's value", () => {
    expect(parseFlags(["--listen", "127.0.0.1:0", "--no-agent"], FLAGS, options)).toEqual({
      settings: { listen: "127.0.0.1:0", workspaceAgent: false },
      help: false,
    });
    expect(parseFlags(["-h"], FLAGS, options)).toEqual({ settings: {}, help: true });
    expect(parseFlags([], FLAGS, options)).toEqual({ settings: {}, help: false });
  });

  it("throws the command's error naming the mistake, then the usage", () => {
    for (const argv of [["--bogus"], ["--listen"], ["stray"], ["--no-agent=yes"]]) {
      const failure = (() => {
        try {
          parseFlags(argv, FLAGS, options);
        } catch (error) {
          return error;
        }
        return undefined;
      })();
      expect(failure, argv.join(" ")).toBeInstanceOf(UsageMistake);
      expect((failure as Error).message).toMatch(/\n\nUsage: demo \[options\]\n$/);
    }
    expect(() => parseFlags(["--bogus"], FLAGS, options)).toThrow(/^Unknown option '--bogus'/);
  });

  it("gives back any value a value flag is given, whatever its text", () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), fc.boolean(), (listen, dataDir, noAgent) => {
        const argv = [
          `--listen=${listen}`,
          `--data-dir=${dataDir}`,
          ...(noAgent ? ["--no-agent"] : []),
        ];
        expect(parseFlags(argv, FLAGS, options).settings).toEqual({
          listen,
          dataDir,
          ...(noAgent ? { workspaceAgent: false } : {}),
        });
      }),
    );
  });
});
