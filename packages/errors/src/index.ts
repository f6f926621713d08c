export { errnoCode, errorMessage } from "./error-values.ts";
