import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { renderContractDocument } from "../src/contract.ts";
import { WireEnv, WireHeader, WirePath } from "../src/index.ts";
import { renderOpenApiDocument, renderServerRouteIndex } from "../src/server-routes.ts";
import { findWireLiteralDuplicates, wireLiterals } from "./literal-scan.ts";

const packageDirectory = fileURLToPath(new URL("..", import.meta.url));
const repositoryRoot = fileURLToPath(new URL("../../..", import.meta.url));
const fixtures = fileURLToPath(new URL("./fixtures", import.meta.url));

describe("contract parity", () => {
  it("contract.json matches the schemas and constants (run `pnpm --filter @deckhand/wire generate` when it does not)", () => {
    const checkedIn = readFileSync(`${packageDirectory}/contract.json`, "utf8");
    expect(checkedIn).toBe(renderContractDocument());
  });

  it("openapi.json matches the server routes (run `pnpm --filter @deckhand/wire generate` when it does not)", () => {
    const packageJson = JSON.parse(readFileSync(`${packageDirectory}/package.json`, "utf8"));
    const checkedIn = readFileSync(`${packageDirectory}/openapi.json`, "utf8");
    expect(checkedIn).toBe(renderOpenApiDocument(packageJson.version));
  });

  it("the client's route index matches the server routes (run `pnpm --filter @deckhand/wire generate` when it does not)", () => {
    const checkedIn = readFileSync(
      `${packageDirectory}/src/server-route-index.generated.json`,
      "utf8",
    );
    expect(checkedIn).toBe(renderServerRouteIndex());
  });

  it("names the env variables and headers exactly as the design brief does", () => {
    expect(WireEnv).toEqual({
      modelProviderToken: "DECKHAND_MODEL_PROVIDER_TOKEN",
      modelProviderUrl: "DECKHAND_MODEL_PROVIDER_URL",
      jobId: "DECKHAND_JOB_ID",
      chatId: "DECKHAND_CHAT_ID",
      agentToken: "DECKHAND_AGENT_TOKEN",
      adminToken: "DECKHAND_ADMIN_TOKEN",
      serverListen: "DECKHAND_LISTEN",
      serverDataDir: "DECKHAND_DATA_DIR",
      serverLogLevel: "DECKHAND_LOG_LEVEL",
      serverPublicUrl: "DECKHAND_PUBLIC_URL",
      serverAllowedHosts: "DECKHAND_ALLOWED_HOSTS",
      serverAllowedOrigins: "DECKHAND_ALLOWED_ORIGINS",
      agentAllowedHosts: "DECKHAND_AGENT_ALLOWED_HOSTS",
      executorToken: "DECKHAND_EXECUTOR_TOKEN",
    });
    expect(WireHeader.jobId).toBe("Deckhand-Job-Id");
    expect(WireHeader.chatId).toBe("Deckhand-Chat-Id");
    expect(WireHeader.ancestorChatIds).toBe("Deckhand-Ancestor-Chat-Ids");
    expect(WirePath.processes).toBe("/api/v0/processes");
  });

  it("gives every wire constant a distinct value", () => {
    const values = wireLiterals().map((literal) => literal.value.toLowerCase());
    expect(new Set(values).size).toBe(values.length);
  });

  it("no package or app outside @deckhand/wire spells a wire constant as a literal", () => {
    const roots = ["packages", "apps", "db", "bench", "e2e"]
      .map((name) => `${repositoryRoot}${name}`)
      .filter((root) => existsSync(root));
    // Code-host clients and their fakes speak other products' APIs, whose paths (`/api/v3` on
    // GitHub Enterprise, `/api/v4` on GitLab) and standard headers coincide with Deckhand's
    // spellings by accident: using Deckhand's constants there would be the mistake. The
    // Kubernetes API's core group lives under `/api/v1` too.
    const foreignApis = [
      "packages/code-hosts/src",
      "packages/testkit/src/code-hosts",
      "packages/kubernetes-runtime/src",
      "packages/testkit/src/kubernetes",
    ].map((path) => `${repositoryRoot}${path}`);
    const findings = findWireLiteralDuplicates(roots, {
      base: repositoryRoot,
      skip: (path) =>
        path.startsWith(packageDirectory.replace(/\/$/, "")) ||
        foreignApis.some((foreign) => path.startsWith(foreign)),
    });
    expect(findings).toEqual([]);
  });

  it("flags literals, env names as keys, header spellings in any case and path extensions, but not comments", () => {
    const findings = findWireLiteralDuplicates([`${fixtures}/duplicated-literal`], {
      base: fixtures,
    });
    expect(findings).toEqual([
      {
        file: "duplicated-literal/src/client.ts",
        line: 4,
        column: 23,
        literal: "/api/v0/processes/start",
        constant: "paths.processes",
      },
      {
        file: "duplicated-literal/src/client.ts",
        line: 6,
        column: 16,
        literal: "deckhand-chat-id",
        constant: "headers.chatId",
      },
      {
        file: "duplicated-literal/src/client.ts",
        line: 7,
        column: 35,
        literal: "DECKHAND_CHAT_ID",
        constant: "env.chatId",
      },
      {
        file: "duplicated-literal/src/client.ts",
        line: 10,
        column: 30,
        literal: "DECKHAND_MODEL_PROVIDER_TOKEN",
        constant: "env.modelProviderToken",
      },
      {
        file: "duplicated-literal/src/client.ts",
        line: 11,
        column: 25,
        literal: "/api/v0/processes",
        constant: "paths.processes",
      },
    ]);
  });
});
