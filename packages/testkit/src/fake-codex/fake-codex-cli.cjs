#!/usr/bin/env node
// A stand-in for the Codex CLI that honours the contract Deckhand's `codingAgent` renderer relies
// on, small enough to read in one go:
// - `codex --version` prints `codex-cli <version>` (the version is written in when the release
//   archive is built, see fake-codex-release.ts);
// - `codex exec [--json] [flags] -c key=value ... -- <prompt>` reads the custom model provider
//   from the `-c` overrides (`model_provider`, `model_providers.<id>.base_url`, `.env_key`,
//   `.env_http_headers`) and `model`, and sends one streaming Responses request,
//   `POST <base_url>/responses`, with `Authorization: Bearer $<env_key>` and each header of
//   `env_http_headers` taken from its environment variable, as codex does;
// - the assistant message of the answer holds directives, one per line:
//     write <path> <JSON string>   writes the string to <path> under the working directory
//     exec <JSON string>           runs the string with `sh -c` in the working directory, as
//                                  codex runs a command, and prints its output on stderr
//     fail <message>               exits 1 with the message on stderr
//   other lines are the agent's reply;
// - with `--json` it prints JSON lines shaped like codex's (`thread.started`, `turn.started`,
//   `item.completed` with each item's `id`, `turn.completed`; `error` and `turn.failed` when it
//   fails).
// Stdin is never read. FAKE_CODEX_PRINT_TOKEN=1 makes it print the token on stderr, as a
// careless agent might, for tests of redaction. FAKE_CODEX_RECORD_REQUEST=<file> makes it write
// the request it is about to send (`{url, headers}`, the token included) as JSON to that file,
// for end-to-end tests that must know the token a server minted to hunt for it afterwards.
// FAKE_CODEX_SEND_ENVIRONMENT=1 makes it send its DECKHAND_* variables to the model with the
// prompt, as the output of `env` an agent ran would go back to the model, for tests of what the
// proxy lets through.
// CommonJS on purpose: it is installed as an extensionless `codex` executable.
"use strict";

const { spawnSync } = require("node:child_process");
const { mkdirSync, writeFileSync, existsSync } = require("node:fs");
const { dirname, isAbsolute, relative, resolve } = require("node:path");

const VERSION = "__FAKE_CODEX_VERSION__";
const FLAGS = new Set([
  "--json",
  "--skip-git-repo-check",
  "--ephemeral",
  "--dangerously-bypass-approvals-and-sandbox",
]);

function fail(message, json) {
  if (json) {
    console.log(JSON.stringify({ type: "error", message }));
    console.log(JSON.stringify({ type: "turn.failed", error: { message } }));
  }
  process.stderr.write(`fake codex: ${message}\n`);
  process.exit(1);
}

/** A `-c` value as codex reads it: TOML, here only basic strings and inline tables of them. */
function tomlValue(text) {
  const trimmed = text.trim();
  if (trimmed.startsWith('"')) return JSON.parse(trimmed);
  if (trimmed.startsWith("{")) {
    const table = {};
    const pair = /\s*("(?:[^"\\]|\\.)*")\s*=\s*("(?:[^"\\]|\\.)*")\s*(?:,|$)/gy;
    const body = trimmed.slice(1, -1);
    let match = pair.exec(body);
    while (match !== null) {
      table[JSON.parse(match[1])] = JSON.parse(match[2]);
      if (pair.lastIndex >= body.length) break;
      match = pair.exec(body);
    }
    return table;
  }
  return trimmed;
}

function parseArguments(args) {
  if (args[0] !== "exec") fail(`unsupported command "${args[0] ?? ""}"; only exec is faked`);
  const parsed = { json: false, config: {}, prompt: undefined };
  for (let index = 1; index < args.length; index += 1) {
    const argument = args[index];
    if (argument === "--") {
      parsed.prompt = args.slice(index + 1).join(" ");
      break;
    }
    if (argument === "--json") parsed.json = true;
    else if (FLAGS.has(argument)) continue;
    else if (argument === "-c" || argument === "--disable") {
      const value = args[index + 1];
      if (value === undefined) fail(`${argument} needs a value`);
      index += 1;
      if (argument === "-c") {
        const equals = value.indexOf("=");
        if (equals <= 0) fail(`-c ${value} is not key=value`);
        parsed.config[value.slice(0, equals)] = tomlValue(value.slice(equals + 1));
      }
    } else if (!argument.startsWith("-") && parsed.prompt === undefined) {
      parsed.prompt = argument;
    } else {
      fail(`unknown argument ${argument}`);
    }
  }
  return parsed;
}

/** The events of a Responses stream (`data: {...}` lines). */
function sseEvents(text) {
  const events = [];
  for (const line of text.split("\n")) {
    if (!line.startsWith("data:")) continue;
    const data = line.slice(5).trim();
    if (data === "" || data === "[DONE]") continue;
    try {
      events.push(JSON.parse(data));
    } catch {
      // Not JSON: not an event this fake understands.
    }
  }
  return events;
}

/** With FAKE_CODEX_SEND_ENVIRONMENT=1, the agent's DECKHAND_* variables as a tool's output. */
function environmentOutput() {
  if (process.env.FAKE_CODEX_SEND_ENVIRONMENT !== "1") return [];
  const lines = Object.entries(process.env)
    .filter(([name]) => name.startsWith("DECKHAND_"))
    .map(([name, value]) => `${name}=${value}`);
  return [{ type: "function_call_output", call_id: "env", output: lines.join("\n") }];
}

