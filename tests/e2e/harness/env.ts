import { readFileSync } from 'node:fs';
import path from 'node:path';

/** What the global setup started, written to a file because tests run in worker processes. */
export interface E2eEnv {
	baseURL: string;
	llmURL: string;
	databaseUrl: string;
	admin: { username: string; password: string };
	operator: { username: string; password: string };
	proxmox: { port: number; stateDir: string; hostKeyFingerprint: string; clientKeyPath: string; nodeName: string };
	appLog: string;
}

export const E2E_ENV_FILE = path.resolve('tests/.tmp/e2e/env.json');

export function e2eEnv(): E2eEnv {
	return JSON.parse(readFileSync(E2E_ENV_FILE, 'utf8')) as E2eEnv;
}
