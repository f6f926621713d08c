// Paced rollouts of a batch change's pull requests: rollout windows (the server's
// `batchChanges.rolloutWindows` in config.json, as Sourcegraph's site configuration has them, and
// a spec's `rollout.windows`), the spec's pace (`rollout:`), and the API's view of what is
// waiting to be published and when each goes out.
import { z } from "zod";

const Id = z.uuid();
const Timestamp = z.iso.datetime({ offset: true });

const DAY_NAMES = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"];

/** A time of day, `HH:MM` on a 24-hour clock; `24:00` is the end of the day (for `end`). */
const TimeOfDaySchema = z
  .string()
  .regex(/^(?:[01]\d|2[0-3]):[0-5]\d$|^24:00$/, "must be HH:MM on a 24-hour clock, e.g. 09:30")
  .meta({ description: "A time of day, HH:MM (24-hour clock); 24:00 ends the day." });

/** Whether the runtime knows an IANA time zone name. */
function knownTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

const RATE_PATTERN = /^(?:unlimited|\d+\/(?:second|minute|hour))$/;

/**
 * The pace inside a window: `unlimited`, `N/second`, `N/minute` or `N/hour` (spread evenly:
 * `10/hour` publishes one every six minutes), or `0` (nothing goes out while it is active).
 */
export const RolloutRateSchema = z
  .union([z.string(), z.number()])
  .refine(
    (rate) => rate === 0 || (typeof rate === "string" && RATE_PATTERN.test(rate)),
    'must be "unlimited", "N/second", "N/minute", "N/hour" or 0',
  )
  .meta({
    description:
      'How fast changesets are published while the window is active: "unlimited", "N/second", "N/minute", "N/hour" (spread evenly), or 0 for none.',
  });

/**
 * One rollout window, as Sourcegraph's `batchChanges.rolloutWindows` entries are, with a time zone
 * (Sourcegraph's are always UTC). The last window that covers an instant is the one in force.
 */
export const RolloutWindowSchema = z
  .strictObject({
    rate: RolloutRateSchema,
    days: z
      .array(
        z
          .string()
          .refine(
            (day) => DAY_NAMES.includes(day.toLowerCase()),
            "must be an English day name, e.g. monday",
          ),
      )
      .optional()
      .meta({ description: "Days of the week the window applies to; every day when absent." }),
    start: TimeOfDaySchema.optional(),
    end: TimeOfDaySchema.optional(),
    timezone: z
      .string()
      .refine(knownTimeZone, "must be an IANA time zone name, e.g. Europe/Berlin or UTC")
      .optional()
      .meta({ description: "The IANA time zone days and times are read in; UTC when absent." }),
  })
  .superRefine((window, context) => {
    if ((window.start === undefined) !== (window.end === undefined)) {
      context.addIssue({
        code: "custom",
        message: "give both start and end, or neither (the whole day)",
        path: [window.start === undefined ? "start" : "end"],
      });
    } else if (window.start !== undefined && window.end !== undefined) {
      if (window.start >= window.end) {
        context.addIssue({
          code: "custom",
          message: `end (${window.end}) must be after start (${window.start}); split a window across midnight in two`,
          path: ["end"],
        });
      }
    }
  })
  .meta({
    description:
      "A rollout window: the rate in force on some days, between start and end (HH:MM) in a time zone (UTC by default).",
  });
export type RolloutWindow = z.infer<typeof RolloutWindowSchema>;

/** `batchChanges.rolloutWindows` of config.json, and a spec's `rollout.windows`. */
export const RolloutWindowsSchema = z.array(RolloutWindowSchema).max(100);

/**
 * A batch change's publishing pace (the spec's `rollout:`, a Deckhand extension): how many pull
 * requests open per hour and at once, its own windows, and a canary.
 */
