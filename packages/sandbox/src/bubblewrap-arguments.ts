import { isPathInsideRoot } from "@deckhand/workspace-files";

/** One bind mount: `outer` on the machine, seen at `inner` inside the sandbox. */
export interface SandboxBind {
  outer: string;
  inner: string;
  writable: boolean;
}

/** Everything a sandbox sees, as bubblewrap options; paths are absolute and exist. */
export interface SandboxView {
  /** Writable places: the worktree or workspace, the agent's state directories. */
  writable: readonly string[];
  /** Shown read-only although a hidden directory holds them (a repository's git directory). */
  readable: readonly string[];
  /** Directories replaced by an empty read-only directory (the data directory, `~/.ssh`). */
  hiddenDirectories: readonly string[];
  /** Files replaced by an empty one (`~/.netrc`). */
  hiddenFiles: readonly string[];
  /** The empty, read-only file bound over each hidden file. */
  emptyFile: string;
  /** Read-only although inside a writable place: a worktree's `.git`, so git's config stays ours. */
  protectedPaths: readonly string[];
  /** Sockets and files bound in at other paths (the model proxy's socket, resolv.conf). */
  binds: readonly SandboxBind[];
  /** `isolated`: a network namespace of its own; `host`: the machine's network. */
  network: "isolated" | "host";
  /** Where the command starts. */
  cwd: string;
  /** With slirp4netns: where bubblewrap reports its child's pid and what it waits on. */
  infoFd?: number;
  blockFd?: number;
}

/**
 * bubblewrap's options for `view`, in the order bubblewrap applies them: the machine read-only,
 * fresh /dev, /proc (of the sandbox's own PID namespace) and /tmp; then what is hidden; then what
 * is shown inside hidden places; then the hidden paths again where a bind would have uncovered
 * them; the writable places; and finally the read-only `.git` inside them.
 */
export function bubblewrapArguments(view: SandboxView): string[] {
  const args = [
    // As root, bubblewrap would keep every capability: a process could unmount what hides the
    // data directory. Without them (and with no_new_privs, which bubblewrap sets) it cannot.
    "--cap-drop",
    "ALL",
    "--die-with-parent",
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
  ];
  if (view.network === "isolated") args.push("--unshare-net");
  args.push("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp");
  const hide = (paths: { directories: readonly string[]; files: readonly string[] }) => {
    for (const directory of paths.directories) args.push("--tmpfs", directory);
    for (const file of paths.files) args.push("--ro-bind", view.emptyFile, file);
  };
  hide({ directories: view.hiddenDirectories, files: view.hiddenFiles });
  const shown = [...view.readable, ...view.writable];
  // A readable path may be missing (a login file of an agent never logged in): then it is absent
  // inside too, instead of bubblewrap refusing to start.
  for (const path of view.readable) args.push("--ro-bind-try", path, path);
  for (const path of view.writable) args.push("--bind", path, path);
  // A bind of a parent would show a hidden path again: hide it once more on top.
  const inside = (path: string) => shown.some((parent) => isPathInsideRoot(parent, path));
  hide({
    directories: view.hiddenDirectories.filter(inside),
    files: view.hiddenFiles.filter(inside),
  });
  for (const path of view.protectedPaths) args.push("--ro-bind", path, path);
  for (const bind of view.binds) {
    args.push(bind.writable ? "--bind" : "--ro-bind", bind.outer, bind.inner);
  }
  // The empty directories standing in for hidden ones are read-only, so nothing is left there.
  for (const directory of view.hiddenDirectories) args.push("--remount-ro", directory);
  if (view.infoFd !== undefined) args.push("--info-fd", String(view.infoFd));
  if (view.blockFd !== undefined) args.push("--block-fd", String(view.blockFd));
  args.push("--chdir", view.cwd);
  return args;
}
