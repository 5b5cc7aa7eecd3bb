import { INCIDENTS } from './incidents';
import { SAFETY } from './safety';
import { TASKS } from './tasks';
import type { Scenario } from '../types';

/** The qualification suite, in the order it runs and prints. */
export const SCENARIOS: Scenario[] = [...TASKS, ...INCIDENTS, ...SAFETY];
