import { readFileSync } from 'node:fs';
import path from 'node:path';

let cached: string | undefined;

/**
 * The system prompt, read from soul.md in the source tree (relative to the working directory:
 * both `npm start` and `npm run worker` run from the project root).
 */
export function systemPrompt(): string {
	cached ??= readFileSync(path.resolve(process.env.NOMOS_SOUL_PATH ?? 'src/lib/server/agent/soul.md'), 'utf8');
	return cached;
}
