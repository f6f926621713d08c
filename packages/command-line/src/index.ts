export {
  type Flag,
  type FlagTable,
  type ParsedFlags,
  type ParseFlagsOptions,
  parseFlags,
  type SwitchFlag,
  type ValueFlag,
} from "./parse-flags.ts";
