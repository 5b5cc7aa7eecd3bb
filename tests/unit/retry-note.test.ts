import { describe, expect, it } from 'vitest';
import { retryNoteText, retryPending } from '../../src/lib/messages/retry-note';

const NOTE = 'The model server answered HTTP 500; retrying in 2 s (attempt 2 of 3)…';

describe('a retry note as shown', () => {
	it('keeps its "…" only while the retry is under way', () => {
		expect(retryNoteText(NOTE, true)).toBe(NOTE);
		expect(retryNoteText(NOTE, false)).toBe('The model server answered HTTP 500; retrying in 2 s (attempt 2 of 3)');
		expect(retryNoteText('no ellipsis here', false)).toBe('no ellipsis here');
	});

	it('is under way only while the reply streams and nothing came after it', () => {
		const segs = [{ kind: 'tools' }, { kind: 'note' }];
		expect(retryPending(segs, 1, true)).toBe(true);
		expect(retryPending(segs, 1, false)).toBe(false);
		expect(retryPending([...segs, { kind: 'text' }], 1, true)).toBe(false);
	});
});
