#!/usr/bin/env node
// A stand-in for opencode (1.18) honouring the contract Deckhand's `codingAgent` renderer relies
// on, as read from opencode's source and flags:
// - `opencode --version` prints the version;
// - `opencode run --model=<provider>/<model> --format=json -- <message>` reads its config from
//   OPENCODE_CONFIG_CONTENT (`{env:NAME}` replaced by the variable's value), and streams one
//   Chat Completions request to the provider's `options.baseURL` + `/chat/completions`, with
//   `options.apiKey` as a bearer token and `options.headers`, as @ai-sdk/openai-compatible does;
// - its state lives under the XDG base directories (`$XDG_DATA_HOME/opencode`, else
//   `$HOME/.local/share/opencode`): the database is created there on first use, and two runs
//   creating it at once collide ("CREATE TABLE workspace" fails), as opencode's do;
// - it would reach outside hosts unless told not to: the models.dev catalogue
//   (OPENCODE_DISABLE_MODELS_FETCH), its default plugins from npm
//   (OPENCODE_DISABLE_DEFAULT_PLUGINS), the self-update (OPENCODE_DISABLE_AUTOUPDATE or
//   `autoupdate: false`); each lookup it would make is written on stderr as
//   "fake opencode: would fetch <url>";
// - the model's text holds directives, one per line: `write <path> <JSON string>` writes a file
//   under the working directory, `fail <message>` exits 1; other lines are the reply;
// - `--format=json` prints `{type, timestamp, sessionID, part}` events as opencode does:
//   `step_start`, `tool_use`, `text`, `step_finish` (with the step's tokens), `error`.
"use strict";

const { closeSync, existsSync, mkdirSync, openSync, rmSync, writeFileSync } = require("node:fs");
const { homedir } = require("node:os");
const { dirname, isAbsolute, join, relative, resolve } = require("node:path");

const VERSION = "__FAKE_OPENCODE_VERSION__";
const sessionID = `ses_fake${process.pid}`;
let json = false;
let cleanup = () => {};

function emit(type, fields) {
  if (json) console.log(JSON.stringify({ type, timestamp: Date.now(), sessionID, ...fields }));
}

function fail(message) {
  emit("error", { error: { name: "UnknownError", data: { message } } });
  process.stderr.write(`Error: ${message}\n`);
  cleanup();
  process.exit(1);
}

const truthy = (name) => process.env[name] === "1" || process.env[name] === "true";

/** The config with every `{env:NAME}` replaced, as opencode loads it. */
function loadConfig() {
  const text = (process.env.OPENCODE_CONFIG_CONTENT ?? "{}").replace(
    /\{env:([A-Za-z_][A-Za-z0-9_]*)\}/g,
    (_, name) => process.env[name] ?? "",
  );
  return JSON.parse(text);
}

/** Opens the database, creating it on first use; a second creator at once collides. */
function openDatabase() {
  const data = join(process.env.XDG_DATA_HOME || join(homedir(), ".local", "share"), "opencode");
  mkdirSync(data, { recursive: true });
  const database = join(data, "opencode.db");
  const migrating = `${database}-migrating`;
  let handle;
  try {
    handle = openSync(migrating, "wx");
  } catch {
    fail("CREATE TABLE workspace failed: database is locked");
  }
  cleanup = () => {
    closeSync(handle);
    rmSync(migrating, { force: true });
  };
  writeFileSync(database, "fake opencode database\n");
}

function parseArguments(args) {
  if (args[0] !== "run") fail(`unsupported command "${args[0] ?? ""}"; only run is faked`);
  const parsed = { model: undefined, format: "default", message: undefined };
  for (let index = 1; index < args.length; index += 1) {
    const argument = args[index];
    if (argument === "--") {
      parsed.message = args.slice(index + 1).join(" ");
      break;
    }
    const [name, inline] = argument.split(/=(.*)/s, 2);
    const value = () => (inline !== undefined ? inline : args[++index]);
    if (name === "--model" || name === "-m") parsed.model = value();
    else if (name === "--format") parsed.format = value();
    else if (!argument.startsWith("-") && parsed.message === undefined) parsed.message = argument;
    else fail(`unknown argument ${argument}`);
  }
  return parsed;
}

