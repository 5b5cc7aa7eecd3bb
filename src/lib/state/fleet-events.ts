import { getContext } from 'svelte';
import type { LiveEvents } from './live-events.svelte';

export const FLEET_EVENTS_KEY = Symbol('fleet-events');

/** The fleet-wide live stream opened by the app layout. */
export function fleetEvents(): LiveEvents {
	return getContext<LiveEvents>(FLEET_EVENTS_KEY);
}
