import { describe, expect, it } from "vitest";
import { ABORTED, SessionLock } from "./session-lock.ts";
import { SessionsError } from "./sessions-error.ts";

function deferred() {
  let resolve: () => void = () => {};
  const promise = new Promise<void>((resolveIt) => {
    resolve = resolveIt;
  });
  return { promise, resolve };
}

const never = new AbortController().signal;

describe("SessionLock", () => {
  it("runs a session's turns one after another, in order, and other sessions' alongside", async () => {
    const lock = new SessionLock();
    const order: string[] = [];
    const first = deferred();
    const one = lock.turn("a", never, async () => {
      order.push("a1 start");
      await first.promise;
      order.push("a1 end");
    });
    const two = lock.turn("a", never, async () => {
      order.push("a2");
    });
    await lock.turn("b", never, async () => {
      order.push("b1");
    });
    first.resolve();
    await Promise.all([one, two]);
    expect(order).toEqual(["a1 start", "b1", "a1 end", "a2"]);
  });

  it("gives up a turn's wait when its signal aborts, without running it", async () => {
    const lock = new SessionLock();
    const first = deferred();
    const running = lock.turn("a", never, () => first.promise);
    const controller = new AbortController();
    let ran = false;
    const waiting = lock.turn("a", controller.signal, async () => {
      ran = true;
    });
    controller.abort();
    expect(await waiting).toBe(ABORTED);
    first.resolve();
    await running;
    expect(ran).toBe(false);
  });

  it("refuses git work outside turns with busy while a turn runs or waits, and runs it after", async () => {
    const lock = new SessionLock();
    const first = deferred();
    const running = lock.turn("a", never, () => first.promise);
    const queued = lock.turn("a", never, async () => {});
    const refused = lock.gitOutsideTurns("a", "apply pending change x", async () => "applied");
    await expect(refused).rejects.toSatisfy(
      (error) =>
        SessionsError.isInstance(error) &&
        error.code === "busy" &&
        error.message.includes("apply pending change x once it has finished"),
    );
    first.resolve();
    await Promise.all([running, queued]);
    expect(lock.turnActive("a")).toBe(false);
    expect(await lock.gitOutsideTurns("a", "apply", async () => "applied")).toBe("applied");
  });

  it("refuses git work whose place comes after a turn began while it waited", async () => {
    const lock = new SessionLock();
    const gitHeld = deferred();
    const earlierGit = lock.git("a", () => gitHeld.promise);
    const refused = lock.gitOutsideTurns("a", "reject", async () => "rejected");
    const turnHeld = deferred();
    const turn = lock.turn("a", never, () => turnHeld.promise);
    gitHeld.resolve();
    await expect(refused).rejects.toMatchObject({ code: "busy" });
    turnHeld.resolve();
    await Promise.all([earlierGit, turn]);
  });

  it("runs git work during a turn (a turn's own, or closing the session) one at a time", async () => {
    const lock = new SessionLock();
    const turnHeld = deferred();
    const turn = lock.turn("a", never, () => turnHeld.promise);
    const order: string[] = [];
    const gitHeld = deferred();
    const first = lock.git("a", async () => {
      order.push("first start");
      await gitHeld.promise;
      order.push("first end");
    });
    const second = lock.git("a", async () => {
      order.push("second");
    });
    gitHeld.resolve();
    await Promise.all([first, second]);
    expect(order).toEqual(["first start", "first end", "second"]);
    turnHeld.resolve();
    await turn;
  });

  it("keeps its place for later holders when git work fails", async () => {
    const lock = new SessionLock();
    await expect(lock.git("a", async () => Promise.reject(new Error("git broke")))).rejects.toThrow(
      "git broke",
    );
    expect(await lock.git("a", async () => "next")).toBe("next");
  });
});
