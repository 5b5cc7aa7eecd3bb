-- Alert hook secrets stored hashed where a compare suffices (issue #43 item 6). `Authorization:
-- Bearer` only needs SHA-256 of the secret (32 random bytes: no salt or slow hash needed), compared
-- in constant time. `X-Nomos-Signature` (an HMAC of the body) needs the secret itself, so it is kept
-- only for hooks that accept signatures (`signed`); a later change seals it with the key kept
-- outside the database. Hooks made before this accepted both ways and their senders may sign, so
-- they keep their secret and are marked signed; Settings → "Bearer only" drops it.
ALTER TABLE "alert_hooks" ADD COLUMN "secret_hash" text;--> statement-breakpoint
ALTER TABLE "alert_hooks" ADD COLUMN "signed" boolean DEFAULT false NOT NULL;--> statement-breakpoint
UPDATE "alert_hooks" SET "secret_hash" = encode(sha256(convert_to("secret", 'UTF8')), 'hex'), "signed" = true;--> statement-breakpoint
ALTER TABLE "alert_hooks" ALTER COLUMN "secret_hash" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "alert_hooks" ALTER COLUMN "secret" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "alert_hooks" ADD CONSTRAINT "alert_hooks_plain_secret_only_signed" CHECK ("signed" OR "secret" IS NULL);
