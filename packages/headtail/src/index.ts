export {
  HeadTailBuffer,
  type HeadTailIncrementalRead,
  type HeadTailOptions,
  type HeadTailSnapshot,
  type HeadTailWaitResult,
} from "./head-tail-buffer.ts";
export { HeadTailError, type HeadTailErrorCode } from "./head-tail-error.ts";
