-- Idempotency keys (issue 19): the answer to a POST sent with an Idempotency-Key, per principal,
-- replayed to a retry with the same key for COORD_IDEMPOTENCY_TTL (default 24 h). `status` null
-- marks a request still running. A new table only: the previous release never reads it, and a
-- previous-release replica simply ignores the header during a rolling upgrade.
CREATE TABLE "idempotency_keys" (
	"principal" text NOT NULL,
	"key" text NOT NULL,
	"request" text NOT NULL,
	"fingerprint" text NOT NULL,
	"status" integer,
	"headers" jsonb,
	"body" bytea,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	CONSTRAINT "idempotency_keys_principal_key_pk" PRIMARY KEY("principal","key")
);
--> statement-breakpoint
CREATE INDEX "idempotency_keys_expires_at_idx" ON "idempotency_keys" USING btree ("expires_at");
