ALTER TABLE "sessions" ADD COLUMN "agent" text;--> statement-breakpoint
ALTER TABLE "sessions" ADD COLUMN "model" text;--> statement-breakpoint
ALTER TABLE "sessions" ADD COLUMN "mode" text;