CREATE INDEX "agent_sessions_chat_idx" ON "agent_sessions" USING btree ("chat_id");--> statement-breakpoint
CREATE INDEX "api_tokens_created_idx" ON "api_tokens" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "model_usage_token_idx" ON "model_usage" USING btree ("token_id");--> statement-breakpoint
CREATE INDEX "pending_changes_chat_idx" ON "pending_changes" USING btree ("chat_id");--> statement-breakpoint
CREATE INDEX "projects_created_idx" ON "projects" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "session_events_chat_idx" ON "session_events" USING btree ("chat_id");--> statement-breakpoint
CREATE INDEX "tasks_succeeded_completed_idx" ON "tasks" USING btree ("completed_at") WHERE "tasks"."status" = 'succeeded';