-- Idempotency keys (issue 19): the answer to a POST sent with an Idempotency-Key, per principal,
-- replayed to a retry with the same key for COORD_IDEMPOTENCY_TTL (default 24 h). `status` null
-- marks a request still running. The key is stored only as a hash, and the answer's headers and
-- body only sealed with AES-256-GCM under a key derived from it (src/idempotency/idempotency.seal.ts),
-- so a dump reveals neither keys nor answers (an answer can hold a session's one-time token).
-- A new table only: the previous release never reads it, and a previous-release replica simply
-- ignores the header during a rolling upgrade.
CREATE TABLE "idempotency_keys" (
	"principal" text NOT NULL,
	"key_hash" text NOT NULL,
	"request" text NOT NULL,
	"fingerprint" text NOT NULL,
	"status" integer,
	"answer" bytea,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	CONSTRAINT "idempotency_keys_principal_key_hash_pk" PRIMARY KEY("principal","key_hash"),
	CONSTRAINT "idempotency_keys_answer_check" CHECK (("idempotency_keys"."status" is null) = ("idempotency_keys"."answer" is null))
);
--> statement-breakpoint
CREATE INDEX "idempotency_keys_expires_at_idx" ON "idempotency_keys" USING btree ("expires_at");
