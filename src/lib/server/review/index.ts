export { reviewSession } from './session';
export { reviewOverview, parseDay, filterFromSearch } from './overview';
export { reviewSessionMarkdown, renderReviewMarkdown, renderOverviewMarkdown, formatDuration } from './markdown';
export type * from './types';
export { narrativePrompt, writeNarrative } from './narrative';
