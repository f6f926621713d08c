CREATE TABLE "api_tokens" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"name" text NOT NULL,
	"token_hash" text NOT NULL,
	"last_used_at" timestamp with time zone,
	"revoked_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "api_tokens_token_hash_unique" UNIQUE("token_hash"),
	CONSTRAINT "api_tokens_token_hash_check" CHECK ("api_tokens"."token_hash" ~ '^[0-9a-f]{64}$')
);
--> statement-breakpoint
CREATE TABLE "provider_probes" (
	"provider_id" text PRIMARY KEY NOT NULL,
	"fingerprint" text NOT NULL,
	"status" text NOT NULL,
	"result" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"error" text,
	"probed_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "provider_probes_status_check" CHECK ("provider_probes"."status" in ('ready', 'not_installed', 'error'))
);
--> statement-breakpoint
ALTER TABLE "session_events" ADD COLUMN "chat_id" uuid;--> statement-breakpoint
-- Rows written before this column existed get a placeholder; new rows must name it.
ALTER TABLE "model_usage" ADD COLUMN "upstream" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "model_usage" ALTER COLUMN "upstream" DROP DEFAULT;--> statement-breakpoint
ALTER TABLE "model_usage" ADD COLUMN "upstream_kind" text DEFAULT 'openai' NOT NULL;--> statement-breakpoint
ALTER TABLE "model_usage" ALTER COLUMN "upstream_kind" DROP DEFAULT;--> statement-breakpoint
ALTER TABLE "model_usage" ADD COLUMN "endpoint" text DEFAULT 'responses' NOT NULL;--> statement-breakpoint
ALTER TABLE "model_usage" ALTER COLUMN "endpoint" DROP DEFAULT;--> statement-breakpoint
ALTER TABLE "model_usage" ADD COLUMN "outcome" text DEFAULT 'completed' NOT NULL;--> statement-breakpoint
ALTER TABLE "model_usage" ADD COLUMN "total_tokens" integer;--> statement-breakpoint
CREATE INDEX "api_tokens_name_idx" ON "api_tokens" USING btree ("name");--> statement-breakpoint
ALTER TABLE "session_events" ADD CONSTRAINT "session_events_chat_id_chats_id_fk" FOREIGN KEY ("chat_id") REFERENCES "public"."chats"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "model_usage" ADD CONSTRAINT "model_usage_outcome_check" CHECK ("model_usage"."outcome" in ('completed', 'client_aborted', 'upstream_aborted', 'upstream_unavailable'));--> statement-breakpoint
ALTER TABLE "model_usage" ADD CONSTRAINT "model_usage_endpoint_check" CHECK ("model_usage"."endpoint" in ('responses', 'chat_completions', 'messages', 'count_tokens', 'models'));--> statement-breakpoint
ALTER TABLE "model_usage" ADD CONSTRAINT "model_usage_upstream_kind_check" CHECK ("model_usage"."upstream_kind" in ('openai', 'anthropic'));