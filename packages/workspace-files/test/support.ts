import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

/**
 * A temporary directory holding a workspace root `ws`, an `outside` directory, root-sibling
 * prefixes (`ws-evil`, `wsevil`) and `alias`, a symlink to `ws`. Shared by the tests.
 */
export interface TemporaryTree {
  base: string;
  root: string;
  outside: string;
  alias: string;
  file(relativePath: string, content?: string): string;
  link(relativePath: string, target: string): string;
  remove(): void;
}

export function temporaryTree(): TemporaryTree {
  const base = realpathSync(mkdtempSync(join(tmpdir(), "deckhand-files-")));
  const root = join(base, "ws");
  const outside = join(base, "outside");
  const alias = join(base, "alias");
  mkdirSync(root);
  mkdirSync(outside);
  writeFileSync(join(outside, "secret.txt"), "outside secret\n");
  mkdirSync(join(base, "ws-evil"));
  writeFileSync(join(base, "ws-evil", "x"), "evil\n");
  mkdirSync(join(base, "wsevil"));
  symlinkSync(root, alias);
  return {
    base,
    root,
    outside,
    alias,
    file(relativePath, content = "") {
      const path = join(root, relativePath);
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, content);
      return path;
    },
    link(relativePath, target) {
      const path = join(root, relativePath);
      mkdirSync(dirname(path), { recursive: true });
      symlinkSync(target, path);
      return path;
    },
    remove() {
      rmSync(base, { recursive: true, force: true });
    },
  };
}

/** Expects `promise` to reject with a WorkspaceFilesError of `code`; returns its message. */
export async function rejectionOf(
  promise: Promise<unknown>,
): Promise<{ code: string; message: string }> {
  try {
    await promise;
  } catch (error) {
    return { code: (error as { code: string }).code, message: (error as Error).message };
  }
  throw new Error("expected a rejection");
}
