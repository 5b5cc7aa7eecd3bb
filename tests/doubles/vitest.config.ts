/** Standalone config for the test-double integration tests (no SvelteKit plugins, no globalSetup). */
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
	root: fileURLToPath(new URL('../..', import.meta.url)),
	test: {
		include: ['tests/integration/*-double.test.ts'],
		environment: 'node',
		expect: { requireAssertions: true },
		testTimeout: 15_000,
		hookTimeout: 15_000
	}
});
