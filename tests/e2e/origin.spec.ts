import { login, test, expect } from './harness/fixtures';

const methods = ['POST', 'PUT', 'PATCH', 'DELETE'] as const;
const bodies = [
	{ type: 'application/json', data: '{"name":"x"}' },
	{ type: 'application/x-www-form-urlencoded', data: 'name=x' },
	{ type: 'text/plaiN', data: 'name=x' }
];
const targets = ['/trpc/hosts.create', '/logout'];

test('non-GET requests from another origin are refused with 403', async ({ page, env }) => {
	await login(page, env.admin);
	const request = page.request; // carries the signed-in cookie
	for (const url of targets)
		for (const method of methods)
			for (const body of bodies)
				for (const origin of ['https://evil.example', null]) {
					const headers: Record<string, string> = { 'content-type': body.type };
					if (origin) headers.origin = origin;
					const res = await request.fetch(url, { method, headers, data: body.data });
					expect(res.status(), `${method} ${url} ${body.type} origin=${origin}`).toBe(403);
				}
	// The session survived all of that: the logout POSTs above were refused.
	await page.goto('/ops');
	await expect(page.getByTestId('ops-page')).toBeVisible();
});

test('the same request from the app origin passes the check', async ({ page, env }) => {
	await login(page, env.admin);
	const res = await page.request.fetch('/trpc/hosts.create', {
		method: 'POST',
		headers: { 'content-type': 'application/json', origin: env.baseURL },
		data: JSON.stringify({ name: 'bad name!', address: '', keyPath: '' })
	});
	// Past the origin check, zod answers: a readable 400, nothing written.
	expect(res.status()).toBe(400);
	const body = await res.json();
	expect(body.error.message).toContain('name: use letters, digits, dots and dashes');
});
