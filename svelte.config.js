import adapter from '@sveltejs/adapter-node';
import { vitePreprocess } from '@sveltejs/vite-plugin-svelte';

/** @type {import('@sveltejs/kit').Config} */
const config = {
	preprocess: vitePreprocess(),
	kit: {
		adapter: adapter(),
		// Origin checks are done for every non-GET request in hooks.server.ts (JSON included).
		csrf: { trustedOrigins: [] }
	}
};

export default config;
