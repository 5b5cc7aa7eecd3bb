import { spawn } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import postgres from 'postgres';
import type { FullConfig } from '@playwright/test';
import { startScriptedLlm } from '../../doubles/llm/server';
import { startProxmoxDouble } from '../../doubles/proxmox/server';
import { hashPassword } from '../../../src/lib/server/auth/password';
import { freePort } from '../../helpers/ports';
import { scaled } from '../../helpers/time';
import { E2E_ENV_FILE, type E2eEnv } from './env';

/**
 * Starts the scripted LLM, the Proxmox SSH double and the built app (`node server.js`, embedded
 * Postgres in a fresh data dir) once for the whole Playwright run.
 */
export default async function globalSetup(config: FullConfig) {
	const baseURL = config.projects[0].use.baseURL!;
	const root = path.dirname(E2E_ENV_FILE);
	await fs.rm(root, { recursive: true, force: true });
	await fs.mkdir(root, { recursive: true });

	const llm = await startScriptedLlm();
	const pve = await startProxmoxDouble({
		stateDir: path.join(root, 'pve'),
		seed: [
			{ vmid: 100, hostname: 'caddy', status: 'running', cores: 2, memory: 1024 },
			{ vmid: 101, hostname: 'media', status: 'running', cores: 4, memory: 4096 },
			{ vmid: 102, hostname: 'backup', status: 'stopped', cores: 1, memory: 512 }
		]
	});

	const admin = { username: 'admin', password: 'e2e-admin-password' };
	const operator = { username: 'ops', password: 'e2e-operator-password' };
	const dataDir = path.join(root, 'data');
	const pgPort = await freePort();
	const appLog = path.join(root, 'app.log');
	const log = createWriteStream(appLog);
	const app = spawn(process.execPath, ['server.js'], {
		env: {
			...process.env,
			NODE_ENV: 'production',
			PORT: new URL(baseURL).port,
			HOST: '127.0.0.1',
			NOMOS_DATA_DIR: dataDir,
			NOMOS_PG_PORT: String(pgPort),
			DATABASE_URL: '',
			NOMOS_OPERATOR_USERNAME: admin.username,
			NOMOS_OPERATOR_PASSWORD: admin.password,
			OPENAI_BASE_URL: llm.baseURL,
			OPENAI_API_KEY: 'e2e',
			NOMOS_MODEL: 'scripted',
			// USD per million tokens, so the chat shows a cost beside the tokens.
			NOMOS_PRICES: JSON.stringify({ scripted: { input: 2, output: 8, cached: 0.5 } }),
			// A per-turn budget no other spec comes near (their scripted turns use under 100k tokens).
			NOMOS_TURN_TOKEN_BUDGET: '1000000',
			// "The model is loading" after 2 s of silence (15 s in production), so model-loading.spec waits little.
			NOMOS_MODEL_LOADING_SECONDS: '2',
			// Short sign-in backoff so the brute-force test can wait it out; the injected page is served on loopback.
			NOMOS_LOGIN_BACKOFF_MAX_S: '2',
			NOMOS_HTTP_ALLOW: '127.0.0.1',
			NOMOS_HOSTS: JSON.stringify([
				{
					name: pve.nodeName,
					address: '127.0.0.1',
					port: pve.port,
					user: 'root',
					keyPath: pve.clientKeyPath,
					hostKeyFingerprint: pve.hostKeyFingerprint
				}
			])
		},
		stdio: ['ignore', 'pipe', 'pipe']
	});
	app.stdout.pipe(log);
	app.stderr.pipe(log);
	let output = '';
	app.stdout.on('data', (d) => (output += d));
	app.stderr.on('data', (d) => (output += d));
	await new Promise<void>((resolve, reject) => {
		const timer = setTimeout(() => reject(new Error(`app did not start in ${scaled(60_000) / 1000} s:\n${output}`)), scaled(60_000));
		app.once('exit', (code) => reject(new Error(`app exited (${code}) while starting:\n${output}`)));
		const check = () => {
			if (output.includes('listening on')) {
				clearTimeout(timer);
				resolve();
			}
		};
		app.stdout.on('data', check);
	});

	const password = readFileSync(path.join(dataDir, 'pg-password'), 'utf8').trim();
	const databaseUrl = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${pgPort}/postgres`;
	const sql = postgres(databaseUrl, { max: 1, onnotice: () => undefined });
	await sql`insert into operators (username, password_hash, role)
		values (${operator.username}, ${await hashPassword(operator.password)}, 'operator')`;
	await sql.end();

	const env: E2eEnv = {
		baseURL,
		llmURL: llm.baseURL,
		databaseUrl,
		admin,
		operator,
		proxmox: {
			port: pve.port,
			stateDir: pve.stateDir,
			hostKeyFingerprint: pve.hostKeyFingerprint,
			clientKeyPath: pve.clientKeyPath,
			nodeName: pve.nodeName
		},
		appLog
	};
	await fs.writeFile(E2E_ENV_FILE, JSON.stringify(env, null, 2));

	return async () => {
		const exited = new Promise((r) => app.once('exit', r));
		app.kill('SIGTERM');
		await Promise.race([exited, new Promise((r) => setTimeout(r, 15_000))]);
		if (app.exitCode === null) app.kill('SIGKILL');
		await llm.close();
		await pve.close();
	};
}
