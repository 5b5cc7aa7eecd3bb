// Draws Nomos's app icons (the favicon's "N" on the brand teal) as SVG and renders the PNGs the
// web app manifest and iOS need with the test Chromium. Run after changing the drawing:
//   node scripts/render-icons.js
// and commit static/icons/*.png.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium } from '@playwright/test';
import { CHROMIUM_ARGS, findBrowser } from './browser.js';

const TEAL_LIGHT = '#14b8a6'; // brand-500
const TEAL = '#0f766e'; // brand-700, the manifest's theme colour

/**
 * The icon on a 512 box. `shape`: 'rounded' for browsers that show the image as it is, 'square'
 * (full bleed) for maskable icons and iOS, which cut their own shape; there the glyph stays well
 * inside the central 80 % circle that every mask keeps.
 * @param {'rounded' | 'square'} shape
 */
export function iconSvg(shape) {
	const radius = shape === 'rounded' ? 112 : 0;
	const scale = shape === 'rounded' ? 16 : 13;
	// The favicon's path on its 32-unit grid, centred on (16, 16).
	const offset = 256 - 16 * scale;
	return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 512 512" width="512" height="512">
	<defs><linearGradient id="g" x1="0" y1="0" x2="1" y2="1"><stop offset="0" stop-color="${TEAL_LIGHT}"/><stop offset="0.55" stop-color="${TEAL}"/></linearGradient></defs>
	<rect width="512" height="512" rx="${radius}" fill="url(#g)"/>
	<g transform="translate(${offset} ${offset}) scale(${scale})">
		<path d="M9 23V9l14 14V9" fill="none" stroke="#fff" stroke-width="3" stroke-linecap="round" stroke-linejoin="round"/>
	</g>
</svg>`;
}

const OUT = path.resolve('static/icons');
/** @type {Array<{ file: string, size: number, shape: 'rounded' | 'square' }>} */
const ICONS = [
	{ file: 'icon-192.png', size: 192, shape: 'rounded' },
	{ file: 'icon-512.png', size: 512, shape: 'rounded' },
	{ file: 'icon-maskable-512.png', size: 512, shape: 'square' },
	{ file: 'apple-touch-icon.png', size: 180, shape: 'square' }
];

async function main() {
	const found = findBrowser();
	const browser = await chromium.launch(found.kind === 'system' ? { executablePath: found.path, args: CHROMIUM_ARGS } : {});
	try {
		mkdirSync(OUT, { recursive: true });
		for (const icon of ICONS) {
			const page = await browser.newPage({ viewport: { width: icon.size, height: icon.size }, deviceScaleFactor: 1 });
			const svg = iconSvg(icon.shape).replace('width="512" height="512"', `width="${icon.size}" height="${icon.size}"`);
			await page.setContent(`<!doctype html><html><body style="margin:0;background:transparent">${svg}</body></html>`);
			await page.screenshot({ path: path.join(OUT, icon.file), omitBackground: true, clip: { x: 0, y: 0, width: icon.size, height: icon.size } });
			await page.close();
			console.log(`static/icons/${icon.file} (${icon.size}×${icon.size}, ${icon.shape})`);
		}
	} finally {
		await browser.close();
	}
}

await main();
