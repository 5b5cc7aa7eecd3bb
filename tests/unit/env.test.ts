import { describe, expect, it } from 'vitest';
import { ConfigError, parseEnv } from '../../src/lib/server/env';
import { EMBEDDED_DEFAULTS } from '../../src/lib/server/db/embedded.js';

describe('configuration', () => {
	it('has working defaults', () => {
		const e = parseEnv({});
		expect(e.PORT).toBe(3000);
		expect(e.HOST).toBe('127.0.0.1');
		expect(e.NOMOS_DATA_DIR).toBe('./.nomos');
		expect(e.NOMOS_WORKER).toBe(true);
		expect(e.NOMOS_MAX_STEPS).toBe(40);
		expect(e.DATABASE_URL).toBeUndefined();
	});

	it('starts the embedded Postgres early (server.js) where the settings will look for it', () => {
		// server.js reads the two settings before env.ts is loaded; the defaults must agree.
		const e = parseEnv({ NOMOS_DATA_DIR: '', NOMOS_PG_PORT: '' });
		expect({ dataDir: e.NOMOS_DATA_DIR, port: e.NOMOS_PG_PORT }).toEqual(EMBEDDED_DEFAULTS);
	});

	it.each([
		[{ PORT: 'abc' }, 'PORT'],
		[{ PORT: '70000' }, 'PORT'],
		[{ DATABASE_URL: 'mysql://x/y' }, 'DATABASE_URL'],
		[{ NOMOS_WORKER: 'maybe' }, 'NOMOS_WORKER'],
		[{ NOMOS_OPERATOR_PASSWORD: 'short' }, 'NOMOS_OPERATOR_PASSWORD'],
		[{ NOMOS_HOSTS: 'not json' }, 'NOMOS_HOSTS'],
		[{ NOMOS_HOSTS: '[{"name":"a"}]' }, 'NOMOS_HOSTS'],
		[{ NOMOS_HOSTS: '[{"name":"a","address":"h","keyPath":"/k","hostKeyFingerprint":"md5:xx"}]' }, 'NOMOS_HOSTS'],
		[{ OPENAI_BASE_URL: 'not a url' }, 'OPENAI_BASE_URL']
	])('rejects %o with one line naming the variable', (source, name) => {
		let caught: unknown;
		try {
			parseEnv(source);
		} catch (e) {
			caught = e;
		}
		expect(caught).toBeInstanceOf(ConfigError);
		const msg = (caught as Error).message;
		expect(msg).toContain(name);
		expect(msg.split('\n')).toHaveLength(1);
	});

	it('parses NOMOS_HOSTS with defaults', () => {
		const e = parseEnv({
			NOMOS_HOSTS: JSON.stringify([{ name: 'strong', address: '10.0.0.2', keyPath: '/k', hostKeyFingerprint: 'SHA256:' + 'a'.repeat(43) }])
		});
		expect(e.NOMOS_HOSTS).toEqual([
			{ name: 'strong', address: '10.0.0.2', port: 22, user: 'root', keyPath: '/k', hostKeyFingerprint: 'SHA256:' + 'a'.repeat(43) }
		]);
	});
});
