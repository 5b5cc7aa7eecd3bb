import { describe, expect, it } from 'vitest';
import { originLabel } from '../../src/lib/messages/origin-label';
import type { MessagePart } from '../../src/lib/types/messages';

const resumedNote: MessagePart = {
	type: 'data-note',
	data: { kind: 'resumed', text: 'Nomos restarted while writing this reply; it goes on by itself from here.' }
};

describe('the label of a reply no operator message asked for', () => {
	it('names what queued its turn', () => {
		expect(originLabel('chat', [])).toBeNull();
		expect(originLabel('answer', [])).toBe('resumed after your answer');
		expect(originLabel('approval', [])).toBe('resumed after the plan was approved');
		expect(originLabel('denial', [])).toBe('resumed after the plan was denied');
		expect(originLabel('continuation', [])).toBe('continued after an execution finished');
		expect(originLabel('resume', [])).toBe('resumed');
	});

	it('says when Nomos restarted while writing it', () => {
		expect(originLabel('chat', [resumedNote])).toBe('resumed after a restart');
		expect(originLabel('approval', [{ type: 'text', text: 'Creating it.' }, resumedNote])).toBe(
			'resumed after the plan was approved · resumed after a restart'
		);
	});
});
