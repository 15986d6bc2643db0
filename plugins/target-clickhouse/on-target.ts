/**
 * Everything that runs against a ClickHouse target (the client, builds, seeds, loads, reads,
 * user queries), in one module index.ts imports when a target is first used: a project whose
 * environment names no target, and any command that does not reach one, loads none of it.
 */
export { ClickHouseTarget } from './client.js';
export { transformOnTarget, verifyModelOnTarget } from './build.js';
export { readOnTarget } from './reads.js';
export { seedOnTarget } from './seeds.js';
export { greatestOnTarget, loadRowsOnTarget } from './loads.js';
export { queryTargetService } from './query-service.js';
export { readTargetStates } from './state.js';
