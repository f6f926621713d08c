export { type SseEvent, SseEventFilter, SseParser } from "./sse-parser.ts";
