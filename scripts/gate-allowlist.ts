// Writes deploy/nomos-gate.allow from the catalogue (proxmox/gate-shapes.ts): run it after any
// change to an action's argv; tests/integration/gate.test.ts fails while the file is stale.
import { writeFileSync } from 'node:fs';
import { gateAllowlist } from '../src/lib/server/proxmox/gate-shapes';

const { version, text } = gateAllowlist();
writeFileSync('deploy/nomos-gate.allow', text);
console.log(`deploy/nomos-gate.allow: catalogue ${version}, ${text.split('\n').length - 4} shapes`);
