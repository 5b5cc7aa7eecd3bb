import { json, type RequestHandler } from '@sveltejs/kit';
import { MAX_BODY_BYTES } from '$lib/server/watches/parse';

/**
 * Alert intake: Proxmox VE, Alertmanager and generic JSON webhooks (watches/intake.ts). Needs no
 * sign-in: the hook's own secret is the credential (auth/guard.ts lets exactly this path through).
 */
export const POST: RequestHandler = async ({ params, request }) => {
	const body = await readCapped(request, MAX_BODY_BYTES);
	if (!body) return json({ message: `The body is larger than ${MAX_BODY_BYTES} bytes.` }, { status: 413 });
	const { receiveDelivery } = await import('$lib/server/watches/intake');
	const r = await receiveDelivery(params.id ?? '', request.headers, body);
	return json(r.body, { status: r.status, headers: r.headers });
};

/** The body, or null once it grows past max (read no further). */
async function readCapped(request: Request, max: number): Promise<Buffer | null> {
	const declared = Number(request.headers.get('content-length'));
	if (Number.isFinite(declared) && declared > max) return null;
	if (!request.body) return Buffer.alloc(0);
	const chunks: Uint8Array[] = [];
	let size = 0;
	const reader = request.body.getReader();
	for (;;) {
		const { done, value } = await reader.read();
		if (done) break;
		size += value.byteLength;
		if (size > max) {
			await reader.cancel();
			return null;
		}
		chunks.push(value);
	}
	return Buffer.concat(chunks);
}
