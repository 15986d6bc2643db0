/** The only module a plugin imports. */
export * from './auth.js';
export * from './config.js';
export * from './db.js';
export * from './errors.js';
export * from './hooks.js';
export * from './plugin.js';
export * from './project-files.js';
export * from './routes.js';
export * from './services.js';
export * from './sql.js';
export * from './scripts.js';
export * from './connectors.js';
export * from './semantic.js';
export * from './models.js';
export * from './ui.js';
export * from './catalog.js';