async function main() {
  const args = process.argv.slice(2);
  if (args.length === 1 && (args[0] === "--version" || args[0] === "-v")) {
    console.log(VERSION);
    return;
  }
  const options = parseArguments(args);
  json = options.format === "json";
  const config = loadConfig();
  if (!truthy("OPENCODE_DISABLE_MODELS_FETCH")) {
    process.stderr.write("fake opencode: would fetch https://models.dev/api.json\n");
  }
  if (!truthy("OPENCODE_DISABLE_DEFAULT_PLUGINS")) {
    process.stderr.write(
      "fake opencode: would fetch https://registry.npmjs.org/opencode-anthropic-auth\n",
    );
  }
  if (!truthy("OPENCODE_DISABLE_AUTOUPDATE") && config.autoupdate !== false) {
    process.stderr.write(
      "fake opencode: would fetch https://registry.npmjs.org/opencode-ai/latest\n",
    );
  }
  openDatabase();
  const [providerId, ...modelParts] = (options.model ?? config.model ?? "").split("/");
  const provider = config.provider?.[providerId];
  if (!provider) fail(`ProviderModelNotFoundError: provider ${providerId} is not configured`);
  const { baseURL, apiKey, headers = {} } = provider.options ?? {};
  if (!baseURL || !apiKey) fail(`provider ${providerId} has no baseURL or apiKey`);
  if (!options.message || options.message.trim() === "") fail("You must provide a message");

  emit("step_start", { part: { type: "step-start" } });
  let response;
  try {
    response = await fetch(`${baseURL.replace(/\/+$/, "")}/chat/completions`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        authorization: `Bearer ${apiKey}`,
        ...headers,
      },
      body: JSON.stringify({
        model: modelParts.join("/"),
        messages: [{ role: "user", content: options.message }],
        stream: true,
        stream_options: { include_usage: true },
      }),
    });
  } catch (error) {
    fail(`Cannot connect to API: ${error.message}`);
  }
  const body = await response.text();
  if (!response.ok) fail(`AI_APICallError: ${response.status} ${body}`);
  let text = "";
  let usage = {};
  for (const line of body.split("\n")) {
    if (!line.startsWith("data:") || line.includes("[DONE]")) continue;
    const chunk = JSON.parse(line.slice(5).trim());
    if (chunk.error) fail(chunk.error.message);
    text += chunk.choices?.[0]?.delta?.content ?? "";
    if (chunk.usage) usage = chunk.usage;
  }
  const reply = [];
  for (const line of text.split("\n")) {
    const write = /^write (\S+) (".*")$/.exec(line);
    if (write) {
      const target = resolve(process.cwd(), write[1]);
      const inside = relative(process.cwd(), target);
      if (inside.startsWith("..") || isAbsolute(inside)) fail(`refusing to write ${write[1]}`);
      mkdirSync(dirname(target), { recursive: true });
      const existed = existsSync(target);
      writeFileSync(target, JSON.parse(write[2]));
      emit("tool_use", {
        part: {
          type: "tool",
          tool: "write",
          callID: `call_${write[1]}`,
          state: {
            status: "completed",
            input: { filePath: target },
            output: existed ? "Updated the file" : "Wrote the file",
            title: write[1],
          },
        },
      });
      continue;
    }
    const failure = /^fail (.*)$/.exec(line);
    if (failure) fail(failure[1]);
    reply.push(line);
  }
  const message = reply.join("\n").trim();
  if (message !== "") {
    emit("text", { part: { type: "text", text: message, time: { start: 1, end: 2 } } });
    if (!json) console.log(message);
  }
  const cached = usage.prompt_tokens_details?.cached_tokens ?? 0;
  emit("step_finish", {
    part: {
      type: "step-finish",
      reason: "stop",
      cost: 0,
      tokens: {
        input: (usage.prompt_tokens ?? 0) - cached,
        output: usage.completion_tokens ?? 0,
        reasoning: 0,
        cache: { read: cached, write: 0 },
      },
    },
  });
  cleanup();
}

main().catch((error) => fail(error instanceof Error ? error.message : String(error)));
