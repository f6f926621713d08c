import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { WireEnv } from "@deckhand/wire";
import { describe, expect, it } from "vitest";
import { parseListenAddress, resolveAgentConfig } from "./config.ts";

const workspace = mkdtempSync(join(tmpdir(), "deckhand-agent-config-"));

describe("agent configuration", () => {
  it("defaults to 127.0.0.1:7421, the current directory and no token", () => {
    const config = resolveAgentConfig({}, {}, workspace);
    expect(config).toMatchObject({ host: "127.0.0.1", port: 7421, root: workspace, token: null });
  });

  it("reads the token from the environment when no flag is given", () => {
    const config = resolveAgentConfig({}, { [WireEnv.agentToken]: "from-env" }, workspace);
    expect(config.token).toBe("from-env");
    expect(
      resolveAgentConfig({ token: "flag" }, { [WireEnv.agentToken]: "env" }, workspace).token,
    ).toBe("flag");
  });

  it("refuses a non-loopback address without a token", () => {
    expect(() => resolveAgentConfig({ listen: "0.0.0.0:7421" }, {}, workspace)).toThrow(
      /refusing to listen on 0\.0\.0\.0 without a token/,
    );
    expect(resolveAgentConfig({ listen: "0.0.0.0:7421", token: "t" }, {}, workspace).host).toBe(
      "0.0.0.0",
    );
  });

  it("accepts loopback spellings without a token", () => {
    for (const listen of ["127.0.0.1:1", "localhost:2", "[::1]:3", "127.1.2.3:4"]) {
      expect(resolveAgentConfig({ listen }, {}, workspace).token).toBeNull();
    }
  });

  it("names a malformed listen address and shows the expected form", () => {
    expect(() => parseListenAddress("7421")).toThrow(
      '--listen "7421" is not host:port; use for example 127.0.0.1:7421',
    );
    expect(() => parseListenAddress("host:99999")).toThrow(/is not host:port/);
    expect(parseListenAddress("[::1]:80")).toEqual({ host: "::1", port: 80 });
  });

  it("rejects a --dir that is not a directory", () => {
    const file = join(workspace, "file.txt");
    writeFileSync(file, "x");
    expect(() => resolveAgentConfig({ dir: file }, {}, workspace)).toThrow(/is not a directory/);
    expect(() => resolveAgentConfig({ dir: "missing" }, {}, workspace)).toThrow(
      /is not a directory/,
    );
  });

  it("takes more Host names from --allowed-hosts, else the environment, and names a bad one", () => {
    expect(resolveAgentConfig({}, {}, workspace).allowedHosts).toEqual([]);
    const environment = { [WireEnv.agentAllowedHosts]: "buildbox.lan, .corp.example" };
    expect(resolveAgentConfig({}, environment, workspace).allowedHosts).toEqual([
      "buildbox.lan",
      ".corp.example",
    ]);
    expect(
      resolveAgentConfig({ allowedHosts: "flag.lan" }, environment, workspace).allowedHosts,
    ).toEqual(["flag.lan"]);
    expect(() => resolveAgentConfig({ allowedHosts: "ok.lan,http://x" }, {}, workspace)).toThrow(
      '--allowed-hosts entry "http://x" is not a host name or address',
    );
    expect(() =>
      resolveAgentConfig({}, { [WireEnv.agentAllowedHosts]: "x:80" }, workspace),
    ).toThrow(`${WireEnv.agentAllowedHosts} entry "x:80" is not a host name or address`);
  });

  it("rejects an empty token", () => {
    expect(() => resolveAgentConfig({ token: "" }, {}, workspace)).toThrow(/token is empty/);
  });

  it("names the setting that is out of range", () => {
    expect(() => resolveAgentConfig({ maxRunningProcesses: 0 }, {}, workspace)).toThrow(
      /--maxRunningProcesses: /,
    );
  });
});
