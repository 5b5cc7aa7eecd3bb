import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { clock } from '../../src/lib/state/clock.svelte';

describe('the countdown clock', () => {
	beforeEach(() => vi.useFakeTimers({ now: new Date('2026-12-01T10:00:00Z') }));
	afterEach(() => vi.useRealTimers());

	it('reads the current time on the first frame after it stood still (a 5 s wait shows 5 s, not 27 s)', () => {
		const first = clock.use();
		const t0 = Date.now();
		expect(clock.now).toBe(t0);
		first();
		// It stands still for 22 s while nothing counts down, then a 5 s retry wait starts.
		vi.setSystemTime(t0 + 22_000);
		expect(clock.now).toBe(t0 + 22_000);
		const until = Date.now() + 5_000;
		const stop = clock.use();
		expect(Math.ceil((until - clock.now) / 1000)).toBe(5);
		vi.advanceTimersByTime(1_000);
		expect(Math.ceil((until - clock.now) / 1000)).toBe(4);
		stop();
	});
});
