import { useState, useSyncExternalStore } from "react";
import { playChime } from "./notify.ts";
import {
  notifyPreferences,
  setNotifyPreferences,
  subscribePreferences,
} from "./session-preferences.ts";

/**
 * Settings for being told when an agent finishes or asks for input in a session that is not on
 * screen. The browser's notification permission is asked for here, when the box is ticked, and
 * never on load.
 */
export function NotificationSettings() {
  const preferences = useSyncExternalStore(subscribePreferences, notifyPreferences);
  const [problem, setProblem] = useState<string | null>(null);
  const supported = typeof Notification !== "undefined";

  const setDesktop = async (enabled: boolean) => {
    setProblem(null);
    if (!enabled) {
      setNotifyPreferences({ desktop: false });
      return;
    }
    const permission =
      Notification.permission === "granted" ? "granted" : await Notification.requestPermission();
    if (permission === "granted") setNotifyPreferences({ desktop: true });
    else
      setProblem(
        "The browser did not allow notifications; allow them for this site in its settings.",
      );
  };

  return (
    <section className="card" aria-labelledby="notifications-heading">
      <h2 id="notifications-heading">Notifications</h2>
      <p className="muted">
        When an agent finishes or asks for input in a session that is not on screen.
      </p>
      <div className="stacked-options">
        <label className="checkbox">
          <input
            type="checkbox"
            checked={preferences.desktop && supported}
            disabled={!supported}
            onChange={(event) => void setDesktop(event.target.checked)}
          />
          Desktop notification{supported ? "" : " (this browser has none)"}
        </label>
        <label className="checkbox">
          <input
            type="checkbox"
            checked={preferences.sound}
            onChange={(event) => {
              setNotifyPreferences({ sound: event.target.checked });
              // Played now: the click lets the page make sound, and the user hears what it is.
              if (event.target.checked) playChime();
            }}
          />
          Sound
        </label>
      </div>
      {problem && (
        <p className="error" role="alert">
          {problem}
        </p>
      )}
    </section>
  );
}
