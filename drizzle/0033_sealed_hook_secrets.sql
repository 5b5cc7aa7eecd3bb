-- Signed hooks' secrets sealed with the key kept outside the database (issue #43 item 6), and the
-- credential that decided an approval recorded and sealed with it (item 4). SQL cannot encrypt
-- (the key is not in the database): boot seals any secret still in `secret` into `secret_sealed`
-- and empties `secret` (watches/sealed-secret.ts sealPlainHookSecrets). Approvals from before keep
-- `credential` null and their v1 seal, which still verifies.
ALTER TABLE "alert_hooks" ADD COLUMN "secret_sealed" text;--> statement-breakpoint
ALTER TABLE "approvals" ADD COLUMN "credential" text;--> statement-breakpoint
ALTER TABLE "alert_hooks" DROP CONSTRAINT "alert_hooks_plain_secret_only_signed";--> statement-breakpoint
ALTER TABLE "alert_hooks" ADD CONSTRAINT "alert_hooks_secret_only_signed" CHECK ("alert_hooks"."signed" or ("alert_hooks"."secret" is null and "alert_hooks"."secret_sealed" is null));