CREATE TABLE "changeset_publications" (
	"changeset_id" uuid PRIMARY KEY NOT NULL,
	"batch_change" text NOT NULL,
	"batch_run_id" uuid NOT NULL,
	"position" integer DEFAULT 0 NOT NULL,
	"canary" boolean DEFAULT false NOT NULL,
	"draft" boolean DEFAULT false NOT NULL,
	"state" text DEFAULT 'scheduled' NOT NULL,
	"published_at" timestamp with time zone,
	"error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "changeset_publications_state_check" CHECK ("changeset_publications"."state" in ('scheduled', 'publishing', 'published', 'failed', 'cancelled'))
);
--> statement-breakpoint
ALTER TABLE "changeset_publications" ADD CONSTRAINT "changeset_publications_changeset_id_changesets_id_fk" FOREIGN KEY ("changeset_id") REFERENCES "public"."changesets"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "changeset_publications" ADD CONSTRAINT "changeset_publications_batch_run_id_batch_runs_id_fk" FOREIGN KEY ("batch_run_id") REFERENCES "public"."batch_runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "changeset_publications_batch_change_idx" ON "changeset_publications" USING btree ("batch_change","state","position");--> statement-breakpoint
CREATE INDEX "changeset_publications_published_idx" ON "changeset_publications" USING btree ("published_at");--> statement-breakpoint
CREATE INDEX "changeset_publications_run_idx" ON "changeset_publications" USING btree ("batch_run_id");--> statement-breakpoint
CREATE INDEX "model_usage_created_idx" ON "model_usage" USING btree ("created_at");