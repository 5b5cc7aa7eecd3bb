import { readFileSync } from 'node:fs';
import path from 'node:path';
import { sql } from '../db/index';
import { rulesForAgent } from '../executions/allow-rules';

let cached: string | undefined;

/**
 * The system prompt, read from soul.md in the source tree (relative to the working directory:
 * both `npm start` and `npm run worker` run from the project root).
 */
export function systemPrompt(): string {
	cached ??= readFileSync(path.resolve(process.env.NOMOS_SOUL_PATH ?? 'src/lib/server/agent/soul.md'), 'utf8');
	return cached;
}

/** What one turn is told: the system prompt, then the always-allow rules in force now, in plain words. */
export async function turnInstructions(): Promise<string> {
	return systemPrompt() + (await rulesForAgent(sql()));
}
