// The processes under a pid and what memory each holds, read from /proc (Linux): the resident
// set (RSS, what the figures sum) and the proportional set (PSS, shared pages split
// between the processes sharing them, so a sum of PSS does not count a library twice).
import { readdirSync, readFileSync } from "node:fs";

export interface TreeProcess {
  pid: number;
  parent: number;
  /** The command line, shortened. */
  command: string;
  rssKib: number;
  /** Proportional set size; 0 when /proc/<pid>/smaps_rollup cannot be read. */
  pssKib: number;
}

function readProcess(pid: number): TreeProcess | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const parent = Number(/^PPid:\s+(\d+)/m.exec(status)?.[1] ?? 0);
    const rssKib = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0);
    let pssKib = 0;
    try {
      pssKib = Number(
        /^Pss:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"))?.[1],
      );
    } catch {
      // Not ours to read, or gone.
    }
    const command = readFileSync(`/proc/${pid}/cmdline`, "utf8")
      .split("\0")
      .filter(Boolean)
      .map((part) => (part.length > 80 ? `${part.slice(0, 77)}...` : part))
      .join(" ")
      .slice(0, 200);
    return { pid, parent, command, rssKib, pssKib };
  } catch {
    // The process ended while being read.
    return null;
  }
}

/** `root` and every descendant of it that is alive now. */
export function processTree(root: number, withPss = false): TreeProcess[] {
  const children = new Map<number, number[]>();
  const byPid = new Map<number, TreeProcess>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    let parent: number;
    try {
      parent = Number(/^PPid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]);
    } catch {
      continue;
    }
    children.set(parent, [...(children.get(parent) ?? []), pid]);
  }
  const stack = [root];
  while (stack.length > 0) {
    const pid = stack.pop()!;
    const found = withPss
      ? readProcess(pid)
      : (() => {
          try {
            const status = readFileSync(`/proc/${pid}/status`, "utf8");
            return {
              pid,
              parent: Number(/^PPid:\s+(\d+)/m.exec(status)?.[1] ?? 0),
              command: "",
              rssKib: Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0),
              pssKib: 0,
            };
          } catch {
            return null;
          }
        })();
    if (found !== null) byPid.set(pid, found);
    stack.push(...(children.get(pid) ?? []));
  }
  return [...byPid.values()];
}

/** Resident memory of `root` and its descendants, in KiB. */
export function treeRssKib(root: number = process.pid): number {
  return processTree(root).reduce((total, entry) => total + entry.rssKib, 0);
}
