ALTER TABLE "model_usage" DROP CONSTRAINT "model_usage_endpoint_check";--> statement-breakpoint
ALTER TABLE "model_usage" DROP CONSTRAINT "model_usage_upstream_kind_check";--> statement-breakpoint
ALTER TABLE "model_usage" ADD CONSTRAINT "model_usage_endpoint_check" CHECK ("model_usage"."endpoint" in ('responses', 'chat_completions', 'messages', 'count_tokens', 'models', 'generate_content', 'stream_generate_content'));--> statement-breakpoint
ALTER TABLE "model_usage" ADD CONSTRAINT "model_usage_upstream_kind_check" CHECK ("model_usage"."upstream_kind" in ('openai', 'anthropic', 'gemini'));