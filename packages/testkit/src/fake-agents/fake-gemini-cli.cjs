// A stand-in for the Gemini CLI (0.61) honouring the contract Deckhand's `codingAgent` renderer
// relies on, as read from gemini-cli's source:
// - it is code-split: `gemini.js` only loads this chunk (`chunk-FAKE.js`) from beside it, so
//   installing the entry file alone fails with "Cannot find module";
// - `gemini --version` prints the version;
// - settings come from `$GEMINI_CLI_HOME/.gemini/settings.json` (else `$HOME/.gemini/…`);
// - headless auth: `security.auth.selectedType` from the settings, else the environment
//   (`GOOGLE_GENAI_USE_GCA`, `GOOGLE_GENAI_USE_VERTEXAI`, then `GOOGLE_GEMINI_BASE_URL`, which
//   selects the `gateway` type, then `GEMINI_API_KEY`); anything but `gemini-api-key` with a
//   key is refused with "Invalid auth method selected." and exit 41;
// - an untrusted folder (no `--skip-trust`, no GEMINI_CLI_TRUST_WORKSPACE=true) stops headless
//   mode with exit 55;
// - it streams `POST <GOOGLE_GEMINI_BASE_URL>/v1beta/models/<model>:streamGenerateContent?alt=sse`
//   with the key as `x-goog-api-key`, each `GEMINI_CLI_CUSTOM_HEADERS` pair ("Name: value",
//   comma-separated), and, while usage statistics are on (`privacy.usageStatisticsEnabled` not
//   false), its installation id as `x-gemini-api-privileged-user-id`;
// - the model's text holds directives, one per line: `write <path> <JSON string>` writes a file
//   under the working directory, `fail <message>` exits 1; other lines are the reply;
// - `--output-format=stream-json` prints `init`, `message`, `tool_use`, `tool_result` and
//   `result` events as JSON lines, as gemini does.
// It keeps its own files (installation id, project list) under `<home>/.gemini`, as gemini does,
// writing there on every start, `--version` included.
"use strict";

const { existsSync, mkdirSync, readFileSync, writeFileSync } = require("node:fs");
const { randomUUID } = require("node:crypto");
const { dirname, isAbsolute, join, relative, resolve } = require("node:path");
const { homedir } = require("node:os");

const VERSION = "__FAKE_GEMINI_VERSION__";
let json = false;

function emit(event) {
  if (json) console.log(JSON.stringify({ ...event, timestamp: new Date().toISOString() }));
}

function fail(message, code = 1) {
  emit({ type: "result", status: "error", error: { type: "Error", message } });
  process.stderr.write(`${message}\n`);
  process.exit(code);
}

function parseArguments(args) {
  const parsed = { model: "gemini-2.5-pro", prompt: undefined, skipTrust: false, format: "text" };
  for (let index = 0; index < args.length; index += 1) {
    const argument = args[index];
    const [name, inline] = argument.startsWith("--") ? argument.split(/=(.*)/s, 2) : [argument];
    const value = () => (inline !== undefined ? inline : args[++index]);
    if (name === "--skip-trust") parsed.skipTrust = true;
    else if (name === "--yolo" || name === "-y") continue;
    else if (name === "--model" || name === "-m") parsed.model = value();
    else if (name === "--prompt" || name === "-p") parsed.prompt = value();
    else if (name === "--output-format" || name === "-o") parsed.format = value();
    else fail(`Unknown argument: ${argument}`);
  }
  return parsed;
}

function geminiHome() {
  return join(process.env.GEMINI_CLI_HOME || homedir(), ".gemini");
}

function userSettings() {
  const path = join(geminiHome(), "settings.json");
  if (!existsSync(path)) return {};
  return JSON.parse(readFileSync(path, "utf8"));
}

function authType(settings) {
  const selected = settings.security?.auth?.selectedType;
  if (selected) return selected;
  if (process.env.GOOGLE_GENAI_USE_GCA === "true") return "oauth-personal";
  if (process.env.GOOGLE_GENAI_USE_VERTEXAI === "true") return "vertex-ai";
  if (process.env.GOOGLE_GEMINI_BASE_URL) return "gateway";
  if (process.env.GEMINI_API_KEY) return "gemini-api-key";
  return undefined;
}

function customHeaders() {
  const headers = {};
  for (const pair of (process.env.GEMINI_CLI_CUSTOM_HEADERS ?? "").split(",")) {
    const colon = pair.indexOf(":");
    if (colon > 0) headers[pair.slice(0, colon).trim()] = pair.slice(colon + 1).trim();
  }
  return headers;
}

