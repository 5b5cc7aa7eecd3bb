import { describe, expect, it } from 'vitest';
import { createLogger, levelFrom, prettyLine, rootLogger } from '../../src/lib/server/log.js';
import { ConfigError, parseEnv } from '../../src/lib/server/env';

function capture(opts: { level?: 'info' | 'warn' | 'debug' | 'silent'; pretty?: boolean } = {}) {
	const lines: string[] = [];
	const log = createLogger({ level: opts.level ?? 'info', pretty: opts.pretty ?? false, dest: { write: (s: string) => lines.push(s) } });
	return { log, lines, json: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe('logs', () => {
	it('writes JSON lines with level, time, area and message', () => {
		const { log, lines, json } = capture();
		log.child({ area: 'worker' }).info({ jobs: 2 }, 'worker ready');
		expect(lines).toHaveLength(1);
		expect(lines[0].endsWith('\n')).toBe(true);
		expect(json()[0]).toMatchObject({ level: 30, area: 'worker', msg: 'worker ready', jobs: 2 });
		expect(json()[0].time).toMatch(/^\d{4}-\d\d-\d\dT/);
	});

	it('filters by level', () => {
		const { log, json } = capture({ level: 'warn' });
		log.debug('d');
		log.info('i');
		log.warn('w');
		log.error('e');
		expect(json().map((l) => l.msg)).toEqual(['w', 'e']);
		const quiet = capture({ level: 'silent' });
		quiet.log.fatal('f');
		expect(quiet.lines).toEqual([]);
	});

	it('never writes passwords, tokens, cookies or keys', () => {
		const { log, lines } = capture();
		log.info(
			{
				password: 'hunter2-secret',
				token: 'tok-secret',
				op: { password: 'nested-secret', apiKey: 'sk-secret', username: 'alice' },
				headers: { cookie: 'nomos_session=cookie-secret', authorization: 'Bearer hdr-secret', accept: 'text/html' },
				privateKey: '-----BEGIN OPENSSH PRIVATE KEY-----key-secret',
				OPENAI_API_KEY: 'sk-env-secret'
			},
			'connecting to postgres://nomos:url-secret@db.lan:5432/nomos with Bearer bearer-secret'
		);
		const out = lines.join('');
		expect(out).not.toMatch(/secret/);
		expect(out).toContain('alice');
		expect(out).toContain('text/html');
		expect(out).toContain('postgres://nomos:[redacted]@db.lan:5432/nomos');
		expect(out).toContain('Bearer [redacted]');
	});

	it('writes readable lines on a terminal', () => {
		const { log, lines } = capture({ pretty: true });
		log.child({ area: 'boot' }).warn({ port: 3000 }, 'listening on http://127.0.0.1:3000');
		expect(lines[0]).toMatch(/^\d\d:\d\d:\d\d WARN {2}\[boot\] listening on http:\/\/127\.0\.0\.1:3000 port=3000\n$/);
		const err = prettyLine(
			JSON.stringify({ level: 50, time: '2026-12-01T06:00:00.000Z', msg: 'boom', err: { message: 'boom', stack: 'Error: boom\n    at x' } })
		);
		expect(err).toBe('06:00:00 ERROR boom\n    Error: boom\n        at x\n');
	});

	it('takes NOMOS_LOG_LEVEL (validated), info by default; the test process itself is quiet', () => {
		expect(parseEnv({}).NOMOS_LOG_LEVEL).toBe('info');
		expect(parseEnv({ NOMOS_LOG_LEVEL: 'debug' }).NOMOS_LOG_LEVEL).toBe('debug');
		expect(() => parseEnv({ NOMOS_LOG_LEVEL: 'loud' })).toThrow(ConfigError);
		expect(() => parseEnv({ NOMOS_LOG_LEVEL: 'loud' })).toThrow(/NOMOS_LOG_LEVEL/);
		expect(levelFrom({})).toBe('info');
		expect(levelFrom({ NOMOS_LOG_LEVEL: 'warn' })).toBe('warn');
		expect(levelFrom({ NOMOS_LOG_LEVEL: 'loud' })).toBe('info');
		if (!process.env.NOMOS_LOG_LEVEL) expect(rootLogger().level).toBe('silent');
	});
});
