CREATE TABLE "permission_rules" (
	"session_id" uuid NOT NULL,
	"agent_type" text NOT NULL,
	"tool_kind" text NOT NULL,
	"answer" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "permission_rules_session_id_agent_type_tool_kind_pk" PRIMARY KEY("session_id","agent_type","tool_kind"),
	CONSTRAINT "permission_rules_answer_check" CHECK ("permission_rules"."answer" in ('allow_always', 'reject_always'))
);
--> statement-breakpoint
ALTER TABLE "sessions" ADD COLUMN "approval_policy" text DEFAULT 'on-request' NOT NULL;--> statement-breakpoint
ALTER TABLE "permission_rules" ADD CONSTRAINT "permission_rules_session_id_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sessions" ADD CONSTRAINT "sessions_approval_policy_check" CHECK ("sessions"."approval_policy" in ('untrusted', 'on-request', 'on-failure', 'never'));