/** A seeded generator (mulberry32): the same --seed gives the same kill schedule and choices. */
export class Random {
	#state: number;

	constructor(seed: number) {
		this.#state = seed >>> 0;
	}

	/** Uniform in [0, 1). */
	next(): number {
		let t = (this.#state = (this.#state + 0x6d2b79f5) >>> 0);
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	}

	/** Uniform in [min, max). */
	between(min: number, max: number): number {
		return min + (max - min) * this.next();
	}

	pick<T>(xs: readonly T[]): T {
		return xs[Math.floor(this.next() * xs.length)];
	}
}
