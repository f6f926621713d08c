export {
  type ErrorHandlingOptions,
  errorResponse,
  installErrorHandling,
} from "./error-handling.ts";
export { HttpError } from "./http-error.ts";
export { describeZodError, parseJsonBody, parseQuery } from "./validation.ts";
