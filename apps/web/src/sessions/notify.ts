import type { Session } from "@deckhand/wire";
import { notifyPreferences } from "./session-preferences.ts";

let audio: AudioContext | null = null;

/** A short two-note chime made with WebAudio (no audio file to fetch). */
export function playChime(): void {
  try {
    audio ??= new AudioContext();
    const start = audio.currentTime;
    for (const [index, frequency] of [660, 880].entries()) {
      const oscillator = audio.createOscillator();
      const gain = audio.createGain();
      oscillator.frequency.value = frequency;
      const at = start + index * 0.12;
      gain.gain.setValueAtTime(0.0001, at);
      gain.gain.exponentialRampToValueAtTime(0.2, at + 0.02);
      gain.gain.exponentialRampToValueAtTime(0.0001, at + 0.11);
      oscillator.connect(gain).connect(audio.destination);
      oscillator.start(at);
      oscillator.stop(at + 0.12);
    }
  } catch {
    // No audio device, or autoplay refused before any click on the page: stay silent.
  }
}

/** What happened to a session that is worth telling someone who is looking elsewhere. */
export type SessionNews = "finished" | "failed" | "needs_input";

/** What a change of activity means to the user, if anything. */
export function newsOf(
  before: Session["activity"],
  after: Session["activity"],
): SessionNews | null {
  if (after === "needs_input" && before !== "needs_input") return "needs_input";
  if (before === "running" || before === "needs_input") {
    if (after === "idle") return "finished";
    if (after === "failed") return "failed";
  }
  return null;
}

const NEWS_TEXT: Record<SessionNews, string> = {
  finished: "The agent finished its turn.",
  failed: "The agent's turn failed.",
  needs_input: "The agent is waiting for your answer.",
};

/** Tells the user, as their settings say: a desktop notification and/or a chime. */
export function announce(session: Session, news: SessionNews, onOpen: () => void): void {
  const preferences = notifyPreferences();
  if (
    preferences.desktop &&
    typeof Notification !== "undefined" &&
    Notification.permission === "granted"
  ) {
    const notification = new Notification(session.title || session.branch, {
      body: NEWS_TEXT[news],
      tag: `deckhand-session-${session.id}`,
    });
    notification.onclick = () => {
      window.focus();
      onOpen();
    };
  }
  if (preferences.sound) playChime();
}
