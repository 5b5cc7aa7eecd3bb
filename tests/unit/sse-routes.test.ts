import { describe, expect, it } from 'vitest';
import { sessionTokenFrom } from '../../src/lib/server/auth/cookies';
import { matchSseRoute, sessionStreamId } from '../../src/lib/server/realtime/sse-routes';

const ID = '0f8fad5b-d9cb-469f-a165-70867728950e';

describe('the SSE route table (what node server.js serves below SvelteKit)', () => {
	it('matches the fleet stream and a session stream, with their query', () => {
		expect(matchSseRoute('GET', '/api/events')).toEqual({ search: '' });
		expect(matchSseRoute('GET', '/api/events?after=42')).toEqual({ search: 'after=42' });
		expect(matchSseRoute('GET', `/api/sessions/${ID}/events`)).toEqual({ sessionId: ID, search: '' });
		expect(matchSseRoute('GET', `/api/sessions/${ID.toUpperCase()}/events?after=7`)).toEqual({ sessionId: ID, search: 'after=7' });
	});

	it.each([
		'/api/eventsx',
		'/api/events/',
		'/api/events/extra',
		'/api/event',
		'/foo/events',
		'/events',
		'/api/x/events',
		'/api/sessions/x/events',
		`/api/sessions/${ID}/events/extra`,
		`/api/sessions/${ID}/eventsx`,
		`/api/sessions/${ID}x/events`,
		`/api/sessions/${ID}`,
		`/api/sessions/${ID}/events/`,
		'/api/sessions//events',
		'/api/%65vents',
		`/API/SESSIONS/${ID}/EVENTS`,
		'/API/EVENTS',
		'/api/../api/events',
		'//api/events',
		'http://evil.example/api/events',
		'*',
		'',
		'/trpc/chat.sessions?input=events',
		'/api/chat?x=/api/events',
		'/login?next=/api/events',
		'/ops?events'
	])('%j is not an SSE route', (url) => {
		expect(matchSseRoute('GET', url)).toBeNull();
	});

	it.each(['POST', 'HEAD', 'PUT', 'DELETE', 'OPTIONS', 'get', undefined])('method %j is not served', (method) => {
		expect(matchSseRoute(method, '/api/events')).toBeNull();
		expect(matchSseRoute(method, `/api/sessions/${ID}/events`)).toBeNull();
	});

	it('the SvelteKit session route reads ids by the same rule', () => {
		expect(sessionStreamId(ID)).toBe(ID);
		expect(sessionStreamId(ID.toUpperCase())).toBe(ID);
		for (const bad of ['x', '', `${ID}x`, ID.slice(1), ID.replace(/-/g, '')]) expect(sessionStreamId(bad)).toBeNull();
	});
});

describe('the session cookie as `authenticate()` reads it', () => {
	it('is null without a header, without the cookie, or with it empty', () => {
		expect(sessionTokenFrom(undefined)).toBeNull();
		expect(sessionTokenFrom(null)).toBeNull();
		expect(sessionTokenFrom('')).toBeNull();
		expect(sessionTokenFrom('theme=dark; other=1')).toBeNull();
		expect(sessionTokenFrom('nomos_session=')).toBeNull();
		expect(sessionTokenFrom('xnomos_session=abc; nomos_sessionx=def')).toBeNull();
	});

	it('finds it among others, with or without spaces', () => {
		expect(sessionTokenFrom('nomos_session=abc')).toBe('abc');
		expect(sessionTokenFrom('theme=dark;nomos_session=abc;x=1')).toBe('abc');
		expect(sessionTokenFrom('theme=dark;   nomos_session = abc ; x=1')).toBe('abc');
	});

	it('takes the first of duplicate names (as SvelteKit does)', () => {
		expect(sessionTokenFrom('nomos_session=first; nomos_session=second')).toBe('first');
		expect(sessionTokenFrom('nomos_session=; nomos_session=second')).toBeNull();
	});

	it('decodes a URL-encoded value; a malformed one stays as sent instead of throwing', () => {
		expect(sessionTokenFrom('nomos_session=a%2Bb%3D%3D')).toBe('a+b==');
		expect(sessionTokenFrom('nomos_session=%E0%A4%A')).toBe('%E0%A4%A');
		expect(sessionTokenFrom('nomos_session=%')).toBe('%');
	});

	it('survives malformed headers', () => {
		for (const header of [';', ';;;', '=', '==', 'nomos_session', 'nomos_session;', '=abc', '; ; nomos_session=abc=def', 'a=b=c; =; nomos_session=ok'])
			expect(() => sessionTokenFrom(header)).not.toThrow();
		expect(sessionTokenFrom('nomos_session; nomos_session=ok')).toBe('ok');
		expect(sessionTokenFrom('nomos_session=abc=def')).toBe('abc=def');
	});
});
