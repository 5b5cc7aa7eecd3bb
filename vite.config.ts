import { sveltekit } from '@sveltejs/kit/vite';
import tailwindcss from '@tailwindcss/vite';
import { defineConfig } from 'vitest/config';
import { scaled } from './tests/helpers/time.js';

export default defineConfig({
	plugins: [tailwindcss(), sveltekit()],
	server: { watch: { ignored: ['**/.nomos/**', '**/tests/.tmp/**'] } },
	test: {
		include: ['tests/unit/**/*.test.ts', 'tests/integration/**/*.test.ts'],
		globalSetup: ['tests/helpers/global-setup.ts'],
		setupFiles: ['tests/helpers/quiet-logs.ts'],
		testTimeout: scaled(30_000),
		// A test that asserts nothing fails (it could not have failed otherwise).
		expect: { requireAssertions: true },
		// Snapshot before / health after add steps around CT mutations; the tests that are about it turn it on.
		env: { NOMOS_SNAPSHOT_BEFORE: 'off', NOMOS_HEALTH_AFTER: 'off' },
		hookTimeout: scaled(60_000),
		pool: 'forks',
		fileParallelism: true,
		maxWorkers: 2
	}
});
