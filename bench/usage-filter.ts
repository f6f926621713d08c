// The model proxy's usage filter alone: about 10 MB of each provider's streamed answer (OpenAI
// Chat Completions and Responses, Anthropic Messages, Gemini streamGenerateContent) with English
// text in its deltas and usage where each provider puts it, cut into 13 KB Buffers as the
// proxy's `node:http` reads arrive, fed through `SseEventFilter('"usage')`. Reports the median
// CPU time per 10 MB of each shape. On a busy machine the proxy bench's own figure varies by
// more than the whole filter costs; this one does not.
//
//   node --conditions=source bench/usage-filter.ts [--against OTHER/sse-parser.ts] [--rounds 30]
//
// With --against, the other file's `SseEventFilter` (e.g. an older tree's) runs in turns with
// this tree's on the same chunks, and both are reported.
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { SseEventFilter } from "../packages/sse/src/index.ts";
import { median } from "./support/figures.ts";

type Filter = { push(chunk: Uint8Array): { data: string }[]; end(): { data: string }[] };
type FilterClass = new (needle: string) => Filter;

const STREAM_BYTES = 10e6;
const READ_BYTES = 13_000;
const WORDS = (
  "the of and to in is that for it as with was on be at by this had not are but from or have " +
  "an they which you were her all she there would their we him been has when who will more no " +
  "if out so said what up its about into than them can only other new some could time these " +
  "two may then do first any my now such like our over man me even most made after also did " +
  "many before must through back years where much your way well down should because each just " +
  "those people how too little state good very make world still own see men work long get here " +
  "between both life being under never day same another know while last might us great old " +
  "year off come since against go came right used take three large change message language"
).split(" ");

/** A fixed pseudo-random sequence, so every run filters the same bytes. */
function words(seed: { value: number }, count: number): string {
  const picked: string[] = [];
  for (let index = 0; index < count; index += 1) {
    seed.value = (seed.value * 1103515245 + 12345) & 0x7fffffff;
    picked.push(WORDS[seed.value % WORDS.length]!);
  }
  return ` ${picked.join(" ")}`;
}

const event = (name: string | undefined, data: unknown) =>
  `${name === undefined ? "" : `event: ${name}\n`}data: ${JSON.stringify(data)}\n\n`;

/** Each provider's delta event and the event that carries its usage. */
const SHAPES: Record<string, { delta: (text: string) => string; usage: string }> = {
  "openai-chat": {
    delta: (text) =>
      event(undefined, {
        id: "chatcmpl-1",
        object: "chat.completion.chunk",
        model: "gpt-4o",
        choices: [{ index: 0, delta: { content: text }, finish_reason: null }],
      }),
    usage: event(undefined, { choices: [], usage: { prompt_tokens: 9, completion_tokens: 3 } }),
  },
  "openai-responses": {
    delta: (text) =>
      event("response.output_text.delta", {
        type: "response.output_text.delta",
        item_id: "msg_1",
        output_index: 0,
        content_index: 0,
        delta: text,
      }),
    usage: event("response.completed", {
      type: "response.completed",
      response: { id: "resp_1", usage: { input_tokens: 9, output_tokens: 3, total_tokens: 12 } },
    }),
  },
  "anthropic-messages": {
    delta: (text) =>
      event("content_block_delta", {
        type: "content_block_delta",
        index: 0,
        delta: { type: "text_delta", text },
      }),
    usage: event("message_delta", {
      type: "message_delta",
      delta: { stop_reason: "end_turn" },
      usage: { output_tokens: 3 },
    }),
  },
  // Gemini sends `usageMetadata` in every chunk, with a space after each colon.
  "gemini-stream": {
    delta: (text) =>
      event(undefined, {
        candidates: [{ content: { parts: [{ text }], role: "model" }, index: 0 }],
        usageMetadata: { promptTokenCount: 9, candidatesTokenCount: 3, totalTokenCount: 12 },
        modelVersion: "gemini-2.0-flash",
      }).replaceAll('":', '": '),
    usage: "",
  },
};

function chunksOf(shape: { delta: (text: string) => string; usage: string }): Buffer[] {
  const seed = { value: 1 };
  const parts: string[] = [];
  let length = 0;
  while (length < STREAM_BYTES) {
    const part = shape.delta(words(seed, 4));
    parts.push(part);
    length += part.length;
  }
  const bytes = Buffer.from(parts.join("") + shape.usage);
  const chunks: Buffer[] = [];
  for (let start = 0; start < bytes.length; start += READ_BYTES) {
    chunks.push(bytes.subarray(start, start + READ_BYTES));
  }
  return chunks;
}

function filterCpuMs(Filter: FilterClass, chunks: Buffer[]): { cpuMs: number; events: number } {
  const started = process.cpuUsage();
  const filter = new Filter('"usage');
  let events = 0;
  for (const chunk of chunks) events += filter.push(chunk).length;
  events += filter.end().length;
  const used = process.cpuUsage(started);
  return { cpuMs: (used.user + used.system) / 1000, events };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { against: { type: "string" }, rounds: { type: "string", default: "30" } },
  });
  const rounds = Number(values.rounds);
  const filters: [string, FilterClass][] = [["this tree", SseEventFilter]];
  if (values.against) {
    const other = (await import(pathToFileURL(values.against).href)) as {
      SseEventFilter: FilterClass;
    };
    filters.unshift([values.against, other.SseEventFilter]);
  }
  for (const [name, shape] of Object.entries(SHAPES)) {
    const chunks = chunksOf(shape);
    const megabytes = chunks.reduce((sum, chunk) => sum + chunk.length, 0) / 1e6;
    const times = filters.map(() => [] as number[]);
    const found = filters.map(() => 0);
    for (let round = 0; round < rounds; round += 1) {
      filters.forEach(([, Filter], index) => {
        const { cpuMs, events } = filterCpuMs(Filter, chunks);
        times[index]!.push(cpuMs);
        found[index] = events;
      });
    }
    const report = filters.map(
      ([label], index) =>
        `${label}: ${((median(times[index]!) * 10) / megabytes).toFixed(2)} ms per 10 MB (${found[index]} events)`,
    );
    console.log(`» usage filter, ${name}: ${report.join("; ")}`);
  }
}

await main();
