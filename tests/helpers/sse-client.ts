/** Reads an SSE Response body and yields parsed events (id, type, data); `signal` ends it like a dropped connection. */
export async function* readSse(res: Response, signal?: AbortSignal): AsyncGenerator<{ id: number; type: string; data: Record<string, unknown> }> {
	const reader = res.body!.getReader();
	signal?.addEventListener('abort', () => void reader.cancel().catch(() => undefined), { once: true });
	const decoder = new TextDecoder();
	let buf = '';
	try {
		for (;;) {
			const { done, value } = await reader.read();
			if (done) return;
			buf += decoder.decode(value, { stream: true });
			let idx: number;
			while ((idx = buf.indexOf('\n\n')) >= 0) {
				const block = buf.slice(0, idx);
				buf = buf.slice(idx + 2);
				let id = -1;
				let type = 'message';
				let data = '';
				for (const line of block.split('\n')) {
					if (line.startsWith('id: ')) id = Number(line.slice(4));
					else if (line.startsWith('event: ')) type = line.slice(7);
					else if (line.startsWith('data: ')) data += line.slice(6);
				}
				if (data) yield { id, type, data: JSON.parse(data) };
			}
		}
	} finally {
		if (!signal?.aborted) reader.releaseLock();
	}
}
