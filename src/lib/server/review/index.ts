export { reviewSession } from './session';
export { reviewOverview, parseDay } from './overview';
export { reviewSessionMarkdown, renderReviewMarkdown, formatDuration } from './markdown';
export type * from './types';
export { narrativePrompt, writeNarrative } from './narrative';
