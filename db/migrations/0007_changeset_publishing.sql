CREATE TABLE "changeset_events" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"changeset_id" uuid NOT NULL,
	"batch_change" text NOT NULL,
	"repository" text NOT NULL,
	"branch" text NOT NULL,
	"type" text NOT NULL,
	"external_state" text,
	"payload" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "changesets" ADD COLUMN "code_host" text;--> statement-breakpoint
ALTER TABLE "changesets" ADD COLUMN "external_id" text;--> statement-breakpoint
ALTER TABLE "changesets" ADD COLUMN "external_state" text;--> statement-breakpoint
ALTER TABLE "changesets" ADD COLUMN "review_state" text;--> statement-breakpoint
ALTER TABLE "changesets" ADD COLUMN "checks_state" text;--> statement-breakpoint
ALTER TABLE "changesets" ADD COLUMN "mergeable" text;--> statement-breakpoint
ALTER TABLE "changesets" ADD COLUMN "synced_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "changesets" ADD COLUMN "tracked" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "changesets" ADD COLUMN "publish_error" text;--> statement-breakpoint
ALTER TABLE "changesets" ADD COLUMN "hook_attempts" jsonb DEFAULT '{}'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "changeset_events" ADD CONSTRAINT "changeset_events_changeset_id_changesets_id_fk" FOREIGN KEY ("changeset_id") REFERENCES "public"."changesets"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "changeset_events_changeset_idx" ON "changeset_events" USING btree ("changeset_id","id");--> statement-breakpoint
CREATE INDEX "changeset_events_batch_change_idx" ON "changeset_events" USING btree ("batch_change","id");--> statement-breakpoint
CREATE INDEX "changesets_tracked_idx" ON "changesets" USING btree ("tracked","synced_at");--> statement-breakpoint
ALTER TABLE "changesets" ADD CONSTRAINT "changesets_external_state_check" CHECK ("changesets"."external_state" in ('open', 'draft', 'merged', 'closed', 'deleted'));