// Builds the app before `npm start` when build/ is missing or older than any source file.
import { execSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';

const inputs = ['src', 'tasks', 'static', 'drizzle', 'svelte.config.js', 'vite.config.ts', 'package.json', 'package-lock.json'];

function newest(p) {
	if (!existsSync(p)) return 0;
	const st = statSync(p);
	if (!st.isDirectory()) return st.mtimeMs;
	let max = st.mtimeMs;
	for (const e of readdirSync(p)) max = Math.max(max, newest(path.join(p, e)));
	return max;
}

const stamp = 'build/index.js';
const built = existsSync(stamp) ? statSync(stamp).mtimeMs : 0;
const source = Math.max(...inputs.map(newest));
if (built < source) {
	console.log(built ? '[nomos] sources changed since the last build; building…' : '[nomos] no build yet; building…');
	execSync('npx vite build', { stdio: 'inherit' });
}
