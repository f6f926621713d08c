CREATE TABLE "batch_run_events" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"batch_run_id" uuid NOT NULL,
	"type" text NOT NULL,
	"payload" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "workspace_steps" (
	"workspace_id" uuid NOT NULL,
	"step_index" integer NOT NULL,
	"outcome" text NOT NULL,
	"runtime" text,
	"image" text,
	"exit_code" integer,
	"duration_ms" integer DEFAULT 0 NOT NULL,
	"cache_key" text,
	"stdout" text DEFAULT '' NOT NULL,
	"stderr" text DEFAULT '' NOT NULL,
	"started_at" timestamp with time zone,
	"finished_at" timestamp with time zone,
	CONSTRAINT "workspace_steps_workspace_id_step_index_pk" PRIMARY KEY("workspace_id","step_index"),
	CONSTRAINT "workspace_steps_outcome_check" CHECK ("workspace_steps"."outcome" in ('running', 'run', 'cached', 'skipped', 'failed')),
	CONSTRAINT "workspace_steps_step_index_check" CHECK ("workspace_steps"."step_index" >= 0)
);
--> statement-breakpoint
ALTER TABLE "changesets" DROP CONSTRAINT "changesets_workspace_unique";--> statement-breakpoint
ALTER TABLE "workspaces" DROP CONSTRAINT "workspaces_run_repository_path_unique";--> statement-breakpoint
ALTER TABLE "changesets" DROP CONSTRAINT "changesets_status_check";--> statement-breakpoint
ALTER TABLE "workspaces" DROP CONSTRAINT "workspaces_status_check";--> statement-breakpoint
ALTER TABLE "changesets" ALTER COLUMN "status" SET DEFAULT 'unpublished';--> statement-breakpoint
ALTER TABLE "workspaces" ALTER COLUMN "branch" SET DEFAULT '';--> statement-breakpoint
UPDATE "workspaces" SET "branch" = '' WHERE "branch" IS NULL;--> statement-breakpoint
ALTER TABLE "workspaces" ALTER COLUMN "branch" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "batch_runs" ADD COLUMN "action" text DEFAULT 'preview' NOT NULL;--> statement-breakpoint
ALTER TABLE "batch_runs" ADD COLUMN "options" jsonb DEFAULT '{}'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "batch_runs" ADD COLUMN "warnings" jsonb DEFAULT '[]'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "batch_specs" ADD COLUMN "spec_directory" text;--> statement-breakpoint
ALTER TABLE "batch_specs" ADD COLUMN "file" text;--> statement-breakpoint
ALTER TABLE "changesets" ADD COLUMN "base_branch" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "changesets" ADD COLUMN "base_revision" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "changesets" ADD COLUMN "path" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "changesets" ADD COLUMN "commit_message" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "changesets" ADD COLUMN "commit_author" jsonb;--> statement-breakpoint
ALTER TABLE "changesets" ADD COLUMN "published" jsonb;--> statement-breakpoint
ALTER TABLE "changesets" ADD COLUMN "diff" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "changesets" ADD COLUMN "stats" jsonb DEFAULT '{"files":0,"insertions":0,"deletions":0}'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "changesets" ADD COLUMN "applied_commit" text;--> statement-breakpoint
ALTER TABLE "changesets" ADD COLUMN "created_commit" text;--> statement-breakpoint
ALTER TABLE "changesets" ADD COLUMN "apply_operation" text;--> statement-breakpoint
ALTER TABLE "changesets" ADD COLUMN "applied_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "changesets" ADD COLUMN "pushed" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "workspaces" ADD COLUMN "position" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "workspaces" ADD COLUMN "revision" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "workspaces" ADD COLUMN "definition" jsonb DEFAULT '{}'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "workspaces" ADD COLUMN "attempts" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "workspaces" ADD COLUMN "executor" text;--> statement-breakpoint
ALTER TABLE "workspaces" ADD COLUMN "takeover_session_id" uuid;--> statement-breakpoint
ALTER TABLE "batch_run_events" ADD CONSTRAINT "batch_run_events_batch_run_id_batch_runs_id_fk" FOREIGN KEY ("batch_run_id") REFERENCES "public"."batch_runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "workspace_steps" ADD CONSTRAINT "workspace_steps_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "batch_run_events_run_idx" ON "batch_run_events" USING btree ("batch_run_id","id");--> statement-breakpoint
ALTER TABLE "workspaces" ADD CONSTRAINT "workspaces_takeover_session_id_sessions_id_fk" FOREIGN KEY ("takeover_session_id") REFERENCES "public"."sessions"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "batch_runs_created_idx" ON "batch_runs" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "changesets_workspace_idx" ON "changesets" USING btree ("workspace_id");--> statement-breakpoint
CREATE INDEX "changesets_repository_branch_idx" ON "changesets" USING btree ("repository","branch","applied_at");--> statement-breakpoint
CREATE INDEX "workspaces_batch_run_position_idx" ON "workspaces" USING btree ("batch_run_id","position");--> statement-breakpoint
CREATE INDEX "workspaces_takeover_session_idx" ON "workspaces" USING btree ("takeover_session_id");--> statement-breakpoint
ALTER TABLE "changesets" ADD CONSTRAINT "changesets_run_repository_branch_unique" UNIQUE("batch_run_id","repository","branch");--> statement-breakpoint
ALTER TABLE "workspaces" ADD CONSTRAINT "workspaces_run_repository_branch_path_unique" UNIQUE("batch_run_id","repository","branch","path");--> statement-breakpoint
ALTER TABLE "batch_runs" ADD CONSTRAINT "batch_runs_action_check" CHECK ("batch_runs"."action" in ('preview', 'apply'));--> statement-breakpoint
ALTER TABLE "changesets" ADD CONSTRAINT "changesets_apply_operation_check" CHECK ("changesets"."apply_operation" in ('created', 'updated', 'unchanged'));--> statement-breakpoint
ALTER TABLE "changesets" ADD CONSTRAINT "changesets_status_check" CHECK ("changesets"."status" in ('unpublished', 'draft', 'open', 'merged', 'closed', 'failed'));--> statement-breakpoint
ALTER TABLE "workspaces" ADD CONSTRAINT "workspaces_status_check" CHECK ("workspaces"."status" in ('pending', 'running', 'completed', 'failed', 'timed_out', 'skipped', 'cancelled'));