CREATE TABLE "executor_tokens" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"name" text NOT NULL,
	"token_hash" text NOT NULL,
	"last_used_at" timestamp with time zone,
	"revoked_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "executor_tokens_token_hash_unique" UNIQUE("token_hash"),
	CONSTRAINT "executor_tokens_token_hash_check" CHECK ("executor_tokens"."token_hash" ~ '^[0-9a-f]{64}$')
);
--> statement-breakpoint
CREATE INDEX "executor_tokens_created_idx" ON "executor_tokens" USING btree ("created_at");