function messageText(item) {
  if (item.type !== "message" || !Array.isArray(item.content)) return "";
  return item.content
    .filter((part) => part.type === "output_text")
    .map((part) => part.text)
    .join("");
}

async function main() {
  const args = process.argv.slice(2);
  if (args.length === 1 && args[0] === "--version") {
    console.log(`codex-cli ${VERSION}`);
    return;
  }
  const options = parseArguments(args);
  const { json, config } = options;
  const emit = (event) => {
    if (json) console.log(JSON.stringify(event));
  };
  if (options.prompt === undefined || options.prompt.trim() === "") fail("no prompt given", json);
  const providerId = config.model_provider;
  if (typeof providerId !== "string") fail("no model_provider configured", json);
  const provider = `model_providers.${providerId}`;
  const baseUrl = config[`${provider}.base_url`];
  const envKey = config[`${provider}.env_key`];
  const headerVariables = config[`${provider}.env_http_headers`] ?? {};
  if (typeof baseUrl !== "string") fail(`${provider}.base_url is not set`, json);
  if (typeof envKey !== "string") fail(`${provider}.env_key is not set`, json);
  const token = process.env[envKey];
  if (!token) fail(`${envKey} is not set; the provider's env_key names it`, json);
  if (process.env.FAKE_CODEX_PRINT_TOKEN === "1") {
    process.stderr.write(`fake codex: using token ${token}\n`);
  }
  const headers = { "content-type": "application/json", authorization: `Bearer ${token}` };
  for (const [header, variable] of Object.entries(headerVariables)) {
    const value = process.env[variable];
    if (!value) fail(`${variable} is not set; env_http_headers sends it as ${header}`, json);
    headers[header] = value;
  }

  const url = `${baseUrl.replace(/\/+$/, "")}/responses`;
  const record = process.env.FAKE_CODEX_RECORD_REQUEST;
  if (record) writeFileSync(record, `${JSON.stringify({ url, headers })}\n`, { mode: 0o600 });

  emit({ type: "thread.started", thread_id: "fake-thread" });
  emit({ type: "turn.started" });
  let response;
  try {
    response = await fetch(url, {
      method: "POST",
      headers,
      body: JSON.stringify({
        model: config.model,
        instructions: "You are a fake coding agent.",
        input: [
          {
            type: "message",
            role: "user",
            content: [{ type: "input_text", text: options.prompt }],
          },
          ...environmentOutput(),
        ],
        stream: true,
      }),
    });
  } catch (error) {
    fail(`the model provider at ${baseUrl} could not be reached: ${error.message}`, json);
  }
  const body = await response.text();
  if (!response.ok) fail(`the model provider answered ${response.status}: ${body}`, json);

  const items = [];
  let usage = null;
  for (const event of sseEvents(body)) {
    if (event.type === "response.output_item.done" && event.item) items.push(event.item);
    if (event.type === "response.completed") usage = event.response?.usage ?? null;
    if (event.type === "response.failed") {
      fail(`the model failed: ${event.response?.error?.message ?? "unknown error"}`, json);
    }
  }
  if (usage === null && !body.includes("response.completed")) {
    fail("the model's answer ended before response.completed", json);
  }

  const cwd = process.cwd();
  for (const item of items) {
    const text = messageText(item);
    if (text === "") continue;
    const reply = [];
    for (const line of text.split("\n")) {
      const write = /^write (\S+) (".*")$/.exec(line);
      if (write) {
        const target = resolve(cwd, write[1]);
        const inside = relative(cwd, target);
        if (inside.startsWith("..") || isAbsolute(inside)) {
          fail(`refusing to write ${write[1]} outside the working directory`, json);
        }
        const kind = existsSync(target) ? "update" : "add";
        mkdirSync(dirname(target), { recursive: true });
        writeFileSync(target, JSON.parse(write[2]));
        emit({
          type: "item.completed",
          item: {
            id: `item_${items.indexOf(item)}_${target}`,
            type: "file_change",
            status: "completed",
            changes: [{ path: target, kind }],
          },
        });
        continue;
      }
      const exec = /^exec (".*")$/.exec(line);
      if (exec) {
        const command = JSON.parse(exec[1]);
        const ran = spawnSync("sh", ["-c", command], { cwd, encoding: "utf8" });
        const output = `${ran.stdout ?? ""}${ran.stderr ?? ""}`;
        process.stderr.write(output);
        emit({
          type: "item.completed",
          item: {
            id: `item_${items.indexOf(item)}_exec`,
            type: "command_execution",
            command,
            aggregated_output: output,
            exit_code: ran.status,
            status: ran.status === 0 ? "completed" : "failed",
          },
        });
        continue;
      }
      const failure = /^fail (.*)$/.exec(line);
      if (failure) fail(failure[1], json);
      reply.push(line);
    }
    const message = reply.join("\n").trim();
    if (message !== "") {
      emit({
        type: "item.completed",
        item: { id: `item_${items.indexOf(item)}`, type: "agent_message", text: message },
      });
      if (!json) console.log(message);
    }
  }
  emit({
    type: "turn.completed",
    usage: {
      input_tokens: usage?.input_tokens ?? 0,
      cached_input_tokens: usage?.input_tokens_details?.cached_tokens ?? 0,
      output_tokens: usage?.output_tokens ?? 0,
    },
  });
}

main().catch((error) => fail(error instanceof Error ? error.message : String(error), false));
