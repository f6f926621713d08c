ALTER TABLE "step_results" ADD COLUMN "files" jsonb DEFAULT '[]'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "step_results" ADD COLUMN "stdout" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "step_results" ADD COLUMN "stderr" text DEFAULT '' NOT NULL;