export const RolloutSettingsSchema = z
  .strictObject({
    hourlyLimit: z.int().min(1).max(100_000).optional().meta({
      description:
        "The most pull requests opened in any hour (as Renovate's prHourlyLimit, over a sliding hour).",
    }),
    concurrentLimit: z.int().min(1).max(100_000).optional().meta({
      description:
        "The most of the batch change's pull requests open at once (as Renovate's prConcurrentLimit); more are published as others merge or close.",
    }),
    windows: RolloutWindowsSchema.optional().meta({
      description:
        "Rollout windows for this batch change; they apply on top of the server's (both must allow a publication).",
    }),
    canary: z
      .strictObject({
        count: z.int().min(1).max(1_000).meta({
          description: "How many pull requests to publish first.",
        }),
      })
      .optional()
      .meta({
        description:
          "Publish this many first and wait until every one's checks pass (or it merges) before publishing the rest; a failing canary halts the rollout.",
      }),
  })
  .meta({
    description:
      "How fast the batch change's pull requests are opened: per hour, at once, in windows, after a canary. A Deckhand extension.",
  });
export type RolloutSettings = z.infer<typeof RolloutSettingsSchema>;

/** What a pending publication is waiting for. */
export const RolloutWaitSchema = z.enum([
  /** It goes out at `at`: the pace (a window's rate) or the next run of the rollout. */
  "pace",
  /** The hourly limit is used up until `at`. */
  "hourly_limit",
  /** No window allows publishing until `at`. */
  "window",
  /** As many pull requests are open as the concurrent limit allows: one must merge or close. */
  "concurrent_limit",
  /** The canary pull requests' checks have not all passed yet. */
  "canary",
  /** A canary's checks failed: the rollout is halted until someone publishes or re-applies. */
  "canary_failed",
  /** No rollout window opens within the next week. */
  "no_window",
]);
export type RolloutWait = z.infer<typeof RolloutWaitSchema>;

/** One changeset waiting to be published. */
export const PendingPublicationSchema = z.object({
  changeset_id: Id,
  repository: z.string(),
  branch: z.string(),
  /** Published as a draft (its spec said `published: draft`). */
  draft: z.boolean(),
  /** One of the rollout's canary pull requests. */
  canary: z.boolean(),
  /** When it is expected to go out; null when that waits on something without a known time. */
  at: Timestamp.nullable(),
  waiting_for: RolloutWaitSchema,
  /** The wait in words, e.g. "the window Mon–Fri 09:00–17:00 Europe/Berlin opens". */
  detail: z.string(),
});
export type PendingPublication = z.infer<typeof PendingPublicationSchema>;

/** `GET /api/batch-changes/:name/rollout`: the batch change's rollout as it stands. */
export const BatchChangeRolloutSchema = z.object({
  name: z.string(),
  /** Whether publishing is paced at all (the spec's rollout, or the server's windows). */
  paced: z.boolean(),
  settings: z.object({
    /** The spec's `rollout:` of the newest apply; null when it has none. */
    spec: RolloutSettingsSchema.nullable(),
    /** The server's `batchChanges.rolloutWindows`; null when none are configured. */
    server_windows: RolloutWindowsSchema.nullable(),
  }),
  /**
   * `idle` (nothing waits), `publishing` (something goes out now), `waiting` (the next goes out
   * at `next_at` or when something changes) or `halted` (a canary failed; `reason` says which).
   */
  state: z.enum(["idle", "publishing", "waiting", "halted"]),
  reason: z.string().nullable(),
  /** When the rollout next publishes; null when nothing waits or the wait has no known end. */
  next_at: Timestamp.nullable(),
  /** The batch change's pull requests open (or draft) now, as tracking last read them. */
  open: z.int().min(0),
  /** Pull requests the batch change opened in the last hour. */
  published_last_hour: z.int().min(0),
  canary: z
    .object({
      count: z.int().min(1),
      published: z.int().min(0),
      passed: z.int().min(0),
      /** Canary changesets whose checks failed, as `repository@branch`. */
      failing: z.array(z.string()),
    })
    .nullable(),
  /** Changesets waiting to be published, in the order they go out. */
  pending: z.array(PendingPublicationSchema),
});
export type BatchChangeRollout = z.infer<typeof BatchChangeRolloutSchema>;
