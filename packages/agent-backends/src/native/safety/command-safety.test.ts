import { describe, expect, it } from "vitest";
import { assessCommand, assessPatch, knownSafeCommand } from "./command-safety.ts";

describe("knownSafeCommand", () => {
  it.each([
    "ls -la",
    "cat README.md",
    "head -n 20 src/index.ts",
    "tail -5 log.txt",
    "wc -l src/*.ts",
    "grep -rn 'TODO' src",
    "rg -n --glob '*.ts' foo",
    "find . -name '*.ts' -type f",
    "git status",
    "git --no-pager log --oneline -5",
    "git diff HEAD~1 -- src",
    "git show HEAD:README.md",
    "git branch",
    "git branch -a -v",
    "git branch --list 'feat/*'",
    "pwd",
    "echo hello",
    "which node",
    "sed -n 1,20p file.txt",
    "sed -n '$p' file.txt",
    "ls && pwd",
    "cat a.txt | grep x | wc -l",
    "git status; git diff",
    "ls x || echo missing",
    "ls 2>/dev/null",
    "grep foo file 2>&1",
    "cat < input.txt",
    "cd src && ls",
  ])("%j is read-only", (command) => {
    expect(knownSafeCommand(command)).toMatchObject({ safe: true });
  });

  it.each([
    ["rm -rf build", /not a known read-only command/],
    ["echo hi > out.txt", /writes to a file/],
    ["echo hi >> out.txt", /writes to a file/],
    ["ls | tee out.txt", /tee is not/],
    ["ls && rm x", /rm is not/],
    ["echo $(rm -rf /)", /substitution/],
    ["echo `id`", /substitution/],
    ["echo $HOME", /expands shell variables/],
    ["(ls)", /subshell/],
    ["find . -delete", /find -delete/],
    ["find . -exec rm {} ;", /find -exec/],
    ["find *", /unquoted pattern/],
    ["rg --pre ./evil foo", /--pre runs/],
    ["rg -z foo", /decompression/],
    ["git push", /git push is not one/],
    ["git -c core.pager=evil log", /git -c is not one/],
    ["git branch new-feature", /creates a branch/],
    ["git branch -D old", /changes branches/],
    ["git diff --output=x", /--output/],
    ["sed -i s/a/b/ file", /print-only/],
    ["sed -n 's/a/b/w out' file", /only `sed -n/],
    ["sort -o out.txt in.txt", /sort -o/],
    ["FOO=1 ls", /environment variables/],
    ["./ls", /not a plain program name/],
    ["sleep 5 &", /background/],
    ["cat <<EOF\nhi\nEOF", /here-documents/],
    ["echo 'unterminated", /unterminated/],
    ["", /empty/],
  ])("%j is not known to be read-only", (command, reason) => {
    const result = knownSafeCommand(command);
    expect(result.safe).toBe(false);
    expect(result.reason).toMatch(reason);
  });
});

describe("assessCommand", () => {
  it("auto-approves known read-only commands under every policy", () => {
    for (const policy of ["untrusted", "on-request", "on-failure", "never"] as const) {
      expect(assessCommand("git status", policy)).toMatchObject({
        decision: "auto_approve",
        askOnFailure: false,
      });
    }
  });

  it("asks under untrusted and on-request for anything else", () => {
    expect(assessCommand("npm test", "untrusted").decision).toBe("ask");
    expect(assessCommand("npm test", "on-request").decision).toBe("ask");
  });

  it("runs everything under on-failure, offering a retry with approval", () => {
    expect(assessCommand("npm test", "on-failure")).toMatchObject({
      decision: "auto_approve",
      askOnFailure: true,
    });
  });

  it("never asks under never", () => {
    expect(assessCommand("rm -rf build", "never")).toMatchObject({
      decision: "auto_approve",
      askOnFailure: false,
    });
  });

  it("forbids an empty command", () => {
    expect(assessCommand("  ", "never").decision).toBe("forbid");
  });

  it("asks when the model asks for approval itself under on-request, even for a read-only command", () => {
    expect(
      assessCommand("ls", "on-request", { withApproval: true, justification: " To see. " }),
    ).toEqual({ decision: "ask", reason: "the agent asks: To see.", askOnFailure: false });
    expect(assessCommand("npm publish", "on-request", { withApproval: true })).toMatchObject({
      decision: "ask",
      reason: "the agent asks for approval",
    });
  });

  it("refuses a model's own request for approval under every policy but on-request", () => {
    for (const policy of ["untrusted", "on-failure", "never"] as const) {
      const assessment = assessCommand("ls", policy, { withApproval: true });
      expect(assessment.decision).toBe("forbid");
      expect(assessment.reason).toContain(`approval policy is ${policy}`);
    }
  });
});

describe("assessPatch", () => {
  const root = "/work/tree";

  it("auto-approves changes inside the worktree except under untrusted", () => {
    expect(assessPatch(["src/a.ts", "/work/tree/b.ts"], root, "on-request").decision).toBe(
      "auto_approve",
    );
    expect(assessPatch(["src/a.ts"], root, "on-failure").decision).toBe("auto_approve");
    expect(assessPatch(["src/a.ts"], root, "never").decision).toBe("auto_approve");
    expect(assessPatch(["src/a.ts"], root, "untrusted").decision).toBe("ask");
  });

  it("forbids paths outside the worktree under every policy, and empty patches", () => {
    for (const policy of ["untrusted", "on-request", "on-failure", "never"] as const) {
      expect(assessPatch(["../elsewhere.txt"], root, policy).decision).toBe("forbid");
      expect(assessPatch(["/etc/passwd"], root, policy).decision).toBe("forbid");
      expect(assessPatch(["/work/tree-evil/x"], root, policy).decision).toBe("forbid");
    }
    expect(assessPatch([], root, "never").decision).toBe("forbid");
  });
});

describe("reads outside the worktree", () => {
  const place = { worktreeRoot: "/data/workspaces/sessions/s1" };

  it.each([
    ["tr '\\0' '\\n' < /proc/4242/environ", "/proc/4242/environ"],
    ["cat /proc/1/environ", "/proc/1/environ"],
    ["cat /proc/*/environ", "/proc/*/environ"],
    ["ls ~/.ssh", "~/.ssh"],
    ["cat ~/.aws/credentials", "~/.aws/credentials"],
    ["cat ../../config.json", "../../config.json"],
    ["grep -r token /data", "/data"],
    ["grep --file=/data/config.json x", "/data/config.json"],
    ["grep -f/etc/shadow x", "/etc/shadow"],
    ["cd .. && cat config.json", ".."],
    [
      "head -c 100 /data/workspaces/sessions/s2/secret.txt",
      "/data/workspaces/sessions/s2/secret.txt",
    ],
  ])("%s is not a known-harmless command", (command, path) => {
    expect(knownSafeCommand(command, place)).toEqual({
      safe: false,
      reason: `it reads ${path}, which is outside the worktree`,
    });
    // Without knowing where it runs, only the command's own shape is judged.
    expect(knownSafeCommand(command).safe).toBe(true);
    expect(assessCommand(command, "untrusted", { place }).decision).toBe("ask");
    expect(assessCommand(command, "on-request", { place }).decision).toBe("ask");
    expect(assessCommand(command, "never", { place }).decision).toBe("auto_approve");
  });

  it.each([
    "cat README.md",
    "cat /data/workspaces/sessions/s1/src/index.ts",
    "cat src/../README.md",
    "grep -rn TODO .",
    "ls",
    "wc -l src/*.ts",
    "cat < notes.txt",
    "echo done 2>/dev/null",
  ])("%s reads only inside the worktree", (command) => {
    expect(knownSafeCommand(command, place).safe).toBe(true);
    expect(assessCommand(command, "untrusted", { place }).decision).toBe("auto_approve");
  });

  it("judges relative paths from the command's working directory", () => {
    expect(knownSafeCommand("cat ../README.md", { ...place, cwd: "src" }).safe).toBe(true);
    expect(knownSafeCommand("cat ../../README.md", { ...place, cwd: "src" })).toMatchObject({
      safe: false,
    });
  });
});
