// Measures @deckhand/headtail's write path: throughput for big pipe-sized chunks and for many
// small lines, and how much memory a buffer keeps after 4 GiB. The chunk figure is also given
// relative to merely copying the same chunks once, so runs on different machines compare.
//
//   node --conditions=source --expose-gc bench/headtail.ts
import { HeadTailBuffer } from "@deckhand/headtail";
import { reportFigure } from "./support/figures.ts";

const GIB = 1024 ** 3;
const CHUNKS_TOTAL_BYTES = 4 * GIB;
const CHUNK_BYTES = 64 * 1024;
const LINE_BYTES = 100;
const LINES_TOTAL_BYTES = 256 * 1024 * 1024;
const RUNS = 5;

const collectGarbage = globalThis.gc;
if (!collectGarbage) {
  console.error("run with --expose-gc: node --conditions=source --expose-gc bench/headtail.ts");
  process.exit(1);
}

/** Deterministic pseudo-random numbers, so every run writes the same bytes. */
function random(seed: number) {
  let state = seed;
  return (below: number) => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return state % below;
  };
}

/** Log-like text: lines of 20 to 160 bytes, some with multi-byte characters, split anywhere. */
function makeChunks(count: number): Buffer[] {
  const next = random(42);
  const words = [
    "build",
    "ok",
    "warn:",
    "error",
    "compiled",
    "src/index.ts",
    "12ms",
    "é",
    "→",
    "✓",
  ];
  const text: string[] = [];
  let length = 0;
  while (length < count * CHUNK_BYTES) {
    let line = "";
    const target = 20 + next(140);
    while (Buffer.byteLength(line) < target) line += `${words[next(words.length)]} `;
    text.push(`${line}\n`);
    length += Buffer.byteLength(line) + 1;
  }
  const all = Buffer.from(text.join(""));
  return Array.from({ length: count }, (_, index) =>
    Buffer.from(all.subarray(index * CHUNK_BYTES, (index + 1) * CHUNK_BYTES)),
  );
}

function makeLines(count: number): Buffer[] {
  const next = random(7);
  const pool = Buffer.alloc(count * LINE_BYTES);
  for (let index = 0; index < pool.length; index += 1) {
    pool[index] = (index + 1) % LINE_BYTES === 0 ? 0x0a : 0x61 + next(26);
  }
  return Array.from({ length: count }, (_, index) =>
    pool.subarray(index * LINE_BYTES, (index + 1) * LINE_BYTES),
  );
}

function writeAll(buffer: HeadTailBuffer, pieces: Buffer[], totalBytes: number): number {
  const started = process.hrtime.bigint();
  let written = 0;
  for (let index = 0; written < totalBytes; index = (index + 1) % pieces.length) {
    const piece = pieces[index]!;
    buffer.write(piece);
    written += piece.length;
  }
  return Number(process.hrtime.bigint() - started) / 1e9;
}

/** The floor any capture must pay: touching every chunk once. */
function copyAll(pieces: Buffer[], totalBytes: number): number {
  const scratch = Buffer.alloc(CHUNK_BYTES);
  const started = process.hrtime.bigint();
  let written = 0;
  let checksum = 0;
  for (let index = 0; written < totalBytes; index = (index + 1) % pieces.length) {
    const piece = pieces[index]!;
    written += piece.copy(scratch);
    checksum ^= scratch[written & (CHUNK_BYTES - 1)]!;
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  if (checksum === -1) console.log(checksum);
  return seconds;
}

function median(values: number[]): number {
  const sorted = [...values].sort((left, right) => left - right);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function memoryInUse(): number {
  collectGarbage!();
  collectGarbage!();
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.arrayBuffers;
}

const megabytesPerSecond = (bytes: number, seconds: number) => bytes / 1e6 / seconds;

const chunks = makeChunks(16);
const lines = makeLines(4096);

// Warm up both paths so the timed runs measure optimised code.
writeAll(new HeadTailBuffer(), chunks, 64 * 1024 * 1024);
writeAll(new HeadTailBuffer(), lines, 16 * 1024 * 1024);
copyAll(chunks, 64 * 1024 * 1024);

const baselineSeconds: number[] = [];
const chunkSeconds: number[] = [];
const lineSeconds: number[] = [];
const memoryGrowth: number[] = [];
for (let run = 0; run < RUNS; run += 1) {
  baselineSeconds.push(copyAll(chunks, CHUNKS_TOTAL_BYTES));
  const before = memoryInUse();
  const buffer = new HeadTailBuffer();
  chunkSeconds.push(writeAll(buffer, chunks, CHUNKS_TOTAL_BYTES));
  memoryGrowth.push(memoryInUse() - before);
  if (buffer.totalBytes < CHUNKS_TOTAL_BYTES) throw new Error("the chunk run wrote too little");
  lineSeconds.push(writeAll(new HeadTailBuffer(), lines, LINES_TOTAL_BYTES));
}

const baseline = megabytesPerSecond(CHUNKS_TOTAL_BYTES, median(baselineSeconds));
const chunkThroughput = megabytesPerSecond(CHUNKS_TOTAL_BYTES, median(chunkSeconds));
const lineThroughput = megabytesPerSecond(LINES_TOTAL_BYTES, median(lineSeconds));
const growth = Math.max(...memoryGrowth);
const result = {
  name: "headtail",
  chunk_64k_mb_per_s: Math.round(chunkThroughput),
  lines_100b_mb_per_s: Math.round(lineThroughput),
  baseline_copy_mb_per_s: Math.round(baseline),
  chunk_64k_vs_baseline: Number((chunkThroughput / baseline).toFixed(3)),
  memory_growth_bytes: growth,
  memory_growth_after_bytes: CHUNKS_TOTAL_BYTES,
  memory_growth_under_2_mib: growth < 2 * 1024 * 1024,
  runs: RUNS,
  node: process.version,
};

const rows: [string, string][] = [
  ["64 KiB chunks, 4 GiB", `${result.chunk_64k_mb_per_s} MB/s`],
  ["100-byte lines, 256 MiB", `${result.lines_100b_mb_per_s} MB/s`],
  ["baseline: copy each chunk", `${result.baseline_copy_mb_per_s} MB/s`],
  ["64 KiB chunks / baseline", `${result.chunk_64k_vs_baseline}x`],
  ["memory growth after 4 GiB", `${(growth / 1024).toFixed(1)} KiB (limit 2048 KiB)`],
];
const width = Math.max(...rows.map(([label]) => label.length));
for (const [label, value] of rows) console.log(`${label.padEnd(width)}  ${value.padStart(28)}`);
console.log(`BENCH ${JSON.stringify(result)}`);
reportFigure({
  id: "headtail-writes",
  label: "head+tail writes of 64 KiB chunks (throughput relative to a copy)",
  value: chunkThroughput,
  unit: "MB/s",
  anchor: { label: "copying each chunk", value: baseline, unit: "MB/s" },
  comparison: { value: chunkThroughput / baseline, unit: "×" },
});
if (!result.memory_growth_under_2_mib) process.exitCode = 1;
