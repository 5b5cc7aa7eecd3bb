import { createHash, randomBytes } from 'node:crypto';
import { login, test, expect } from './harness/fixtures';

test('every page sends a stranger to the login page', async ({ page }) => {
	await page.goto('/settings');
	await expect(page).toHaveURL(/\/login\?next=%2Fsettings/);
	await expect(page.getByRole('heading', { name: 'Sign in to Nomos' })).toBeVisible();
});

test('a wrong password is refused with a readable message', async ({ page, env }) => {
	await page.goto('/login');
	await page.getByLabel('Username').fill(env.admin.username);
	await page.getByLabel('Password').fill('not-the-password');
	await page.getByRole('button', { name: 'Sign in' }).click();
	await expect(page.getByTestId('login-error')).toHaveText('Wrong username or password.');
	await expect(page).toHaveURL(/\/login/);
});

test('a script signing in is refused with 401 and, throttled, 429 with Retry-After (never 200)', async ({ playwright, env, sql }) => {
	// Issue #43: SvelteKit answers a form action's fail() to a non-browser client as HTTP 200.
	const request = await playwright.request.newContext({ baseURL: env.baseURL });
	const post = (form: Record<string, string>, headers: Record<string, string> = {}) =>
		request.post('/login', { form, headers: { origin: env.baseURL, ...headers }, maxRedirects: 0 });
	// Other specs' guesses from this address must not decide the answer.
	await sql`delete from login_throttle where key like 'addr:%'`;

	// curl's and fetch's Accept (any type), and JSON asked for (a form body: SvelteKit answers 415 to others).
	const plain = await post({ username: env.operator.username, password: 'not-the-password' });
	expect(plain.status()).toBe(401);
	expect(await plain.json()).toMatchObject({ type: 'error', error: { message: 'Wrong username or password.' } });
	expect((await post({ username: env.operator.username, password: 'nope' }, { accept: 'application/json' })).status()).toBe(401);
	expect((await post({ username: '', password: 'x' })).status()).toBe(400);

	// A browser's form keeps its page (400) and an enhanced form its action JSON.
	const page = await post({ username: env.operator.username, password: 'nope' }, { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' });
	expect(page.status()).toBe(400);
	expect(await page.text()).toContain('Wrong username or password.');

	// Throttled: the (username, address) pair is blocked after 5 failures.
	const guesser = `api-guesser-${randomBytes(4).toString('hex')}`;
	const statuses: number[] = [];
	let last = plain;
	for (let i = 0; i < 5; i++) {
		last = await post({ username: guesser, password: `guess-${i}` });
		statuses.push(last.status());
	}
	expect(statuses).toEqual([401, 401, 401, 401, 429]);
	expect(Number(last.headers()['retry-after'])).toBeGreaterThanOrEqual(1);
	expect(await last.json()).toMatchObject({ error: { message: expect.stringContaining('Too many failed sign-ins') } });
	const blocked = await post({ username: guesser, password: 'whatever' }, { accept: 'application/json' });
	expect(blocked.status()).toBe(429);
	expect(Number(blocked.headers()['retry-after'])).toBeGreaterThanOrEqual(1);

	// The right password still signs a script in (SvelteKit's redirect answer and the cookie).
	const ok = await post(env.operator);
	expect(ok.status()).toBe(200);
	expect(await ok.json()).toMatchObject({ type: 'redirect', status: 303 });
	expect(ok.headers()['set-cookie']).toContain('nomos_session=');
	await sql`delete from login_throttle where key like 'addr:%'`;
	await request.dispose();
});

test('login, the cookie is HttpOnly and Lax, logout ends the session', async ({ page, context, env }) => {
	await login(page, env.admin);
	const cookie = (await context.cookies()).find((c) => c.name === 'nomos_session')!;
	expect(cookie.httpOnly).toBe(true);
	expect(cookie.sameSite).toBe('Lax');
	expect(cookie.secure).toBe(false); // plain http on localhost
	await expect(page.getByTestId('current-user')).toHaveText('admin · admin');

	await page.getByTestId('logout').click();
	await expect(page).toHaveURL(/\/login/);
	// The old cookie value no longer works either.
	await context.addCookies([{ ...cookie }]);
	await page.goto('/ops');
	await expect(page).toHaveURL(/\/login/);
});

test('an expired session sends the operator back to login', async ({ page, env, sql }) => {
	await login(page, env.operator);
	await page.goto('/ops');
	await expect(page.getByTestId('ops-page')).toBeVisible();
	await sql`update auth_sessions set expires_at = now() - interval '1 minute'
		where operator_id = (select id from operators where username = ${env.operator.username})`;
	await page.goto('/ops');
	await expect(page).toHaveURL(/\/login\?next=%2Fops/);
});

test('/admin needs role admin', async ({ page, env }) => {
	await login(page, env.operator);
	await expect(page.getByRole('link', { name: 'Review', exact: true })).toHaveCount(0);
	const res = await page.goto('/admin/review');
	expect(res?.status()).toBe(403);
	await login(page, env.admin);
	const ok = await page.goto('/admin/review');
	expect(ok?.status()).toBe(200);
	await expect(page.getByTestId('review-page')).toBeVisible();
});

test('live event streams serve only a signed-in operator', async ({ playwright, env }) => {
	const anon = await playwright.request.newContext({ baseURL: env.baseURL });
	expect((await anon.get('/api/events')).status()).toBe(401);
	expect((await anon.get('/api/sessions/00000000-0000-4000-8000-000000000001/events')).status()).toBe(401);
	expect((await anon.get('/trpc/chat.sessions')).status()).toBe(401);
	await anon.dispose();
});

test('the node SSE fast path and the SvelteKit routes authenticate the same way', async ({ env, sql }) => {
	const session = '00000000-0000-4000-8000-0000000000e5';
	// `/api/events` is served below SvelteKit (server.js → realtime/node-sse.ts); `%65` is an
	// encoded `e` that the exact route table leaves alone, so SvelteKit routes it to the same
	// endpoint through hooks.server.ts.
	const pairs = [
		{ fast: '/api/events', kit: '/api/%65vents' },
		{ fast: `/api/sessions/${session}/events`, kit: `/api/sessions/${session}/%65vents` }
	];
	const token = () => randomBytes(32).toString('base64url');
	const hash = (t: string) => createHash('sha256').update(t).digest('hex');
	const suffix = randomBytes(4).toString('hex');
	const [admin] = await sql`select id from operators where username = ${env.admin.username}`;
	const [off] = await sql`insert into operators (username, password_hash, role) values (${`sse-off-${suffix}`}, 'x', 'operator') returning id`;
	const [revokee] = await sql`insert into operators (username, password_hash, role) values (${`sse-revoked-${suffix}`}, 'x', 'operator') returning id`;
	const valid = token();
	const expired = token();
	const disabled = token();
	const revoked = token();
	await sql`insert into auth_sessions (token_hash, operator_id, expires_at) values
		(${hash(valid)}, ${admin.id}, now() + interval '1 hour'),
		(${hash(expired)}, ${admin.id}, now() - interval '1 second'),
		(${hash(disabled)}, ${off.id}, now() + interval '1 hour'),
		(${hash(revoked)}, ${revokee.id}, now() + interval '1 hour')`;
	await sql`update operators set disabled_at = now() where id = ${off.id}`;
	// A session stream opens only on a session its viewer may read (access/sessions.ts): the admin's, shared read-only.
	await sql`insert into chat_sessions (id, title, operator_id, shared) values (${session}, 'sse auth', ${admin.id}, 'read') on conflict (id) do nothing`;

	try {
		const encoded = [...valid].map((c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`).join('');
		const cases: Array<[string, string | null, number]> = [
			['no cookie', null, 401],
			['empty', 'nomos_session=', 401],
			['unknown token', 'nomos_session=nope', 401],
			['malformed encoding', 'nomos_session=%E0%A4%A', 401],
			['malformed header', ';;=; nomos_session', 401],
			['expired session', `nomos_session=${expired}`, 401],
			['disabled operator', `nomos_session=${disabled}`, 401],
			['valid', `theme=dark; nomos_session=${valid}`, 200],
			['URL-encoded', `nomos_session=${encoded}`, 200],
			['duplicate, valid first', `nomos_session=${valid}; nomos_session=nope`, 200],
			['duplicate, valid second', `nomos_session=nope; nomos_session=${valid}`, 401]
		];
		for (const [name, cookie, status] of cases) {
			for (const { fast, kit } of pairs) {
				const [a, b] = await Promise.all([open(env.baseURL + fast, cookie), open(env.baseURL + kit, cookie)]);
				expect(a, `${name}: ${fast}`).toEqual(b);
				expect(a.status, `${name}: ${fast}`).toBe(status);
			}
		}

		// An `auth.revoked` naming the operator ends their streams on both paths.
		const streams = await Promise.all(pairs.flatMap(({ fast, kit }) => [fast, kit]).map((p) => stream(env.baseURL + p, `nomos_session=${revoked}`)));
		await sql`insert into events (type, payload) values ('auth.revoked', ${sql.json({ operatorId: revokee.id, keep: null })})`;
		for (const s of streams) await expect(s.ended).resolves.toContain('retry: 1000');
	} finally {
		await sql`delete from operators where id in (${off.id}, ${revokee.id})`;
		await sql`delete from auth_sessions where token_hash in (${hash(valid)}, ${hash(expired)})`;
		await sql`delete from chat_sessions where id = ${session}`;
	}
});

/** Status, type, length and the first line of a GET, then the connection is dropped. */
async function open(url: string, cookie: string | null) {
	const ctrl = new AbortController();
	const res = await fetch(url, { headers: cookie === null ? {} : { cookie }, signal: ctrl.signal });
	const reader = res.body!.getReader();
	const first = new TextDecoder().decode((await reader.read()).value);
	ctrl.abort();
	return { status: res.status, type: res.headers.get('content-type'), length: res.headers.get('content-length'), first: first.split('\n')[0] };
}

/** An open event stream; `ended` resolves with all it received once the server closes it. */
async function stream(url: string, cookie: string) {
	const res = await fetch(url, { headers: { cookie } });
	expect(res.status).toBe(200);
	return { ended: Promise.race([res.text(), new Promise<string>((_, reject) => setTimeout(() => reject(new Error(`${url} stayed open`)), 10_000))]) };
}
