CREATE TABLE "agent_sessions" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"session_id" uuid NOT NULL,
	"chat_id" uuid,
	"agent_type" text NOT NULL,
	"status" text DEFAULT 'idle' NOT NULL,
	"resume_session_id" text,
	"last_active_at" timestamp with time zone DEFAULT now() NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "agent_sessions_status_check" CHECK ("agent_sessions"."status" in ('idle', 'active', 'crashed', 'closed'))
);
--> statement-breakpoint
CREATE TABLE "pending_changes" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"session_id" uuid NOT NULL,
	"agent_session_id" uuid NOT NULL,
	"chat_id" uuid,
	"path" text NOT NULL,
	"diff" text NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"resolved_at" timestamp with time zone,
	CONSTRAINT "pending_changes_status_check" CHECK ("pending_changes"."status" in ('pending', 'applied', 'rejected'))
);
--> statement-breakpoint
CREATE TABLE "batch_runs" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"batch_spec_id" uuid NOT NULL,
	"status" text DEFAULT 'queued' NOT NULL,
	"error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"started_at" timestamp with time zone,
	"finished_at" timestamp with time zone,
	CONSTRAINT "batch_runs_status_check" CHECK ("batch_runs"."status" in ('queued', 'running', 'completed', 'failed', 'cancelled'))
);
--> statement-breakpoint
CREATE TABLE "batch_specs" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"name" text NOT NULL,
	"source" text NOT NULL,
	"spec" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "changesets" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"batch_run_id" uuid NOT NULL,
	"workspace_id" uuid NOT NULL,
	"repository" text NOT NULL,
	"branch" text NOT NULL,
	"title" text NOT NULL,
	"body" text DEFAULT '' NOT NULL,
	"status" text DEFAULT 'draft' NOT NULL,
	"external_url" text,
	"error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "changesets_workspace_unique" UNIQUE("workspace_id"),
	CONSTRAINT "changesets_status_check" CHECK ("changesets"."status" in ('draft', 'open', 'merged', 'closed', 'failed'))
);
--> statement-breakpoint
CREATE TABLE "step_results" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"cache_key" text NOT NULL,
	"workspace_id" uuid,
	"step_index" integer NOT NULL,
	"exit_code" integer NOT NULL,
	"diff" text DEFAULT '' NOT NULL,
	"outputs" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "step_results_cache_key_unique" UNIQUE("cache_key"),
	CONSTRAINT "step_results_step_index_check" CHECK ("step_results"."step_index" >= 0)
);
--> statement-breakpoint
CREATE TABLE "workspaces" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"batch_run_id" uuid NOT NULL,
	"repository" text NOT NULL,
	"path" text DEFAULT '' NOT NULL,
	"branch" text,
	"status" text DEFAULT 'pending' NOT NULL,
	"error" text,
	"diff" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"started_at" timestamp with time zone,
	"finished_at" timestamp with time zone,
	CONSTRAINT "workspaces_run_repository_path_unique" UNIQUE("batch_run_id","repository","path"),
	CONSTRAINT "workspaces_status_check" CHECK ("workspaces"."status" in ('pending', 'running', 'completed', 'failed', 'skipped', 'cancelled'))
);
--> statement-breakpoint
CREATE TABLE "chats" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"session_id" uuid NOT NULL,
	"parent_chat_id" uuid,
	"title" text DEFAULT '' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "message_parts" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"message_id" uuid NOT NULL,
	"position" integer NOT NULL,
	"kind" text NOT NULL,
	"content" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "message_parts_message_position_unique" UNIQUE("message_id","position"),
	CONSTRAINT "message_parts_kind_check" CHECK ("message_parts"."kind" in ('text', 'reasoning', 'tool_call', 'tool_result', 'plan', 'file', 'error')),
	CONSTRAINT "message_parts_position_check" CHECK ("message_parts"."position" >= 0)
);
--> statement-breakpoint
CREATE TABLE "messages" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"chat_id" uuid NOT NULL,
	"role" text NOT NULL,
	"agent_type" text,
	"status" text DEFAULT 'complete' NOT NULL,
	"error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"completed_at" timestamp with time zone,
	CONSTRAINT "messages_role_check" CHECK ("messages"."role" in ('user', 'assistant', 'system')),
	CONSTRAINT "messages_status_check" CHECK ("messages"."status" in ('pending', 'streaming', 'complete', 'failed', 'cancelled'))
);
--> statement-breakpoint
CREATE TABLE "session_events" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"session_id" uuid NOT NULL,
	"type" text NOT NULL,
	"payload" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "model_tokens" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"token_hash" text NOT NULL,
	"job_id" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"revoked_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "model_tokens_token_hash_unique" UNIQUE("token_hash"),
	CONSTRAINT "model_tokens_token_hash_check" CHECK ("model_tokens"."token_hash" ~ '^[0-9a-f]{64}$')
);
--> statement-breakpoint
CREATE TABLE "model_usage" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"job_id" text NOT NULL,
	"token_id" uuid,
	"agent_type" text NOT NULL,
	"model" text,
	"status" integer NOT NULL,
	"input_tokens" integer,
	"output_tokens" integer,
	"request_bytes" bigint DEFAULT 0 NOT NULL,
	"response_bytes" bigint DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "model_usage_counts_check" CHECK ("model_usage"."request_bytes" >= 0 and "model_usage"."response_bytes" >= 0)
);
--> statement-breakpoint
CREATE TABLE "projects" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"name" text NOT NULL,
	"repository_path" text,
	"repository_url" text,
	"default_branch" text DEFAULT 'main' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "projects_repository_check" CHECK ("projects"."repository_path" is not null or "projects"."repository_url" is not null)
);
--> statement-breakpoint
CREATE TABLE "session_worktrees" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"session_id" uuid NOT NULL,
	"path" text NOT NULL,
	"branch" text NOT NULL,
	"base_commit" text NOT NULL,
	"status" text DEFAULT 'active' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"removed_at" timestamp with time zone,
	CONSTRAINT "session_worktrees_status_check" CHECK ("session_worktrees"."status" in ('active', 'removed'))
);
--> statement-breakpoint
CREATE TABLE "sessions" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"project_id" uuid NOT NULL,
	"title" text DEFAULT '' NOT NULL,
	"branch" text NOT NULL,
	"status" text DEFAULT 'open' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"closed_at" timestamp with time zone,
	CONSTRAINT "sessions_status_check" CHECK ("sessions"."status" in ('open', 'closed'))
);
--> statement-breakpoint
CREATE TABLE "tasks" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"type" text NOT NULL,
	"payload" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"idempotency_key" text,
	"attempts" integer DEFAULT 0 NOT NULL,
	"max_attempts" integer DEFAULT 5 NOT NULL,
	"run_at" timestamp with time zone DEFAULT now() NOT NULL,
	"locked_by" text,
	"locked_until" timestamp with time zone,
	"last_error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"completed_at" timestamp with time zone,
	CONSTRAINT "tasks_idempotency_key_unique" UNIQUE("idempotency_key"),
	CONSTRAINT "tasks_status_check" CHECK ("tasks"."status" in ('pending', 'running', 'succeeded', 'failed')),
	CONSTRAINT "tasks_max_attempts_check" CHECK ("tasks"."max_attempts" >= 1),
	CONSTRAINT "tasks_attempts_check" CHECK ("tasks"."attempts" >= 0),
	CONSTRAINT "tasks_lease_check" CHECK ("tasks"."status" <> 'running' or ("tasks"."locked_by" is not null and "tasks"."locked_until" is not null))
);
--> statement-breakpoint
ALTER TABLE "agent_sessions" ADD CONSTRAINT "agent_sessions_session_id_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "agent_sessions" ADD CONSTRAINT "agent_sessions_chat_id_chats_id_fk" FOREIGN KEY ("chat_id") REFERENCES "public"."chats"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "pending_changes" ADD CONSTRAINT "pending_changes_session_id_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "pending_changes" ADD CONSTRAINT "pending_changes_agent_session_id_agent_sessions_id_fk" FOREIGN KEY ("agent_session_id") REFERENCES "public"."agent_sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "pending_changes" ADD CONSTRAINT "pending_changes_chat_id_chats_id_fk" FOREIGN KEY ("chat_id") REFERENCES "public"."chats"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "batch_runs" ADD CONSTRAINT "batch_runs_batch_spec_id_batch_specs_id_fk" FOREIGN KEY ("batch_spec_id") REFERENCES "public"."batch_specs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "changesets" ADD CONSTRAINT "changesets_batch_run_id_batch_runs_id_fk" FOREIGN KEY ("batch_run_id") REFERENCES "public"."batch_runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "changesets" ADD CONSTRAINT "changesets_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "step_results" ADD CONSTRAINT "step_results_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "workspaces" ADD CONSTRAINT "workspaces_batch_run_id_batch_runs_id_fk" FOREIGN KEY ("batch_run_id") REFERENCES "public"."batch_runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "chats" ADD CONSTRAINT "chats_session_id_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "chats" ADD CONSTRAINT "chats_parent_chat_id_chats_id_fk" FOREIGN KEY ("parent_chat_id") REFERENCES "public"."chats"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "message_parts" ADD CONSTRAINT "message_parts_message_id_messages_id_fk" FOREIGN KEY ("message_id") REFERENCES "public"."messages"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "messages" ADD CONSTRAINT "messages_chat_id_chats_id_fk" FOREIGN KEY ("chat_id") REFERENCES "public"."chats"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "session_events" ADD CONSTRAINT "session_events_session_id_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "model_usage" ADD CONSTRAINT "model_usage_token_id_model_tokens_id_fk" FOREIGN KEY ("token_id") REFERENCES "public"."model_tokens"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "session_worktrees" ADD CONSTRAINT "session_worktrees_session_id_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sessions" ADD CONSTRAINT "sessions_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "agent_sessions_session_idx" ON "agent_sessions" USING btree ("session_id","status");--> statement-breakpoint
CREATE UNIQUE INDEX "agent_sessions_live_idx" ON "agent_sessions" USING btree ("session_id","agent_type","chat_id") WHERE "agent_sessions"."status" <> 'closed';--> statement-breakpoint
CREATE INDEX "pending_changes_session_idx" ON "pending_changes" USING btree ("session_id","status","created_at");--> statement-breakpoint
CREATE INDEX "pending_changes_agent_session_idx" ON "pending_changes" USING btree ("agent_session_id");--> statement-breakpoint
CREATE INDEX "batch_runs_spec_idx" ON "batch_runs" USING btree ("batch_spec_id","created_at");--> statement-breakpoint
CREATE INDEX "batch_runs_status_idx" ON "batch_runs" USING btree ("status");--> statement-breakpoint
CREATE INDEX "batch_specs_name_idx" ON "batch_specs" USING btree ("name","created_at");--> statement-breakpoint
CREATE INDEX "changesets_batch_run_idx" ON "changesets" USING btree ("batch_run_id","status");--> statement-breakpoint
CREATE INDEX "step_results_workspace_idx" ON "step_results" USING btree ("workspace_id");--> statement-breakpoint
CREATE INDEX "workspaces_batch_run_idx" ON "workspaces" USING btree ("batch_run_id","status");--> statement-breakpoint
CREATE INDEX "chats_session_idx" ON "chats" USING btree ("session_id","created_at");--> statement-breakpoint
CREATE INDEX "chats_parent_idx" ON "chats" USING btree ("parent_chat_id");--> statement-breakpoint
CREATE INDEX "messages_chat_idx" ON "messages" USING btree ("chat_id","created_at");--> statement-breakpoint
CREATE INDEX "session_events_session_idx" ON "session_events" USING btree ("session_id","id");--> statement-breakpoint
CREATE INDEX "model_tokens_job_idx" ON "model_tokens" USING btree ("job_id");--> statement-breakpoint
CREATE INDEX "model_usage_job_idx" ON "model_usage" USING btree ("job_id","created_at");--> statement-breakpoint
CREATE INDEX "projects_name_idx" ON "projects" USING btree ("name");--> statement-breakpoint
CREATE INDEX "session_worktrees_session_idx" ON "session_worktrees" USING btree ("session_id");--> statement-breakpoint
CREATE UNIQUE INDEX "session_worktrees_active_idx" ON "session_worktrees" USING btree ("session_id") WHERE "session_worktrees"."status" = 'active';--> statement-breakpoint
CREATE INDEX "sessions_project_idx" ON "sessions" USING btree ("project_id","created_at");--> statement-breakpoint
CREATE INDEX "sessions_status_idx" ON "sessions" USING btree ("status");--> statement-breakpoint
CREATE INDEX "tasks_claim_idx" ON "tasks" USING btree ("run_at") WHERE "tasks"."status" = 'pending';--> statement-breakpoint
CREATE INDEX "tasks_lease_idx" ON "tasks" USING btree ("locked_until") WHERE "tasks"."status" = 'running';--> statement-breakpoint
CREATE INDEX "tasks_status_run_at_idx" ON "tasks" USING btree ("status","run_at");--> statement-breakpoint
CREATE INDEX "tasks_type_status_idx" ON "tasks" USING btree ("type","status");