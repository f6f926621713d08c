// A step's output as the step loop keeps it: both streams bounded (head and tail) for the step's
// result, and passed on, redacted, as `step_output` events while the step runs.
import { StringDecoder } from "node:string_decoder";
import { HeadTailBuffer } from "@deckhand/headtail";

/**
 * How much of each stream a step result keeps (head and tail). Generous, because `step.stdout`
 * is what outputs are usually rendered from: a long JSON document on one line must survive
 * whole, so lines are only cut where the kept window would cut them anyway.
 */
const OUTPUT_HEAD_BYTES = 512 * 1024;
const OUTPUT_TAIL_BYTES = 512 * 1024;
const OUTPUT_MAX_LINE_BYTES = OUTPUT_HEAD_BYTES + OUTPUT_TAIL_BYTES;
/** The largest `step_output` event. */
const OUTPUT_EVENT_BYTES = 8 * 1024;

const outputBounds = {
  headBytes: OUTPUT_HEAD_BYTES,
  tailBytes: OUTPUT_TAIL_BYTES,
  maxLineBytes: OUTPUT_MAX_LINE_BYTES,
};

export type StepStream = "stdout" | "stderr";

/** A step's two output streams: kept bounded for the result, and passed on as events. */
export class StepOutput {
  readonly stdout = new HeadTailBuffer(outputBounds);
  readonly stderr = new HeadTailBuffer(outputBounds);
  // One decoder per stream holds back a character split across reads or event chunks, so no
  // event ends in half a character.
  private readonly decoders = {
    stdout: new StringDecoder("utf8"),
    stderr: new StringDecoder("utf8"),
  };
  private readonly redact: (text: string) => string;
  private readonly emit: (stream: StepStream, text: string) => void;

  constructor(redact: (text: string) => string, emit: (stream: StepStream, text: string) => void) {
    this.redact = redact;
    this.emit = emit;
  }

  write(stream: StepStream, data: Buffer): void {
    this[stream].write(data);
    for (let start = 0; start < data.length; start += OUTPUT_EVENT_BYTES) {
      const text = this.decoders[stream].write(data.subarray(start, start + OUTPUT_EVENT_BYTES));
      if (text !== "") this.emit(stream, this.redact(text));
    }
  }

  text(stream: StepStream): string {
    const rest = this.decoders[stream].end();
    if (rest !== "") this.emit(stream, this.redact(rest));
    this[stream].close();
    return this.redact(this[stream].snapshot().text);
  }
}
