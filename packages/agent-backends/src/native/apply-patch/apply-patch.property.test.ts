import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { AgentBackendError } from "../../errors.ts";
import { planPatch } from "./apply-patch.ts";
import { PatchMarker, parsePatch } from "./parse-patch.ts";

const ROOT = "/worktree";

/** Line text with the characters the format and the loose matching care about. */
const lineText = fc.string({
  unit: fc.constantFrom(..."ab  \t-+@*:é中—“"),
  maxLength: 8,
});

type DiffItem =
  | { kind: "keep"; index: number }
  | { kind: "delete"; index: number }
  | { kind: "add"; text: string };

/** An original file (unique lines, so a hunk has one place to match) and edits to it. */
const editedFile = fc
  .array(lineText, { maxLength: 14 })
  .map((texts) => texts.map((text, index) => `${index}:${text}`))
  .chain((lines) =>
    fc.record({
      lines: fc.constant(lines),
      deleted: fc.array(fc.boolean(), { minLength: lines.length, maxLength: lines.length }),
      inserted: fc.array(fc.array(lineText, { maxLength: 2 }), {
        minLength: lines.length + 1,
        maxLength: lines.length + 1,
      }),
      context: fc.integer({ min: 1, max: 3 }),
      useHeaders: fc.boolean(),
      markEnd: fc.boolean(),
    }),
  );

type EditedFile = typeof editedFile extends fc.Arbitrary<infer T> ? T : never;

function diffItems(file: EditedFile): DiffItem[] {
  const items: DiffItem[] = [];
  for (let index = 0; index <= file.lines.length; index += 1) {
    for (const text of file.inserted[index]!) items.push({ kind: "add", text });
    if (index < file.lines.length) {
      items.push({ kind: file.deleted[index] ? "delete" : "keep", index });
    }
  }
  return items;
}

function expectedContent(file: EditedFile): string {
  const lines = diffItems(file).flatMap((item) =>
    item.kind === "add" ? [item.text] : item.kind === "keep" ? [file.lines[item.index]!] : [],
  );
  return lines.length === 0 ? "" : `${lines.join("\n")}\n`;
}

/** The edits as `@@` hunks with `context` lines around each change, merged where they touch. */
function renderHunks(file: EditedFile): string[] {
  const items = diffItems(file);
  const changes = items.flatMap((item, position) => (item.kind === "keep" ? [] : [position]));
  if (changes.length === 0) return [];
  const groups: [number, number][] = [];
  for (const position of changes) {
    const last = groups[groups.length - 1];
    if (last !== undefined && position - last[1] - 1 <= 2 * file.context) last[1] = position;
    else groups.push([position, position]);
  }
  const hunks: string[] = [];
  let previousEnd = -1;
  let previousHunkLastLine = -1;
  for (const [first, last] of groups) {
    const start = Math.max(previousEnd + 1, first - file.context);
    const end = Math.min(items.length - 1, last + file.context);
    const window = items.slice(start, end + 1);
    const body = window.map((item) => {
      if (item.kind === "add") return `+${item.text}`;
      return `${item.kind === "keep" ? " " : "-"}${file.lines[item.index]}`;
    });
    const originals = window.filter(isOriginal);
    // A header names the line just before the hunk, when the previous hunk did not use it.
    const lineBefore = (originals[0]?.index ?? 0) - 1;
    const header =
      file.useHeaders && lineBefore > previousHunkLastLine ? `@@ ${file.lines[lineBefore]}` : "@@";
    const lastLine = originals[originals.length - 1]?.index ?? -1;
    const atEnd = lastLine === file.lines.length - 1 && lastLine >= 0;
    hunks.push(
      [header, ...body, ...(file.markEnd && atEnd ? [PatchMarker.endOfFile] : [])].join("\n"),
    );
    previousEnd = end;
    if (lastLine >= 0) previousHunkLastLine = lastLine;
  }
  return hunks;
}

function isOriginal(item: DiffItem): item is Exclude<DiffItem, { kind: "add" }> {
  return item.kind !== "add";
}