/** The text of the `data:` events of an SSE body, parsed. */
function sseEvents(text) {
  return text
    .split("\n")
    .filter((line) => line.startsWith("data:"))
    .map((line) => JSON.parse(line.slice(5).trim()));
}

async function main() {
  const args = process.argv.slice(2);
  // Gemini registers the working directory in its home on every start, `--version` included.
  const home = geminiHome();
  mkdirSync(home, { recursive: true });
  writeFileSync(join(home, "projects.json"), JSON.stringify({ projects: [process.cwd()] }));
  if (args.length === 1 && (args[0] === "--version" || args[0] === "-v")) {
    console.log(VERSION);
    return;
  }
  const options = parseArguments(args);
  json = options.format === "stream-json";
  const settings = userSettings();
  if (!options.skipTrust && process.env.GEMINI_CLI_TRUST_WORKSPACE !== "true") {
    fail(
      "Gemini CLI is not running in a trusted directory. To proceed, either use `--skip-trust`, set the `GEMINI_CLI_TRUST_WORKSPACE=true` environment variable, or trust this directory in interactive mode.",
      55,
    );
  }
  const auth = authType(settings);
  if (auth !== "gemini-api-key") fail("Invalid auth method selected.", 41);
  const key = process.env.GEMINI_API_KEY;
  if (!key)
    fail("When using Gemini API, you must specify the GEMINI_API_KEY environment variable.", 41);
  if (options.prompt === undefined) fail("No input provided via stdin.", 42);

  const headers = {
    "content-type": "application/json",
    "user-agent": `GeminiCLI/${VERSION}/${options.model} (${process.platform}; ${process.arch})`,
    ...customHeaders(),
    "x-goog-api-key": key,
  };
  if (settings.privacy?.usageStatisticsEnabled !== false) {
    const idFile = join(home, "installation_id");
    if (!existsSync(idFile)) writeFileSync(idFile, randomUUID());
    headers["x-gemini-api-privileged-user-id"] = readFileSync(idFile, "utf8");
  }
  const base = (
    process.env.GOOGLE_GEMINI_BASE_URL || "https://generativelanguage.googleapis.com"
  ).replace(/\/+$/, "");
  const url = `${base}/v1beta/models/${options.model}:streamGenerateContent?alt=sse`;
  const sessionId = randomUUID();
  emit({ type: "init", session_id: sessionId, model: options.model });
  emit({ type: "message", role: "user", content: options.prompt });
  let response;
  try {
    response = await fetch(url, {
      method: "POST",
      headers,
      body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: options.prompt }] }] }),
    });
  } catch (error) {
    fail(`fetch failed: ${error.message}`);
  }
  const body = await response.text();
  if (!response.ok) fail(`[API Error: ${response.status} ${body}]`);
  let text = "";
  let usage = {};
  for (const chunk of sseEvents(body)) {
    if (chunk.error) fail(`[API Error: ${chunk.error.message}]`);
    for (const part of chunk.candidates?.[0]?.content?.parts ?? []) {
      if (typeof part.text === "string" && !part.thought) text += part.text;
    }
    if (chunk.usageMetadata) usage = chunk.usageMetadata;
  }
  const reply = [];
  let tools = 0;
  for (const line of text.split("\n")) {
    const write = /^write (\S+) (".*")$/.exec(line);
    if (write) {
      const target = resolve(process.cwd(), write[1]);
      const inside = relative(process.cwd(), target);
      if (inside.startsWith("..") || isAbsolute(inside)) fail(`refusing to write ${write[1]}`);
      tools += 1;
      const toolId = `write_file-${tools}`;
      emit({
        type: "tool_use",
        tool_name: "write_file",
        tool_id: toolId,
        parameters: { file_path: write[1] },
      });
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(target, JSON.parse(write[2]));
      emit({
        type: "tool_result",
        tool_id: toolId,
        status: "success",
        output: `Wrote ${write[1]}`,
      });
      continue;
    }
    const failure = /^fail (.*)$/.exec(line);
    if (failure) fail(failure[1]);
    reply.push(line);
  }
  const message = reply.join("\n").trim();
  if (message !== "") {
    emit({ type: "message", role: "assistant", content: message, delta: true });
    if (!json) console.log(message);
  }
  emit({
    type: "result",
    status: "success",
    stats: {
      total_tokens: usage.totalTokenCount ?? 0,
      input_tokens: usage.promptTokenCount ?? 0,
      output_tokens: (usage.candidatesTokenCount ?? 0) + (usage.thoughtsTokenCount ?? 0),
      cached: usage.cachedContentTokenCount ?? 0,
      input: (usage.promptTokenCount ?? 0) - (usage.cachedContentTokenCount ?? 0),
      duration_ms: 1,
      tool_calls: tools,
    },
  });
}

module.exports = { main };
