import { describe, expect, it } from "vitest";
import { MALLOC_ARENA_MAX_ENV, wantsBoundedMallocArenas } from "./bounded-malloc-arenas.ts";

describe("wantsBoundedMallocArenas", () => {
  it("bounds the arenas of `deckhand up` on Linux", () => {
    expect(wantsBoundedMallocArenas("up", {}, "linux")).toBe(true);
  });

  it("keeps a setting the person running it chose", () => {
    expect(wantsBoundedMallocArenas("up", { [MALLOC_ARENA_MAX_ENV]: "8" }, "linux")).toBe(false);
    expect(wantsBoundedMallocArenas("up", { [MALLOC_ARENA_MAX_ENV]: "" }, "linux")).toBe(false);
  });

  it("leaves short commands and other systems alone", () => {
    for (const command of ["batch", "version", "executor", undefined]) {
      expect(wantsBoundedMallocArenas(command, {}, "linux")).toBe(false);
    }
    expect(wantsBoundedMallocArenas("up", {}, "darwin")).toBe(false);
  });
});
