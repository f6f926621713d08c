export {
  HEAD_TAIL_DEFAULTS,
  HeadTailBuffer,
  type HeadTailIncrementalRead,
  type HeadTailOptions,
  type HeadTailSnapshot,
  type HeadTailWaitResult,
  LINE_TRUNCATION_SUFFIX,
} from "./head-tail-buffer.ts";
export { HeadTailError, type HeadTailErrorCode } from "./head-tail-error.ts";