function reader(files: Record<string, string>) {
  return async (path: string) => files[path] ?? null;
}

describe("apply_patch (properties)", () => {
  it("a patch rendered from random edits turns the file into the edited content", async () => {
    await fc.assert(
      fc.asyncProperty(editedFile, async (file) => {
        const hunks = renderHunks(file);
        fc.pre(hunks.length > 0);
        const original = file.lines.length === 0 ? "" : `${file.lines.join("\n")}\n`;
        const patch = [
          PatchMarker.begin,
          `${PatchMarker.updateFile}src/file.txt`,
          ...hunks,
          PatchMarker.end,
        ].join("\n");
        const plan = await planPatch(
          parsePatch(patch),
          ROOT,
          reader({ [`${ROOT}/src/file.txt`]: original }),
        );
        expect(plan.files).toEqual([
          { path: `${ROOT}/src/file.txt`, original, final: expectedContent(file) },
        ]);
      }),
      { numRuns: 400 },
    );
  });

  it("adds, deletes, updates and moves several files in one patch", async () => {
    await fc.assert(
      fc.asyncProperty(
        editedFile,
        editedFile,
        fc.array(lineText, { maxLength: 5 }),
        async (first, second, added) => {
          const firstHunks = renderHunks(first);
          const secondHunks = renderHunks(second);
          fc.pre(firstHunks.length > 0 && secondHunks.length > 0);
          const content = (file: EditedFile) =>
            file.lines.length === 0 ? "" : `${file.lines.join("\n")}\n`;
          const files = {
            [`${ROOT}/a.txt`]: content(first),
            [`${ROOT}/b.txt`]: content(second),
            [`${ROOT}/gone.txt`]: "bye\n",
          };
          const patch = [
            PatchMarker.begin,
            `${PatchMarker.addFile}new/added.txt`,
            ...added.map((line) => `+${line}`),
            `${PatchMarker.updateFile}a.txt`,
            ...firstHunks,
            `${PatchMarker.deleteFile}gone.txt`,
            `${PatchMarker.updateFile}b.txt`,
            `${PatchMarker.moveTo}moved/b.txt`,
            ...secondHunks,
            PatchMarker.end,
          ].join("\n");
          const plan = await planPatch(parsePatch(patch), ROOT, reader(files));
          const finals = Object.fromEntries(plan.files.map((state) => [state.path, state.final]));
          expect(finals).toEqual({
            [`${ROOT}/new/added.txt`]: added.map((line) => `${line}\n`).join(""),
            [`${ROOT}/a.txt`]: expectedContent(first),
            [`${ROOT}/gone.txt`]: null,
            [`${ROOT}/b.txt`]: null,
            [`${ROOT}/moved/b.txt`]: expectedContent(second),
          });
          expect(plan.changes.map((change) => change.kind)).toEqual([
            "add",
            "update",
            "delete",
            "update",
          ]);
        },
      ),
      { numRuns: 150 },
    );
  });

  it("the parser throws nothing but AgentBackendError, whatever the input", () => {
    const markers = fc.constantFrom(
      PatchMarker.begin,
      PatchMarker.end,
      `${PatchMarker.addFile}a`,
      `${PatchMarker.updateFile}a`,
      `${PatchMarker.deleteFile}a`,
      `${PatchMarker.moveTo}b`,
      PatchMarker.endOfFile,
      "@@",
      "@@ x",
      "+x",
      "-x",
      " x",
      "",
      "<<'EOF'",
      "EOF",
      "\r",
    );
    const patchLike = fc
      .array(fc.oneof(markers, fc.string()), { maxLength: 12 })
      .map((lines) => lines.join("\n"));
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.string({ unit: "binary" }), patchLike), (text) => {
        try {
          const operations = parsePatch(text);
          expect(Array.isArray(operations)).toBe(true);
        } catch (error) {
          expect(error).toBeInstanceOf(AgentBackendError);
          expect((error as AgentBackendError).code).toBe("patch_parse_failed");
        }
      }),
      { numRuns: 1000 },
    );
    // A thousand inputs: a few seconds alone, far longer on a loaded 2-core machine.
  });
});
