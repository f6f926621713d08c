ALTER TABLE "workspace_steps" ADD COLUMN "command" text;--> statement-breakpoint
ALTER TABLE "workspace_steps" ADD COLUMN "env" jsonb;