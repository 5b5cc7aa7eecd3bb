/**
 * What the last gate check found of a host's keys (hosts/gate.ts), worst first: a key still
 * reaching a full shell, a gate of another catalogue, a key gated in the wrong role, no clear
 * answer, or every key gated as it should be.
 */
export const GATE_STATES = ['shell', 'old_version', 'wrong_role', 'unknown', 'gated'] as const;
export type GateState = (typeof GATE_STATES)[number];
