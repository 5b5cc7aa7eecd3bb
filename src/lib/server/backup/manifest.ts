import { z } from 'zod';

/**
 * What a backup archive holds; `manifest.json`, the archive's last entry (written once every row
 * is in). Version 2 archives split a big table over several entries (`parts`); a reader of
 * version 1 would load only the first, so those say 2, the others still 1.
 */
export const manifestSchema = z.object({
	format: z.literal('nomos-backup'),
	version: z.union([z.literal(1), z.literal(2)]),
	createdAt: z.string(),
	/** Where the rows came from: the embedded server or DATABASE_URL. */
	source: z.enum(['embedded', 'external']),
	/** drizzle's applied migrations at backup time (journal time as text, hash). */
	migrations: z.array(z.object({ hash: z.string(), createdAt: z.string() })),
	tables: z.array(
		z.object({
			name: z.string(),
			columns: z.array(z.string()),
			rows: z.number().int().min(0),
			entry: z.string(),
			/** Entries after `entry` that continue its COPY text, in order (a row may span two). */
			parts: z.array(z.string()).optional()
		})
	),
	sequences: z.array(z.object({ name: z.string(), value: z.string() })),
	/** SSH private keys named by hosts.key_path, restored to the same path. */
	keys: z.array(z.object({ path: z.string(), entry: z.string().nullable(), missing: z.string().optional() })),
	/** Other files under NOMOS_DATA_DIR (not the Postgres cluster), restored under the new one. */
	dataFiles: z.array(z.object({ path: z.string(), entry: z.string() }))
});
export type Manifest = z.infer<typeof manifestSchema>;

export const MANIFEST_ENTRY = 'manifest.json';
